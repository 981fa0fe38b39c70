"""The ``area`` sub-command of ``python -m vta`` (added by :func:`add_commands`).

::

    python -m vta area [--config FILE ...] [--hw DIR] [--reference NAME] [--json] [--no-cache] [--timeout S]

Synthesises the core for each configuration (default: every shipped one) and prints cells,
flip-flops, Yosys's transistor estimate and SRAM bits; with several configurations, each row's
change against the reference (the default configuration when it is among them). Exit status 0,
or 2 on bad arguments or a failed synthesis (one line on stderr).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TextIO

__all__ = ["add_commands"]


def add_commands(sub) -> None:
    """Add ``area`` to an argparse sub-parser collection."""
    ar = sub.add_parser("area", help="synthesise the RTL (Yosys) and print cells, flip-flops and SRAM bits")
    ar.add_argument("--config", type=Path, action="append", default=None, metavar="FILE",
                    help="configuration file or shipped name (repeatable; default: every shipped one)")
    ar.add_argument("--hw", type=Path, default=None, metavar="DIR", help="RTL directory (default: hw/)")
    ar.add_argument("--reference", default=None, metavar="NAME",
                    help="row the others are compared with (default: vta_config.json when present)")
    ar.add_argument("--json", action="store_true", help="print one JSON object per configuration")
    ar.add_argument("--no-cache", action="store_true", help="synthesise again even when a result is cached")
    ar.add_argument("--timeout", type=float, default=None, metavar="S", help="stop a synthesis after S seconds")
    ar.set_defaults(func=_cmd_area)


def _cmd_area(args, out: TextIO) -> int:
    from .space import CONFIG_DIR, shipped_config
    from ..env import Environment
    from ..errors import VTAError
    from ..hw.area import area, format_table

    paths = args.config or sorted(CONFIG_DIR.glob("*.json"))
    if args.hw is not None and not args.hw.is_dir():
        sys.stderr.write(f"vta: error: --hw {str(args.hw)!r} is not a directory\n")
        return 2
    rows = []
    try:
        for path in paths:
            env = Environment(shipped_config(path))
            sys.stderr.write(f"synthesising {Path(path).name} ({env.BITSTREAM}) ...\n")
            rows.append((Path(path).name, area(env, args.hw, use_cache=not args.no_cache, timeout=args.timeout)))
    except (VTAError, ValueError) as exc:
        sys.stderr.write(f"vta: error: {exc}\n")
        return 2
    if args.json:
        for name, a in rows:
            out.write(json.dumps({"name": name, **a}, sort_keys=True) + "\n")
        return 0
    names = [n for n, _ in rows]
    reference = args.reference if args.reference is not None else ("vta_config.json" if "vta_config.json" in names
                                                                   and len(rows) > 1 else None)
    try:
        out.write(format_table(rows, reference))
    except ValueError as exc:
        sys.stderr.write(f"vta: error: {exc}\n")
        return 2
    return 0
