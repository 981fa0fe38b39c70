"""Throughput of the functional simulator on GEMM-heavy and instruction-heavy streams, both engines.

Run ``python benchmarks/fsim_throughput.py`` (add ``--quick`` for smaller streams). Runs every
stream on the compiled engine (numba) and on the NumPy engine in the same process and prints
absolute figures side by side: the median wall-clock time of several runs, the CPU time of this
process in brackets (steadier on a busy machine), and the rates. Streams:

* a blocked 1024x1024x1024 int8 GEMM: 4,194,304 GEMM uop-iterations. Two streams do this work:
  a compact one (3,873 instructions, long GEMMs) and one shaped like upstream's (about 13,600
  instructions: per-K-chunk loads, short GEMMs, a store per output row);
* a convolution-like stream of 261,002 small instructions (928,000 GEMM and 464,000 ALU
  uop-iterations), on the configuration in use and on the shipped ``narrow`` one (4-bit inputs,
  weights and outputs, packed two to a byte in DRAM).

GEMM results are checked against NumPy, so the figures are for correct execution.

Upstream's C++ functional simulator is not built here. With ``--upstream BINARY`` (the peer
that ``build.sh`` of the upstream-fsim peer directory builds from a tvm-vta snapshot; default
configuration only), every stream is also written as a dump -- the arena before the run and
after this run's fsim, in the peer's format -- and the peer runs it in the same run, on the same
instructions and DRAM: both median times, the ratio and whether the peer's arena after the run
equals ours (the whole arena is compared) are printed. Without it, upstream's times are printed
as stored figures, labelled with how and when they were measured (:data:`UPSTREAM`), never as a
ratio to a time of this run. Likewise this benchmark's figures at the start of the
instruction-heavy work (:data:`BEFORE`), printed beside this run's in full runs.

fsim runs its batched GEMM products on one thread (like the upstream simulator, which uses one
core): on a CPU with AVX-512 VNNI as int8 dot products of its own, elsewhere with BLAS limited to
one thread, whatever ``OPENBLAS_NUM_THREADS`` says.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's vta, not an installed one

from vta import isa
from vta.dram import DRAM
from vta.env import Environment, data_dir, get_env, load_config
from vta.sim.fsim import FunctionalSimulator, jit
from vta.testing.programs import ProgramBuilder

#: Upstream's C++ fsim (apache/tvm-vta ``src/sim/sim_driver.cc`` with its TLPP scheduler, built
#: with -O2), run single-threaded on this machine kind while it was quiet, by earlier sessions:
#: the GEMM figure is README's of 2026-11-22, the instruction-heavy one issue 12's (filed before
#: 2026-11-25). Stream -> (seconds, what was run).
UPSTREAM = {
    "GEMM": (0.16, "upstream's own blocked 1024^3 GEMM stream (24,581 instructions, same 4,194,304 "
                   "uop-iterations)"),
    "conv": (0.044, "this instruction-heavy stream, 29,000 groups (261,002 instructions); run by --upstream on "
                    "2026-12-07, six runs of 7 interleaved with ours (medians 0.043-0.052 s), load 2-3; again six "
                    "runs of 7 later that day (medians 0.043-0.046 s), load 2-4"),
}


#: This benchmark's own figures before the instruction-heavy work of issue 12 (item 6), full-size
#: streams, median wall-clock seconds on an idle machine, measured by the session lead:
#: stream -> {engine: seconds}, and how they were measured.
BEFORE = {
    "conv": {"jit": 0.042, "numpy": 0.588},
}
BEFORE_WHAT = "this benchmark at the start of issue 12 item 6 (2026-11-25), idle machine"
#: The compiled engine's figure on the instruction-heavy stream before issue 25 item 4 (median
#: wall-clock seconds): main at be6262a, 2026-12-07, three runs of 7 interleaved with the change
#: and with the upstream peer (0.022-0.024 s; upstream x1.87-1.94), load 2-3.
BEFORE_25 = 0.023
BEFORE_25_WHAT = "main at be6262a (2026-12-07), before issue 25 item 4, interleaved with it, load 2-3"
#: The compiled engine's figure on the instruction-heavy stream before its dot products read
#: transposed weight blocks in one vector and the GEMM nest was inlined (median wall-clock
#: seconds): main at 941e530, 2026-12-07, three runs of 7 interleaved with the change and with the
#: upstream peer (0.016-0.017 s; upstream x2.60-2.67, the change x4.08-4.28), load 2-4.
BEFORE_DOT = 0.017
BEFORE_DOT_WHAT = "main at 941e530 (2026-12-07), before the vector dot products, interleaved with them, load 2-4"
#: The compiled engine's figures on the two GEMM streams before their batched products became
#: int8 dot products (seconds per run): main at 1e50939, 2026-12-07, in-process CPU medians of 30
#: runs, one process each in ``farm-bench`` pairs with the change, load 2.3-2.8: compact 37.8-40.0
#: ms over 7 processes (the change 11.7-12.3 ms), upstream-shaped 31.7-34.6 ms over 6 (the change
#: 15.9-17.6 ms); this benchmark with ``--upstream``, three runs of 7 interleaved with the change,
#: load 3.2-3.6: upstream x3.58-x5.60 compact, x4.70-x6.09 upstream-shaped (the change x6.42-x12.69
#: and x8.75-x11.35).
BEFORE_INT8 = {"GEMM stream": 0.038, "upstream-shaped GEMM stream": 0.033}
BEFORE_INT8_WHAT = "main at 1e50939 (2026-12-07), before the int8 dot products, paired with them, load 2.3-2.8"
#: The narrow line's figures before the compiled loop unpacked and packed sub-byte elements
#: itself (it handed every sub-byte LOAD and STORE to the NumPy path), full-size stream:
#: median wall-clock seconds, with the load average of the shared machine they were measured on.
BEFORE_NARROW = {"jit": 2.056, "numpy": 17.0}
BEFORE_NARROW_WHAT = ("main at d5f2906 (2026-11-26), run interleaved with the change: jit the median of 3 runs "
                      "of 5, numpy of 3 (its code is unchanged); load average 2.5-3.0 on 2 cores")


def gemm_stream(env, dram, size: int):
    """Blocked ``size``^3 GEMM: C = clip((A @ W.T) >> 8) with 32-row x 8-column-block tiles.

    Per row tile: one LOAD INP of 32 rows x all K blocks; per column tile: one LOAD WGT of 8
    column blocks x all K blocks, a reset GEMM, 8 GEMMs (iter_out = 32 rows, iter_in = K
    blocks, one uop each), ALU SHR/MAX/MIN and one STORE. Stages are serialised by tokens.
    """
    assert env.BATCH == 1
    blk = env.BLOCK_IN
    kb = size // blk
    tm, tn = min(32, env.INP_BUFF_DEPTH // kb), 8
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, size=(size, size), dtype=np.int8)
    w = rng.integers(-128, 128, size=(size, size), dtype=np.int8)
    prog = ProgramBuilder(env, dram)
    a_addr = prog.buffer(a)                                                # [row][k block][16]
    w_addr = prog.buffer(w.reshape(size // blk, blk, kb, blk).transpose(0, 2, 1, 3).copy())  # [n blk][k blk][16][16]
    c_addr = prog.buffer(nbytes=size * size)
    prog.uops([(j, 0, j * kb) for j in range(tn)], sram_base=0)
    clip = dict(uop_bgn=0, uop_end=1, iter_out=1, iter_in=tm * tn, dst_factor_in=1, src_factor_in=1, use_imm=1)
    for r in range(0, size, tm):
        prog.load(isa.MEM_INP, 0, a_addr + r * size, tm, kb, kb)
        for c in range(0, size // blk, tn):
            prog.load(isa.MEM_WGT, 0, w_addr + c * kb * env.WGT_ELEM_BYTES, tn, kb, kb)
            prog.append(isa.GemmInsn(reset_reg=1, uop_bgn=0, uop_end=1, iter_out=tm * tn, dst_factor_out=1))
            for j in range(tn):
                prog.append(isa.GemmInsn(uop_bgn=j, uop_end=j + 1, iter_out=tm, iter_in=kb, dst_factor_out=tn,
                                         src_factor_out=kb, src_factor_in=1, wgt_factor_in=1))
            prog.append(isa.AluInsn(alu_opcode=isa.ALU_SHR, imm=8, **clip))
            prog.append(isa.AluInsn(alu_opcode=isa.ALU_MAX, imm=-127, **clip))
            prog.append(isa.AluInsn(alu_opcode=isa.ALU_MIN, imm=127, **clip))
            prog.store(0, c_addr + (r * (size // blk) + c) * env.OUT_ELEM_BYTES, tm, tn, size // blk)
    prog.finish()
    prog.serialize()
    expect = np.clip((a.astype(np.int64) @ w.astype(np.int64).T) >> 8, -127, 127).astype(np.int8)
    return prog, (c_addr, expect)


def gemm_stream_tiled(env, dram, size: int):
    """Blocked ``size``^3 GEMM shaped like upstream's (many more, smaller instructions).

    128-row x 8-column-block output tiles; the reduction in chunks of 8 K blocks, each with
    its own LOAD INP (128 rows x 8 blocks) and LOAD WGT (8 x 8 blocks) and one GEMM per
    column block (iter_out = 128 rows, iter_in = 8 K blocks); per tile a reset, the three
    clipping ALU ops and one STORE per row. Stages are serialised by tokens. Same result as
    :func:`gemm_stream`.
    """
    assert env.BATCH == 1
    blk = env.BLOCK_IN
    kb, nb = size // blk, size // env.BLOCK_OUT
    tm, tn, tk = min(128, size), min(8, nb), min(8, kb)
    assert tm * tk <= env.INP_BUFF_DEPTH and tm * tn <= env.ACC_BUFF_DEPTH and tn * tk <= env.WGT_BUFF_DEPTH
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, size=(size, size), dtype=np.int8)
    w = rng.integers(-128, 128, size=(size, size), dtype=np.int8)
    prog = ProgramBuilder(env, dram)
    a_addr = prog.buffer(a)                                                # [row][k block][16]
    w_addr = prog.buffer(w.reshape(nb, blk, kb, blk).transpose(0, 2, 1, 3).copy())  # [n blk][k blk][16][16]
    c_addr = prog.buffer(nbytes=size * size)
    prog.uops([(j, 0, j * tk) for j in range(tn)], sram_base=0)  # uop 0 = (0, 0, 0) also serves reset/ALU
    clip = dict(uop_bgn=0, uop_end=1, iter_out=1, iter_in=tm * tn, dst_factor_in=1, src_factor_in=1, use_imm=1)
    for r in range(0, size, tm):
        for c in range(0, nb, tn):
            prog.append(isa.GemmInsn(reset_reg=1, uop_bgn=0, uop_end=1, iter_out=tm * tn, dst_factor_out=1))
            for k in range(0, kb, tk):
                prog.load(isa.MEM_INP, 0, a_addr + (r * kb + k) * env.INP_ELEM_BYTES, tm, tk, kb)
                prog.load(isa.MEM_WGT, 0, w_addr + (c * kb + k) * env.WGT_ELEM_BYTES, tn, tk, kb)
                for j in range(tn):
                    prog.append(isa.GemmInsn(uop_bgn=j, uop_end=j + 1, iter_out=tm, iter_in=tk, dst_factor_out=tn,
                                             src_factor_out=tk, src_factor_in=1, wgt_factor_in=1))
            prog.append(isa.AluInsn(alu_opcode=isa.ALU_SHR, imm=8, **clip))
            prog.append(isa.AluInsn(alu_opcode=isa.ALU_MAX, imm=-127, **clip))
            prog.append(isa.AluInsn(alu_opcode=isa.ALU_MIN, imm=127, **clip))
            for i in range(tm):
                prog.store(i * tn, c_addr + ((r + i) * nb + c) * env.OUT_ELEM_BYTES, 1, tn)
    prog.finish()
    prog.serialize()
    expect = np.clip((a.astype(np.int64) @ w.astype(np.int64).T) >> 8, -127, 127).astype(np.int8)
    return prog, (c_addr, expect)


def conv_stream(env, dram, groups: int):
    """Many small instructions: per group a 4-element input load, a reset GEMM, a GEMM of 32
    uop-iterations, four ALU ops of 4 uop-iterations and a 4-element store (stages serialised)."""
    rng = np.random.default_rng(1)
    prog = ProgramBuilder(env, dram)
    inp = prog.buffer(rng.integers(-128, 128, size=64 * env.INP_ELEM_BYTES, dtype=np.int8))
    wgt = prog.buffer(rng.integers(-128, 128, size=64 * env.WGT_ELEM_BYTES, dtype=np.int8))
    out = prog.buffer(nbytes=64 * env.OUT_ELEM_BYTES)
    prog.load(isa.MEM_WGT, 0, wgt, 1, 64)
    prog.uops([(0, 0, 0)], sram_base=0)
    for g in range(groups):
        base = (g % 8) * 4
        prog.load(isa.MEM_INP, base, inp + (g % 16) * 4 * env.INP_ELEM_BYTES, 1, 4)
        prog.append(isa.GemmInsn(reset_reg=1, uop_bgn=0, uop_end=1, iter_out=4, dst_factor_out=1))
        prog.append(isa.GemmInsn(uop_bgn=0, uop_end=1, iter_out=4, iter_in=8, dst_factor_out=1, src_factor_out=1,
                                 wgt_factor_in=1 + (g % 4)))
        for op, imm in ((isa.ALU_SHR, 7), (isa.ALU_ADD, 3), (isa.ALU_MAX, -127), (isa.ALU_MIN, 127)):
            prog.append(isa.AluInsn(alu_opcode=op, use_imm=1, imm=imm, uop_bgn=0, uop_end=1, iter_in=4,
                                    dst_factor_in=1, src_factor_in=1))
        prog.store(0, out + (g % 16) * 4 * env.OUT_ELEM_BYTES, 1, 4)
    prog.finish()
    prog.serialize()
    return prog


def timed(dev, addr, count, repeat, warm=True):
    """Median wall-clock and CPU seconds of ``repeat`` runs (after one warm-up run, which compiles
    the engine on first use, when ``warm``)."""
    if warm:
        dev.run(addr, count)
    wall, cpu = [], []
    for _ in range(repeat):
        dev.clear_stats()
        t0, c0 = time.perf_counter(), time.process_time()
        dev.run(addr, count)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu), dev.stats()


#: Magic number of the peer's dump format ("VTADUMP1", little endian).
DUMP_MAGIC = 0x31504D5544415456
#: Physical address of the first byte of the peer's image (its allocator's first page).
DUMP_BASE = 4096


def arena_image(dram) -> np.ndarray:
    """A copy of the arena from :data:`DUMP_BASE` to the end of the highest live allocation."""
    top = max((a + n for a, n in dram.allocations()), default=DUMP_BASE)
    return dram.data[DUMP_BASE:max(top, DUMP_BASE)].copy()


def write_dump(path: Path, addr: int, count: int, before: np.ndarray, after: np.ndarray) -> None:
    """The peer's dump: header, the arena before the run, and the whole arena after ours as the
    region the peer compares."""
    header = np.array([DUMP_MAGIC, addr, count, before.size, DUMP_BASE, after.size], dtype="<u8")
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(before.tobytes())
        f.write(after.tobytes())


class Upstream:
    """Runs the upstream peer binary on dumps of this run's streams and prints the comparison."""

    def __init__(self, binary: str, repeat: int):
        self.binary = str(Path(binary).resolve())
        self.repeat = max(3, repeat)
        self.tmp = tempfile.TemporaryDirectory(prefix="vta_upstream_")
        self.ratios: dict[str, float] = {}

    def compare(self, label: str, dram, addr: int, count: int, before: np.ndarray, ours_s: float) -> None:
        """Dump the stream (``before``: the arena before our run; after: as it is now), run the
        peer on it and print its median time, ours, the ratio and whether the outputs agree."""
        path = Path(self.tmp.name) / "stream.dump"
        write_dump(path, addr, count, before, arena_image(dram))
        proc = subprocess.run([self.binary, str(path), str(self.repeat)], capture_output=True, text=True,
                              timeout=3600, check=False)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        if proc.returncode not in (0, 1) or not lines:
            print(f"  upstream C++ fsim: FAILED (exit {proc.returncode}): {proc.stderr.strip()[:300]}")
            return
        res = json.loads(lines[-1])
        up = res["median_s"]
        agree = "outputs agree (whole arena)" if res["output_matches_project"] else "OUTPUTS DIFFER"
        self.ratios[label] = up / ours_s
        print(f"  upstream C++ fsim, run now: {up:.3f} s (median of {self.repeat}; min {res['min_s']:.3f} s), "
              f"ours {ours_s:.3f} s: ours x{up / ours_s:.2f} faster; {agree}")

    def close(self) -> None:
        self.tmp.cleanup()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller streams (a smoke run)")
    ap.add_argument("--repeat", type=int, default=None, help="runs per figure (default 3, 1 with --quick)")
    ap.add_argument("--engine", choices=("both", "numpy", "jit"), default="both",
                    help="fsim engines to run (jit needs numba; 'both' runs numpy alone without it)")
    ap.add_argument("--no-batch-gemms", action="store_true",
                    help="do not run lined-up GEMMs as one BLAS product")
    ap.add_argument("--only", choices=("gemm", "conv"), default=None,
                    help="run only the GEMM streams or only the instruction-heavy ones")
    ap.add_argument("--upstream", metavar="BINARY", default=None,
                    help="also run upstream's C++ fsim (the peer binary built by the upstream-fsim peer's build.sh) "
                         "on every stream of the default configuration, in this run")
    args = ap.parse_args(argv)
    if args.repeat is None:
        args.repeat = 1 if args.quick else 3
    env = get_env()
    size, groups = (256, 4000) if args.quick else (1024, 29_000)
    engines = ["jit", "numpy"] if args.engine == "both" else [args.engine]
    if args.engine == "both" and not jit.available():
        engines = ["numpy"]
    print(f"engines: {', '.join(engines)}; GEMM runs batched: {not args.no_batch_gemms}; figures are medians of "
          f"{args.repeat} runs (after a warm-up run on the compiled engine), wall clock [CPU time of this process]")
    upstream = Upstream(args.upstream, args.repeat) if args.upstream else None
    if upstream is not None:
        default_env = Environment(load_config(data_dir("configs") / "vta_config.json"))
        if env.BITSTREAM != default_env.BITSTREAM:
            print("--upstream: the peer is built for the default configuration; not run on this one")
            upstream = None
    with DRAM(1 << 31) as dram:
        devs = {e: FunctionalSimulator(env, dram, engine=e, batch_gemms=not args.no_batch_gemms) for e in engines}
        gemms = (("GEMM stream", gemm_stream), ("upstream-shaped GEMM stream", gemm_stream_tiled))
        for label, make in gemms if args.only != "conv" else ():
            prog, (c_addr, expect) = make(env, dram, size)
            addr, count = prog.build()
            lines, ok, ours = [], True, {}
            for name, dev in devs.items():
                dram.write(c_addr, bytes(expect.size))
                before = arena_image(dram) if upstream is not None and name == engines[0] else None
                sec, cpu, st = timed(dev, addr, count, args.repeat)
                ours[name] = (sec, before)
                ok &= np.array_equal(dram.copy_out(c_addr, expect.shape, np.int8), expect)
                iters = st["gemm_counter"]
                macs = iters * env.BATCH * env.BLOCK_IN * env.BLOCK_OUT
                lines.append(f"  {name:5s}: {sec:.3f} s [{cpu:.3f} s], "
                             f"{iters / sec / 1e6:.1f} [{iters / cpu / 1e6:.1f}] "
                             f"M uop-iter/s, {macs / sec / 1e9:.2f} GMAC/s, {count / sec / 1e3:.0f} k insn/s")
            print(f"{label} {size}^3: {count} instructions, {iters} GEMM uop-iterations "
                  f"({'verified against NumPy' if ok else 'MISMATCH against NumPy'})")
            print("\n".join(lines))
            if upstream is not None:  # (the arena now holds the result of the last engine's run)
                sec, before = ours[engines[0]]
                upstream.compare(label, dram, addr, count, before, sec)
            else:
                up_sec, up_what = UPSTREAM["GEMM"]
                print(f"  upstream C++ fsim -O2 (stored, not run here): {up_sec:.3f} s for the 1024^3 GEMM ({up_what})")
            if not args.quick and "jit" in devs:
                print(f"  before (stored, not run here: {BEFORE_INT8_WHAT}): jit {BEFORE_INT8[label]:.3f} s")
            prog.close()
        if args.only != "gemm":
            count = conv_figures(env, dram, devs, groups, args.repeat, "instruction-heavy stream", upstream)
            if upstream is None:
                up_sec, up_what = UPSTREAM["conv"]
                print(f"  upstream C++ fsim -O2 (stored, not run here): {up_sec:.3f} s for {up_what}, "
                      f"{261_002 / up_sec / 1e3:.0f} k insn/s")
            if not args.quick:
                print(f"  before (stored, not run here: {BEFORE_WHAT}): "
                      + ", ".join(f"{name} {BEFORE['conv'][name]:.3f} s" for name in devs))
                if "jit" in devs:
                    print(f"  before (stored, not run here: {BEFORE_25_WHAT}): jit {BEFORE_25:.3f} s")
                    print(f"  before (stored, not run here: {BEFORE_DOT_WHAT}): jit {BEFORE_DOT:.3f} s")
            with Environment(load_config(data_dir("configs") / "narrow.json")) as narrow:
                ndevs = {e: FunctionalSimulator(narrow, dram, engine=e, batch_gemms=not args.no_batch_gemms)
                         for e in engines}
                conv_figures(narrow, dram, ndevs, groups, args.repeat, "instruction-heavy stream on narrow.json")
                if not args.quick and BEFORE_NARROW_WHAT:
                    print(f"  before (stored, not run here: {BEFORE_NARROW_WHAT}): "
                          + ", ".join(f"{name} {BEFORE_NARROW[name]:.3f} s" for name in ndevs))
                for dev in ndevs.values():
                    dev.close()
        for dev in devs.values():
            dev.close()
    if upstream is not None:
        print("upstream comparison (ours x faster, goals: >= 4 on both GEMM streams, >= 3 on the conv-like one): "
              + ", ".join(f"{k} x{v:.2f}" for k, v in upstream.ratios.items()))
        upstream.close()


def conv_figures(env, dram, devs, groups, repeat, label, upstream=None) -> int:
    """Time the convolution-like stream on each simulator of ``devs`` (engine -> simulator) and
    print one line per engine (and the upstream peer's, with ``upstream``, after the first
    engine's); return the stream's instruction count."""
    prog = conv_stream(env, dram, groups)
    addr, count = prog.build()
    print(f"{label}: {count} instructions ({groups} groups)")
    for k, (name, dev) in enumerate(devs.items()):
        before = arena_image(dram) if upstream is not None and k == 0 else None
        sec, cpu, st = timed(dev, addr, count, repeat, warm=name == "jit")
        print(f"  {name:5s}: {sec:.3f} s [{cpu:.3f} s], "
              f"{count / sec / 1e3:.0f} [{count / cpu / 1e3:.0f}] k insn/s, "
              f"{st['gemm_counter']} GEMM and {st['alu_counter']} ALU uop-iterations")
        if before is not None:
            upstream.compare("conv-like", dram, addr, count, before, sec)
    prog.close()
    return count


if __name__ == "__main__":
    main()
