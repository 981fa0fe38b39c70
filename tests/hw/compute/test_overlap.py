"""pytest runner of the cocotb tests of the two-lane compute unit (option COMPUTE_OVERLAP): the
whole core built for ``configs/extended.json``. Marked ``slow`` like test_top's extended core (a
whole-core build of its own); the default tier checks the option through
tests/e2e/test_option_differential.py."""

import pytest

from tests.hw.hwsim import needs_verilator, run

pytestmark = [*needs_verilator, pytest.mark.slow]


def test_compute_overlap(tmp_path):
    run("vta_top", "tests.hw.compute.cocotb_overlap", tmp_path, config="extended.json")
