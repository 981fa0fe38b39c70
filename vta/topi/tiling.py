"""Choosing tile sizes and virtual threads that fit the on-chip buffers of the active configuration.

A packed convolution is computed one output block at a time: ``tile_co`` output-channel blocks x
``tile_h`` rows x ``tile_w`` columns of accumulators; the reduction runs over ``tile_ci`` input-
channel blocks per step, each step loading the (padded) input window and the weights it needs.
Every virtual thread has its own copy of each buffer. The footprints (in SRAM entries; one entry
is one ``BATCH x BLOCK`` tile) are:

* inp: ``threads * tile_ci * in_h * in_w`` with ``in_h = (tile_h - 1) * stride + KH`` (same for w)
* wgt: ``threads * tile_ci * tile_co * KH * KW``
* acc: ``threads * (tile_co * tile_h * tile_w * (1 + residuals) + tile_co * biases)``, where the
  epilogue reads ``biases`` per-channel inputs and ``residuals`` inputs of the output's shape
* uop: ``threads *`` (GEMM kernel + reset kernel + ALU uops), a kernel keeping the two outermost
  loops of extent > 1 as hardware loops and one uop per iteration of the others.

:func:`choose_conv2d_tiling` enumerates the fitting tilings (:func:`conv2d_candidates`) and
returns the one with the least :func:`estimate_conv2d_cycles`: a replay of the instruction order
the schedule emits (per outer tile and thread: reset, per reduction step the loads and the GEMM,
the epilogue's bias load and ALU stages, the store) through the three units and the dependency
tokens the schedule passes, with the RTL's per-instruction costs (``vta.sim.model.costs``). The
replay sees what a traffic count does not: a tile's first loads wait for its reset, which waits
for the previous tile's epilogue, so few reduction steps with large loads leave the GEMM core
idle (about 12% of C2 of ResNet-18 before this estimate), while splitting the reduction hides
all but the first step's loads. :func:`choose_dense_tiling` still ranks by a simple model: loads
move ``_LOAD_BYTES_PER_CYCLE`` bytes per cycle plus a fixed cost per instruction, the GEMM core
runs one uop per cycle; with one thread loads and GEMMs take turns (times add), with two virtual
threads the loads of one thread overlap the GEMMs of the other (the larger time counts);
:func:`check_fits` raises :class:`~vta.errors.ScheduleError` naming the buffer that overflows.
``benchmarks/resnet_layers.py --search`` runs every fitting tiling of a ResNet-18 layer on the
cycle model and prints how far the chosen one is from the best.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from ..env import Environment
from ..errors import ScheduleError

__all__ = [
    "Conv2DTiling",
    "Conv2DWorkload",
    "DenseTiling",
    "DenseWorkload",
    "ROTATED_MAX_THREADS",
    "check_fits",
    "choose_conv2d_tiling",
    "choose_rotated_tiling",
    "choose_dense_tiling",
    "conv2d_candidates",
    "conv2d_footprint",
    "dense_footprint",
    "estimate_conv2d_cycles",
    "estimate_rotated_cycles",
    "rotated_candidates",
    "rotates",
]

#: Most virtual threads (on one axis) of a rotated schedule (:func:`rotates`).
ROTATED_MAX_THREADS = 4
#: Least estimated share of the GEMM bound for which a rotated tiling is chosen (the staggered
#: threads reach 64-83% of it on ResNet-18's 1x1 layers C4, C7, C10 on configs/extended.json;
#: the rotated ones 81-99% on C2-C5 and C7, which they are chosen for).
_ROTATED_MIN_SHARE = 0.8

#: Bytes a load moves per cycle (a 64-bit memory interface) and fixed cycles per instruction.
_LOAD_BYTES_PER_CYCLE = 8
_INSN_CYCLES = 32


def _estimated_cycles(load_bytes: int, insns: int, gemm_uops: int, threads: int) -> float:
    load = load_bytes / _LOAD_BYTES_PER_CYCLE + _INSN_CYCLES * insns
    return max(load, gemm_uops) if threads > 1 else load + gemm_uops
#: ALU uops per epilogue stage (one per stage per kernel, plus slack for host-loop splits).
_ALU_UOPS = 8


@dataclass(frozen=True)
class Conv2DWorkload:
    """A packed convolution: sizes in blocks (channels, batch) and pixels (spatial)."""

    n_blocks: int       # batch / BATCH
    ci_blocks: int      # input channels / BLOCK_IN
    co_blocks: int      # output channels / BLOCK_OUT
    height: int         # input height (before padding)
    width: int
    kh: int
    kw: int
    stride: tuple
    padding: tuple          # (pad_h, pad_w) symmetric, or (top, left, bottom, right)
    bias: int = 0           # per-channel (broadcast) inputs of the epilogue
    residuals: int = 0      # epilogue inputs of the output's shape (e.g. a residual connection)
    alu_stages: int = 0     # ALU stages of the epilogue when known (0: estimated from the inputs)
    #: whether the input load moves only the rows the kernel reads (a one-tap kernel along the
    #: rows with a row stride > 1: vta.topi.conv2d_packed subsamples its input)
    subsampled_rows: bool = False
    #: whether the epilogue's first stage adds a per-channel vector to the convolution's result
    #: (with ALU_MOV the tile then starts from it: vta.transform.bias_mov)
    bias_first: bool = False

    def window(self, tile_h: int, tile_w: int) -> tuple[int, int]:
        """Input rows and columns an output tile of ``tile_h`` x ``tile_w`` pixels loads."""
        in_h = tile_h if self.subsampled_rows else (tile_h - 1) * self.stride[0] + self.kh
        return in_h, (tile_w - 1) * self.stride[1] + self.kw

    def padding_only_tile(self, tile_h: int, tile_w: int) -> str | None:
        """Which spatial tile of ``tile_h`` x ``tile_w`` output pixels reads no input pixel at all
        (its window lies wholly in the padding), described for a message; ``None`` if none does.

        Such a tile's input load would move zero rows or columns, which no LOAD instruction can
        express. Tiles start every ``tile_h`` rows (``tile_w`` columns); windows move down with
        the tile, so only the first and the last tile along each axis need checking. Padding
        wider than the kernel's reach (e.g. a 1x1 kernel with padding 1) and small tiles make
        them; so does padding wider than the input and the stride's reach together (then even
        the whole axis in one tile reads only padding).
        """
        top, left, _, _ = self.pads
        for axis, tile, out, size, stride, k, pad in (("row", tile_h, self.out_height, self.height, self.stride[0],
                                                       self.kh, top),
                                                      ("column", tile_w, self.out_width, self.width, self.stride[1],
                                                       self.kw, left)):
            last = -(-out // tile) * tile - tile            # the first output pixel of the last tile
            if last * stride - pad >= size:
                return (f"the {axis} tile of output {axis}s {last}..{min(last + tile, out) - 1} reads only "
                        f"padding (its window starts at input {axis} {last * stride - pad} of {size})")
            if (tile - 1) * stride - pad + k - 1 < 0:
                return (f"the {axis} tile of output {axis}s 0..{tile - 1} reads only padding (its window ends "
                        f"above input {axis} 0)")
        return None

    @property
    def pads(self) -> tuple:
        """``(top, left, bottom, right)``."""
        p = tuple(self.padding)
        return p if len(p) == 4 else (p[0], p[1], p[0], p[1])

    @property
    def out_height(self) -> int:
        t, _, b, _ = self.pads
        return (self.height + t + b - self.kh) // self.stride[0] + 1

    @property
    def out_width(self) -> int:
        _, left, _, right = self.pads
        return (self.width + left + right - self.kw) // self.stride[1] + 1


@dataclass(frozen=True)
class Conv2DTiling:
    """Split factors of a packed convolution (inner extents) and virtual-thread counts."""

    tile_h: int
    tile_w: int
    tile_co: int
    tile_ci: int
    oc_nthread: int = 1
    h_nthread: int = 1

    @property
    def threads(self) -> int:
        return self.oc_nthread * self.h_nthread


@dataclass(frozen=True)
class DenseWorkload:
    """A packed dense layer: ``(n_blocks x BATCH, ci_blocks x BLOCK_IN) . (co_blocks x BLOCK_OUT, ...)^T``."""

    n_blocks: int
    ci_blocks: int
    co_blocks: int
    bias: int = 0           # per-channel (broadcast) inputs of the epilogue
    residuals: int = 0      # epilogue inputs of the output's shape
    alu_stages: int = 0     # ALU stages of the epilogue when known (0: estimated from the inputs)


@dataclass(frozen=True)
class DenseTiling:
    """Split factors of a packed dense layer and the output-channel virtual threads."""

    tile_b: int
    tile_co: int
    tile_ci: int
    oc_nthread: int = 1

    @property
    def threads(self) -> int:
        return self.oc_nthread


def rotates(env: Environment, wl: Conv2DWorkload, t: Conv2DTiling) -> bool:
    """Whether the convolution schedule rotates the virtual threads of ``t``
    (:mod:`vta.tir.transform.vthread_rotate`): a convolution whose tile starts from its bias
    (``wl.bias_first``) on a configuration with ``ALU_MOV`` and ``COMPUTE_OVERLAP``, threads on
    one axis, the whole reduction in one step and one
    output-channel tile per thread (its weights are then loaded once) and at least two tiles per
    thread (the rotation overlaps a thread's tiles)."""
    tiles = -(-wl.out_height // t.tile_h) * -(-wl.out_width // t.tile_w) * -(-wl.co_blocks // t.tile_co)
    return (bool(env.ALU_MOV) and bool(env.COMPUTE_OVERLAP) and wl.bias_first
            and t.threads > 1 and 1 in (t.oc_nthread, t.h_nthread) and tiles >= 2 * t.threads
            and t.tile_ci == wl.ci_blocks and t.tile_co * t.oc_nthread == wl.co_blocks)


def _kernel_uops(extents: list[int]) -> int:
    """Uops of one kernel: the two outermost loops of extent > 1 fold into hardware loops."""
    live = [e for e in extents if e > 1]
    total = 1
    for e in live[2:]:
        total *= e
    return total


def conv2d_footprint(wl: Conv2DWorkload, t: Conv2DTiling) -> dict:
    """SRAM entries (inp, wgt, acc) and uops a tiling needs (module docstring)."""
    in_h, in_w = wl.window(t.tile_h, t.tile_w)
    gemm = _kernel_uops([t.tile_co, t.tile_h, t.tile_ci, wl.kh, wl.kw, t.tile_w])
    reset = _kernel_uops([t.tile_co, t.tile_h, t.tile_w])
    stages = max(4 + int(wl.bias) + wl.residuals, wl.alu_stages)
    return {
        "inp": t.threads * t.tile_ci * in_h * in_w,
        "wgt": t.threads * t.tile_ci * t.tile_co * wl.kh * wl.kw,
        "acc": t.threads * (t.tile_co * t.tile_h * t.tile_w * (1 + wl.residuals) + t.tile_co * int(wl.bias)),
        "uop": t.threads * (gemm + reset + stages * _ALU_UOPS),
    }


def dense_footprint(wl: DenseWorkload, t: DenseTiling) -> dict:
    """SRAM entries (inp, wgt, acc) and uops of a dense tiling."""
    gemm = _kernel_uops([t.tile_ci, t.tile_b, t.tile_co])
    reset = _kernel_uops([t.tile_b, t.tile_co])
    stages = max(4 + int(wl.bias) + wl.residuals, wl.alu_stages)
    return {
        "inp": t.threads * t.tile_ci * t.tile_b,
        "wgt": t.threads * t.tile_ci * t.tile_co,
        "acc": t.threads * (t.tile_b * t.tile_co * (1 + wl.residuals) + t.tile_co * int(wl.bias)),
        "uop": t.threads * (gemm + reset + stages * _ALU_UOPS),
    }


def _capacity(env: Environment) -> dict:
    return {"inp": env.INP_BUFF_DEPTH, "wgt": env.WGT_BUFF_DEPTH, "acc": env.ACC_BUFF_DEPTH, "uop": env.UOP_BUFF_DEPTH}


def check_fits(env: Environment, footprint: dict, what: str) -> None:
    """Raise if a footprint exceeds a buffer of ``env``.

    Raises
    ------
    ScheduleError
        Naming every overflowing buffer, its need, its capacity and the excess.
    """
    cap = _capacity(env)
    over = []
    for key in ("inp", "wgt", "acc", "uop"):
        if footprint[key] > cap[key]:
            unit = "uops" if key == "uop" else "entries"
            over.append(f"the {key} buffer overflows by {footprint[key] - cap[key]} {unit} "
                        f"(needs {footprint[key]}, the {key} buffer of this configuration holds {cap[key]})")
    if over:
        raise ScheduleError(f"{what}: " + "; ".join(over))


def _divisors(x: int) -> list[int]:
    return [d for d in range(1, x + 1) if x % d == 0]


def _fits(env: Environment, fp: dict) -> bool:
    cap = _capacity(env)
    return all(fp[k] <= cap[k] for k in cap)


def conv2d_candidates(env: Environment, wl: Conv2DWorkload):
    """Every tiling of ``wl`` that fits ``env``'s buffers: split factors dividing their axes and
    at most two virtual threads dividing the outer output-channel or row tiles, no spatial tile
    reading only padding (:meth:`Conv2DWorkload.padding_only_tile`)."""
    oh, ow = wl.out_height, wl.out_width
    for th, tw, tco, tci, ocn, hn in product(_divisors(oh), _divisors(ow), _divisors(wl.co_blocks),
                                             _divisors(wl.ci_blocks), (1, 2), (1, 2)):
        if ocn * hn > 2 or (wl.co_blocks // tco) % ocn or (oh // th) % hn or wl.padding_only_tile(th, tw):
            continue
        t = Conv2DTiling(th, tw, tco, tci, ocn, hn)
        if _fits(env, conv2d_footprint(wl, t)):
            yield t


#: Ranking constants: per instruction, GEMM/ALU pipeline fill, a LOAD's latency, bytes per beat,
#: a STORE's cycles per element besides its beats. They were the RTL's costs before the one-cycle
#: sequencer; the RTL now costs 1, 1 and 5 (``vta.sim.model.costs``), but those constants rank the
#: ResNet-18 tilings no better (with them C2 and C8 pick tilings 0.7% and 0.1% slower, C9 one
#: 0.02% faster, the other layers the same ones), so the estimate keeps these.
_OVERHEAD, _FILL, _LOAD_LAT, _BEAT, _STORE_ELEM = 3, 8, 7, 8, 1


def _conv2d_unit_costs(env: Environment, wl: Conv2DWorkload, t: Conv2DTiling) -> dict:
    """Cycles of one thread's instructions per outer tile in the order the schedule emits them."""
    th, tw, tco, tci = t.tile_h, t.tile_w, t.tile_co, t.tile_ci
    in_h, in_w = wl.window(th, tw)
    n = wl.n_blocks * tco * th * tw  # accumulator entries of a tile
    pad = any(p > 0 for p in wl.pads)
    inp_beats = max(env.INP_ELEM_BYTES // _BEAT, 1)
    wgt_beats = max(env.WGT_ELEM_BYTES // _BEAT, 1)
    acc_beats = max(env.ACC_ELEM_BYTES // _BEAT, 1)
    out_beats = max(env.OUT_ELEM_BYTES // _BEAT, 1)
    # one input load per input-channel block (rows x columns of the window, pad cycles on edges)
    inp = tci * (_OVERHEAD + _LOAD_LAT + wl.n_blocks * in_h * in_w * inp_beats + (2 * in_w if pad else 0))
    wgt = _OVERHEAD + _LOAD_LAT + tci * tco * wl.kh * wl.kw * wgt_beats
    stages = max(4 + int(wl.bias) + wl.residuals, wl.alu_stages)  # one uop per entry and cycle each
    alu = stages * (_OVERHEAD + _FILL) + n * stages
    alu += int(wl.bias) * (_OVERHEAD + _LOAD_LAT + tco * acc_beats)
    store = tco * (_OVERHEAD + wl.n_blocks * th * (1 + tw * (1 + out_beats)))
    return {"reset": n + _FILL + _OVERHEAD, "load": inp + wgt,
            "gemm": n * tci * wl.kh * wl.kw + _FILL + _OVERHEAD, "alu": alu, "store": store}


def estimate_conv2d_cycles(env: Environment, wl: Conv2DWorkload, t: Conv2DTiling) -> float:
    """Cycles of the scheduled convolution, from a replay of its instruction order and tokens.

    Per outer tile (one per virtual thread), the compute unit runs every thread's reset, then per
    reduction step every thread's GEMM, then every thread's epilogue (bias load, ALU stages);
    the load unit runs every thread's input and weight loads per step and the store unit every
    thread's store. A load of the first step waits for its thread's reset (the token the
    schedule passes), a later one for its thread's previous GEMM; a GEMM waits for its load, a
    store for its epilogue, a reset for the thread's previous store. Four outer tiles are
    replayed and the last one's time extrapolated over the rest.
    """
    c = _conv2d_unit_costs(env, wl, t)
    T = t.threads
    steps = wl.ci_blocks // t.tile_ci
    groups = (wl.out_height // t.tile_h) * (wl.out_width // t.tile_w) * (wl.co_blocks // t.tile_co) // T
    comp = ld = st = 0.0
    store_done = [0.0] * T
    ends = []
    for _ in range(min(groups, 4)):
        ready = []
        for th in range(T):
            comp = max(comp, store_done[th]) + c["reset"]
            ready.append(comp)
        for _k in range(steps):
            loaded = []
            for th in range(T):
                ld = max(ld, ready[th]) + c["load"]
                loaded.append(ld)
            for th in range(T):
                comp = max(comp, loaded[th]) + c["gemm"]
                ready[th] = comp
        for th in range(T):
            comp += c["alu"]
            st = max(st, comp) + c["store"]
            store_done[th] = st
        ends.append(max(comp, st))
    last = ends[-1] - (ends[-2] if len(ends) > 1 else 0.0)
    return ends[-1] + (groups - len(ends)) * last


def rotated_candidates(env: Environment, wl: Conv2DWorkload):
    """Every fitting tiling the schedule rotates (:func:`rotates`): 2 or up to
    ``ROTATED_MAX_THREADS`` threads on one axis dividing its tiles, the whole reduction per
    tile, one output-channel tile per thread; nothing when the configuration or kernel does
    not allow rotated threads."""
    if not (env.ALU_MOV and env.COMPUTE_OVERLAP):
        return
    oh, ow = wl.out_height, wl.out_width
    for th, tw, nt, on_oc in product(_divisors(oh), _divisors(ow), range(2, ROTATED_MAX_THREADS + 1),
                                     (False, True)):
        if on_oc:
            if wl.co_blocks % nt:
                continue
            t = Conv2DTiling(th, tw, wl.co_blocks // nt, wl.ci_blocks, nt, 1)
        else:
            if (oh // th) % nt:
                continue
            t = Conv2DTiling(th, tw, wl.co_blocks, wl.ci_blocks, 1, nt)
        if rotates(env, wl, t) and not wl.padding_only_tile(th, tw) and _fits(env, conv2d_footprint(wl, t)):
            yield t


def estimate_rotated_cycles(env: Environment, wl: Conv2DWorkload, t: Conv2DTiling) -> float:
    """Cycles of a rotated schedule (:mod:`vta.tir.transform.vthread_rotate`): the first round
    of tiles waits for the weights (once when the threads share them, split over the rows;
    per thread otherwise) and each thread's first input; then one tile per GEMM time or per
    load, store or second-lane (bias copy and epilogue) time, whichever is longest; then the
    last tile's epilogue and store."""
    c = _conv2d_unit_costs(env, wl, t)
    n = t.threads
    rows = wl.n_blocks * t.tile_co * t.tile_h * t.tile_w
    tiles = (wl.out_height // t.tile_h) * (wl.out_width // t.tile_w) * (wl.co_blocks // t.tile_co)
    wgt = _OVERHEAD + _LOAD_LAT + t.tile_co * wl.ci_blocks * wl.kh * wl.kw * max(env.WGT_ELEM_BYTES // _BEAT, 1)
    inp = c["load"] - (_OVERHEAD + _LOAD_LAT + t.tile_ci * t.tile_co * wl.kh * wl.kw
                       * max(env.WGT_ELEM_BYTES // _BEAT, 1))
    shared = t.oc_nthread == 1
    epilogue = rows + wl.alu_stages * (_OVERHEAD + _FILL)
    copy = rows + _OVERHEAD + _LOAD_LAT + _FILL
    per_tile = max(c["gemm"], inp, c["store"], epilogue + copy)
    ld = wgt if shared else 0.0
    gemm = 0.0
    for _ in range(n):
        ld += inp + (0 if shared else wgt)
        gemm = max(gemm, ld) + c["gemm"]
    return gemm + (tiles - n) * per_tile + epilogue + c["store"]


def _heuristic_conv2d_cost(env: Environment, wl: Conv2DWorkload, t: Conv2DTiling) -> tuple:
    """The traffic estimate the chooser used before the pipeline estimate (kept for comparison)."""
    oh, ow = wl.out_height, wl.out_width
    padded = any(p > 0 for p in wl.pads)
    th, tw, tco, tci = t.tile_h, t.tile_w, t.tile_co, t.tile_ci
    in_h, in_w = wl.window(th, tw)
    spatial = (oh // th) * (ow // tw)
    co_tiles = wl.co_blocks // tco
    steps = spatial * co_tiles * (wl.ci_blocks // tci)
    inp_bytes = steps * tci * in_h * in_w * env.INP_ELEM_BYTES
    wgt_bytes = steps * tci * tco * wl.kh * wl.kw * env.WGT_ELEM_BYTES
    # Per step: one weight load, one input load per channel block when padded, one GEMM kernel.
    insns = steps * (2 + (tci if padded else 1)) + spatial * co_tiles * (tco + 6)
    gemm = wl.n_blocks * spatial * th * tw * co_tiles * tco * wl.ci_blocks * wl.kh * wl.kw
    cost = _estimated_cycles(inp_bytes + wgt_bytes, insns, gemm, t.threads)
    return (cost, insns, -tw)


def choose_rotated_tiling(env: Environment, wl: Conv2DWorkload) -> Conv2DTiling | None:
    """The rotated tiling (:func:`rotated_candidates`) with the least
    :func:`estimate_rotated_cycles`, two threads counted 10% slower (measured on ResNet-18 C4
    and C7: with two, a tile's epilogue queues ahead of the other thread's GEMM and its micro-op
    load), on ties the tiling loading fewer input pixels (C4: 7x2 tiles, 28,374 cycles, against
    1x14, 29,131), then larger tiles; ``None`` when there is none or its estimate is below
    :data:`_ROTATED_MIN_SHARE` of the GEMM bound (the weights of the whole layer then take too
    long before the first GEMM, e.g. ResNet-18 C10: the lock-step or staggered threads do
    better)."""
    best, best_key = None, None
    for t in rotated_candidates(env, wl):
        est = estimate_rotated_cycles(env, wl, t)
        in_h, in_w = wl.window(t.tile_h, t.tile_w)
        moved = in_h * in_w * (wl.out_height // t.tile_h) * (wl.out_width // t.tile_w)
        key = (est * (1.1 if t.threads == 2 else 1.0), moved, -t.tile_h * t.tile_w * t.tile_co)
        if best_key is None or key < best_key:
            best, best_key, best_est = t, key, est
    if best is None:
        return None
    bound = wl.n_blocks * wl.out_height * wl.out_width * wl.co_blocks * wl.ci_blocks * wl.kh * wl.kw
    return best if bound >= _ROTATED_MIN_SHARE * best_est else None


def choose_conv2d_tiling(env: Environment, wl: Conv2DWorkload) -> Conv2DTiling:
    """The fitting convolution tiling with the least estimated time: the rotated one
    (:func:`choose_rotated_tiling`) where there is one, else the least
    :func:`estimate_conv2d_cycles`.

    Raises
    ------
    ScheduleError
        If not even the smallest tiling (1 x 1 pixels, one block of each channel, one thread) fits;
        the message names the overflowing buffer and by how much.
        Also if some spatial tile reads only padding even with the whole output in one tile.
    """
    rotated = choose_rotated_tiling(env, wl)
    if rotated is not None:
        return rotated
    best, best_cost = None, None
    for t in conv2d_candidates(env, wl):
        key = (estimate_conv2d_cycles(env, wl, t), -t.tile_w)
        if best_cost is None or key < best_cost:
            best, best_cost = t, key
    if best is None:
        check_fits(env, conv2d_footprint(wl, Conv2DTiling(1, 1, 1, 1)), "conv2d_packed")
        empty = wl.padding_only_tile(wl.out_height, wl.out_width)
        if empty:
            raise ScheduleError(f"conv2d_packed: {wl!r}: {empty}, even with the whole output in one tile")
        raise ScheduleError(f"conv2d_packed: no tiling of {wl!r} fits this configuration")
    return best


def choose_dense_tiling(env: Environment, wl: DenseWorkload) -> DenseTiling:
    """The fitting dense tiling with the least estimated traffic.

    Raises
    ------
    ScheduleError
        If the smallest tiling does not fit (the message names the buffer and the excess).
    """
    best, best_cost = None, None
    for tb, tco, tci, ocn in product(_divisors(wl.n_blocks), _divisors(wl.co_blocks), _divisors(wl.ci_blocks),
                                     (1, 2)):
        if (wl.co_blocks // tco) % ocn:
            continue
        t = DenseTiling(tb, tco, tci, ocn)
        fp = dense_footprint(wl, t)
        if not _fits(env, fp):
            continue
        tiles = (wl.n_blocks // tb) * (wl.co_blocks // tco)
        steps = tiles * (wl.ci_blocks // tci)
        insns = steps * 3 + tiles * (tb + 6)
        load = steps * (tci * tb * env.INP_ELEM_BYTES + tci * tco * env.WGT_ELEM_BYTES)
        cost = _estimated_cycles(load, insns, wl.n_blocks * wl.co_blocks * wl.ci_blocks, t.threads)
        key = (cost, insns)
        if best_cost is None or key < best_cost:
            best, best_cost = t, key
    if best is None:
        check_fits(env, dense_footprint(wl, DenseTiling(1, 1, 1)), "dense_packed")
        raise ScheduleError(f"dense_packed: no tiling of {wl!r} fits this configuration")
    return best
