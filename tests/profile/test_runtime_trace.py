"""vta.testing.trace around a compiled program: the runtime's runs land in the trace, labelled."""

from __future__ import annotations

import numpy as np
import pytest

import vta
import vta.testing
from tests.conftest import make_env
from vta import tvm
from vta.env import Environment
from vta.tvm import rpc, te

pytestmark = pytest.mark.native


def _vadd(env, m: int):
    shape = (1, m, env.BATCH, env.BLOCK_OUT)
    a = te.placeholder(shape, name="A", dtype=env.acc_dtype)
    b = te.placeholder(shape, name="B", dtype=env.acc_dtype)
    a_buf = te.compute(shape, lambda *i: a(*i), "A_buf")
    b_buf = te.compute(shape, lambda *i: b(*i), "B_buf")
    c_buf = te.compute(shape, lambda *i: a_buf(*i) + b_buf(*i), name="C_buf")
    c = te.compute(shape, lambda *i: c_buf(*i).astype(env.inp_dtype), name="C")
    s = te.create_schedule(c.op)
    for stage in (a_buf, b_buf, c_buf):
        s[stage].set_scope(env.acc_scope)
    s[a_buf].pragma(s[a_buf].op.axis[0], env.dma_copy)
    s[b_buf].pragma(s[b_buf].op.axis[0], env.dma_copy)
    s[c_buf].pragma(s[c_buf].op.axis[0], env.alu)
    s[c].pragma(s[c].op.axis[0], env.dma_copy)
    return vta.build(s, [a, b, c], tvm.target.Target("ext_dev", host=env.target_host), name="vadd"), shape


def test_trace_of_a_compiled_vector_add(tmp_path):
    env = Environment({**make_env().cfg_dict, "TARGET": "model"})
    with env:
        mod, shape = _vadd(env, 16)
        remote = rpc.LocalSession()
        dev = remote.ext_dev(0)
        rng = np.random.default_rng(0)
        a_np = rng.integers(-128, 128, size=shape).astype(env.acc_dtype)
        b_np = rng.integers(-128, 128, size=shape).astype(env.acc_dtype)
        a_nd, b_nd = tvm.nd.array(a_np, dev), tvm.nd.array(b_np, dev)
        c_nd = tvm.nd.array(np.zeros(shape, dtype=env.inp_dtype), dev)
        with vta.testing.trace(out_dir=tmp_path, env=env) as rec:
            with rec.layer("vadd"):
                mod(a_nd, b_nd, c_nd)
        remote.close()
    assert np.array_equal(c_nd.numpy(), (a_np + b_np).astype(env.inp_dtype))
    tl = rec.timeline
    assert {la.name for la in tl.layers} == {"vadd"}
    names = {e.info.name for e in tl.events if e.unit != "fetch"}
    assert {"LOAD ACC", "ALU ADD", "STORE", "FINISH"} <= names
    for unit in ("load", "compute", "store"):
        assert sum(e.busy for e in tl.events if e.unit == unit) == tl.counts[f"{unit}_busy_cycles"]
    assert (tmp_path / "trace.json").stat().st_size > 0
