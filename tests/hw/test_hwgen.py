"""The generated package carries the ISA layout and the register map, and rejects what the RTL cannot do."""

import re

import pytest

from tests.conftest import make_env
from vta import isa
from vta.errors import ConfigError
from vta.sim.tsim import hwgen

CONFIGS = ["vta_config.json", "batch2.json", "block32.json", "extended.json", "narrow.json"]


def _params(text: str) -> dict[str, int]:
    out = {}
    for m in re.finditer(r"localparam (?:int unsigned|logic \[7:0\]) (\w+) = (?:8'h([0-9A-F]+)|(\d+));", text):
        out[m.group(1)] = int(m.group(2), 16) if m.group(2) else int(m.group(3))
    return out


@pytest.mark.parametrize("name", CONFIGS)
def test_package_fields_match_layout(name):
    env = make_env(name)
    params = _params(hwgen.sv_package(env))
    lay = isa.layout(env)
    checked = 0
    for kind, fields in (("MEM", lay.mem), ("GEMM", lay.gemm), ("ALU", lay.alu), ("UOP", lay.uop)):
        for f in fields:
            prefix = "INSN" if f in lay.header else kind
            if kind in ("GEMM", "ALU") and f in lay.header:
                continue
            assert params[f"{prefix}_{f.name.upper()}_LO"] == f.lo
            assert params[f"{prefix}_{f.name.upper()}_W"] == f.width
            checked += 1
    assert checked > 40
    for key in ("BATCH", "BLOCK_IN", "BLOCK_OUT", "INP_WIDTH", "ACC_BUFF_DEPTH", "UOP_BUFF_DEPTH"):
        assert params[key] == getattr(env, key)


def test_register_map_is_word_aligned_and_unique():
    addrs = list(hwgen.REGISTERS.values())
    assert len(set(addrs)) == len(addrs)
    assert all(a % 4 == 0 and 0 <= a <= 0xFC for a in addrs)
    assert hwgen.REGISTERS["CTRL"] == 0x00 and hwgen.REGISTERS["UCNT0"] == 0x24
    params = _params(hwgen.sv_package(make_env()))
    for name, addr in hwgen.REGISTERS.items():
        assert params[f"REG_{name}"] == addr


def test_unsupported_element_size_is_rejected():
    from vta.env import Environment, load_config
    cfg = load_config(None)
    cfg.update(LOG_BLOCK=3, LOG_INP_WIDTH=2, LOG_INP_BUFF_SIZE=13, LOG_WGT_BUFF_SIZE=16,
               LOG_ACC_BUFF_SIZE=16)  # 8 x 4-bit inputs: a 4-byte INP element
    env = Environment(cfg)
    with pytest.raises(ConfigError, match="multiples of 8"):
        hwgen.sv_package(env)
