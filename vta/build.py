"""``vta.lower`` and ``vta.build``: the phase 0..3 pass pipeline and host code generation.

The pipeline follows TVM v0.8's ``tvm.lower`` with VTA's passes inserted (reference
tvm-vta-software.md 2.2). ScheduleOps is :func:`vta.te.lower.schedule_to_buffer_func`; from
there every step is listed here, one ordered list per phase, every pass a plain object with a
name: phase 0 on the multi-dimensional (Buffer*) form (empty: InjectConv2DTransposeSkip
matches the flat form and runs first in phase 1), then StorageFlatten and Simplify open
phase 1. Three passes are ours: InjectBiasMov (with the hardware option ``ALU_MOV``, the
accumulator starts from the bias), SeparateResetKernels (so that lifting never puts reset and
accumulate uops in one kernel) and the planning of syncs before CPU code inside CoProcSync.
TVM passes that are no-ops for TE-derived VTA code (InjectPrefetch, TextureFlatten, the
TensorIR block passes, BF16Legalize, NarrowDataType, VectorizeLoop, InjectDoubleBuffer,
LoopPartition, RewriteUnsafeSelect, HoistIfThenElse) are left out.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from .env import Environment, get_env
from .tir import nodes as n
from .tir.simplify import simplify
from .tir.transform.inject_virtual_thread import InjectVirtualThread
from .tir.transform.lift_attr_scope import LiftAttrScope
from .tir.transform.lower_device_storage_access_info import LowerDeviceStorageAccessInfo, MemoryInfo
from .tir.transform.remove_no_op import RemoveNoOp
from .tir.transform.storage_rewrite import StorageRewrite
from .tir.transform.unroll_loop import UnrollLoop
from .transform._util import Pass
from .transform.alloc import lift_alloc_to_scope_begin
from .transform.alu import annotate_alu_coproc_scope, inject_alu_intrin
from .transform.bias_mov import inject_bias_mov
from .transform.conv2d_transpose import inject_conv2d_transpose_skip
from .transform.cpu_access import cpu_access_rewrite
from .transform.dma import inject_dma_intrin, inject_skip_copy
from .transform.sync import add_debug, inject_coproc_sync
from .transform.uop import fold_uop_loop, separate_reset_kernels

__all__ = ["lower", "build", "build_config", "BuildConfig", "memory_info", "phase_passes", "host_passes",
           "lower_host", "build_host", "HOST_KINDS"]

#: Target kinds whose code runs on the host CPU (upstream ``llvm``; host code is C here).
HOST_KINDS = ("llvm", "c")


@dataclass(frozen=True)
class BuildConfig:
    """Options of one ``with vta.build_config(...)`` block.

    Attributes
    ----------
    debug_flag : int
        Runtime debug flags (``env.DEBUG_DUMP_INSN`` ...); non-zero prepends
        ``VTASetDebugMode(cmd, debug_flag)`` to the function.
    """

    debug_flag: int = 0


_state = threading.local()


def _current_config() -> BuildConfig:
    return getattr(_state, "config", None) or BuildConfig()


#: Options of upstream's PassContext that ``build_config`` accepts and ignores: our pipeline has
#: no optimisation levels and none of the passes they name (e.g. ``tir.CommonSubexprElimTIR``).
IGNORED_OPTIONS = ("opt_level", "disabled_pass", "required_pass", "config", "instruments")


@contextlib.contextmanager
def build_config(debug_flag: int = 0, **kwargs: Any) -> Iterator[BuildConfig]:
    """Context manager setting the options of :func:`lower` and :func:`build`.

    Parameters
    ----------
    debug_flag : int
        Runtime debug flags; 0 (the default) adds nothing.
    **kwargs
        Upstream PassContext options (``opt_level``, ``disabled_pass``, ``required_pass``,
        ``config``, ``instruments``), accepted so that upstream code runs; they change nothing.

    Raises
    ------
    ValueError
        If ``debug_flag`` is not a non-negative int.
    TypeError
        If an option is not one of the accepted names.
    """
    unknown = sorted(set(kwargs) - set(IGNORED_OPTIONS))
    if unknown:
        raise TypeError(
            f"build_config got unknown option(s) {unknown!r}; accepted: debug_flag, {', '.join(IGNORED_OPTIONS)}"
        )
    if isinstance(debug_flag, bool) or not isinstance(debug_flag, int) or debug_flag < 0:
        raise ValueError(f"debug_flag must be a non-negative int (e.g. env.DEBUG_DUMP_INSN), got {debug_flag!r}")
    cfg = BuildConfig(debug_flag=debug_flag)
    prev = getattr(_state, "config", None)
    _state.config = cfg
    try:
        yield cfg
    finally:
        _state.config = prev


def memory_info(env: Environment) -> dict[str, MemoryInfo]:
    """The on-chip scopes of ``env``: element size, alignment and capacity (reference section 0)."""
    return {
        env.inp_scope: MemoryInfo(env.INP_ELEM_BITS, env.INP_ELEM_BITS, env.INP_BUFF_SIZE * 8),
        env.wgt_scope: MemoryInfo(env.WGT_ELEM_BITS, env.WGT_ELEM_BITS, env.WGT_BUFF_SIZE * 8),
        env.acc_scope: MemoryInfo(env.ACC_ELEM_BITS, env.ACC_ELEM_BITS, env.ACC_BUFF_SIZE * 8),
    }


def _simplify_pass() -> Pass:
    return Pass("Simplify", lambda f: f.with_body(simplify(f.body)))


def _storage_flatten_pass() -> Pass:
    from .tir.transform.storage_flatten import storage_flatten

    return Pass("StorageFlatten", storage_flatten)


def phase_passes(env: Environment, config: BuildConfig | None = None) -> list[list[Any]]:
    """The four ordered pass lists (phases 0..3) applied to the function ScheduleOps built."""
    config = config or BuildConfig()
    mem = memory_info(env)
    phase0: list[Any] = [
        # (upstream's InjectConv2DTransposeSkip runs here; ours matches the flat form, first in phase 1)
    ]
    phase1 = [
        _storage_flatten_pass(),               # realize/store/load -> flat Allocate/Store/Load, buffer views
        _simplify_pass(),                      # canonical index arithmetic for the pattern matchers
        inject_conv2d_transpose_skip(env),     # conv2d_transpose_gemm regions -> (guarded) GEMM uops
        inject_dma_intrin(env),                # dma_copy nests -> VTALoadBuffer2D / VTAStoreBuffer2D in queue scopes
        inject_skip_copy(),                    # mock dma_copy -> no-op
        annotate_alu_coproc_scope(env),        # alu stages -> compute queue + ALU uop-kernel scope
        inject_bias_mov(env),                  # (ALU_MOV) reset + later bias ADD -> one MOV of the bias
        separate_reset_kernels(),              # reset-only GEMM kernels never merge with accumulating ones
        LiftAttrScope("coproc_uop_scope"),     # uop kernels absorb the loops that generate their uops
        lift_alloc_to_scope_begin(),           # allocations to the start of their scope (unblocks the next lift)
        LiftAttrScope("coproc_scope"),         # consecutive work of one queue under one scope
        inject_coproc_sync(),                  # dependency push/pop between queues, final VTASynchronize
        StorageRewrite(mem),                   # early SRAM allocation: liveness, in-place reuse, merging
    ]
    if config.debug_flag:
        phase1.append(add_debug(config.debug_flag))  # VTASetDebugMode(cmd, flag) first
    phase2 = [
        InjectVirtualThread(),                 # expand cthread scopes (replicate buffers, per-thread code)
        StorageRewrite(mem),                   # SRAM allocation again, now with the replicated buffers
        UnrollLoop(),                          # loops explicitly marked unrolled
        inject_alu_intrin(env),                # alu loop nests -> VTAUopLoopBegin / uop_push / VTAUopLoopEnd
    ]
    phase3 = [
        _simplify_pass(),                      # fold the arithmetic left by the rewrites
        RemoveNoOp(),                          # drop empty scopes and no-op statements
        LowerDeviceStorageAccessInfo(mem),     # drop SRAM allocations; SRAM pointers -> tile indices
        fold_uop_loop(),                       # up to two loops around GEMM uops -> hardware uop loops
        cpu_access_rewrite(),                  # remaining CPU loads/stores through VTABufferCPUPtr
    ]
    return [phase0, phase1, phase2, phase3]


def host_passes() -> list[Any]:
    """The target-independent pipeline (upstream ``tvm.lower`` without the VTA passes)."""
    return [
        _storage_flatten_pass(),   # realize/store/load -> flat Allocate/Store/Load
        _simplify_pass(),          # canonical index arithmetic
        RemoveNoOp(),              # drop empty statements
    ]


def lower_host(sch: Any, args: Sequence[Any], name: str = "default_function") -> n.PrimFunc:
    """Lower a schedule through the target-independent passes only (no VTA pass).

    Raises
    ------
    TypeError
        If ``name`` is not a non-empty str.
    ScheduleError
        If the schedule cannot be lowered.
    """
    name = _check_name(name)
    func = _schedule_ops(sch, args, name)
    for p in host_passes():
        func = p(func)
    return func.with_attr("global_symbol", name)


def build_host(sch: Any, args: Sequence[Any], name: str = "default_function"):
    """Compile a plain schedule for the host CPU: C from our code generator, run on the host.

    The arrays it takes live on ``cpu(0)``; intermediate arrays are allocated on the C heap.
    Nothing is offloaded: a stage scoped to an on-chip buffer or tensorized with ``env.gemm``
    is refused by the code generator.

    Returns
    -------
    vta.runtime.cmodule.CompiledCModule

    Raises
    ------
    ScheduleError
        If the schedule cannot be lowered, or a stage is placed in an on-chip buffer.
    CodegenError
        If the lowered function holds another construct only the accelerator path handles.
    BuildError
        If the C compiler fails.
    """
    from .codegen import CPU, build_module
    from .errors import ScheduleError

    for stage in getattr(sch, "stages", ()):
        if stage.scope not in ("", "global"):
            raise ScheduleError(
                f"stage {stage.op.name!r} is placed in {stage.scope!r}, an on-chip buffer of the accelerator: "
                f"build this schedule for ext_dev (env.target); host targets take plain schedules only")
    func = lower_host(sch, args, name=name)
    return build_module(func, name, device_type=CPU)


def target_kind(target: Any) -> str:
    """The kind (first word) of a target given as a Target, a string or None (``ext_dev``)."""
    if target is None:
        return "ext_dev"
    kind = getattr(target, "kind", None)
    text = str(kind if kind is not None else target).split()
    return text[0] if text else ""


def _schedule_ops(sch, args, name):
    from .te.lower import schedule_to_buffer_func

    return schedule_to_buffer_func(sch, args, name)


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty str, got {name!r}")
    return name


def lower(sch: Any, args: Sequence[Any], name: str = "default_function", simple_mode: bool = False,
          env: Environment | None = None) -> n.PrimFunc:
    """Lower a schedule through the phase 0..3 pipeline.

    Parameters
    ----------
    sch : vta.te.Schedule
        The schedule.
    args : sequence of Tensor
        The function's arguments, in order.
    name : str
        The function name (``global_symbol``).
    simple_mode : bool
        Accepted for compatibility; the pipeline has no LoopPartition, so it changes nothing.
    env : Environment, optional
        The hardware configuration; the current one by default.

    Returns
    -------
    PrimFunc
        The lowered function; ``vta.tir.printer.astext`` prints it.

    Raises
    ------
    ScheduleError
        If the schedule cannot be lowered to VTA (the message names the stage and axis).
    """
    del simple_mode
    env = env or get_env()
    name = _check_name(name)
    func = _schedule_ops(sch, args, name)
    for phase in phase_passes(env, _current_config()):
        for p in phase:
            func = p(func)
    return func.with_attr("global_symbol", name)


def build(sch: Any, args: Sequence[Any], target: Any = "ext_dev", name: str = "default_function",
          target_host: Any = None, env: Environment | None = None):
    """Lower a schedule and compile its host code into a module.

    Parameters
    ----------
    sch : vta.te.Schedule
        The schedule.
    args : sequence of Tensor
        The function's arguments, in order.
    target : str or Target
        ``"ext_dev"`` (any string starting with it is accepted, e.g. ``env.target``). Plain
        schedules for the host CPU (``llvm``, ``c``, ``env.target_vta_cpu``) are built by
        ``tvm.build`` (:func:`build_host`), as upstream builds them.
    name : str
        The entry function's symbol.
    target_host : str, optional
        Accepted for compatibility; the host code is always C compiled by the system compiler.
    env : Environment, optional
        The hardware configuration; the current one by default.

    Returns
    -------
    vta.runtime.cmodule.CompiledCModule
        ``save("x.o")`` writes the object; ``get_source()`` returns the C source.

    Raises
    ------
    ScheduleError
        If the schedule cannot be lowered (or the host code would compute on sub-byte values:
        4-bit tensors, as in ``configs/narrow.json``, may only be moved by VTA's DMA and computed
        on by the GEMM; their host arrays are packed ``int4`` arrays, see :mod:`vta.nd`).
    ValueError
        If ``target`` is not ``ext_dev``.
    BuildError
        If the C compiler fails.
    """
    del target_host
    kind = target_kind(target)
    if not kind.startswith("ext_dev"):
        hint = "; build plain schedules for the host CPU with tvm.build" if kind in HOST_KINDS else ""
        raise ValueError(f"vta.build compiles for target 'ext_dev' only, got {str(target)!r}{hint}")
    from .codegen import build_module

    func = lower(sch, args, name=name, env=env)
    return build_module(func, name)

