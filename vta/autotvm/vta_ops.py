"""The VTA operators as AutoTVM templates: ``conv2d_packed.vta`` and ``dense_packed.vta``; the
graph's grouped convolutions (``group_conv2d_packed.vta``) and ALU-only operators (``add.vta``,
``multiply.vta``) as tasks of :func:`vta.autotvm.extract_from_program`.

Their knobs are the tilings of :mod:`vta.topi.tiling`: ``tile_h``, ``tile_w``, ``tile_co``,
``tile_ci`` (``define_split`` of the output rows, columns and the channel blocks) and
``oc_nthread``, ``h_nthread`` (``define_knob`` of the virtual threads); dense has ``tile_b``,
``tile_co``, ``tile_ci`` and ``oc_nthread``. ``multi_filter`` keeps exactly the tilings the
default chooser ranks (:func:`vta.topi.tiling.conv2d_candidates`: factors dividing their axes,
fitting every on-chip buffer, at most two virtual threads dividing the tiles, no tile reading
only padding), so the chooser's pick (:attr:`Task.default_index`) is one point of the space.
A grouped convolution has the conv2d knobs over one group's workload (``tile_co`` splits the
output blocks of one group). An ALU-only operator (:mod:`vta.topi.alu_tiling`) has ``tile_c``
and ``tile_h`` (``define_split`` of the channel blocks and the rows of one accumulator tile),
filtered to the tiles whose operands fit the accumulator.

Two kinds of task share the names. A *template task* (``autotvm.task.create``) computes the
packed operator followed by upstream's benchmark epilogue (``>> 8``, clip, cast:
:func:`vta.topi.requantize`). A *graph task* (:func:`vta.autotvm.extract_from_program`) carries
the fused operator's spec and is measured exactly as the graph build compiles it
(:func:`vta.topi.qnn.build_qconv2d` with the candidate tiling); its ``args`` / ``kwargs`` describe
the workload the schedule tiles (:func:`workload_of`), which is also how the graph build finds
its record under ``apply_history_best``.
"""

from __future__ import annotations

from typing import Any

from ..env import Environment, get_env
from ..errors import ScheduleError
from ..topi.alu_tiling import AluTiling, alu_candidates, choose_alu_tiling
from ..topi.tiling import (
    Conv2DTiling,
    Conv2DWorkload,
    DenseTiling,
    DenseWorkload,
    choose_conv2d_tiling,
    choose_dense_tiling,
    conv2d_footprint,
    dense_footprint,
)
from .space import ConfigSpace
from .task import Task, register_special, register_topi_compute, register_topi_schedule

__all__ = [
    "ADD",
    "ALU_TASKS",
    "CONV2D",
    "DENSE",
    "GROUP_CONV2D",
    "MULTIPLY",
    "conv2d_packed",
    "define_conv2d_space",
    "define_alu_space",
    "define_dense_space",
    "dense_packed",
    "schedule_conv2d_packed",
    "schedule_dense_packed",
    "tiling_from_config",
    "workload_of",
]

CONV2D = "conv2d_packed.vta"
DENSE = "dense_packed.vta"
GROUP_CONV2D = "group_conv2d_packed.vta"
ADD = "add.vta"
MULTIPLY = "multiply.vta"
#: The ALU-only tasks by kind.
ALU_TASKS = {"add": ADD, "multiply": MULTIPLY}
#: Task name -> the tiling kind its configurations name.
_KIND = {CONV2D: "conv2d", GROUP_CONV2D: "group_conv2d", DENSE: "dense", ADD: "add", MULTIPLY: "multiply"}


def _fits(env: Environment, fp: dict) -> bool:
    cap = {"inp": env.INP_BUFF_DEPTH, "wgt": env.WGT_BUFF_DEPTH, "acc": env.ACC_BUFF_DEPTH, "uop": env.UOP_BUFF_DEPTH}
    return all(fp[k] <= cap[k] for k in cap)


# ------------------------------------------------------------------------------- spaces
def define_conv2d_space(cfg: Any, env: Environment, wl: Conv2DWorkload) -> None:
    """The conv2d knobs of ``wl`` on ``cfg`` (module docstring)."""
    cfg.define_split("tile_h", wl.out_height, num_outputs=2)
    cfg.define_split("tile_w", wl.out_width, num_outputs=2)
    cfg.define_split("tile_co", wl.co_blocks, num_outputs=2)
    cfg.define_split("tile_ci", wl.ci_blocks, num_outputs=2)
    cfg.define_knob("oc_nthread", [1, 2])
    cfg.define_knob("h_nthread", [1, 2])

    def valid(e) -> bool:
        t = tiling_from_config("conv2d", e)
        if t.threads > 2 or (wl.co_blocks // t.tile_co) % t.oc_nthread or (wl.out_height // t.tile_h) % t.h_nthread:
            return False
        return not wl.padding_only_tile(t.tile_h, t.tile_w) and _fits(env, conv2d_footprint(wl, t))

    cfg.multi_filter(valid)
    cfg.add_flop(2 * wl.n_blocks * env.BATCH * wl.co_blocks * env.BLOCK_OUT * wl.out_height * wl.out_width
                 * wl.ci_blocks * env.BLOCK_IN * wl.kh * wl.kw)


def define_dense_space(cfg: Any, env: Environment, wl: DenseWorkload) -> None:
    """The dense knobs of ``wl`` on ``cfg`` (module docstring)."""
    cfg.define_split("tile_b", wl.n_blocks, num_outputs=2)
    cfg.define_split("tile_co", wl.co_blocks, num_outputs=2)
    cfg.define_split("tile_ci", wl.ci_blocks, num_outputs=2)
    cfg.define_knob("oc_nthread", [1, 2])

    def valid(e) -> bool:
        t = tiling_from_config("dense", e)
        return (wl.co_blocks // t.tile_co) % t.oc_nthread == 0 and _fits(env, dense_footprint(wl, t))

    cfg.multi_filter(valid)
    cfg.add_flop(2 * wl.n_blocks * env.BATCH * wl.co_blocks * env.BLOCK_OUT * wl.ci_blocks * env.BLOCK_IN)


def define_alu_space(cfg: Any, env: Environment, wl: Any) -> None:
    """The knobs of an ALU-only operator (module docstring): every tiling
    :func:`vta.topi.alu_tiling.alu_candidates` gives."""
    cfg.define_split("tile_c", wl.c_blocks, num_outputs=2)
    cfg.define_split("tile_h", wl.height, num_outputs=2)
    fitting = set(alu_candidates(env, wl))
    cfg.multi_filter(lambda e: tiling_from_config(wl.kind, e) in fitting)
    cfg.add_flop(wl.n_blocks * env.BATCH * wl.c_blocks * env.BLOCK_OUT * wl.height * wl.width * max(wl.alu_stages, 1))


def tiling_from_config(kind: str, cfg: Any) -> Any:
    """The :class:`Conv2DTiling` / :class:`DenseTiling` / :class:`AluTiling` a configuration names.

    Raises
    ------
    KeyError
        If a knob is missing.
    ValueError
        If ``kind`` is not ``conv2d``, ``group_conv2d``, ``dense``, ``add`` or ``multiply``.
    """
    if kind in ("add", "multiply"):
        return AluTiling(cfg["tile_c"].size[-1], cfg["tile_h"].size[-1])
    if kind in ("conv2d", "group_conv2d"):
        return Conv2DTiling(cfg["tile_h"].size[-1], cfg["tile_w"].size[-1], cfg["tile_co"].size[-1],
                            cfg["tile_ci"].size[-1], cfg["oc_nthread"].val, cfg["h_nthread"].val)
    if kind == "dense":
        return DenseTiling(cfg["tile_b"].size[-1], cfg["tile_co"].size[-1], cfg["tile_ci"].size[-1],
                           cfg["oc_nthread"].val)
    raise ValueError(f"tiling kind {kind!r} is not 'conv2d', 'group_conv2d', 'dense', 'add' or 'multiply'")


def config_index(space: ConfigSpace, tiling: Any) -> int:
    """The index of ``tiling`` in ``space`` (the point whose knobs name it).

    Raises
    ------
    ValueError
        If a factor of ``tiling`` is not a value of its knob.
    """
    fields = dict(tiling.__dict__)
    point = []
    for name, ents in space.space_map.items():
        if name not in fields:
            raise ValueError(f"{tiling!r} has no factor for the knob {name!r}")
        want = fields[name]
        for i, e in enumerate(ents):
            if (e.size[-1] if e.kind == "sp" else e.val) == want:
                point.append(i)
                break
        else:
            raise ValueError(f"{tiling!r}: {name}={want!r} is not a value of that knob")
    return space.index_of(point)


# ------------------------------------------------------------------------------- workloads
def workload_of(kind: str, env: Environment, wl: Any) -> tuple:
    """``(task name, args, kwargs)`` of a tiling workload: the key of its records (a
    ``group_conv2d`` workload is ``(per-group workload, groups)``).

    Raises
    ------
    ValueError
        If ``kind`` is not ``conv2d``, ``group_conv2d``, ``dense``, ``add`` or ``multiply``.
    """
    if kind == "group_conv2d":
        wl, groups = wl
        args = (("TENSOR", (wl.n_blocks, wl.ci_blocks * groups, wl.height, wl.width, env.BATCH, env.BLOCK_IN),
                 env.inp_dtype),
                ("TENSOR", (wl.co_blocks * groups, wl.ci_blocks, wl.kh, wl.kw, env.BLOCK_OUT, env.BLOCK_IN),
                 env.wgt_dtype),
                tuple(wl.stride), tuple(wl.pads), (1, 1), int(groups), env.acc_dtype)
        kwargs = {"bias": int(wl.bias), "residuals": int(wl.residuals), "alu_stages": int(wl.alu_stages),
                  "subsampled_rows": bool(wl.subsampled_rows)}
        return GROUP_CONV2D, args, kwargs
    if kind in ALU_TASKS:
        shape = (wl.n_blocks, wl.c_blocks, wl.height, wl.width, env.BATCH, env.BLOCK_OUT)
        rhs = (wl.n_blocks, wl.c_blocks, 1, 1, env.BATCH, env.BLOCK_OUT) if wl.rhs_broadcast else shape
        args = (("TENSOR", shape, env.inp_dtype), ("TENSOR", rhs, env.inp_dtype))
        return ALU_TASKS[kind], args, {"alu_stages": int(wl.alu_stages)}
    if kind == "conv2d":
        args = (("TENSOR", (wl.n_blocks, wl.ci_blocks, wl.height, wl.width, env.BATCH, env.BLOCK_IN), env.inp_dtype),
                ("TENSOR", (wl.co_blocks, wl.ci_blocks, wl.kh, wl.kw, env.BLOCK_OUT, env.BLOCK_IN), env.wgt_dtype),
                tuple(wl.stride), tuple(wl.pads), (1, 1), env.acc_dtype)
        kwargs = {"bias": int(wl.bias), "residuals": int(wl.residuals), "alu_stages": int(wl.alu_stages),
                  "subsampled_rows": bool(wl.subsampled_rows)}
        return CONV2D, args, kwargs
    if kind == "dense":
        args = (("TENSOR", (wl.n_blocks, wl.ci_blocks, env.BATCH, env.BLOCK_IN), env.inp_dtype),
                ("TENSOR", (wl.co_blocks, wl.ci_blocks, env.BLOCK_OUT, env.BLOCK_IN), env.wgt_dtype), env.acc_dtype)
        kwargs = {"bias": int(wl.bias), "residuals": int(wl.residuals), "alu_stages": int(wl.alu_stages)}
        return DENSE, args, kwargs
    raise ValueError(f"tiling kind {kind!r} is not 'conv2d', 'group_conv2d', 'dense', 'add' or 'multiply'")


def graph_task(op: str, spec: Any, env: Environment | None = None) -> Task:
    """The task of a graph operator (``vta.conv2d`` plain or grouped, ``vta.dense``, ``vta.add``,
    ``vta.multiply``, with its spec).

    Raises
    ------
    ValueError
        If ``op`` is not a tunable accelerator operator.
    """
    from ..topi.tuned import workload_kind

    env = env or get_env()
    if op not in ("vta.conv2d", "vta.dense", "vta.add", "vta.multiply"):
        raise ValueError(f"operator {op!r} has no tunable template; accepted: 'vta.conv2d', 'vta.dense', "
                         f"'vta.add', 'vta.multiply'")
    with env:
        kind, wl = workload_kind(op, spec, env)
        name, args, kwargs = workload_of(kind, env, wl)
        task = Task(name, (), target=env.target, spec=spec)
        task.args, task.kwargs = args, kwargs
        space = ConfigSpace()
        if kind in ALU_TASKS:
            define_alu_space(space, env, wl)
            default = choose_alu_tiling(env, wl)
        elif kind == "dense":
            define_dense_space(space, env, wl)
            default = choose_dense_tiling(env, wl)
        else:
            base = wl[0] if kind == "group_conv2d" else wl
            define_conv2d_space(space, env, base)
            default = choose_conv2d_tiling(env, base)
        task.config_space = space
        task.flop = space.flop * (wl[1] if kind == "group_conv2d" else 1)
        task.default_index = config_index(space, default)
        task.prior = _prior(space, env, wl[0] if kind == "group_conv2d" else wl) \
            if kind in ("conv2d", "group_conv2d") else []
    return task


def _prior(space: ConfigSpace, env: Environment, wl: Conv2DWorkload, count: int = 32) -> list[int]:
    """The ``count`` valid points the chooser's estimate ranks best (a model tuner's first plan)."""
    from ..topi.tiling import estimate_conv2d_cycles

    ranked = sorted(space.valid_indices(),
                    key=lambda i: estimate_conv2d_cycles(env, wl, tiling_from_config("conv2d", space.get(i))))
    return ranked[:count]


def instantiate_special(task: Task, config: Any):
    """``(s, args)`` of a graph task (its spec declared, scheduled with the configuration's
    tiling); None for other tasks."""
    if task.spec is None or task.name not in _KIND:
        return None
    from ..topi import schedule_conv2d_packed as sched_conv
    from ..topi import schedule_dense_packed as sched_dense
    from ..topi.group_conv2d import schedule_group_conv2d_packed as sched_group
    from ..topi.qnn_build import declare_qadd, declare_qconv2d, declare_qdense, schedule_alu_op
    from ..topi.qnn_mul import declare_qmul

    env = get_env()
    kind = _KIND[task.name]
    tiling = tiling_from_config(kind, config)
    if kind in ALU_TASKS:
        s, pairs = schedule_alu_op(kind, task.spec, declare_qadd if kind == "add" else declare_qmul, env, tiling)
        return s, [t for _, t in pairs]
    out, pairs = (declare_qdense if kind == "dense" else declare_qconv2d)(task.spec, env)
    s = {"conv2d": sched_conv, "group_conv2d": sched_group, "dense": sched_dense}[kind](out, tiling)
    return s, [t for _, t in pairs]


def define_space_special(task: Task):
    """Graph tasks already hold their space; None for the others (the template defines it)."""
    return task.config_space if task.spec is not None else None


register_special(instantiate_special, define_space_special)


# ------------------------------------------------------------------------------- templates
@register_topi_compute(CONV2D)
def conv2d_packed(cfg, data, kernel, strides, padding, dilation=(1, 1), out_dtype="int32"):
    """The packed convolution with upstream's benchmark epilogue (``>> 8``, clip to [0, 127], cast)."""
    from .. import topi

    return topi.requantize(topi.conv2d_packed(data, kernel, strides, padding, out_dtype, dilation))


@register_topi_schedule(CONV2D)
def schedule_conv2d_packed(cfg, outs):
    """:func:`vta.topi.schedule_conv2d_packed` with the configuration's tiling (the default
    chooser's when the configuration is a fallback or the space being defined)."""
    from .. import topi
    from ..topi._traverse import classify
    from ..topi.conv2d import CONV2D_TAG, conv2d_workload, epilogue_workload

    env = get_env()
    graph = classify(outs, CONV2D_TAG, "schedule_conv2d_packed")
    wl = epilogue_workload(graph, conv2d_workload(graph.core))
    define_conv2d_space(cfg, env, wl)
    tiling = None if isinstance(cfg, ConfigSpace) else tiling_from_config("conv2d", cfg)
    if tiling is not None and not _fits(env, conv2d_footprint(wl, tiling)):
        raise ScheduleError(f"{tiling!r} does not fit this configuration's buffers")
    return topi.schedule_conv2d_packed(outs, tiling)


@register_topi_compute(DENSE)
def dense_packed(cfg, data, weight, out_dtype="int32"):
    """The packed dense layer with upstream's benchmark epilogue."""
    from .. import topi

    return topi.requantize(topi.dense_packed(data, weight, out_dtype))


@register_topi_schedule(DENSE)
def schedule_dense_packed(cfg, outs):
    """:func:`vta.topi.schedule_dense_packed` with the configuration's tiling."""
    from .. import topi
    from ..topi._traverse import classify, epilogue_inputs
    from ..topi.dense import DENSE_TAG, dense_workload
    from ..topi.dispatch import tuned_tiling  # noqa: F401  (the fallback path consults it)

    env = get_env()
    graph = classify(outs, DENSE_TAG, "schedule_dense_packed")
    biases, residuals = epilogue_inputs(graph, spatial_dims=(0,))
    wl = dense_workload(graph.core, biases, residuals)
    from dataclasses import replace

    wl = replace(wl, alu_stages=len(graph.ewise))
    define_dense_space(cfg, env, wl)
    tiling = None if isinstance(cfg, ConfigSpace) else tiling_from_config("dense", cfg)
    return topi.schedule_dense_packed(outs, tiling)
