"""The shipped configurations with a chosen DRAM preset, for the benchmarks that compare memories."""

from __future__ import annotations

from pathlib import Path

from vta.env import Environment, load_config

_REPO = Path(__file__).resolve().parents[1]


def cfg_for(config: str, memory: str) -> dict:
    """The shipped configuration ``config`` (a name under ``configs/``, without ``.json``) with the
    DRAM preset ``memory``: ``"ideal"`` for none, else a preset name such as ``"ddr4"``."""
    cfg = load_config(_REPO / "configs" / f"{config}.json")
    cfg.pop("DRAM", None)
    if memory != "ideal":
        cfg["DRAM"] = memory
    return cfg


def env_for(config: str, memory: str) -> Environment:
    """:func:`cfg_for` as an Environment."""
    return Environment(cfg_for(config, memory))
