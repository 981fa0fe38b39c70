"""What-if schedules of the compute unit: how far candidate hardware options would take ResNet-18.

Run: ``python benchmarks/compute_overlap.py [--quick] [--config FILE] [--layers C4,C7] [--depth K]
[--network [--size N]] [--search N]``.

A design study for issue 24's remaining options, not a cycle-exact level. Each ResNet-18 layer of
``benchmarks/resnet_layers.py`` (or, with ``--network``, every accelerator node of the four
residual stages of ``benchmarks/network.py``) is compiled and run on the cycle model of the
configuration (``configs/extended.json`` by default, so the epilogue already uses REQ). The
script wraps the model's timing replay to record every instruction of the stream: its unit, its
duration on the model (start to retirement), its token pops and pushes, and, for the compute
unit, its exact footprint: the accumulator rows it reads and writes (its loop nest over the
micro-ops held in the uop buffer at that point, rebuilt from the LOAD UOPs of the stream) and the
uop entries it reads or writes. It then re-schedules the compute unit's instructions under each
candidate design and prints two percentages of the GEMM bound (one GEMM micro-op per cycle): the
compute unit's span alone (compute-bound), and the whole run with the load and store units and
the token channels replayed too (each unit in order with its model durations, a pop waiting for
its push; the compute unit pushes in program order). With today's serial unit the second figure
reproduces the model's cycles (C4 51.3%, C7 67.0%, C10 78.8%, the network's four stages within
200 cycles of 7.64 M), which is what the figures of the other designs rest on. Designs:

* ``serial``: today's unit, one instruction at a time;
* ``lanes``: GEMM and ALU in parallel. Three lanes (GEMM, ALU, the LOADs of uops and
  accumulators), each in order; instructions start in stream order (one in flight per lane,
  ``--depth 1``) or from per-lane queues of ``--depth`` entries; an instruction waits for every
  older unfinished instruction of another lane whose footprint conflicts with its own (a write
  against a read or write of the same accumulator row or uop entry), so the sequential meaning
  is kept. ``lanes/range`` checks conflicts on each footprint's [min, max] interval instead of
  its rows (what a hardware range comparator sees);
* ``lanes, loads drain``: as ``lanes``, but a LOAD waits until both lanes are idle and the next
  instruction waits for the LOAD (no hazard check on the load path);
* ``+reset on ALU``: the accumulator reset runs on the ALU lane;
* ``+fused reset``: no reset pass (the first GEMM of each reduction overwrites its rows);
* ``+MOV bias``: the reset becomes an ALU copy of the bias rows and the bias ADD disappears (a new
  ALU opcode; one pass instead of two);
* ``+bias init``: no reset pass and no bias ADD (the first GEMM of each reduction starts from the
  bias rows);
* ``loads on ALU``: the LOADs of uops and accumulators run on the ALU lane (one write port per
  lane into the accumulators); ``scan``: an instruction's footprint comes from a scanner that
  reads its uop range two entries a cycle, once the previous compute instruction has started and
  no LOAD UOP into that range is in flight (``COMPUTE_OVERLAP`` is both, in hardware).

The configuration is run with ``COMPUTE_OVERLAP`` off: the records are the serial unit's.

Dropped passes keep their token pops and pushes (as zero-cycle instructions); the rest keeps its
model durations. Fetch and the memory channel's sharing between units are not re-simulated (their
effect stays as measured in the durations). ``--search N`` runs the estimator's best N tilings of
each layer and prints the best one under each design (with the token waits; a faster compute
unit may want other tiles). ``--quick`` runs C10 only.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from vta import isa  # noqa: E402
from vta.env import Environment, load_config  # noqa: E402
from vta.sim.model import simulator as model_sim  # noqa: E402

#: The compute unit's number in the model's ``unit`` column.
COMPUTE_UNIT = 1
#: How far back an instruction looks for an unfinished conflicting one.
WINDOW = 512

#: Designs printed: label -> keyword arguments of :func:`schedule`.
DESIGNS = {
    "serial": dict(serial=True),
    "serial +bias init": dict(serial=True, fuse_reset=True, drop_bias_add=True),
    "lanes": dict(),
    "lanes/range": dict(ranges=True),
    "lanes, loads drain": dict(drain_loads=True),
    "lanes +reset on ALU": dict(reset_on_alu=True),
    "lanes +fused reset": dict(fuse_reset=True),
    "lanes +MOV bias": dict(reset_on_alu=True, drop_bias_add=True),
    "lanes +bias init": dict(fuse_reset=True, drop_bias_add=True),
    "lanes/range +bias init": dict(fuse_reset=True, drop_bias_add=True, ranges=True),
    "lanes/range, loads on ALU": dict(ranges=True, loads_on_alu=True),
    "lanes/range, scan": dict(ranges=True, scan=True),
    "lanes/range, loads on ALU, scan": dict(ranges=True, loads_on_alu=True, scan=True),
}


class Capture:
    """Wraps the cycle model's timing replay; keeps one record list per device run."""

    def __init__(self):
        self.runs: list[list[dict]] = []
        self.cycles: list[int] = []
        self._orig = model_sim.CycleModel._time

    def __enter__(self) -> "Capture":
        capture = self

        def _time(sim, words, tokens, insn_addr):
            arrays = capture._orig(sim, words, tokens, insn_addr)
            capture.runs.append(records(sim.env, sim.dram, words, arrays))
            capture.cycles.append(int(arrays["end"].max()))
            return arrays

        model_sim.CycleModel._time = _time
        # a functional run is otherwise timed by the compiled call, which returns no per-instruction arrays
        self._orig_compiled = model_sim.CycleModel._time_compiled
        model_sim.CycleModel._time_compiled = lambda sim, words, tokens, insn_addr: False
        return self

    def __exit__(self, *exc) -> None:
        model_sim.CycleModel._time = self._orig
        model_sim.CycleModel._time_compiled = self._orig_compiled


def _rows(a: np.ndarray) -> frozenset:
    return frozenset(np.unique(a).tolist())


def records(env: Environment, dram, words: np.ndarray, arrays: dict) -> list[dict]:
    """The compute unit's instructions of one run: kind, model duration, footprints."""
    insns = isa.decode_program(words, env)
    udst = np.zeros(env.UOP_BUFF_DEPTH, np.int64)
    usrc = np.zeros(env.UOP_BUFF_DEPTH, np.int64)
    out = []
    empty = frozenset()
    for i, x in enumerate(insns):
        unit = int(arrays["unit"][i])
        rec = {"dur": int(arrays["end"][i] - arrays["start"][i]), "R": empty, "W": empty, "UR": empty,
               "UW": empty, "kind": "other", "unit": unit, "pops": _channels(unit, x, "pop"),
               "pushes": _channels(unit, x, "push")}
        if unit != COMPUTE_UNIT:
            rec["kind"] = "load/store unit"
        elif isinstance(x, isa.MemInsn) and x.opcode == isa.OPCODE_LOAD and x.x_size:
            n = (x.y_pad_0 + x.y_size + x.y_pad_1) * (x.x_pad_0 + x.x_size + x.x_pad_1)
            if x.memory_type == isa.MEM_UOP:
                grid = np.zeros((x.y_pad_0 + x.y_size + x.y_pad_1, x.x_pad_0 + x.x_size + x.x_pad_1), np.int64)
                for y in range(x.y_size):
                    row = np.frombuffer(dram.read((x.dram_base + y * x.x_stride) * 4, 4 * x.x_size), "<u4")
                    grid[x.y_pad_0 + y, x.x_pad_0:x.x_pad_0 + x.x_size] = row
                d, s, _ = isa.decode_uop_array(grid.reshape(-1), env)
                udst[x.sram_base:x.sram_base + n], usrc[x.sram_base:x.sram_base + n] = d, s
                rec.update(kind="load uop", UW=frozenset(range(x.sram_base, x.sram_base + n)))
            else:
                rec.update(kind="load acc", W=frozenset(range(x.sram_base, x.sram_base + n)))
        elif isinstance(x, (isa.GemmInsn, isa.AluInsn)) and x.uop_end > x.uop_bgn and x.iter_out and x.iter_in:
            io = np.arange(x.iter_out)[:, None, None]
            ii = np.arange(x.iter_in)[None, :, None]
            u = np.arange(x.uop_bgn, x.uop_end)[None, None, :]
            dst = _rows(udst[u] + io * x.dst_factor_out + ii * x.dst_factor_in)
            rec["UR"] = frozenset(range(x.uop_bgn, x.uop_end))
            rec["nu"] = x.uop_end - x.uop_bgn
            if isinstance(x, isa.GemmInsn):
                rec.update(kind="reset" if x.reset_reg else "gemm", W=dst, R=empty if x.reset_reg else dst)
            else:
                reads, src = dst, empty
                if not x.use_imm:
                    src = _rows(usrc[u] + io * x.src_factor_out + ii * x.src_factor_in)
                    reads = dst | src
                # the bias: a tensor ADD broadcasting a few rows (one per output-channel block) over
                # many (a residual ADD reads as many rows as it writes)
                bias_add = (x.alu_opcode == isa.ALU_ADD and not x.use_imm and len(dst) >= 64
                            and 8 * len(src) <= len(dst))
                rec.update(kind="bias add" if bias_add else "alu", W=dst, R=reads)
        out.append(rec)
    return out


#: Token channels by (unit, direction): the unit before it in the pipeline (prev) or after it (next).
_CHANNELS = {(0, "next"): ("g2l", "l2g"), (1, "prev"): ("l2g", "g2l"), (1, "next"): ("s2g", "g2s"),
             (2, "prev"): ("g2s", "s2g")}


def _channels(unit: int, x, what: str) -> tuple:
    """The token channels instruction ``x`` of ``unit`` pops (``what="pop"``) or pushes."""
    out = []
    for side in ("prev", "next"):
        if getattr(x, f"{what}_{side}_dep", 0) and (unit, side) in _CHANNELS:
            out.append(_CHANNELS[unit, side][0 if what == "pop" else 1])
    return tuple(out)


def _lane(kind: str, reset_on_alu: bool, loads_on_alu: bool = False) -> str:
    if kind == "gemm" or (kind == "reset" and not reset_on_alu):
        return "G"
    if kind in ("alu", "bias add", "reset") or (loads_on_alu and kind in ("load uop", "load acc")):
        return "A"
    return "M"


def _span(s: frozenset) -> tuple[int, int] | None:
    return (min(s), max(s)) if s else None


def _meets(a: tuple | None, b: tuple | None) -> bool:
    return a is not None and b is not None and a[0] <= b[1] and b[0] <= a[1]


def _conflict(a: dict, b: dict, ranges: bool) -> bool:
    if ranges:
        return (_meets(a["w"], b["w"]) or _meets(a["w"], b["r"]) or _meets(b["w"], a["r"])
                or _meets(a["uw"], b["uw"]) or _meets(a["uw"], b["ur"]) or _meets(b["uw"], a["ur"]))
    return bool(a["W"] & (b["W"] | b["R"]) or b["W"] & a["R"] or a["UW"] & (b["UR"] | b["UW"]) or b["UW"] & a["UR"])


def schedule(recs: list[dict], *, serial: bool = False, depth: int = 1, ranges: bool = False,
             reset_on_alu: bool = False, fuse_reset: bool = False, drop_bias_add: bool = False,
             drain_loads: bool = False, tokens: bool = False, loads_on_alu: bool = False,
             scan: bool = False) -> int:
    """The compute unit's span (cycles) for the records ``recs`` under one design (module docstring)."""
    rs = []
    for r in recs:
        if (fuse_reset and r["kind"] == "reset") or (drop_bias_add and r["kind"] == "bias add"):
            if not (tokens and (r["pops"] or r["pushes"])):
                continue
            r = dict(r, kind="other", dur=0, R=frozenset(), W=frozenset(), UR=frozenset(), UW=frozenset())
        if (r["kind"] == "other" and not tokens) or (r["unit"] != COMPUTE_UNIT and not tokens):
            continue
        rs.append(r)
    if serial and not tokens:
        return sum(r["dur"] for r in rs)
    start, end, disp, lane = [0] * len(rs), [0] * len(rs), [0] * len(rs), []
    per_lane: dict[str, list[int]] = {}
    pushed: dict[str, list[int]] = {c: [] for pair in _CHANNELS.values() for c in pair}
    popped = dict.fromkeys(pushed, 0)
    last_compute, retire, scan_end = -1, 0, 0
    for i, r in enumerate(rs):
        if ranges and "w" not in r:
            r["w"], r["r"], r["uw"], r["ur"] = _span(r["W"]), _span(r["R"]), _span(r["UW"]), _span(r["UR"])
        t = 0
        for c in r["pops"] if tokens else ():  # the token pushed for this pop (always by an earlier instruction)
            t = max(t, pushed[c][popped[c]])
            popped[c] += 1
        if r["unit"] != COMPUTE_UNIT:
            name = f"unit{r['unit']}"
            mine = per_lane.setdefault(name, [])
            if mine:
                t = max(t, end[mine[-1]])
            lane.append(name)
            start[i], end[i] = t, t + r["dur"]
            mine.append(i)
            for c in r["pushes"] if tokens else ():
                pushed[c].append(end[i])
            continue
        name = "S" if serial else ("N" if r["kind"] == "other" else _lane(r["kind"], reset_on_alu, loads_on_alu))
        lane.append(name)
        mine = per_lane.setdefault(name, [])
        prev = last_compute
        last_compute = i
        if depth == 1 or serial:
            t = max(t, start[prev] if prev >= 0 else 0)
        else:
            d = disp[prev] if prev >= 0 else 0
            if len(mine) >= depth:
                d = max(d, start[mine[-depth]])
            disp[i] = d
            t = max(t, d)
        if mine:
            t = max(t, end[mine[-1]])
        if drain_loads and (name == "M" or (prev >= 0 and lane[prev] == "M")):
            # a LOAD waits for both lanes and holds the next back
            t = max([t] + [end[j] for j in range(max(0, i - WINDOW), i) if rs[j]["unit"] == COMPUTE_UNIT])
        for j in range(i - 1, max(-1, i - WINDOW), -1):
            if end[j] > t and lane[j] != name and rs[j]["unit"] == COMPUTE_UNIT and _conflict(rs[j], r, ranges):
                t = end[j]
        if scan and r.get("nu"):
            # the footprint scanner reads the instruction's uops (two a cycle) once the previous
            # compute instruction has started and no older LOAD UOP into its range is in flight
            s0 = max(scan_end, start[prev] if prev >= 0 else 0)
            for j in range(i - 1, max(-1, i - WINDOW), -1):
                if rs[j]["unit"] == COMPUTE_UNIT and rs[j]["UW"] and end[j] > s0 and rs[j]["UW"] & r["UR"]:
                    s0 = end[j]
            scan_end = s0 + (r["nu"] + 1) // 2
            t = max(t, scan_end)
        start[i], end[i] = t, t + r["dur"]
        mine.append(i)
        retire = max(retire, end[i])  # in program order: the pushes of an instruction wait for the older ones
        for c in r["pushes"] if tokens else ():
            pushed[c].append(retire)
    return max(end, default=0)


def span(runs: list[list[dict]], depth: int, tokens: bool, **kw) -> int:
    """Cycles of the device runs ``runs`` (one record list each) under one design."""
    return sum(schedule(run, depth=depth, tokens=tokens, **kw) for run in runs)


def busy(runs: list[list[dict]], unit: int) -> int:
    """Cycles ``unit`` works (its instructions' model durations; 0 load, 2 store)."""
    return sum(r["dur"] for run in runs for r in run if r["unit"] == unit)


def run_layers(env: Environment, layers: list[str], depth: int) -> None:
    import resnet_layers as rl

    tot_bound, tot = 0, {name: [0, 0] for name in DESIGNS}
    with tempfile.TemporaryDirectory(prefix="vta_overlap_") as tmp:
        for name in layers:
            with Capture() as cap:
                st = rl.run_layer(name, env, Path(tmp))
            bound = rl.macs(name, env.BATCH) // (env.BATCH * env.BLOCK_IN * env.BLOCK_OUT)
            rep = rl.REPEATS[name]
            tot_bound += rep * bound
            figs = []
            for d, kw in DESIGNS.items():
                both = [span(cap.runs, depth, tok, **kw) for tok in (False, True)]
                figs.append(f"{d} {100.0 * bound / both[0]:.1f}/{100.0 * bound / both[1]:.1f}%")
                tot[d][0] += rep * both[0]
                tot[d][1] += rep * both[1]
            measured = int(st["cycle_count"])
            print(f"{name} ({'ok' if st['correct'] else 'WRONG'}): GEMM bound {bound:,}; model {measured:,} cycles = "
                  f"{100.0 * bound / measured:.1f}%; load / store unit busy {100.0 * busy(cap.runs, 0) / bound:.0f} / "
                  f"{100.0 * busy(cap.runs, 2) / bound:.0f}% of the bound; " + "; ".join(figs), flush=True)
    print(f"weighted by repeats ({', '.join(layers)}): "
          + "; ".join(f"{d} {100.0 * tot_bound / t[0]:.1f}/{100.0 * tot_bound / t[1]:.1f}%" for d, t in tot.items()))


def search_layers(env: Environment, layers: list[str], depth: int, limit: int) -> None:
    """Per layer, the estimator's best ``limit`` tilings (and the chooser's pick): the best one under
    each design, with the token waits (a faster compute unit may want other tiles)."""
    import resnet_layers as rl
    from vta.errors import ScheduleError
    from vta.topi.qnn_build import qconv2d_workload
    from vta.topi.tiling import choose_conv2d_tiling, conv2d_candidates, estimate_conv2d_cycles

    with tempfile.TemporaryDirectory(prefix="vta_overlap_") as tmp:
        for name in layers:
            h, ci, co, k, _, _ = rl.RESNET18_CONV[name]
            rng = np.random.default_rng(sorted(rl.RESNET18_CONV).index(name))  # run_layer's weights
            w = rng.integers(-16, 16, size=(co, ci, k, k)).astype(np.int8)
            with env:
                wl = qconv2d_workload(rl.layer_spec(name, w, env), env)
                chosen = choose_conv2d_tiling(env, wl)
                cands = sorted(conv2d_candidates(env, wl), key=lambda t, wl=wl: estimate_conv2d_cycles(env, wl, t))
            cands = cands[:limit] + ([chosen] if chosen not in cands[:limit] else [])
            bound = rl.macs(name, env.BATCH) // (env.BATCH * env.BLOCK_IN * env.BLOCK_OUT)
            best: dict[str, tuple[int, object]] = {}
            tried = 0
            for t in cands:
                try:
                    with Capture() as cap:
                        st = rl.run_layer(name, env, Path(tmp), t)
                except ScheduleError:
                    continue
                if not st["correct"]:
                    raise RuntimeError(f"{name} with {t}: the output differs from the NumPy oracle")
                tried += 1
                for d, kw in DESIGNS.items():
                    c = span(cap.runs, depth, True, **kw)
                    if d not in best or c < best[d][0]:
                        best[d] = (c, t)
            print(f"{name}: {tried} tilings (the estimator's best {limit} and the chooser's pick); best with the "
                  f"token waits, percent of the GEMM bound {bound:,}:", flush=True)
            for d, (c, t) in best.items():
                print(f"  {d:<24} {100.0 * bound / c:5.1f}%  {t}{'  (chosen)' if t == chosen else ''}")


def run_network(env: Environment, size: int, depth: int) -> None:
    import network as net
    from vta.graph.build_module import build
    from vta.graph.debug_executor import create as debug_create
    from vta.runtime import ext_dev

    graph = net.make_network(size)
    x = np.random.default_rng(0).integers(-32, 32, size=(1, 3, size, size)).astype(np.int8)
    with env:
        lib = build(graph)
        m = debug_create(lib.get_graph_json(), lib.get_lib(), ext_dev(0))
        m.set_input(**lib.params)
        m.set_input("data", x)
        m.profile()
        with Capture() as cap:
            rep = m.profile()
    runs = iter(zip(cap.runs, cap.cycles, strict=True))
    stage_runs, stage_cycles, nodes = [], 0, 0
    for node in rep.nodes:
        if node.device != "vta" or not node.cycles:
            continue
        got = 0
        while got < node.cycles:  # the device runs of this node, in order
            run, cycles = next(runs)
            if node.name.startswith("layer"):
                stage_runs.append(run)
            got += cycles
        if got != node.cycles:
            raise RuntimeError(f"node {node.name}: its device runs add up to {got} cycles, the report says "
                               f"{node.cycles}")
        if node.name.startswith("layer"):
            stage_cycles += node.cycles
            nodes += 1
    print(f"network {size}x{size}: {nodes} accelerator nodes in the four residual stages, model "
          f"{stage_cycles:,} cycles")
    for name, kw in DESIGNS.items():
        cb, tk = (span(stage_runs, depth, tok, **kw) for tok in (False, True))
        print(f"  {name:<24} {cb:>12,} cycles compute-bound, {tk:>12,} with the token waits")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="C10 only")
    ap.add_argument("--config", default=str(Path(__file__).resolve().parent.parent / "configs" / "extended.json"),
                    help="configuration file (default: configs/extended.json)")
    ap.add_argument("--layers", default=None, help="comma-separated layer names (default: C2..C11)")
    ap.add_argument("--depth", type=int, default=1, help="per-lane queue depth of the lanes designs (1: in-order "
                                                         "start, one instruction in flight per lane)")
    ap.add_argument("--network", action="store_true", help="the four residual stages of benchmarks/network.py")
    ap.add_argument("--size", type=int, default=224, help="with --network: the input size")
    ap.add_argument("--search", type=int, default=0, metavar="N",
                    help="per layer, run the estimator's best N tilings and print the best under each design")
    args = ap.parse_args(argv)
    from vta.dse.workloads import RESNET18_CONV

    layers = args.layers.split(",") if args.layers else (["C10"] if args.quick else list(RESNET18_CONV))
    for name in layers:
        if name not in RESNET18_CONV:
            ap.error(f"unknown layer {name!r}; accepted: {', '.join(RESNET18_CONV)}")
    if args.depth < 1:
        ap.error(f"--depth must be at least 1, got {args.depth}")
    cfg = load_config(args.config)
    cfg["TARGET"] = "model"
    cfg["COMPUTE_OVERLAP"] = False  # the records are the serial unit's; the designs re-schedule them
    env = Environment(cfg)
    print(f"configuration {Path(args.config).name} (options: {', '.join(env.options) or 'none'}); percent of the "
          f"GEMM bound compute-bound / with the token waits; lane queue depth {args.depth}")
    if args.network:
        run_network(env, args.size, args.depth)
    elif args.search:
        search_layers(env, layers, args.depth, args.search)
    else:
        run_layers(env, layers, args.depth)
    return 0


if __name__ == "__main__":
    sys.exit(main())
