"""Measuring candidates on the simulated accelerator (``autotvm.measure``).

``measure_option(builder=LocalBuilder(), runner=LocalRunner())`` says how: each candidate is
built (``vta.build``, or :func:`vta.topi.qnn.build_qconv2d` for a graph task) and run once on
the level the runner names: the cycle model (``"model"``, the default: exact against tsim) or
tsim (``"tsim"``). That run computes the output too; it is compared with the operator's
reference (NumPy for the VTA operators, the plain schedule compiled for the host CPU for other
templates), so a wrong candidate becomes an error record (``WRONG_ANSWER``), never a best.
Further repeats (``number x repeat`` > 1) run the cycle model timing-only. A record's cost is
the simulated time at :data:`CLOCK_HZ`.

Candidates run in parallel on Dask: an embedded ``LocalCluster`` (``n_parallel`` workers, by
default the cores; one cluster per process, reused across tasks), or an existing cluster
(``LocalRunner(cluster="tcp://host:8786")``, or ``RPCRunner(key, host, port)`` whose tracker is
that scheduler). ``n_parallel=0`` measures in this process.
"""

from __future__ import annotations

import atexit
import os
import time
import traceback
from collections import namedtuple
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "CLOCK_HZ",
    "LocalBuilder",
    "LocalRunner",
    "MeasureErrorNo",
    "MeasureInput",
    "MeasureResult",
    "RPCRunner",
    "close_clusters",
    "measure_candidate",
    "measure_option",
]

#: The clock costs are given at (simulated cycles / CLOCK_HZ seconds): 1 GHz, so a cost in
#: nanoseconds is a cycle count.
CLOCK_HZ = 1.0e9

MeasureInput = namedtuple("MeasureInput", ["target", "task", "config"])
MeasureResult = namedtuple("MeasureResult", ["costs", "error_no", "all_cost", "timestamp"])


class MeasureErrorNo:
    """AutoTVM's error numbers of a record."""

    NO_ERROR = 0
    INSTANTIATION_ERROR = 1
    COMPILE_HOST = 2
    COMPILE_DEVICE = 3
    RUNTIME_DEVICE = 4
    WRONG_ANSWER = 5
    BUILD_TIMEOUT = 6
    RUN_TIMEOUT = 7
    UNKNOWN_ERROR = 8


#: Levels a runner measures on; upstream's ``env.TARGET`` values map to them (fsim has no time).
LEVELS = {"model": "model", "tsim": "tsim", "sim": "model", "model-timing": "model"}


class LocalBuilder:
    """Builds candidates where they are measured (the worker compiles, then runs).

    Parameters
    ----------
    timeout : float
        Accepted for compatibility (builds are not interrupted).
    n_parallel : int, optional
        Accepted for compatibility: the runner's workers build.
    build_func : str
        ``"default"`` only.
    """

    def __init__(self, timeout: float = 10, n_parallel: int | None = None, build_func: str = "default"):
        if build_func != "default":
            raise ValueError(f"LocalBuilder: build_func {build_func!r} is not supported; accepted: 'default'")
        self.timeout = timeout
        self.n_parallel = n_parallel


class LocalRunner:
    """Measures candidates on the simulated accelerator of this machine.

    Parameters
    ----------
    timeout : float
        Accepted for compatibility.
    number, repeat : int
        Runs per measurement (``costs`` has ``repeat`` entries, each the mean of ``number`` runs).
    min_repeat_ms, cooldown_interval : float
        Accepted for compatibility (simulated time does not vary).
    check_correctness : bool
        Compare each candidate's output with the reference (default on).
    target : str, optional
        ``"model"`` (default) or ``"tsim"``; upstream's ``"sim"`` means the model.
    n_parallel : int, optional
        Dask workers of the embedded cluster (default: the cores); 0: in this process.
    cluster : str or distributed.Client, optional
        An existing scheduler address or client instead of the embedded cluster.

    Raises
    ------
    ValueError
        If ``target`` is not a level, or ``number``/``repeat`` is not positive.
    """

    def __init__(self, timeout: float = 10, number: int = 1, repeat: int = 1, min_repeat_ms: float = 0,
                 cooldown_interval: float = 0.0, check_correctness: bool = True, target: str | None = None,
                 n_parallel: int | None = None, cluster: Any = None, enable_cpu_cache_flush: bool = False,
                 module_loader: Any = None):
        del min_repeat_ms, cooldown_interval, enable_cpu_cache_flush, module_loader
        if number < 1 or repeat < 1:
            raise ValueError(f"LocalRunner: number={number!r} and repeat={repeat!r} must be positive")
        self.timeout = timeout
        self.number, self.repeat = int(number), int(repeat)
        self.check_correctness = bool(check_correctness)
        self.level = _level(target)
        self.n_parallel = n_parallel
        self.cluster = cluster

    def __repr__(self):
        return f"{type(self).__name__}(target={self.level!r}, n_parallel={self.n_parallel!r}, cluster={self.cluster!r})"


class RPCRunner(LocalRunner):
    """Measures on an existing Dask cluster: ``host:port`` is its scheduler (the tracker of
    upstream's board farm), ``key`` the level (``env.TARGET``: ``"sim"`` and ``"model"`` run the
    cycle model, ``"tsim"`` the RTL).

    Raises
    ------
    ValueError
        If ``key`` is not a level.
    """

    def __init__(self, key: str, host: str, port: int, priority: int = 1, timeout: float = 10, n_parallel=None,
                 number: int = 1, repeat: int = 1, min_repeat_ms: float = 0, cooldown_interval: float = 0.0,
                 check_correctness: bool = True, enable_cpu_cache_flush: bool = False, module_loader: Any = None):
        del priority
        super().__init__(timeout, number, repeat, min_repeat_ms, cooldown_interval, check_correctness, key,
                         n_parallel, f"tcp://{host}:{int(port)}", enable_cpu_cache_flush, module_loader)
        self.key, self.host, self.port = key, host, int(port)


def _level(target: str | None) -> str:
    if target is None:
        from ..env import get_env

        target = get_env().TARGET
    if target not in LEVELS:
        raise ValueError(f"runner target {target!r} is not a level; accepted: {sorted(LEVELS)!r}")
    return LEVELS[target]


def measure_option(builder: Any = None, runner: Any = None) -> dict:
    """``autotvm.measure_option``: the builder and the runner of a tuning run.

    Raises
    ------
    TypeError
        If they are not a LocalBuilder and a LocalRunner/RPCRunner.
    """
    builder = builder if builder is not None else LocalBuilder()
    runner = runner if runner is not None else LocalRunner()
    if isinstance(builder, str) or not isinstance(builder, LocalBuilder):
        raise TypeError(f"measure_option: builder must be a LocalBuilder, got {builder!r}")
    if not isinstance(runner, LocalRunner):
        raise TypeError(f"measure_option: runner must be a LocalRunner or RPCRunner, got {runner!r}")
    return {"builder": builder, "runner": runner}


# ---------------------------------------------------------------------- the worker's side
_DEVICES: dict = {}
_REFERENCES: dict = {}


def _device(env, level: str, functional: bool):
    from ..dram import global_dram

    key = (env.BITSTREAM, tuple(sorted(env.cfg_dict.items())), level, functional)
    dev = _DEVICES.get(key)
    if dev is None:
        if level == "tsim":
            from ..dse.rtl import make_tsim

            dev = make_tsim(env, None)
        else:
            from ..sim.model import CycleModel

            dev = CycleModel(env, global_dram(), functional=functional)
        _DEVICES[key] = dev
    dev.reset()
    return dev


def _run_on(env, device, fn, arrays) -> dict:
    from ..sim.targets import attach_device

    with env:
        previous = attach_device(env, device)
        try:
            device.clear_stats()
            fn(*arrays)
            return dict(device.stats())
        finally:
            if previous is not None and previous is not device:
                attach_device(env, previous)


def _random(shape, dtype, rng):
    lo, hi = (-64, 64) if dtype in ("int8", "int4") else (-(1 << 10), 1 << 10)
    if dtype == "int4":
        lo, hi = -8, 8
    return rng.integers(lo, hi, size=shape).astype("int8" if dtype == "int4" else dtype)


def _dense_weight(w: np.ndarray, groups: int, in_channels: int) -> np.ndarray:
    """The ``(out, in_channels, KH, KW)`` weight of a grouped convolution's ``(out, in / groups, KH,
    KW)`` one: each group's block in its own input channels, zeros elsewhere (the oracle then
    computes a plain convolution)."""
    if groups == 1:
        return w
    co, ci = w.shape[0] // groups, in_channels // groups
    full = np.zeros((w.shape[0], in_channels) + w.shape[2:], dtype=w.dtype)
    for g in range(groups):
        full[g * co:(g + 1) * co, g * ci:(g + 1) * ci] = w[g * co:(g + 1) * co]
    return full


def _alu_program(task, config, env):
    """Build an ALU-only graph task's candidate (``add.vta`` / ``multiply.vta``)."""
    from ..topi.qnn import build_qadd
    from ..topi.qnn_mul import build_qmul, mul_np
    from ..topi.qnn_ref import qadd_np
    from .vta_ops import ADD, tiling_from_config

    spec = task.spec
    add = task.name == ADD
    tiling = tiling_from_config("add" if add else "multiply", config)
    mod, layout = (build_qadd if add else build_qmul)(spec, "tuned_candidate", env=env, tiling=tiling)
    key = ("spec", task.name, repr(spec), env.BITSTREAM)
    ref = _REFERENCES.get(key)
    if ref is None:
        rng = np.random.default_rng(0)
        shape = (spec.batch, spec.channels, spec.height, spec.width)
        a = rng.integers(-128, 128, size=shape).astype(np.int8)
        b = rng.integers(-128, 128, size=shape if add else spec.rhs_shape).astype(np.int8)
        if add:
            expected = qadd_np(spec, a, b)
        else:
            expected = mul_np(a, spec.lhs_zero_point, b, spec.rhs_zero_point, spec.requant, spec.output_zero_point,
                              spec.clip[0], spec.clip[1])
        ref = _REFERENCES[key] = (a, b, expected)
    a, b, expected = ref
    packed = [layout.pack(arg.role, {"lhs": a, "rhs": b}[arg.role]) for arg in layout.args if arg.role != "out"]
    return mod, packed + [layout.empty_output()], expected, layout.unpack


def _spec_program(task, config, env):
    """Build a graph task's candidate: ``(module, packed inputs, expected plain output, unpack)``."""
    from ..graph.accel import _pack_bias
    from ..topi import qnn
    from ..topi.qnn_ref import qconv2d_np, qdense_np
    from .vta_ops import ALU_TASKS, DENSE, tiling_from_config

    if task.name in ALU_TASKS.values():
        return _alu_program(task, config, env)
    spec = task.spec
    conv = task.name != DENSE
    tiling = tiling_from_config("conv2d" if conv else "dense", config)
    build = qnn.build_qconv2d if conv else qnn.build_qdense
    mod, layout = build(spec, "tuned_candidate", env=env, tiling=tiling)
    key = ("spec", repr(spec), env.BITSTREAM)
    ref = _REFERENCES.get(key)
    if ref is None:
        rng = np.random.default_rng(0)
        groups = getattr(spec, "groups", 1) if conv else 1
        taps = spec.in_channels // groups * spec.kernel_h * spec.kernel_w if conv else spec.in_features
        xm, wm, bm = _magnitudes(spec, taps)
        if conv:
            x = rng.integers(-xm, xm + 1, size=(spec.batch, spec.in_channels, spec.height, spec.width)).astype(np.int8)
            w = rng.integers(-wm, wm + 1, size=(spec.out_channels, spec.in_channels // groups, spec.kernel_h,
                                                spec.kernel_w))
            out_shape = (spec.batch, spec.out_channels, spec.out_height, spec.out_width)
        else:
            x = rng.integers(-xm, xm + 1, size=(spec.batch, spec.in_features)).astype(np.int8)
            w = rng.integers(-wm, wm + 1, size=(spec.out_features, spec.in_features))
            out_shape = (spec.batch, spec.out_features)
        w = w.astype(np.int8)
        bias = rng.integers(-bm, bm + 1, size=w.shape[0]).astype(np.int32)
        r = rng.integers(-64, 64, size=out_shape).astype(np.int8) if spec.residual is not None else None
        if conv:
            expected = qconv2d_np(spec, x, _dense_weight(w, groups, spec.in_channels), bias, r)
        else:
            expected = qdense_np(spec, x, w, bias, r)
        ref = _REFERENCES[key] = (x, w, bias, r, expected)
    x, w, bias, r, expected = ref
    packed = []
    for a in layout.args:
        if a.role == "out":
            continue
        if a.role == "data":
            packed.append(layout.pack("data", x))
        elif a.role == "weight":
            packed.append(layout.pack("weight", w))
        elif a.role == "bias":
            packed.append(_pack_bias(layout, bias, w))
        elif a.role == "residual":
            packed.append(layout.pack("residual", r))
        else:
            packed.append(layout.pack(a.role))
    return mod, packed + [layout.empty_output()], expected, layout.unpack


def _magnitudes(spec, taps: int) -> tuple[int, int, int]:
    """Largest input, weight and bias magnitudes keeping every accumulator below the bound the
    spec's requantisation assumes (``|acc| < 2**acc_bits``, as the graph's weights guarantee)."""
    bits = spec.requant.acc_bits if spec.requant.acc_bits is not None else 31
    budget = (1 << bits) - 1
    bm = min(512, budget // 4)
    z = abs(int(getattr(spec, "input_zero_point", 0)))
    xm = 64
    per_tap = (budget - bm) // max(taps, 1)
    wm = min(16, per_tap // max(xm, z, 1))
    if wm == 0:
        xm, wm = min(64, max(per_tap, 0)), 1 if per_tap >= max(z, 1) else 0
    return xm, wm, bm


def _template_program(task, config, env):
    """Build a template task's candidate: ``(module, inputs + output, expected output, identity)``."""
    from ..build import build

    s, args = task.instantiate(config)
    mod = build(s, args, "ext_dev", name="tuned_candidate")
    key = ("template", task.name, repr(task.args), repr(task.kwargs), env.BITSTREAM)
    ref = _REFERENCES.get(key)
    if ref is None:
        rng = np.random.default_rng(0)
        inputs = [_random(tuple(int(d) for d in t.shape), str(t.dtype), rng) for t in args[:-1]]
        out = args[-1]
        ref = _REFERENCES[key] = (inputs, _reference(task, args, inputs, env),
                                  np.zeros(tuple(int(d) for d in out.shape), dtype=str(out.dtype)))
    inputs, expected, empty = ref
    return mod, list(inputs) + [empty.copy()], expected, None


def _reference(task, args, inputs, env):
    """The expected output: NumPy for the VTA templates, else the plain schedule on the host."""
    from .vta_ops import CONV2D, DENSE

    if task.name == CONV2D and task.spec is None:
        return _conv2d_reference(task, inputs, env)
    if task.name == DENSE and task.spec is None:
        acc = np.einsum("bkxi,okyi->boxy", inputs[0].astype(np.int64), inputs[1].astype(np.int64))
        return _requantize(acc, env)
    from ..build import build_host
    from ..runtime import cpu
    from ..runtime.ndarray import array
    from ..te import create_schedule

    out = args[-1]
    mod = build_host(create_schedule(out.op), args, name="reference")
    dev = cpu(0)
    arrays = [array(a, dev) for a in inputs] + [array(np.zeros(tuple(int(d) for d in out.shape), str(out.dtype)), dev)]
    try:
        mod(*arrays)
        return arrays[-1].numpy()
    finally:
        for a in arrays:
            a.close()
        mod.close()


def _requantize(acc, env):
    hi = (1 << (env.INP_WIDTH - 1)) - 1
    return np.clip(acc >> 8, 0, hi).astype(env.out_dtype)


def _conv2d_reference(task, inputs, env):
    """Packed convolution in NumPy (every tap an einsum), then upstream's epilogue."""
    data, kernel = inputs[0].astype(np.int64), inputs[1].astype(np.int64)
    strides, padding, dilation = task.args[2], task.args[3], task.args[4] if len(task.args) > 4 else (1, 1)
    sh, sw = (strides, strides) if isinstance(strides, int) else strides
    dh, dw = (dilation, dilation) if isinstance(dilation, int) else dilation
    pads = (padding,) * 4 if isinstance(padding, int) else tuple(padding)
    pt, pl, pb, pr = pads if len(pads) == 4 else (pads[0], pads[1], pads[0], pads[1])
    xp = np.pad(data, ((0, 0), (0, 0), (pt, pb), (pl, pr), (0, 0), (0, 0)))
    kh, kw = kernel.shape[2], kernel.shape[3]
    oh = (xp.shape[2] - (kh - 1) * dh - 1) // sh + 1
    ow = (xp.shape[3] - (kw - 1) * dw - 1) // sw + 1
    acc = np.zeros((data.shape[0], kernel.shape[0], oh, ow, data.shape[4], kernel.shape[4]), np.int64)
    for i in range(kh):
        for j in range(kw):
            win = xp[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
            acc += np.einsum("bkhwxi,okyi->bohwxy", win, kernel[:, :, i, j])
    return _requantize(acc, env)


def measure_candidate(task, config, level: str = "model", number: int = 1, repeat: int = 1,
                      check: bool = True) -> MeasureResult:
    """Build and run one candidate; never raises for a failing candidate (its error number says
    what failed). Runs in a Dask worker or in this process."""
    from ..env import Environment
    from ..errors import BuildError, ScheduleError, SimulationError, VTAError
    from ..runtime import ext_dev
    from ..runtime.native_lib import TUNING_OBJECT_FLAGS, object_flags
    from ..runtime.ndarray import array

    start = time.time()

    def fail(code: int, exc: BaseException) -> MeasureResult:
        where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
        at = f" (at {os.path.basename(where.filename)}:{where.lineno})" if where else ""
        msg = f"{type(exc).__name__}: {exc}{at}"
        return MeasureResult((msg,), code, time.time() - start, time.time())

    env = Environment({**task.env_cfg, "TARGET": level})
    with env:
        try:
            program = _spec_program if task.spec is not None else _template_program
            # a candidate's host code runs once, as a driver of the simulator: compiled at -O0
            with object_flags(TUNING_OBJECT_FLAGS):
                mod, arrays_np, expected, unpack = program(task, config, env)
        except ScheduleError as exc:
            return fail(MeasureErrorNo.INSTANTIATION_ERROR, exc)
        except (BuildError, VTAError) as exc:
            return fail(MeasureErrorNo.COMPILE_HOST, exc)
        dev = ext_dev(0)
        arrays = []
        try:
            arrays = [array(a, dev) for a in arrays_np]
            stats = _run_on(env, _device(env, level, functional=True), mod, arrays)
            cycles = [int(stats["cycle_count"])]
            got = arrays[-1].numpy()
            if unpack is not None:
                got = unpack(got)
            if check and not np.array_equal(got, expected):
                bad = int(np.count_nonzero(got != expected))
                msg = f"wrong answer: {bad} of {expected.size} output elements differ from the reference"
                return MeasureResult((msg,), MeasureErrorNo.WRONG_ANSWER, time.time() - start, time.time())
            timing = _device(env, level, functional=level == "tsim")
            for _ in range(number * repeat - 1):
                cycles.append(int(_run_on(env, timing, mod, arrays)["cycle_count"]))
        except SimulationError as exc:
            return fail(MeasureErrorNo.RUNTIME_DEVICE, exc)
        except VTAError as exc:
            return fail(MeasureErrorNo.RUNTIME_DEVICE, exc)
        finally:
            for a in arrays:
                a.close()
            mod.close()
    per_repeat = [float(np.mean(cycles[i * number:(i + 1) * number])) / CLOCK_HZ for i in range(repeat)]
    return MeasureResult(tuple(per_repeat), MeasureErrorNo.NO_ERROR, time.time() - start, time.time())


# ---------------------------------------------------------------------- the parent's side
_CLUSTERS: dict = {}


def close_clusters() -> None:
    """Close the Dask clients (and embedded clusters) the runners opened in this process."""
    for client, cluster in list(_CLUSTERS.values()):
        client.close()
        cluster.close()
    _CLUSTERS.clear()


atexit.register(close_clusters)


def _client(runner: LocalRunner):
    """A Dask client for ``runner`` (None: measure in this process)."""
    if runner.cluster is not None:
        if not isinstance(runner.cluster, str):
            return runner.cluster
        from distributed import Client

        key = ("remote", runner.cluster)
        if key not in _CLUSTERS:
            _CLUSTERS[key] = (Client(runner.cluster), None)
            _CLUSTERS[key] = (_CLUSTERS[key][0], _Nothing())
        return _CLUSTERS[key][0]
    workers = runner.n_parallel if runner.n_parallel is not None else (os.cpu_count() or 1)
    if workers == 0:
        return None
    key = ("local", workers)
    if key not in _CLUSTERS:
        from distributed import Client

        from ..dse.engine import local_cluster

        cluster = local_cluster(workers)
        _CLUSTERS[key] = (Client(cluster), cluster)
    return _CLUSTERS[key][0]


class _Nothing:
    def close(self) -> None:
        return None


def parallelism(runner: LocalRunner) -> int:
    """How many candidates a batch should hold to keep the runner's workers busy."""
    client = _client(runner)
    if client is None:
        return 1
    return max(1, len(client.scheduler_info().get("workers", {})))


def measure_batch(task, configs: Sequence, option: dict) -> list[MeasureResult]:
    """Measure ``configs`` of ``task`` (in parallel on the runner's cluster); results in order."""
    runner = option["runner"]
    args = (runner.level, runner.number, runner.repeat, runner.check_correctness)
    client = _client(runner)
    if client is None:
        return [measure_candidate(task, c, *args) for c in configs]
    futures = [client.submit(measure_candidate, task, c, *args, pure=False) for c in configs]
    out = []
    for fut in futures:
        try:
            out.append(fut.result())
        except Exception as exc:  # noqa: BLE001  (a lost worker: the candidate is an error record, the run goes on)
            out.append(MeasureResult((f"task failed on the cluster: {type(exc).__name__}: {exc}",),
                                     MeasureErrorNo.UNKNOWN_ERROR, 0.0, time.time()))
    return out
