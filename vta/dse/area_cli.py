"""The ``area`` sub-command of ``python -m vta`` (added by :func:`add_commands`).

::

    python -m vta area [--config FILE ...] [--hw DIR] [--reference NAME] [--json] [--no-cache] [--timeout S]
                       [--mapping {full,fast}] [--hierarchy] [--per-option]

Synthesises the core for each configuration (default: every shipped one) and prints cells,
flip-flops, Yosys's transistor estimate and SRAM bits; with several configurations, each row's
change against the reference (the default configuration when it is among them). With
``--per-option``, each configuration is replaced by the rows of :func:`vta.hw.area.option_configs`
(the configuration with every option off, then that base with each of its options alone, then all
of them), compared with the base; the hierarchy is then kept, the mapping is ``fast`` unless
``--mapping`` says otherwise, and a second table lists the RTL modules each row changes. With
``--hierarchy`` and a reference, the same second table follows the first. Exit status 0, or 2 on bad
arguments or a failed synthesis (one line on stderr).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TextIO

__all__ = ["add_commands"]


def add_commands(sub) -> None:
    """Add ``area`` to an argparse sub-parser collection."""
    from ..hw.area import MAPPINGS

    ar = sub.add_parser("area", help="synthesise the RTL (Yosys) and print cells, flip-flops and SRAM bits")
    ar.add_argument("--config", type=Path, action="append", default=None, metavar="FILE",
                    help="configuration file or shipped name (repeatable; default: every shipped one)")
    ar.add_argument("--hw", type=Path, default=None, metavar="DIR", help="RTL directory (default: hw/)")
    ar.add_argument("--reference", default=None, metavar="NAME",
                    help="row the others are compared with (default: vta_config.json when present, "
                         "the first base with --per-option)")
    ar.add_argument("--json", action="store_true", help="print one JSON object per configuration")
    ar.add_argument("--no-cache", action="store_true", help="synthesise again even when a result is cached")
    ar.add_argument("--timeout", type=float, default=None, metavar="S", help="stop a synthesis after S seconds")
    ar.add_argument("--mapping", choices=sorted(MAPPINGS), default=None,
                    help="ABC mapping: full (Yosys's default script, the default) or fast (bounded time; "
                         "the default with --per-option)")
    ar.add_argument("--hierarchy", action="store_true",
                    help="keep the module hierarchy and list the modules whose cells differ from the reference")
    ar.add_argument("--per-option", action="store_true",
                    help="one row per hardware option of each configuration: its base (every option off), "
                         "the base with that option alone, all of them (implies --hierarchy)")
    ar.set_defaults(func=_cmd_area)


def _rows_to_synthesise(args) -> list[tuple[str, dict]]:
    """``(row name, configuration dict)`` for each row the command prints.

    Raises
    ------
    vta.dse.space.SpecError, vta.errors.ConfigError
        If a configuration file is missing or invalid.
    """
    from .space import CONFIG_DIR, shipped_config
    from ..hw.area import option_configs

    paths = args.config or sorted(CONFIG_DIR.glob("*.json"))
    rows = []
    for path in paths:
        config = shipped_config(path)
        if not args.per_option:
            rows.append((Path(path).name, config))
            continue
        prefix = f"{Path(path).name}: " if len(paths) > 1 else ""
        rows += [(prefix + name, cfg) for name, cfg in option_configs(config)]
    return rows


def _cmd_area(args, out: TextIO) -> int:
    from ..env import Environment
    from ..errors import VTAError
    from ..hw.area import area, format_table, format_units

    if args.hw is not None and not args.hw.is_dir():
        sys.stderr.write(f"vta: error: --hw {str(args.hw)!r} is not a directory\n")
        return 2
    mapping = args.mapping or ("fast" if args.per_option else "full")
    hierarchy = args.hierarchy or args.per_option
    rows = []
    try:
        for name, config in _rows_to_synthesise(args):
            env = Environment(config)
            sys.stderr.write(f"synthesising {name} ({env.BITSTREAM}, mapping {mapping}"
                             f"{', hierarchy kept' if hierarchy else ''}) ...\n")
            rows.append((name, area(env, args.hw, use_cache=not args.no_cache, timeout=args.timeout,
                                    mapping=mapping, hierarchy=hierarchy)))
    except (VTAError, ValueError) as exc:
        sys.stderr.write(f"vta: error: {exc}\n")
        return 2
    if args.json:
        for name, a in rows:
            out.write(json.dumps({"name": name, **a}, sort_keys=True) + "\n")
        return 0
    names = [n for n, _ in rows]
    reference = args.reference
    if reference is None and len(rows) > 1:
        default = names[0] if args.per_option else "vta_config.json"  # per option: the (first) base
        reference = default if default in names else None
    try:
        out.write(format_table(rows, reference))
        if hierarchy and reference is not None:
            out.write("\nmodules whose cells differ from the reference\n")
            out.write(format_units(rows, reference))
    except (VTAError, ValueError) as exc:
        sys.stderr.write(f"vta: error: {exc}\n")
        return 2
    return 0
