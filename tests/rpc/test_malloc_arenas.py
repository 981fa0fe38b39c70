"""The server process caps glibc's malloc arenas; the cap is checked with glibc's own report.

Oracle: ``malloc_stats()``, which prints one ``Arena N:`` block per arena to standard error.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc arenas are glibc's")

#: Starts four threads that allocate at the same time, then prints glibc's arena report.
_PROGRAM = """
import ctypes, sys, threading
from vta.rpc.server import limit_malloc_arenas
if sys.argv[1] != "0":
    print(limit_malloc_arenas(int(sys.argv[1])))
barrier = threading.Barrier(4)
def work():
    keep = [bytearray(4096) for _ in range(16)]  # malloc in this thread
    barrier.wait()  # all four alive at once
    del keep
threads = [threading.Thread(target=work) for _ in range(4)]
for t in threads: t.start()
for t in threads: t.join()
ctypes.CDLL(None).malloc_stats()
"""


def _arenas(limit: int, env_limit: str | None = None) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    env["PYTHONPATH"] = str(REPO)
    if env_limit is not None:
        env["MALLOC_ARENA_MAX"] = env_limit
    proc = subprocess.run([sys.executable, "-c", _PROGRAM, str(limit)], capture_output=True, text=True, env=env,
                          timeout=120, check=True)
    return sum(line.startswith("Arena ") for line in proc.stderr.splitlines()), proc.stdout.strip()


def test_the_limit_caps_the_arenas_threads_get():
    unlimited, _ = _arenas(0)
    assert unlimited >= 5  # the main arena and one per thread
    limited, said = _arenas(2)
    assert said == "True" and limited == 2


def test_malloc_arena_max_in_the_environment_wins():
    count, said = _arenas(1, env_limit="3")
    assert said == "False" and count == 3


def test_a_bad_count_is_refused():
    from vta.rpc.server import limit_malloc_arenas

    with pytest.raises(ValueError, match="at least 1"):
        limit_malloc_arenas(0)
    proc = subprocess.run([sys.executable, "-m", "vta.rpc.server", "--port", "0", "--malloc-arenas", "-1"],
                          capture_output=True, text=True, cwd=REPO, timeout=60)
    assert proc.returncode == 2 and "--malloc-arenas must be 0" in proc.stderr
