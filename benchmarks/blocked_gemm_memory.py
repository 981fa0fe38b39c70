"""Peak memory and time of a 1024^3 blocked GEMM built and run on fsim (bar: peak RSS < 2 GiB).

Run: ``python benchmarks/blocked_gemm_memory.py [--batch 1024] [--runs 3]``; ``--quick`` (the test
suite's smoke run) builds and runs a 16-row batch once.

The workload is the blocked-GEMM tutorial scaled to a square problem: a (batch x 1024) int8
activation times a (1024 x 1024) int8 weight matrix into int32, then shift by 8 and clip to
[0, 127] on the ALU. The schedule is the tutorial's (output blocks of 256 channels, reduction
blocks of 256 channels, loads by ``cache_read`` inside the reduction block, tile-by-tile
stores) with batch blocks of 16 rows, so every weight block serves 16 rows.

Each measurement runs in a fresh interpreter (so the peak resident set is that of one build
and one run, imports included) and reports: build time (``vta.build``: lowering, C emission
and compilation), run time (load the module, one call on fsim), the peak resident set size
(``ru_maxrss``), the instruction count and the upstream statistics. The result is checked
against NumPy. Figures are medians over ``--runs`` fresh processes. The object file of the C
host code is cached by content (``vta.cache``), so after the first process the build time is
lowering plus C emission; the first call of a fresh cache also builds the runtime library.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BAR_BYTES = 2 << 30


def schedule(batch: int, b_block: int):
    """Declare and schedule the blocked GEMM; returns ``(schedule, [data, weight, res])``."""
    from vta import tvm
    from vta.tvm import te
    import vta

    env = vta.get_env()
    channels = 1024
    dshape = (batch // env.BATCH, channels // env.BLOCK_IN, env.BATCH, env.BLOCK_IN)
    wshape = (channels // env.BLOCK_OUT, channels // env.BLOCK_IN, env.BLOCK_OUT, env.BLOCK_IN)
    oshape = (batch // env.BATCH, channels // env.BLOCK_OUT, env.BATCH, env.BLOCK_OUT)
    ic = te.reduce_axis((0, channels // env.BLOCK_IN), name="ic")
    ic_tns = te.reduce_axis((0, env.BLOCK_IN), name="ic_tns")
    data = te.placeholder(dshape, name="data", dtype=env.inp_dtype)
    weight = te.placeholder(wshape, name="weight", dtype=env.wgt_dtype)
    res_gem = te.compute(oshape, lambda bo, co, bi, ci: te.sum(
        data[bo, ic, bi, ic_tns].astype(env.acc_dtype) * weight[co, ic, ci, ic_tns].astype(env.acc_dtype),
        axis=[ic, ic_tns]), name="res_gem")
    res_shr = te.compute(oshape, lambda *i: res_gem(*i) >> env.INP_WIDTH, name="res_shr")
    res_max = te.compute(oshape, lambda *i: tvm.te.max(res_shr(*i), 0), "res_max")
    res_min = te.compute(oshape, lambda *i: tvm.te.min(res_max(*i), (1 << (env.INP_WIDTH - 1)) - 1), "res_min")
    res = te.compute(oshape, lambda *i: res_min(*i).astype(env.inp_dtype), name="res")

    s = te.create_schedule(res.op)
    b, oc, b_tns, oc_tns = s[res].op.axis
    b_out, b_inn = s[res].split(b, b_block)
    oc_out, oc_inn = s[res].split(oc, 256 // env.BLOCK_OUT)
    s[res].reorder(b_out, oc_out, b_inn, oc_inn)
    acc_stages = (res_gem, res_shr, res_max, res_min)
    for stage in acc_stages:
        s[stage].compute_at(s[res], oc_out)
        s[stage].set_scope(env.acc_scope)
    b_inn, oc_inn, b_tns, oc_tns = s[res_gem].op.axis
    ic_out, ic_inn = s[res_gem].split(ic, 256 // env.BLOCK_IN)
    s[res_gem].reorder(ic_out, b_inn, oc_inn, ic_inn, b_tns, oc_tns, ic_tns)
    data_buf = s.cache_read(data, env.inp_scope, [res_gem])
    weight_buf = s.cache_read(weight, env.wgt_scope, [res_gem])
    for buf in (data_buf, weight_buf):
        s[buf].compute_at(s[res_gem], ic_out)
        s[buf].pragma(s[buf].op.axis[0], env.dma_copy)
    s[res].pragma(s[res].op.axis[2], env.dma_copy)
    s[res_gem].tensorize(b_tns, env.gemm)
    for stage in acc_stages[1:]:
        s[stage].pragma(s[stage].op.axis[0], env.alu)
    return s, [data, weight, res]


def measure(batch: int, b_block: int) -> dict:
    """Build and run once in this process; the figures as a dict."""
    import numpy as np

    import vta
    from vta.tvm import rpc
    from vta import tvm
    from vta.testing import simulator

    env = vta.get_env()
    t0 = time.perf_counter()
    s, args = schedule(batch, b_block)
    mod = vta.build(s, args, tvm.target.Target("ext_dev", host=env.target_host), name="gemm1024")
    build_s = time.perf_counter() - t0

    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, size=(batch, 1024)).astype(np.int8)
    w = rng.integers(-128, 128, size=(1024, 1024)).astype(np.int8)

    def pack(x, rows, cols):
        return x.reshape(x.shape[0] // rows, rows, x.shape[1] // cols, cols).transpose((0, 2, 1, 3))

    with tempfile.TemporaryDirectory() as tmp, rpc.LocalSession(workdir_parent=tmp) as remote:
        mod.save(os.path.join(tmp, "gemm.o"))
        remote.upload(os.path.join(tmp, "gemm.o"))
        dev = remote.ext_dev(0)
        t0 = time.perf_counter()
        f = remote.load_module("gemm.o")
        a_nd = tvm.nd.array(pack(a, env.BATCH, env.BLOCK_IN), dev)
        w_nd = tvm.nd.array(pack(w, env.BLOCK_OUT, env.BLOCK_IN), dev)
        r_nd = tvm.nd.empty((batch // env.BATCH, 1024 // env.BLOCK_OUT, env.BATCH, env.BLOCK_OUT), "int8", dev)
        simulator.clear_stats()
        f(a_nd, w_nd, r_nd)
        out = r_nd.numpy()
        run_s = time.perf_counter() - t0
        stats = simulator.stats()
        n_insns = len(mod.instructions(a_nd, w_nd, r_nd))  # recorded only, not executed
        for arr in (a_nd, w_nd, r_nd):
            arr.close()
    # float64 products of int8 values are exact at this size (|sum| < 2**24).
    ref = np.clip((a.astype(np.float64) @ w.T.astype(np.float64)).astype(np.int64) >> 8, 0, 127).astype(np.int8)
    ok = bool(np.array_equal(out, pack(ref, env.BATCH, env.BLOCK_OUT)))
    mod.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB
    keys = ("inp_load_nbytes", "wgt_load_nbytes", "out_store_nbytes", "uop_load_nbytes", "gemm_counter",
            "alu_counter")
    return {"build_s": build_s, "run_s": run_s, "peak_rss": peak, "instructions": n_insns, "ok": ok,
            "stats": {k: int(stats[k]) for k in keys}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=1024, help="rows of the activation (default 1024)")
    parser.add_argument("--b-block", type=int, default=16, help="batch tiles per block (default 16)")
    parser.add_argument("--runs", type=int, default=3, help="fresh processes to take the median of")
    parser.add_argument("--quick", action="store_true", help="a 16-row batch, one process (a smoke run)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.quick:
        opts.batch, opts.b_block, opts.runs = 16, 1, 1
    if opts.child:
        print(json.dumps(measure(opts.batch, opts.b_block)))
        return 0
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    results = []
    for k in range(opts.runs):
        proc = subprocess.run([sys.executable, __file__, "--child", "--batch", str(opts.batch),
                               "--b-block", str(opts.b_block)], env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return 1
        results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        r = results[-1]
        print(f"run {k}: build {r['build_s']:.2f} s, run {r['run_s']:.2f} s, peak RSS "
              f"{r['peak_rss'] / 2**20:.0f} MiB, result {'PASSED' if r['ok'] else 'FAILED'}")
    med = {key: statistics.median(r[key] for r in results) for key in ("build_s", "run_s", "peak_rss")}
    print(f"blocked GEMM {opts.batch}x1024x1024 on fsim ({results[0]['instructions']} instructions; "
          f"medians of {len(results)} fresh processes)")
    print(f"  build time : {med['build_s']:8.2f} s")
    print(f"  run time   : {med['run_s']:8.2f} s")
    print(f"  peak RSS   : {med['peak_rss'] / 2**20:8.0f} MiB (bar < {BAR_BYTES / 2**30:.0f} GiB: "
          f"{'met' if med['peak_rss'] < BAR_BYTES else 'MISSED'})")
    for key, value in results[0]["stats"].items():
        print(f"  {key:<16}: {value}")
    ok = all(r["ok"] for r in results)
    print("result: " + ("PASSED" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
