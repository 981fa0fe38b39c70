"""pytest runner of the whole-core cocotb tests (vta_top with a Python memory model).

The default core runs always. The BATCH=2, 4-bit, 1x32x32 and extended cores are marked ``slow``
and run with ``-m slow``: each is a whole-core Verilator build of 20-60 s in a fresh environment,
and the default tier must stay within its time budget (the tsim differential tests still run the
BATCH=2 and 4-bit cores in the default tier).
"""

import pytest

from tests.hw.hwsim import needs_verilator, run

pytestmark = needs_verilator


@pytest.mark.parametrize("config", ["vta_config.json",
                                    *(pytest.param(name, marks=pytest.mark.slow)
                                      for name in ("batch2.json", "narrow.json", "block32.json", "extended.json"))])
def test_top(tmp_path, config):
    run("vta_top", "tests.hw.top.cocotb_top", tmp_path, config=config)
