"""Soak the RPC server: concurrent clients, many requests, and the server's memory and descriptors.

Run ``python benchmarks/rpc_soak.py``. It starts ``python -m vta.rpc.server`` on a free loopback
port (with a shared secret, so every frame is authenticated; ``--no-secret`` for plain frames,
``--tls`` to add TLS with a throw-away self-signed certificate made by the ``openssl`` command)
and runs ``--clients`` client threads (default 8) that share ``--requests`` requests (default
20,000) in a fixed cycle: upload a file, download it, load a module, look up its function,
send two arrays, run the function on them, fetch the result, free both arrays. Each client
opens a new session every ``--cycles-per-session`` cycles, so sessions end and their directories
and handles are freed throughout. Every reply is checked against what NumPy says it must be.

It prints requests per second, the server's CPU time per request, its resident memory (VmRSS) and open file descriptors
when idle before the run, after a warm-up of ``--warmup`` requests (every client has then made
every kind of request), and idle after the run, and the number of failed requests. Goals: RSS
growth from warm-up to the end under 5 %, the same number of descriptors idle before and after,
and 0 failures. It also prints the growth since the idle start and over the second half of the
run (the steady state), and with ``--smaps`` where the resident memory is (glibc's main heap and
thread arenas, thread stacks, other anonymous memory, which is mostly CPython's object arenas,
and mapped files) at warm-up and at the end. The run stops by itself after ``--requests``
requests or ``--max-seconds``, whichever comes first; ``--quick`` is a smoke run of 480 requests.

What grew, and what was done (measured with this script, ``/proc/PID/smaps``, ``gc`` debug
counts, ``sys._debugmallocstats``, glibc's ``malloc_stats`` and heaptrack in the server): RSS grew
7 % over 20,000 requests because every request left objects in reference cycles (a ctypes
library object with a class of its own per module load, a self-referencing function pointer per
lookup, a ``ctypes.cast`` per array, each closed session's handler), some 4,400 per 4,000
requests, freed only by the full collections, so the peaks of CPython's and glibc's allocators
kept rising; and glibc made up to 8 malloc arenas per core for the session threads, each keeping
its high-water mark. Now loads share one library object, lookups and arrays make no cycles, and
the server process caps glibc at 2 arenas (``--malloc-arenas``). What remains is the allocators
filling once (CPython's interned-string table resized once, object pools carved from the last
arena, the capped arenas reaching their high-water mark): most of it in the first 10,000
requests, about 0.1 MiB per 20,000 afterwards (flat from 60,000 to 100,000 requests).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vta import rpc  # noqa: E402
from vta.runtime.native_lib import INCLUDE_DIR, compile_object  # noqa: E402

KERNELS = ROOT / "tests" / "rpc" / "csrc" / "remote_kernels.c"
SECRET = "soak-secret"


def rss_kib(pid: int) -> int:
    """Resident memory of ``pid`` in KiB (VmRSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


def smaps_rss(pid: int) -> dict[str, int]:
    """Resident KiB of ``pid`` by kind of mapping.

    Anonymous mappings are told apart by shape (heuristics that hold for glibc on 64-bit Linux):
    ``[heap]`` is glibc's main arena, a read-write mapping at a 64 MiB boundary starts a thread
    arena, an 8 MiB one is a thread stack, and 1 GiB or more is the simulated DRAM; the rest
    (CPython's 1 MiB object arenas, large allocations) is "other anonymous". File mappings are
    counted as "files" (the sessions' libraries separately).
    """
    out: dict[str, int] = {}
    kind = "other anonymous"
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split()
        if head and "-" in head[0] and not head[0].endswith(":"):
            start, end = (int(x, 16) for x in head[0].split("-"))
            name = head[5] if len(head) > 5 else ""
            if name == "[heap]":
                kind = "glibc main arena"
            elif "vta-rpc-" in name:
                kind = "session libraries"
            elif name.startswith("/"):
                kind = "files"
            elif name:
                kind = name
            elif end - start >= 1 << 30:
                kind = "simulated DRAM"
            elif end - start == 8 << 20:
                kind = "thread stacks"
            elif start % (64 << 20) == 0 and head[1].startswith("rw"):
                kind = "glibc thread arenas"
            else:
                kind = "other anonymous"
        elif head and head[0] == "Rss:":
            out[kind] = out.get(kind, 0) + int(head[1])
    return out


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of ``pid`` so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


class Counter:
    """Requests done and failed, shared by the client threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.done = 0
        self.failed = 0
        self.errors: list[str] = []

    def add(self, ok: bool, error: str = "") -> None:
        with self.lock:
            self.done += 1
            if not ok:
                self.failed += 1
                if len(self.errors) < 10:
                    self.errors.append(error)


def client(k: int, quota: int, args, port: int, obj: Path, counter: Counter, deadline: float,
           tls_ca: Path | None) -> None:
    """Run ``quota`` requests in the fixed cycle; each failure is counted and the session renewed."""
    rng = np.random.default_rng(k)
    n = 0
    secret = None if args.no_secret else SECRET

    def one(sess) -> None:
        """One session: link the module, then whole cycles until the quota or the session length."""
        state: dict = {}

        def step(fn) -> bool:
            nonlocal n
            if n >= quota or time.monotonic() >= deadline:
                return False
            n += 1
            try:
                fn()
            except Exception as exc:  # any failure of the request or of its check
                counter.add(False, f"client {k}: {exc!r}")
                return False
            counter.add(True)
            return True

        def upload() -> None:
            state["blob"] = rng.integers(0, 256, size=int(rng.integers(1, 64 << 10)), dtype=np.uint8).tobytes()
            sess.upload(state["blob"], target=f"blob{k}.bin")

        def download() -> None:
            if sess.download(f"blob{k}.bin") != state["blob"]:
                raise AssertionError("downloaded file differs from the upload")

        def load() -> None:
            state["mod"] = sess.load_module(obj.name + ".so")

        def function() -> None:
            state["axpy"] = state["mod"].get_function("axpy")

        def alloc(name: str, value: np.ndarray):
            def go() -> None:
                state[name] = sess.alloc_array(value.shape, "int32", sess.ext_dev(0))
            return go

        def copy(name: str, value: np.ndarray):
            def go() -> None:
                state[name].copyfrom(value)
            return go

        def run() -> None:
            if state["axpy"](state["x"], state["y"], 3) != x.size:
                raise AssertionError("axpy returned a wrong size")

        def fetch() -> None:
            np.testing.assert_array_equal(state["y"].numpy(), y + 3 * x)

        def free(name: str):
            def go() -> None:
                state.pop(name).close()
            return go

        ok = step(lambda: sess.upload(obj)) and step(lambda: sess.load_module(obj.name))  # links the .so
        cycles = 0
        while ok and cycles < args.cycles_per_session:
            size = int(rng.integers(1, 4096))
            x = rng.integers(-1000, 1000, size=size, dtype=np.int32)
            y = rng.integers(-1000, 1000, size=size, dtype=np.int32)
            for fn in (upload, download, load, function, alloc("x", x), copy("x", x), alloc("y", y),
                       copy("y", y), run, fetch, free("x"), free("y")):
                ok = step(fn)
                if not ok:
                    break
            cycles += 1

    while n < quota and time.monotonic() < deadline:
        try:
            sess = rpc.connect("127.0.0.1", port, timeout=120, secret=secret, cafile=tls_ca)
        except Exception as exc:  # counted as a failed request, then retried
            counter.add(False, f"connect: {exc!r}")
            n += 1
            continue
        with sess:
            one(sess)


def self_signed(directory: Path) -> tuple[Path, Path]:
    openssl = shutil.which("openssl")
    if openssl is None:
        sys.exit("rpc_soak: --tls needs the openssl command to make a certificate")
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run([openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-days", "2", "-subj", "/CN=localhost", "-keyout", str(key), "-out", str(cert),
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True, capture_output=True)
    return cert, key


def run_phase(args, quota_total: int, port: int, obj: Path, counter: Counter, deadline: float,
              tls_ca: Path | None) -> float:
    quotas = [quota_total // args.clients + (1 if i < quota_total % args.clients else 0) for i in range(args.clients)]
    threads = [threading.Thread(target=client, args=(i, q, args, port, obj, counter, deadline, tls_ca))
               for i, q in enumerate(quotas)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start


def wait_idle(pid: int, fds: int, limit: float = 30.0) -> int:
    """Give the server time to end the last sessions; returns its descriptor count."""
    end = time.monotonic() + limit
    n = open_fds(pid)
    while n > fds and time.monotonic() < end:
        time.sleep(0.1)
        n = open_fds(pid)
    return n


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--requests", type=int, default=20000, help="requests in all, after the warm-up")
    p.add_argument("--warmup", type=int, default=1000, help="requests before the start figures are taken")
    p.add_argument("--cycles-per-session", type=int, default=25)
    p.add_argument("--chunks", type=int, default=4, help="RSS is sampled after each of this many equal parts")
    p.add_argument("--smaps", action="store_true", help="print the mappings whose RSS grew most")
    p.add_argument("--max-seconds", type=float, default=1200.0, help="stop after this long (default 20 min)")
    p.add_argument("--no-secret", action="store_true", help="plain frames (no secret) instead of authenticated ones")
    p.add_argument("--tls", action="store_true", help="serve over TLS too")
    p.add_argument("--quick", action="store_true", help="480 requests after 48 (a smoke run)")
    args = p.parse_args()
    if args.quick:
        args.requests, args.warmup, args.chunks = 480, 48, 2

    with tempfile.TemporaryDirectory(prefix="vta-soak-") as tmp:
        tmpdir = Path(tmp)
        obj = compile_object(KERNELS, output=tmpdir / "soak_kernels.o", include_dirs=(INCLUDE_DIR,))
        work = tmpdir / "sessions"
        work.mkdir()
        cmd = [sys.executable, "-m", "vta.rpc.server", "--port", "0", "--workdir", str(work)]
        if not args.no_secret:
            cmd += ["--secret", SECRET]
        tls_ca = None
        if args.tls:
            cert, key = self_signed(tmpdir)
            cmd += ["--tls-cert", str(cert), "--tls-key", str(key)]
            tls_ca = cert
        with open(tmpdir / "server.log", "w") as log:
            proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=log, text=True)
            try:
                line = proc.stdout.readline()
                if "listening on" not in line:
                    sys.exit(f"rpc_soak: the server did not start: {line!r}")
                port = int(line.split(":")[1].split()[0])
                deadline = time.monotonic() + args.max_seconds
                fds_idle0, rss_idle0 = open_fds(proc.pid), rss_kib(proc.pid)
                warm = Counter()
                run_phase(args, args.warmup, port, obj, warm, deadline, tls_ca)
                fds_warm = wait_idle(proc.pid, fds_idle0)
                rss_warm, smaps_warm = rss_kib(proc.pid), smaps_rss(proc.pid)
                cpu_warm = cpu_seconds(proc.pid)
                counter = Counter()
                seconds, trajectory = 0.0, []
                chunk = -(-args.requests // args.chunks)
                for i in range(args.chunks):
                    quota = min(chunk, args.requests - i * chunk)
                    seconds += run_phase(args, quota, port, obj, counter, deadline, tls_ca)
                    trajectory.append((counter.done, rss_kib(proc.pid)))
                cpu_end = cpu_seconds(proc.pid)
                fds_end = wait_idle(proc.pid, fds_idle0)
                rss_end, smaps_end = rss_kib(proc.pid), smaps_rss(proc.pid)
                leftover = sorted(x.name for x in work.iterdir())
            finally:
                proc.terminate()
                proc.wait(timeout=60)
                proc.stdout.close()
        server_log = (tmpdir / "server.log").read_text()

    mode = "plain frames" if args.no_secret else "authenticated frames"
    mode += " over TLS" if args.tls else ""
    print(f"rpc soak: {args.clients} clients, {mode}, {counter.done} requests "
          f"(after {warm.done} warm-up requests) in {seconds:.1f} s")
    print(f"  requests per second     : {counter.done / seconds:10.1f}")
    cpu = cpu_end - cpu_warm
    print(f"  server CPU time         : {cpu:.1f} s, {1e3 * cpu / max(counter.done, 1):.3f} ms per request "
          "(user + system; steadier than the rate on a shared machine)")

    def growth(before: int, after: int) -> str:
        return f"{100.0 * (after - before) / before:+.2f} %"

    print(f"  server RSS (MiB)        : idle {rss_idle0 / 1024:.1f}, after warm-up {rss_warm / 1024:.1f}, "
          f"end {rss_end / 1024:.1f}")
    half = next((r for n, r in trajectory if n >= counter.done / 2), None) if len(trajectory) > 1 else None
    steady = f", over the second half {growth(half, rss_end)}" if half is not None else ""
    print(f"  server RSS growth       : since warm-up {growth(rss_warm, rss_end)} (goal < 5 %){steady}, "
          f"since idle {growth(rss_idle0, rss_end)}")
    print("  server RSS (MiB) after   : " + ", ".join(f"{n} req {r / 1024:.1f}" for n, r in trajectory))
    if args.smaps:
        print("  server RSS by kind (KiB) : after warm-up -> end")
        for k in sorted({k for k in set(smaps_warm) | set(smaps_end) if smaps_warm.get(k) or smaps_end.get(k)},
                        key=lambda k: -smaps_end.get(k, 0)):
            print(f"    {k:22s}: {smaps_warm.get(k, 0):7d} -> {smaps_end.get(k, 0):7d}")
    print(f"  server open descriptors : idle {fds_idle0}, after warm-up {fds_warm}, end {fds_end}")
    print(f"  session directories left: {len(leftover)}")
    print(f"  failed requests         : {counter.failed} (warm-up: {warm.failed})")
    for e in warm.errors + counter.errors:
        print(f"    {e}")
    if server_log.strip():
        print("  server log (last lines):")
        for line in server_log.strip().splitlines()[-5:]:
            print(f"    {line}")
    if counter.done < args.requests:
        print(f"  stopped at the time limit ({args.max_seconds:.0f} s) before all requests ran")
    return 0 if counter.failed == 0 and warm.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
