"""The workloads a configuration is measured on, and how each one runs on a device.

A :class:`Workload` is a name, a kind and the shape parameters of that kind. Three kinds ship:

``conv2d``
    a packed convolution with a bias and requantisation epilogue, scheduled by
    :func:`vta.topi.schedule_conv2d_packed` and compiled with :func:`vta.build.build`; the
    ResNet-18 layers C2..C11 (batch = the configuration's BATCH) are ``resnet18.C2`` ...
``dense``
    a packed matrix product with requantisation (:func:`vta.topi.schedule_dense_packed`);
    ``gemm.blocked`` is the 128 x 128 x 128 blocked GEMM of the upstream tutorial.
``alu``
    a hand-built ALU-heavy program (:mod:`vta.testing.programs`): accumulator tiles loaded,
    chains of MIN, MAX, ADD, SHR and MUL over them, the results stored.

Other kinds are added by :func:`register_kind` from a part of the package above this one, or
from user code: the sweep and the regression only call a kind's runner and its MAC count. Names
with a prefix (``onnx:PATH``, ``zoo:NAME``: whole ONNX models, registered by :mod:`vta.models`)
are made on first use by the factory :func:`register_prefix` installed for the prefix.

Every runner executes on a device it is given and returns that device's statistics for the
workload (upstream counters, ``cycle_count`` where the level has time) plus the output bytes
(``outputs``), so two levels can be compared bit for bit.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .. import isa
from ..env import Environment
from ..errors import ScheduleError
from ..sim.device import Device
from ..sim.targets import attach_device

__all__ = [
    "RESNET18_CONV",
    "InfeasibleWorkload",
    "Kind",
    "Workload",
    "get",
    "kind_module",
    "kinds",
    "macs",
    "names",
    "register_kind",
    "register_prefix",
    "resolve",
    "run",
]

#: ResNet-18 convolutions after the first (ImageNet, 224 x 224 input):
#: name -> (height = width, input channels, output channels, kernel, padding, stride).
RESNET18_CONV: dict[str, tuple[int, int, int, int, int, int]] = {
    "C2": (56, 64, 64, 3, 1, 1),
    "C3": (56, 64, 128, 3, 1, 2),
    "C4": (56, 64, 128, 1, 0, 2),
    "C5": (28, 128, 128, 3, 1, 1),
    "C6": (28, 128, 256, 3, 1, 2),
    "C7": (28, 128, 256, 1, 0, 2),
    "C8": (14, 256, 256, 3, 1, 1),
    "C9": (14, 256, 512, 3, 1, 2),
    "C10": (14, 256, 512, 1, 0, 2),
    "C11": (7, 512, 512, 3, 1, 1),
}


class InfeasibleWorkload(ScheduleError):
    """The workload cannot run on this configuration (shapes do not divide, buffers too small)."""


@dataclass(frozen=True)
class Workload:
    """One workload: ``kind`` names its runner, ``params`` its shape (JSON-serialisable values)."""

    name: str
    kind: str
    params: tuple

    def fingerprint(self) -> str:
        """A digest of everything that defines the workload (for result caching)."""
        extra = _KINDS[self.kind].fingerprint(self) if self.kind in _KINDS and _KINDS[self.kind].fingerprint else ""
        text = json.dumps([self.name, self.kind, list(self.params), extra])
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Kind:
    """How a kind of workload runs.

    Attributes
    ----------
    runner : callable
        ``runner(workload, env, device) -> dict`` of statistics plus ``outputs`` (bytes); raises
        :class:`InfeasibleWorkload` (or :class:`vta.errors.ScheduleError`) when it does not fit.
    macs : callable
        ``macs(workload, env) -> int``: useful multiply-accumulates of one run.
    fingerprint : callable, optional
        ``fingerprint(workload) -> str``, e.g. a digest of a model file, mixed into the cache key.
    """

    runner: Callable[[Workload, Environment, Device], dict]
    macs: Callable[[Workload, Environment], int]
    fingerprint: Callable[[Workload], str] | None = None


_KINDS: dict[str, Kind] = {}
_REGISTRY: dict[str, Workload] = {}
#: Name prefix -> factory making the workload of a prefixed name (``"zoo:"`` -> ...).
_PREFIXES: dict[str, Callable[[str], Workload]] = {}
#: Group names that expand to several workloads.
_GROUPS: dict[str, tuple[str, ...]] = {}


def register_kind(name: str, kind: Kind, workloads: dict[str, tuple] | None = None) -> None:
    """Add a kind of workload (the hook for whole networks), optionally with named workloads.

    Parameters
    ----------
    name : str
        The kind's name (``"onnx"``, say).
    kind : Kind
        Its runner and MAC count.
    workloads : dict, optional
        ``workload name -> params`` to register under that kind.

    Raises
    ------
    TypeError
        If ``kind`` is not a :class:`Kind`.
    """
    if not isinstance(kind, Kind):
        raise TypeError(f"register_kind needs a vta.dse.workloads.Kind, got {kind!r}")
    _KINDS[name] = kind
    for wname, params in (workloads or {}).items():
        _REGISTRY[wname] = Workload(wname, name, tuple(params))


def register_prefix(prefix: str, factory: Callable[[str], Workload]) -> None:
    """Make workloads named ``PREFIX...`` on first use with ``factory(name) -> Workload``.

    The factory checks the rest of the name (a model file exists, a zoo entry is known) and raises
    ``KeyError`` with the reason when it does not name a workload.

    Raises
    ------
    ValueError
        If ``prefix`` does not end with ``":"``.
    """
    if not prefix.endswith(":"):
        raise ValueError(f"a workload prefix ends with ':', got {prefix!r}")
    _PREFIXES[prefix] = factory


def kinds() -> tuple[str, ...]:
    """Registered kind names, sorted."""
    return tuple(sorted(_KINDS))


def names() -> tuple[str, ...]:
    """Registered workload names, in registration order."""
    return tuple(_REGISTRY)


def get(name: str) -> Workload:
    """The registered workload called ``name``.

    Raises
    ------
    KeyError
        If no workload has that name (the message lists the accepted ones), or a prefixed name's
        factory refuses it.
    """
    found = _REGISTRY.get(name)
    if found is not None:
        return found
    prefix = name.split(":", 1)[0] + ":" if ":" in name else ""
    if prefix in _PREFIXES:
        workload = _PREFIXES[prefix](name)
        _REGISTRY[name] = workload
        return workload
    prefixes = "".join(f", {p}..." for p in sorted(_PREFIXES))
    hint = ("" if _PREFIXES else
            " (the ONNX model workloads digits, onnx:PATH and zoo:NAME are registered by importing vta.models)")
    raise KeyError(f"unknown workload {name!r}; accepted: {', '.join(list(_GROUPS) + list(_REGISTRY))}{prefixes}"
                   f"{hint}")


def resolve(items) -> list[Workload]:
    """Workloads named by ``items`` (names, group names such as ``resnet18``, or Workload objects).

    Raises
    ------
    KeyError
        For an unknown name.
    ValueError
        If nothing is named.
    """
    out: list[Workload] = []
    for item in items:
        if isinstance(item, Workload):
            out.append(item)
        elif item in _GROUPS:
            out.extend(_REGISTRY[n] for n in _GROUPS[item])
        else:
            out.append(get(item))
    if not out:
        raise ValueError("no workload named; accepted: " + ", ".join(list(_GROUPS) + list(_REGISTRY)
                                                                      + [f"{p}..." for p in sorted(_PREFIXES)]))
    seen: dict[str, Workload] = {}
    for w in out:
        seen.setdefault(w.name, w)
    return list(seen.values())


def kind_module(workload: Workload) -> str | None:
    """The module that registered ``workload``'s kind, when it is not this one (``None`` otherwise).

    A Dask worker imports it before evaluating the workload, so kinds and prefixes registered by
    other modules (ONNX models, user code) resolve in worker processes too.

    Raises
    ------
    KeyError
        If the workload's kind is not registered.
    """
    module = _kind(workload).runner.__module__
    return None if module == __name__ else module


def macs(workload: Workload, env: Environment) -> int:
    """Useful multiply-accumulates of one run of ``workload`` on ``env``.

    Raises
    ------
    KeyError
        If the workload's kind is not registered.
    """
    return int(_kind(workload).macs(workload, env))


def run(workload: Workload, env: Environment, device: Device) -> dict:
    """Run ``workload`` once on ``device`` (built for ``env``); return its statistics and outputs.

    Raises
    ------
    InfeasibleWorkload, vta.errors.ScheduleError
        If the workload does not fit the configuration.
    vta.errors.SimulationError
        If the device fails.
    KeyError
        If the workload's kind is not registered.
    """
    return _kind(workload).runner(workload, env, device)


def _kind(workload: Workload) -> Kind:
    try:
        return _KINDS[workload.kind]
    except KeyError:
        raise KeyError(f"workload {workload.name!r} has kind {workload.kind!r}, which is not registered "
                       f"(registered: {', '.join(kinds())})") from None


# ------------------------------------------------------------------------- compiled workloads
def _need_divisible(what: str, value: int, block: int, key: str) -> None:
    if value % block:
        raise InfeasibleWorkload(f"{what} = {value} is not a multiple of {key} = {block}")


def _need_byte_types(env: Environment) -> None:
    if (env.INP_WIDTH, env.WGT_WIDTH, env.ACC_WIDTH) != (8, 8, 32):
        raise InfeasibleWorkload(
            f"compiled workloads need int8 inputs and weights and int32 accumulators; this configuration has "
            f"int{env.INP_WIDTH} inputs, int{env.WGT_WIDTH} weights and int{env.ACC_WIDTH} accumulators")


def _conv_macs(w: Workload, env: Environment) -> int:
    h, ci, co, k, p, s = w.params
    oh = (h + 2 * p - k) // s + 1
    return env.BATCH * co * oh * oh * ci * k * k


def _dense_macs(w: Workload, env: Environment) -> int:
    batch, cin, cout = w.params
    return batch * cin * cout


def _run_compiled(env: Environment, device: Device, sched, args, rng) -> dict:
    """Build ``sched``, run it once through the runtime on ``device`` and read its statistics."""
    from ..build import build
    from ..runtime import ext_dev
    from ..runtime.ndarray import array, empty

    mod = build(sched, args, "ext_dev", name="dse_workload")
    dev = ext_dev(0)
    arrays = []
    try:
        for t in args[:-1]:
            shape = tuple(int(d) for d in t.shape)
            lo, hi = (-128, 128) if t.dtype == "int8" else (-(1 << 12), 1 << 12)
            arrays.append(array(rng.integers(lo, hi, size=shape).astype(t.dtype), dev))
        out = args[-1]
        arrays.append(empty(tuple(int(d) for d in out.shape), out.dtype, dev))
        with env:
            previous = attach_device(env, device)
            try:
                device.clear_stats()
                mod(*arrays)
                stats = dict(device.stats())
            finally:
                if previous is not None and previous is not device:
                    attach_device(env, previous)
        stats["outputs"] = arrays[-1].numpy().tobytes()
        return stats
    finally:
        for a in arrays:
            a.close()
        mod.close()


def _run_conv(w: Workload, env: Environment, device: Device) -> dict:
    from .. import te, topi

    h, ci, co, k, p, s = w.params
    _need_byte_types(env)
    _need_divisible("input channels", ci, env.BLOCK_IN, "BLOCK_IN")
    _need_divisible("output channels", co, env.BLOCK_OUT, "BLOCK_OUT")
    with env:
        data = te.placeholder((1, ci // env.BLOCK_IN, h, h, env.BATCH, env.BLOCK_IN), name="data", dtype=env.inp_dtype)
        kernel = te.placeholder((co // env.BLOCK_OUT, ci // env.BLOCK_IN, k, k, env.BLOCK_OUT, env.BLOCK_IN),
                                name="kernel", dtype=env.wgt_dtype)
        bias = te.placeholder((1, co // env.BLOCK_OUT, 1, 1, env.BATCH, env.BLOCK_OUT), name="bias",
                              dtype=env.acc_dtype)
        res = topi.requantize(topi.conv2d_packed(data, kernel, s, p, env.acc_dtype), bias)
        sched = topi.schedule_conv2d_packed(res)
        return _run_compiled(env, device, sched, [data, kernel, bias, res], np.random.default_rng(0))


def _run_dense(w: Workload, env: Environment, device: Device) -> dict:
    from .. import te, topi

    batch, cin, cout = w.params
    _need_byte_types(env)
    _need_divisible("batch", batch, env.BATCH, "BATCH")
    _need_divisible("input features", cin, env.BLOCK_IN, "BLOCK_IN")
    _need_divisible("output features", cout, env.BLOCK_OUT, "BLOCK_OUT")
    with env:
        data = te.placeholder((batch // env.BATCH, cin // env.BLOCK_IN, env.BATCH, env.BLOCK_IN), name="data",
                              dtype=env.inp_dtype)
        weight = te.placeholder((cout // env.BLOCK_OUT, cin // env.BLOCK_IN, env.BLOCK_OUT, env.BLOCK_IN),
                                name="weight", dtype=env.wgt_dtype)
        res = topi.requantize(topi.dense_packed(data, weight, env.acc_dtype))
        sched = topi.schedule_dense_packed(res)
        return _run_compiled(env, device, sched, [data, weight, res], np.random.default_rng(0))


# ------------------------------------------------------------------------- the ALU-heavy program
def _alu_macs(w: Workload, env: Environment) -> int:
    return 0


_ALU_CHAIN = ((isa.ALU_ADD, 1, 3), (isa.ALU_MAX, 0, 0), (isa.ALU_MUL, 1, 3), (isa.ALU_SHR, 1, 2),
              (isa.ALU_MIN, 0, 0), (isa.ALU_ADD, 0, 0), (isa.ALU_MAX, 1, -5), (isa.ALU_MIN, 1, 100))


def _run_alu(w: Workload, env: Environment, device: Device) -> dict:
    """``tiles`` times: load 2 x ``rows`` accumulator rows, run the ALU chain over them (REQ too on a
    configuration with ``ALU_REQUANT``; first a MOV of the source half over the destination half on
    one with ``ALU_MOV``), store."""
    from ..testing.programs import ProgramBuilder

    tiles, rows = w.params
    if 2 * rows > env.ACC_BUFF_DEPTH:
        raise InfeasibleWorkload(f"the ALU program needs {2 * rows} accumulator rows; this configuration has "
                                 f"{env.ACC_BUFF_DEPTH}")
    # a configuration with ALU_REQUANT also runs REQ (tensor operand: the source rows' values)
    chain = _ALU_CHAIN + (((isa.ALU_REQ, 0, 0),) if env.ALU_REQUANT else ())
    # ... and one with ALU_MOV starts from a copy of the source rows (tensor MOV)
    chain = (((isa.ALU_MOV, 0, 0),) if env.ALU_MOV else ()) + chain
    if len(_ALU_CHAIN) + 1 > env.UOP_BUFF_DEPTH:
        raise InfeasibleWorkload(f"the ALU program needs {len(_ALU_CHAIN) + 1} micro-ops; the uop buffer holds "
                                 f"{env.UOP_BUFF_DEPTH}")
    dram = device.dram
    rng = np.random.default_rng(1)
    lanes = env.BATCH * env.BLOCK_OUT
    with ProgramBuilder(env, dram) as b:
        lim = 1 << min(env.ACC_WIDTH - 2, 12)
        src = b.buffer(rng.integers(-lim, lim, size=tiles * 2 * rows * lanes).astype(f"<i{env.ACC_WIDTH // 8}")
                       if env.ACC_WIDTH >= 8 else np.zeros(tiles * 2 * rows * env.ACC_ELEM_BYTES, np.uint8))
        out_bytes = tiles * rows * env.OUT_ELEM_BYTES
        out = b.buffer(nbytes=out_bytes)
        # One uop: dst row 0, src row `rows`; the inner loop walks both halves of the tile.
        b.uops([isa.Uop(0, rows, 0)])
        acc_elems = src // env.ACC_ELEM_BYTES
        out_elems = out // env.OUT_ELEM_BYTES
        for t in range(tiles):
            b.append(isa.MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_ACC, sram_base=0,
                                 dram_base=acc_elems + t * 2 * rows, y_size=1, x_size=2 * rows, x_stride=2 * rows,
                                 pop_next_dep=int(t > 0)))
            for op, use_imm, imm in chain:
                b.append(isa.AluInsn(uop_bgn=0, uop_end=1, iter_out=1, iter_in=rows, dst_factor_in=1, src_factor_in=1,
                                     alu_opcode=op, use_imm=use_imm, imm=imm))
            b.insns[-1] = isa.replace(b.insns[-1], push_next_dep=1)
            b.append(isa.MemInsn(opcode=isa.OPCODE_STORE, memory_type=isa.MEM_OUT, sram_base=0,
                                 dram_base=out_elems + t * rows, y_size=1, x_size=rows, x_stride=rows,
                                 pop_prev_dep=1, push_prev_dep=1))
        b.finish(pop_next_dep=1)
        addr, count = b.build()
        device.clear_stats()
        device.run(addr, count)
        stats = dict(device.stats())
        stats["outputs"] = dram.read(out, out_bytes)
    return stats


register_kind("conv2d", Kind(_run_conv, _conv_macs),
              {f"resnet18.{name}": shape for name, shape in RESNET18_CONV.items()})
register_kind("dense", Kind(_run_dense, _dense_macs), {"gemm.blocked": (128, 128, 128)})
register_kind("alu", Kind(_run_alu, _alu_macs), {"alu.chain": (16, 64)})
_GROUPS["resnet18"] = tuple(f"resnet18.{name}" for name in RESNET18_CONV)
_GROUPS["all"] = tuple(_REGISTRY)
