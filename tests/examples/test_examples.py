"""The tutorials in ``examples/`` run as scripts (default configuration) and reproduce upstream.

Each script is run in a fresh interpreter, as a user would run it. It must exit with status 0,
print PASSED (the script compared the accelerator's result with NumPy), and print the
simulator statistics that upstream's rendered tutorials print (reference tvm-vta-software.md
sections 3 and 7.4). The IR the scripts print is deterministic: identical under two different
hash seeds and equal to the text checked in under ``expected/``.

The four tutorials also run on every other configuration shipped in ``configs/`` (selected
with ``VTA_CONFIG``): there they must print PASSED too, or, where the tutorial's fixed layer
cannot be cut into the configuration's tiles, refuse at the start with a message that says
why (exit status 2). The default configuration's runs are the ones above.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
EXPECTED = Path(__file__).resolve().parent / "expected"

# Statistics printed by upstream's tutorials (7.4; vadd's are derived in 3.1).
UPSTREAM_STATS = {
    "get_started.py": {"inp_load_nbytes": 0, "wgt_load_nbytes": 0, "acc_load_nbytes": 8192,
                       "uop_load_nbytes": 4, "out_store_nbytes": 1024, "gemm_counter": 0, "alu_counter": 64},
    "matrix_multiply.py": {"inp_load_nbytes": 256, "wgt_load_nbytes": 65536, "acc_load_nbytes": 0,
                           "uop_load_nbytes": 8, "out_store_nbytes": 256, "gemm_counter": 256, "alu_counter": 0},
    "matrix_multiply_opt.py": {"inp_load_nbytes": 4096, "wgt_load_nbytes": 1048576, "acc_load_nbytes": 0,
                               "uop_load_nbytes": 20, "out_store_nbytes": 1024, "gemm_counter": 4096,
                               "alu_counter": 192},
    "convolution_opt.py": {"inp_load_nbytes": 114688, "wgt_load_nbytes": 1179648, "acc_load_nbytes": 0,
                           "uop_load_nbytes": 1144, "out_store_nbytes": 50176, "gemm_counter": 451584,
                           "alu_counter": 9408},
}


def run_script(name: str, tmp_path: Path, hash_seed: str = "0",
               config: Path | None = None) -> subprocess.CompletedProcess:
    """Run ``examples/<name>`` in a fresh interpreter with ``config`` (default: the default one)."""
    env = {k: v for k, v in os.environ.items() if k != "VTA_CONFIG"}
    if config is not None:
        env["VTA_CONFIG"] = str(config)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["PYTHONHASHSEED"] = hash_seed
    env["TMPDIR"] = str(tmp_path)
    return subprocess.run([sys.executable, str(EXAMPLES / name)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)


def printed_stats(stdout: str) -> dict[str, int]:
    """The ``key : value`` lines after ``Execution statistics:``."""
    _, _, tail = stdout.partition("Execution statistics:")
    return {k: int(v) for k, v in re.findall(r"^\s+(\w+)\s*:\s*(-?\d+)\s*$", tail, flags=re.M)}


def printed_ir(stdout: str) -> str:
    """Everything the script prints before its statistics: the TIR before and after the VTA passes."""
    ir, sep, _ = stdout.partition("Execution statistics:")
    assert sep, "the script printed no statistics"
    return ir


@pytest.mark.parametrize("name", list(UPSTREAM_STATS))
def test_example_runs_and_matches_upstream(name, tmp_path):
    if not (EXAMPLES / name).is_file():
        pytest.skip(f"examples/{name} has not landed yet")
    proc = run_script(name, tmp_path)
    assert proc.returncode == 0, f"examples/{name} exited with {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    assert re.search(r": PASSED$", proc.stdout, flags=re.M), proc.stdout[-2000:]
    stats = printed_stats(proc.stdout)
    assert {k: stats.get(k) for k in UPSTREAM_STATS[name]} == UPSTREAM_STATS[name]
    assert not list(tmp_path.iterdir()), "the script left files behind"


def test_show_instructions_example(tmp_path):
    proc = run_script("show_instructions.py", tmp_path)
    assert proc.returncode == 0, f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    assert "instruction stream: PASSED" in proc.stdout
    assert "There are 56 instructions" in proc.stdout and "GEMM reset kernel: 1 uop(s)" in proc.stdout


@pytest.mark.parametrize("name, expected", [("get_started.py", "get_started.ir.txt"),
                                            ("matrix_multiply.py", "matrix_multiply.ir.txt")])
def test_printed_ir_is_stable(name, expected, tmp_path):
    runs = []
    for seed in ("1", "2"):
        proc = run_script(name, tmp_path, hash_seed=seed)
        assert proc.returncode == 0, proc.stderr[-4000:]
        runs.append(printed_ir(proc.stdout))
    assert runs[0] == runs[1], "the printed IR depends on the hash seed"
    assert runs[0] == (EXPECTED / expected).read_text(), (
        f"the IR printed by examples/{name} differs from tests/examples/expected/{expected}"
    )


CONFIGS = ROOT / "configs"
DEFAULT_CONFIG = "vta_config.json"

#: The shipped configurations other than the default, each with the tutorials it cannot run and
#: the start of the refusal they print. Every tutorial not listed must print PASSED.
OTHER_CONFIGS = {
    "narrow.json": {},    # 4-bit inputs and weights
    "batch2.json": {      # BATCH = 2: the batch-1 layers of the optimised tutorials do not tile
        "matrix_multiply_opt.py": "this layer has batch 1, which does not split into tiles of BATCH = 2",
        "convolution_opt.py": "this layer has batch 1, which does not split into tiles of BATCH = 2",
    },
    "block32.json": {},   # 32 x 32 GEMM core
    "extended.json": {},  # the default core with every hardware option
}


def test_every_shipped_configuration_is_covered():
    shipped = {p.name for p in CONFIGS.glob("*.json")}
    assert shipped == {DEFAULT_CONFIG, *OTHER_CONFIGS}, "a configuration was added or removed: update OTHER_CONFIGS"


@pytest.mark.parametrize("config", list(OTHER_CONFIGS))
@pytest.mark.parametrize("name", list(UPSTREAM_STATS))
def test_example_on_other_configuration(name, config, tmp_path):
    refusal = OTHER_CONFIGS[config].get(name)
    proc = run_script(name, tmp_path, config=CONFIGS / config)
    output = f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    if refusal is None:
        assert proc.returncode == 0, f"examples/{name} on {config} exited with {proc.returncode}:\n{output}"
        assert re.search(r": PASSED$", proc.stdout, flags=re.M), output
    else:
        # A clear refusal before any work: status 2, the reason and the configurations that work.
        assert proc.returncode == 2, output
        assert proc.stdout.startswith(refusal), output
        assert "use a configuration with BATCH = 1" in proc.stdout, output
        assert "Traceback" not in proc.stderr, output
    assert not list(tmp_path.iterdir()), "the script left files behind"
