"""pytest runner of the whole-core cocotb tests (vta_top with a Python memory model).

The default and BATCH=2 cores run always. The 4-bit and 1x32x32 cores are marked ``slow`` and
run with ``-m slow``: two more whole-core builds would exceed this directory's time budget.
"""

import pytest

from tests.hw.hwsim import needs_verilator, run

pytestmark = needs_verilator


@pytest.mark.parametrize("config", ["vta_config.json", "batch2.json",
                                    pytest.param("narrow.json", marks=pytest.mark.slow),
                                    pytest.param("block32.json", marks=pytest.mark.slow),
                                    pytest.param("extended.json", marks=pytest.mark.slow)])
def test_top(tmp_path, request, config):
    if config in ("narrow.json", "block32.json", "extended.json") and "slow" not in (request.config.getoption("markexpr") or ""):
        pytest.skip(f"the {config} whole-core test is slow; run it with -m slow")
    run("vta_top", "tests.hw.top.cocotb_top", tmp_path, config=config)
