"""The two views of the scratchpad RAM agree: hw/vta_sram.sv (simulation, what tsim runs) and
hw/syn/vta_sram.sv (synthesis, what `vta.hw.area` reads) side by side under the same random
stimulus, each checked cycle by cycle against a Python model of the RAM in the cocotb bench."""

from __future__ import annotations

import re

import pytest

from tests.hw.hwsim import HW_DIR, needs_verilator, run

pytestmark = needs_verilator

#: Row width, depth, write lanes and read ports of each bench: 16 lanes exercise the simulation
#: view's grouped lane writes (more than 8 lanes), 4 lanes its plain loop; 2 read ports, and 4 (the
#: most, the accumulator of COMPUTE_OVERLAP) in one bench.
SHAPES = {"grouped": (64, 8, 16, 2), "plain": (32, 4, 4, 2), "four_ports": (32, 4, 4, 4)}


def _renamed(path, name: str) -> str:
    text = path.read_text()
    text, count = re.subn(r"\bmodule\s+vta_sram\b", f"module {name}", text)
    assert count == 1, f"{path}: expected one module vta_sram"
    return re.sub(r"\bendmodule\s*:\s*vta_sram\b", f"endmodule : {name}", text)


def _bench(width: int, depth: int, lanes: int, ports: int) -> str:
    aw = max(1, (depth - 1).bit_length())
    inst = "\n".join(
        f"  {mod} #(.Width({width}), .Depth({depth}), .Lanes({lanes}), .NumRd({ports})) u_{tag} (\n"
        f"    .clk_i, .we_i, .wmask_i, .waddr_i, .wdata_i, .re_i, .raddr_i, .rdata_o(rdata_{tag}_o));"
        for mod, tag in (("sram_sim_view", "sim"), ("sram_syn_view", "syn")))
    return f"""module sram_views (
  input  logic                        clk_i,
  input  logic                        we_i,
  input  logic [{lanes - 1}:0]              wmask_i,
  input  logic [{aw - 1}:0]               waddr_i,
  input  logic [{width - 1}:0]              wdata_i,
  input  logic [{ports - 1}:0]              re_i,
  input  logic [{ports - 1}:0][{aw - 1}:0]  raddr_i,
  output logic [{ports - 1}:0][{width - 1}:0] rdata_sim_o,
  output logic [{ports - 1}:0][{width - 1}:0] rdata_syn_o
);
{inst}
endmodule
"""


@pytest.mark.parametrize("shape", [s if s == "grouped" else pytest.param(s, marks=pytest.mark.slow)
                                   for s in sorted(SHAPES)])
def test_simulation_and_synthesis_views_agree(tmp_path, monkeypatch, shape):
    width, depth, lanes, ports = SHAPES[shape]
    generated = {
        "sram_sim_view.sv": _renamed(HW_DIR / "vta_sram.sv", "sram_sim_view"),
        "sram_syn_view.sv": _renamed(HW_DIR / "syn" / "vta_sram.sv", "sram_syn_view"),
        "sram_views.sv": _bench(width, depth, lanes, ports),
    }
    monkeypatch.setenv("SRAM_SHAPE", ",".join(map(str, SHAPES[shape])))
    run("sram_views", "tests.hw.sram.cocotb_sram_views", tmp_path, generated=generated)
