"""The profile-guided tsim build (vta.sim.tsim.pgo): its setting, its refusals, and a library
built with a profile computing what NumPy computes in the cycles of the build without one."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import make_env
from vta.dram import DRAM
from vta.errors import BuildError
from vta.sim.tsim import library, pgo

from . import gemm_program


def test_setting_rejects_other_values(monkeypatch):
    monkeypatch.setenv("VTA_TSIM_PGO", "yes")
    with pytest.raises(BuildError, match=r"VTA_TSIM_PGO is 'yes'; accepted: '0'"):
        pgo.enabled()


def test_setting_zero_disables(monkeypatch):
    monkeypatch.setenv("VTA_TSIM_PGO", "0")
    assert pgo.enabled() is False


def test_profile_build_has_no_waveforms(tmp_path):
    env = make_env()
    with pytest.raises(ValueError, match="no waveform support; got trace 'vcd'"):
        library.build_sources([], "", trace="vcd", train=env, cache=tmp_path)


def test_recipe_names_the_training():
    assert set(pgo.TRAINING) <= set(pgo.recipe())


@pytest.mark.verilator
def test_training_program_runs_and_leaves_no_token(tsim_library):
    from vta.sim.tsim import TSim

    env = make_env()
    m, k = pgo._sizes(env)
    with env, DRAM(1 << 26) as dram, TSim(env, dram, library=tsim_library()) as dev:
        insn_addr, count, _ = pgo.training_program(env, dram)
        dev.clear_stats()
        assert dev.run(insn_addr, count) == 0
        stats = dev.stats()
    rounds, reps = pgo._ROUNDS, pgo._REPS
    # gemm_counter counts the accumulating (non-reset) uops: m * k * reps a round
    assert stats["gemm_counter"] == rounds * m * k * reps
    assert stats["store_retired"] == rounds and stats["load_retired"] == 2 * rounds
    assert all(stats[f"tokens_{c}"] == 0 for c in ("l2g", "g2l", "g2s", "s2g"))


def _run(lib, env, m, k, reps, seed):
    from vta.sim.tsim import TSim

    with env, DRAM(1 << 28) as dram, TSim(env, dram, library=lib) as dev:
        prog = gemm_program.build(env, dram, m=m, k=k, reps=reps, seed=seed)
        try:
            start = dev.cycles
            assert dev.run(prog.insn_addr, prog.insn_count) == 0
            np.testing.assert_array_equal(prog.output(dram), prog.expected)
            return dev.cycles - start
        finally:
            prog.free(dram)


@pytest.mark.verilator
@pytest.mark.slow
def test_profile_build_matches_numpy_in_the_same_cycles(tmp_path, tsim_library):
    env = make_env()
    from vta.sim.tsim import hwgen

    lib = library.build_sources(library.sources(), hwgen.sv_package(env), expand=library.expand_limit(env),
                                train=env, cache=tmp_path / "cache")
    plain = tsim_library()  # the waveform build, compiled without a profile
    for m, k, reps, seed in ((4, 4, 1, 1), (16, 8, 2, 3)):
        assert _run(lib, env, m, k, reps, seed) == _run(plain, env, m, k, reps, seed)
