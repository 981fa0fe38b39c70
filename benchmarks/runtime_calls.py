"""Costs of the Python runtime: packed calls, callbacks, array copies, module loading.

Run ``python benchmarks/runtime_calls.py``; prints medians over several repetitions (``--quick``:
fewer calls and repetitions, a smoke run).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vta import nd  # noqa: E402
from vta.runtime import PackedFunc, ext_dev, load_module  # noqa: E402
from vta.runtime.native_lib import compile_object  # noqa: E402

KERNELS = ROOT / "tests" / "runtime" / "csrc" / "kernels.c"


def median_seconds(fn, repeat: int = 7) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(quick: bool = False) -> None:
    repeat = 3 if quick else 7
    with tempfile.TemporaryDirectory() as tmp:
        obj = compile_object(KERNELS, output=Path(tmp) / "kernels.o")

        def load_and_close() -> None:
            load_module(obj).close()

        t_load = median_seconds(load_and_close, repeat=1 if quick else 3)
        mod = load_module(obj)
        add, call_back, sum_i32 = mod["add_int"], mod["call_back"], mod["sum_i32"]
        n = 2000 if quick else 20000
        t_call = median_seconds(lambda: [add(i, 1) for i in range(n)], repeat) / n
        cb = PackedFunc(lambda x: x + 1)
        t_cb = median_seconds(lambda: [call_back(cb, i) for i in range(n // 4)], repeat) / (n // 4)
        x = np.random.default_rng(0).integers(1, 10, size=(100, 100, 1, 16)).astype(np.int8)
        arr = nd.array(x, ext_dev(0))
        t_in = median_seconds(lambda: arr.copyfrom(x), repeat)
        t_out = median_seconds(arr.numpy, repeat)
        t_alloc = median_seconds(lambda: nd.array(x, ext_dev(0)).close(), repeat)
        big = nd.array(np.ones(1 << 20, np.int32), ext_dev(0))
        t_sum = median_seconds(lambda: sum_i32(big), repeat)
        print(f"load_module(.o) link+dlopen      : {t_load * 1e3:8.1f} ms")
        print(f"native packed call add_int(i, 1)  : {t_call * 1e6:8.2f} us")
        print(f"Python->C->Python callback        : {t_cb * 1e6:8.2f} us")
        print(f"ext_dev copyfrom 160 kB           : {t_in * 1e6:8.1f} us")
        print(f"ext_dev numpy() 160 kB            : {t_out * 1e6:8.1f} us")
        print(f"ext_dev alloc+copy+free 160 kB    : {t_alloc * 1e6:8.1f} us")
        print(f"sum_i32 over 4 MiB in C (1 call)  : {t_sum * 1e3:8.2f} ms")
        arr.close()
        big.close()
        mod.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls and repetitions (a smoke run)")
    main(parser.parse_args().quick)
