"""The debug executor (TVM's ``debug_executor``): a run reported node by node.

``create(graph_json, lib, dev)`` returns a :class:`GraphModuleDebug`, a graph executor whose
:meth:`~GraphModuleDebug.profile` runs the graph and returns a :class:`DebugReport`, one row per
operator node:

=============  ===========================================================================
node           the node's name (the source layer for fused accelerator operators)
op             the source operator (``qnn.conv2d``, ``nn.max_pool2d``, ...)
device         ``vta`` or ``cpu`` (host kernels and onnxruntime regions side by side), with the
               placement reason of CPU nodes
shapes         input shapes -> output shape, as the executor holds them (packed on VTA)
macs           multiply-accumulates: the node's ``macs`` attribute in the graph JSON, written by
               :func:`vta.graph.lower` from :func:`vta.graph.macs.node_macs` (logical sizes:
               channel padding is not counted; an onnxruntime region's Conv/Gemm/MatMul MACs);
               0 for a node without one
insns          accelerator instructions (LOAD, GEMM, ALU, STORE, ...) of the node
cycles         device cycles (``cycle_count``; tsim and the cycle model; fsim has no time)
gemm_bound %   ``macs / (BATCH * BLOCK_IN * BLOCK_OUT) / cycles``: how close to one GEMM uop
               of useful work per cycle the node ran (padding counts as lost)
seconds        wall time of the node (host time for CPU nodes)
=============  ===========================================================================

The table's first line gives the accelerator's share of the MACs (:func:`vta.graph.mac_share` of
the graph JSON, the same figure as the run report's) and of the node wall time
(:attr:`DebugReport.accelerator_share`). The figures come from the per-node records the graph executor keeps
(:meth:`vta.graph.executor.GraphModule.node_records`: the node, its wall time ``time_s`` and
the delta of ``vta.testing.simulator.stats()`` around it); this module adds what the graph
JSON says.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..env import Environment, get_env
from ..errors import TVMError
from ..runtime import Device
from ..runtime.devices import CPU
from .graph_json import load_graph_json
from .macs import mac_share

__all__ = ["create", "GraphModuleDebug", "DebugReport", "NodeReport"]

#: Instruction-count keys of the device statistics.
_INSN_KEYS = ("insn_load", "insn_store", "insn_gemm", "insn_alu", "insn_finish", "insn_nop")


@dataclass
class NodeReport:
    """One operator node of a profiled run.

    Attributes
    ----------
    index : int
        The node's index in the graph JSON.
    name : str
        The node's name.
    op : str
        The source operator.
    device : str
        ``"vta"`` or ``"cpu"``.
    reason : str
        Why the node runs there (empty when the graph does not say).
    input_shapes : list of tuple
    output_shape : tuple
    macs : int
        Multiply-accumulates (0 for operators without a reduction).
    instructions : int
        Accelerator instructions (0 on the CPU).
    cycles : int or None
        Device cycles; None when the target has no time (fsim) or the node ran on the CPU.
    seconds : float
        Wall time.
    stats : dict
        The node's device-statistics delta.
    """

    index: int
    name: str
    op: str
    device: str
    reason: str
    input_shapes: list
    output_shape: tuple
    macs: int
    instructions: int
    cycles: int | None
    seconds: float
    stats: dict = field(default_factory=dict)
    block: int = 1

    @property
    def gemm_bound(self) -> float | None:
        """Percent of the GEMM bound: ``macs / block / cycles * 100`` (None without cycles or MACs)."""
        if not self.cycles or not self.macs:
            return None
        return 100.0 * self.macs / self.block / self.cycles


@dataclass
class DebugReport:
    """The per-node report of one run; ``str(report)`` is the table.

    Attributes
    ----------
    nodes : list of NodeReport
    total_seconds : float
        Wall time of the whole run.
    mac_share : float
        The accelerator's share of the graph's MACs (:func:`vta.graph.mac_share` of its JSON).
    """

    nodes: list
    total_seconds: float
    mac_share: float = 0.0

    @property
    def total_cycles(self) -> int | None:
        """Device cycles of the run (None when the target has no time)."""
        cyc = [n.cycles for n in self.nodes if n.cycles is not None]
        return sum(cyc) if cyc else None

    @property
    def total_macs(self) -> int:
        """Multiply-accumulates of the run."""
        return sum(n.macs for n in self.nodes)

    @property
    def accelerator_share(self) -> tuple[float, float]:
        """(share of the MACs, share of the node wall time) of the accelerator nodes (0 when none)."""
        wall = sum(n.seconds for n in self.nodes)
        vta_wall = sum(n.seconds for n in self.nodes if n.device != "cpu")
        return self.mac_share, (vta_wall / wall if wall else 0.0)

    @property
    def total_instructions(self) -> int:
        """Accelerator instructions of the run."""
        return sum(n.instructions for n in self.nodes)

    def table(self) -> str:
        """The report as a text table with a total line."""
        head = ("node", "op", "device", "shapes", "MACs", "insns", "cycles", "%bound", "ms")
        rows = []
        for n in self.nodes:
            shapes = ",".join(_shape_text(s) for s in n.input_shapes) + "->" + _shape_text(n.output_shape)
            bound = n.gemm_bound
            rows.append((n.name, n.op, n.device, shapes, _num(n.macs), _num(n.instructions),
                         "-" if n.cycles is None else _num(n.cycles),
                         "-" if bound is None else f"{bound:.1f}", f"{n.seconds * 1e3:.2f}"))
        cycles = self.total_cycles
        block = self.nodes[0].block if self.nodes else 1
        bound = (100.0 * self.total_macs / block / cycles) if cycles and self.total_macs else None
        rows.append(("total", "", "", "", _num(self.total_macs), _num(self.total_instructions),
                     "-" if cycles is None else _num(cycles), "-" if bound is None else f"{bound:.1f}",
                     f"{self.total_seconds * 1e3:.2f}"))
        widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
        numeric = {4, 5, 6, 7, 8}

        def line(r):
            return "  ".join(str(v).rjust(w) if i in numeric else str(v).ljust(w)
                             for i, (v, w) in enumerate(zip(r, widths, strict=True))).rstrip()

        sep = "  ".join("-" * w for w in widths)
        mac_share, wall_share = self.accelerator_share
        share = (f"accelerator: {100 * mac_share:.1f}% of the MACs, {100 * wall_share:.1f}% of the node wall time "
                 f"({sum(n.device != 'cpu' for n in self.nodes)} of {len(self.nodes)} nodes)")
        return "\n".join([share, line(head), sep, *(line(r) for r in rows[:-1]), sep, line(rows[-1])])

    def __str__(self) -> str:
        return self.table()

    def as_dicts(self) -> list[dict]:
        """One dict per node (for CSV or JSON)."""
        return [{"index": n.index, "node": n.name, "op": n.op, "device": n.device, "reason": n.reason,
                 "input_shapes": [list(s) for s in n.input_shapes], "output_shape": list(n.output_shape),
                 "macs": n.macs, "instructions": n.instructions, "cycles": n.cycles,
                 "gemm_bound_percent": n.gemm_bound, "seconds": n.seconds} for n in self.nodes]


def _num(v: int) -> str:
    return f"{v:,}"


def _shape_text(shape: Sequence[int]) -> str:
    return "x".join(str(d) for d in shape) or "()"


# ----------------------------------------------------------------------------- graph JSON facts
class _GraphInfo:
    """Shapes, dtypes and attributes of a graph executor JSON, by node."""

    def __init__(self, graph_json: str):
        doc = load_graph_json(graph_json)
        self.nodes: list[dict] = doc["nodes"]
        attrs = doc.get("attrs", {})
        self.shapes = attrs.get("shape", ["list_shape", []])[1]
        row = doc.get("node_row_ptr") or list(range(len(self.nodes) + 1))
        self.row_ptr = row

    def entry(self, node: int, index: int = 0) -> int:
        return self.row_ptr[node] + index

    def shape(self, node: int, index: int = 0) -> tuple:
        eid = self.entry(node, index)
        return tuple(self.shapes[eid]) if eid < len(self.shapes) else ()

    def input_shapes(self, node: int) -> list[tuple]:
        return [self.shape(e[0], e[1]) for e in self.nodes[node].get("inputs", [])]

    def attrs(self, node: int) -> dict:
        return self.nodes[node].get("attrs", {}) or {}


# ----------------------------------------------------------------------------- records
def _field(record: Any, *names: str, default: Any = None) -> Any:
    for name in names:
        if isinstance(record, Mapping):
            if name in record:
                return record[name]
        elif hasattr(record, name):
            return getattr(record, name)
    return default


def _node_index(record: Any, by_name: dict[str, int]) -> int:
    idx = _field(record, "node", "index", "node_index", "nid")
    if isinstance(idx, int):
        return idx
    name = _field(record, "name", "node_name")
    if isinstance(name, str) and name in by_name:
        return by_name[name]
    raise TVMError(f"the executor's node record {record!r} names no node of the graph")


class GraphModuleDebug:
    """A graph executor that reports each node (TVM's ``GraphModuleDebug``).

    Every executor method (``set_input``, ``run``, ``get_output``, ...) is the graph
    executor's; :meth:`profile` adds the per-node report.

    Parameters
    ----------
    graph_json : str
    lib : Module
    dev : Device
    dump_root : str, optional
        Accepted for compatibility (reports are returned, not dumped).
    env : Environment, optional
        The configuration whose block sizes define the GEMM bound (default: the current one).
    """

    def __init__(self, graph_json: str, lib: Any, dev: Any, dump_root: str | None = None,
                 env: Environment | None = None):
        from .executor import GraphModule

        del dump_root
        self._executor = GraphModule(graph_json, lib, dev)
        self._info = _GraphInfo(graph_json)
        self._mac_share = mac_share(graph_json)["share"]
        env = env or get_env()
        self._block = env.BATCH * env.BLOCK_IN * env.BLOCK_OUT
        self._last: DebugReport | None = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._executor, name)

    def get_output(self, index: int, out: Any = None) -> Any:
        """Output ``index`` of the last run as a CPU NDArray (TVM's return type); copied into ``out`` if given."""
        return _as_ndarray(self._executor.get_output(index), out)

    def get_input(self, index: int | str, out: Any = None) -> Any:
        """The current value of an input (by index or name) as a CPU NDArray."""
        return _as_ndarray(self._executor.get_input(index), out)

    def run(self, **inputs: Any) -> None:
        """Set ``inputs`` and run the graph once, keeping its report (:attr:`last_report`)."""
        self._last = self.profile(**inputs)

    def profile(self, **inputs: Any) -> DebugReport:
        """Run the graph once and return the per-node report.

        Raises
        ------
        TVMError
            If the executor keeps no per-node records.
        """
        import time

        if inputs:
            self._executor.set_input(**inputs)
        start = time.perf_counter()
        self._executor.run()
        total = time.perf_counter() - start
        records = _field(self._executor, "node_records", "records", "profile_records")
        if callable(records):
            records = records()
        if records is None:
            raise TVMError(f"{type(self._executor).__name__} keeps no per-node records (node_records)")
        self._last = self.report(records, total)
        return self._last

    @property
    def last_report(self) -> DebugReport | None:
        """The report of the last :meth:`run` or :meth:`profile`."""
        return self._last

    def report(self, records: Sequence[Any], total_seconds: float) -> DebugReport:
        """Build the report from the executor's per-node records."""
        info = self._info
        by_name = {n.get("name"): i for i, n in enumerate(info.nodes)}
        rows = []
        for rec in records:
            idx = _node_index(rec, by_name)
            node = info.nodes[idx]
            attrs = info.attrs(idx)
            stats = dict(_field(rec, "stats", "device_stats", default={}) or {})
            device = str(attrs.get("device") or _field(rec, "device", default="") or
                         ("cpu" if attrs.get("func_name") == "__host__" else "vta"))
            op = str(attrs.get("op") or node.get("op"))
            ins, out = info.input_shapes(idx), info.shape(idx)
            cycles = stats.get("cycle_count") if device != "cpu" else None
            rows.append(NodeReport(
                index=idx, name=str(attrs.get("layer") or node.get("name")), op=op, device=device,
                reason=str(attrs.get("reason", "")), input_shapes=ins, output_shape=out,
                macs=int(attrs.get("macs", 0)),
                instructions=sum(int(stats.get(k, 0)) for k in _INSN_KEYS),
                cycles=None if cycles is None else int(cycles),
                seconds=float(_field(rec, "time_s", "seconds", "wall_seconds", default=0.0) or 0.0),
                stats=stats, block=self._block,
            ))
        return DebugReport(rows, total_seconds, self._mac_share)

    def debug_get_output(self, node: int | str, out: Any = None) -> Any:
        """The output of one node after a run (TVM's ``debug_get_output``), if the executor keeps it.

        Raises
        ------
        TVMError
            If the executor cannot return intermediate values.
        """
        getter = getattr(self._executor, "get_node_output", None)
        if getter is None:
            raise TVMError(f"{type(self._executor).__name__} does not keep intermediate node outputs")
        if isinstance(node, str):
            names = {n.get("name"): i for i, n in enumerate(self._info.nodes)}
            if node not in names:
                raise ValueError(f"no node named {node!r} in the graph")
            node = names[node]
        value = getter(node)
        if out is not None:
            out.copyfrom(value.numpy() if hasattr(value, "numpy") else value)
            return out
        return value


def _as_ndarray(value: Any, out: Any) -> Any:
    import numpy as np

    from ..runtime import array as nd_array
    from ..runtime import cpu

    if out is not None:
        out.copyfrom(value.numpy() if hasattr(value, "numpy") else value)
        return out
    return nd_array(value, cpu(0)) if isinstance(value, np.ndarray) else value


def create(graph_json_str: str, libmod: Any, device: Any, dump_root: str | None = None) -> GraphModuleDebug:
    """``debug_executor.create``: a :class:`GraphModuleDebug` over ``graph_json_str`` and ``libmod``.

    Parameters
    ----------
    graph_json_str : str
    libmod : Module
    device : Device or list of Device
        The accelerator device (a list may add ``cpu(0)``).
    dump_root : str, optional
        Accepted for compatibility.

    Raises
    ------
    TypeError
        If a device is not a Device.
    """
    devs = tuple(device) if isinstance(device, (list, tuple)) else (device,)
    if not devs or not all(isinstance(d, Device) for d in devs):
        raise TypeError(f"debug_executor.create needs vta.runtime.Device objects, got {device!r}")
    accel = [d for d in devs if d.device_type != CPU]  # CPU nodes run on the host anyway
    return GraphModuleDebug(graph_json_str, libmod, (accel or list(devs))[0], dump_root)
