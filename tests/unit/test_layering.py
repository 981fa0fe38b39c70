"""The package's import graph follows the flow: parts import only parts below them, and no
module imports itself back through others (DESIGN, "The flow": data only flows down).

Every ``import`` statement counts, including those inside functions: a lazy import is still a
dependency. The graph is read from the source with ``ast``; nothing is imported.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "vta"

#: The parts of the package, bottom to top. A part is a top-level module or subpackage of
#: ``vta``; ``vta`` itself is the package's ``__init__``. A part may import the parts listed
#: before it and never one listed after it.
LAYERS = (
    "errors",     # the exception hierarchy
    "target",     # target descriptions (TVM's tvm.target)
    "env",        # configuration -> every derived parameter
    "isa",        # instruction and micro-op layouts
    "dram",       # the DRAM arena
    "cache",      # the cache directory
    "atomic",     # crash-safe file writes (temp file, fsync, rename)
    "sim",        # the device contract and the three simulation levels
    "pack",       # program packs (run on any device)
    "profile",    # traces, per-layer reports and plots of runs on tsim, the cycle model, fsim
    "runtime",    # modules, packed functions, arrays, the native runtime and its bridge to devices
    "nd",         # tvm.nd names over the runtime's arrays
    "rpc",        # sessions, local and over sockets
    "testing",    # run(), simulator statistics, program builders
    "rpc_client", # program_fpga / reconfig_runtime (no-ops on the simulators)
    "tir",        # the IR
    "te",         # tensor expressions and schedules
    "intrin",     # the GEMM tensor intrinsic
    "transform",  # the VTA passes
    "codegen",    # host C emission
    "build",      # lower() and build(): the pass pipeline
    "topi",       # operators and schedules
    "top",        # the packed operators with upstream's signatures (over topi)
    "graph",      # whole networks: graph IR, passes, executor
    "hw",         # area from logic synthesis (Yosys)
    "dse",        # design-space sweeps and the RTL regression (hardware designers' tools)
    "frontend",   # model import
    "models",     # the ResNet-18 builder, the quantize helper, the bundled digits model
    "autotvm",    # AutoTVM: templates, tuners, measurement on the simulators, tuning logs
    "demo",       # the hand-written demo program
    "crash",      # kill-and-recover scenarios over builds, exports, sweeps and RPC uploads
    "tvm",        # TVM-name compatibility namespace
    "vta",        # the package's __init__
    "__main__",   # the command line
)

#: Module-level import cycles that are allowed, with the reason (none today).
ALLOWED_CYCLES: dict[frozenset[str], str] = {}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _targets(module: str, is_package: bool, node: ast.AST, known: dict[str, Path]) -> list[str]:
    """The package modules an import statement of ``module`` loads."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        assert isinstance(node, ast.ImportFrom)
        if node.level:
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module or ""
        names = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in known else prefix for a in node.names]
    out = []
    for name in names:
        if name != "vta" and not name.startswith("vta."):
            continue
        while name not in known and "." in name:
            name = name.rsplit(".", 1)[0]
        out.append(name)
    return out


def import_graph() -> dict[str, set[str]]:
    """``module -> modules it imports`` for every module of the package."""
    known = _modules()
    graph: dict[str, set[str]] = defaultdict(set)
    for module, path in known.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _targets(module, path.name == "__init__.py", node, known):
                    if target != module:
                        graph[module].add(target)
    return graph


def _part(module: str) -> str:
    pieces = module.split(".")
    return pieces[1] if len(pieces) > 1 else "vta"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    comp.append(member)
                    if member == node:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_every_part_has_a_place_in_the_layers():
    parts = {_part(m) for m in _modules()}
    missing = sorted(parts - set(LAYERS))
    assert not missing, f"parts without a place in LAYERS (add them where the flow puts them): {missing}"


def test_parts_import_only_parts_below_them():
    rank = {part: i for i, part in enumerate(LAYERS)}
    upward = sorted(
        f"{src} -> {dst}"
        for src, dsts in import_graph().items()
        for dst in dsts
        if _part(src) != _part(dst) and rank.get(_part(dst), -1) > rank.get(_part(src), -1)
    )
    assert not upward, "imports from a lower part to a higher one:\n" + "\n".join(upward)


def test_no_import_cycles():
    cycles = [c for c in _cycles(import_graph()) if frozenset(c) not in ALLOWED_CYCLES]
    assert not cycles, f"import cycles: {cycles}"


@pytest.mark.parametrize("cycle", [
    {"a": {"b"}, "b": {"c"}, "c": {"a"}},
    {"a": {"b"}, "b": {"a"}, "x": {"a"}},
])
def test_the_cycle_finder_finds_a_planted_cycle(cycle):
    assert _cycles(cycle), "a graph with a cycle must report it"


def test_the_cycle_finder_accepts_a_dag():
    assert _cycles({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_the_graph_sees_lazy_imports():
    # packed.py imports the arrays inside a function (ndarray imports packed at the top).
    assert "vta.runtime.ndarray" in import_graph()["vta.runtime.packed"]
