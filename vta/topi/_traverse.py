"""Finding the stages of a packed operator's graph (shared by the conv2d and dense schedules)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ScheduleError
from ..te.tensor import ComputeOp, Operation, PlaceholderOp, Tensor

__all__ = ["LOAD_TAG", "OpGraph", "classify", "epilogue_inputs"]

#: Tag of an epilogue stage that only widens a DRAM tensor into the accumulator
#: (``x.astype("int32")`` of an int8 placeholder): the schedules load it with DMA (an int8 source
#: becomes an ``ACC_8BIT`` load) instead of computing it on the ALU.
LOAD_TAG = "vta_acc_load"


@dataclass
class OpGraph:
    """The core operation, the element-wise stages between it and the output (consumers
    first), the placeholders those stages read, as ``(reader op, tensor)``, and the stages tagged
    :data:`LOAD_TAG` (DMA loads into the accumulator)."""

    core: Operation
    output: Tensor
    ewise: list = field(default_factory=list)
    ewise_inputs: list = field(default_factory=list)
    loads: list = field(default_factory=list)


def classify(outs, core_tag: str, what: str) -> OpGraph:
    """Walk from the output to the operation tagged ``core_tag``.

    Raises
    ------
    ScheduleError
        If there is not exactly one output, no ``core_tag`` operation, or a non-element-wise
        stage (a reduction other than the core) between it and the output.
    """
    if isinstance(outs, Tensor):
        outs = [outs]
    outs = list(outs)
    if len(outs) != 1 or not isinstance(outs[0], Tensor):
        raise ScheduleError(f"{what}: expected one output tensor, got {outs!r}")
    output = outs[0]
    if output.op.tag == core_tag:
        raise ScheduleError(
            f"{what}: the output {output.name!r} is the {core_tag!r} operation itself; VTA stores results from "
            f"the accumulator through an element-wise stage: add an epilogue (vta.topi.requantize, or a cast)"
        )
    core: list = []
    graph = OpGraph(None, output)  # type: ignore[arg-type]
    seen: set = set()

    def visit(op: Operation) -> None:
        if id(op) in seen:
            return
        seen.add(id(op))
        if op.tag == core_tag:
            core.append(op)
            return
        if op.tag == LOAD_TAG and op is not output.op:
            if not isinstance(op, ComputeOp) or op.reduce_axis or not all(
                    isinstance(t.op, PlaceholderOp) for t in op.input_tensors):
                raise ScheduleError(f"{what}: stage {op.name!r} is tagged {LOAD_TAG!r} "
                                    "but is not a copy of a placeholder")
            graph.loads.append(op)
            return
        if not isinstance(op, ComputeOp) or op.reduce_axis:
            raise ScheduleError(
                f"{what}: stage {op.name!r} (tag {op.tag!r}) lies between the output and the {core_tag!r} operation "
                f"but is not element-wise"
            )
        if op is not output.op:
            graph.ewise.append(op)
        for t in op.input_tensors:
            if isinstance(t.op, PlaceholderOp):
                graph.ewise_inputs.append((op, t))
            else:
                visit(t.op)

    visit(output.op)
    if len(core) != 1:
        raise ScheduleError(f"{what}: expected one operation tagged {core_tag!r} below the output, found {len(core)}")
    graph.core = core[0]
    return graph


def epilogue_inputs(graph: OpGraph, spatial_dims: tuple) -> tuple[int, int]:
    """``(broadcast, full)``: how many epilogue inputs are broadcast over ``spatial_dims`` of the
    output (a per-channel bias: one accumulator entry per channel block) and how many are not
    (a residual: a whole tile of accumulator entries)."""
    broadcast = full = 0
    for t in [t for _, t in graph.ewise_inputs] + [op.output(0) for op in graph.loads]:
        if all(int(t.shape[d]) == 1 for d in spatial_dims) and any(int(graph.output.shape[d]) != 1
                                                                   for d in spatial_dims):
            broadcast += 1
        else:
            full += 1
    return broadcast, full
