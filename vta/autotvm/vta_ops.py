"""The VTA operators as AutoTVM templates: ``conv2d_packed.vta`` and ``dense_packed.vta``.

Their knobs are the tilings of :mod:`vta.topi.tiling`: ``tile_h``, ``tile_w``, ``tile_co``,
``tile_ci`` (``define_split`` of the output rows, columns and the channel blocks) and
``oc_nthread``, ``h_nthread`` (``define_knob`` of the virtual threads); dense has ``tile_b``,
``tile_co``, ``tile_ci`` and ``oc_nthread``. ``multi_filter`` keeps exactly the tilings the
default chooser ranks (:func:`vta.topi.tiling.conv2d_candidates`: factors dividing their axes,
fitting every on-chip buffer, at most two virtual threads dividing the tiles, no tile reading
only padding), so the chooser's pick (:attr:`Task.default_index`) is one point of the space.

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
    "CONV2D",
    "DENSE",
    "conv2d_packed",
    "define_conv2d_space",
    "define_dense_space",
    "dense_packed",
    "schedule_conv2d_packed",
    "schedule_dense_packed",
    "tiling_from_config",
    "workload_of",
]

CONV2D = "conv2d_packed.vta"
DENSE = "dense_packed.vta"


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


def tiling_from_config(kind: str, cfg: Any) -> Any:
    """The :class:`Conv2DTiling` / :class:`DenseTiling` a configuration names.

    Raises
    ------
    KeyError
        If a knob is missing.
    ValueError
        If ``kind`` is not ``conv2d`` or ``dense``.
    """
    if kind == "conv2d":
        return Conv2DTiling(cfg["tile_h"].size[-1], cfg["tile_w"].size[-1], cfg["tile_co"].size[-1],
                            cfg["tile_ci"].size[-1], cfg["oc_nthread"].val, cfg["h_nthread"].val)
    if kind == "dense":
        return DenseTiling(cfg["tile_b"].size[-1], cfg["tile_co"].size[-1], cfg["tile_ci"].size[-1],
                           cfg["oc_nthread"].val)
    raise ValueError(f"tiling kind {kind!r} is not 'conv2d' or 'dense'")


def config_index(space: ConfigSpace, tiling: Any) -> int:
    """The index of ``tiling`` in ``space`` (the point whose knobs name it).

    Raises
    ------
    ValueError
        If a factor of ``tiling`` is not a value of its knob.
    """
    fields = {"tile_h": tiling.__dict__.get("tile_h"), "tile_w": tiling.__dict__.get("tile_w"),
              "tile_b": tiling.__dict__.get("tile_b"), "tile_co": tiling.tile_co, "tile_ci": tiling.tile_ci,
              "oc_nthread": tiling.oc_nthread, "h_nthread": tiling.__dict__.get("h_nthread")}
    point = []
    for name, ents in space.space_map.items():
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
    """``(task name, args, kwargs)`` of a tiling workload: the key of its records.

    Raises
    ------
    ValueError
        If ``kind`` is not ``conv2d`` or ``dense``.
    """
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
    raise ValueError(f"tiling kind {kind!r} is not 'conv2d' or 'dense'")


def _graph_workload(task: Task, env: Environment):
    from ..topi.tuned import qdense_workload
    from ..topi.qnn_build import qconv2d_workload

    if task.name == CONV2D:
        return "conv2d", qconv2d_workload(task.spec, env)
    return "dense", qdense_workload(task.spec, env)


def graph_task(op: str, spec: Any, env: Environment | None = None) -> Task:
    """The task of a graph operator (``vta.conv2d`` / ``vta.dense`` and its fused spec).

    Raises
    ------
    ValueError
        If ``op`` is not a tunable accelerator operator.
    """
    env = env or get_env()
    if op not in ("vta.conv2d", "vta.dense"):
        raise ValueError(f"operator {op!r} has no tunable template; accepted: 'vta.conv2d', 'vta.dense'")
    name = CONV2D if op == "vta.conv2d" else DENSE
    with env:
        task = Task(name, (), target=env.target, spec=spec)
        kind, wl = _graph_workload(task, env)
        _, task.args, task.kwargs = workload_of(kind, env, wl)
        space = ConfigSpace()
        (define_conv2d_space if kind == "conv2d" else define_dense_space)(space, env, wl)
        task.config_space = space
        task.flop = space.flop
        default = choose_conv2d_tiling(env, wl) if kind == "conv2d" else choose_dense_tiling(env, wl)
        task.default_index = config_index(space, default)
        task.prior = _prior(space, env, wl) if kind == "conv2d" else []
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
    if task.spec is None or task.name not in (CONV2D, DENSE):
        return None
    from ..topi import schedule_conv2d_packed as sched_conv
    from ..topi import schedule_dense_packed as sched_dense
    from ..topi.qnn_build import declare_qconv2d, declare_qdense

    env = get_env()
    kind = "conv2d" if task.name == CONV2D else "dense"
    out, pairs = (declare_qconv2d if kind == "conv2d" else declare_qdense)(task.spec, env)
    s = (sched_conv if kind == "conv2d" else sched_dense)(out, tiling_from_config(kind, config))
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
