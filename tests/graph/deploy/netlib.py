"""A tiny network for the deployment tests: two accelerator vector adds around a host cast.

``out = int8(int32(int8(x + p)) + p)`` with ``x`` an input and ``p`` a parameter, both int32
tiles (1, M, BATCH, BLOCK_OUT); the accelerator functions are built with ``vta.build`` from the
vector-add schedule of the getting-started tutorial, each as its own module, the second
imported under the first (the library layout the graph compiler produces).
"""

from __future__ import annotations

import json

import numpy as np

import vta
from vta import te

M = 4


def vadd_module(name: str, env):
    shape = (1, M, env.BATCH, env.BLOCK_OUT)
    A = te.placeholder(shape, name="A", dtype=env.acc_dtype)
    B = te.placeholder(shape, name="B", dtype=env.acc_dtype)
    A_buf = te.compute(shape, lambda *i: A(*i), "A_buf")
    B_buf = te.compute(shape, lambda *i: B(*i), "B_buf")
    C_buf = te.compute(shape, lambda *i: A_buf(*i).astype(env.acc_dtype) + B_buf(*i).astype(env.acc_dtype),
                       name="C_buf")
    C = te.compute(shape, lambda *i: C_buf(*i).astype(env.inp_dtype), name="C")
    s = te.create_schedule(C.op)
    for stage in (A_buf, B_buf, C_buf):
        s[stage].set_scope(env.acc_scope)
    s[A_buf].pragma(s[A_buf].op.axis[0], env.dma_copy)
    s[B_buf].pragma(s[B_buf].op.axis[0], env.dma_copy)
    s[C_buf].pragma(s[C_buf].op.axis[0], env.alu)
    s[C].pragma(s[C].op.axis[0], env.dma_copy)
    return vta.build(s, [A, B, C], "ext_dev", name=name)


def graph_json(env) -> str:
    shape = [1, M, env.BATCH, env.BLOCK_OUT]

    def op(name, func, inputs, extra=None):
        attrs = {"func_name": func, "num_inputs": str(len(inputs)), "num_outputs": "1", "flatten_data": "0"}
        attrs.update(extra or {})
        return {"op": "tvm_op", "name": name, "attrs": attrs, "inputs": [[i, 0, 0] for i in inputs]}

    nodes = [
        {"op": "null", "name": "x", "inputs": []},
        {"op": "null", "name": "p", "inputs": []},
        op("add1", "vta_add_1", [0, 1], {"device": "vta"}),
        op("cast", "__host__", [2], {"device": "cpu", "host_kernel": "cast",
                                      "host_attrs": json.dumps({"dtype": "int32"})}),
        op("add2", "vta_add_2", [3, 1], {"device": "vta"}),
    ]
    return json.dumps({
        "nodes": nodes, "arg_nodes": [0, 1], "heads": [[4, 0, 0]],
        "node_row_ptr": [0, 1, 2, 3, 4, 5],
        "attrs": {"shape": ["list_shape", [shape] * 5],
                  "dltype": ["list_str", ["int32", "int32", "int8", "int32", "int8"]],
                  "storage_id": ["list_int", [0, 1, 2, 3, 4]]},
    })


def make_lib(env):
    root = vadd_module("vta_add_1", env)
    root.import_module(vadd_module("vta_add_2", env))
    return root


def make_params(env, seed=1):
    rng = np.random.default_rng(seed)
    return {"p": rng.integers(-100, 100, size=(1, M, env.BATCH, env.BLOCK_OUT)).astype(np.int32)}


def make_input(env, seed=2):
    rng = np.random.default_rng(seed)
    return rng.integers(-100, 100, size=(1, M, env.BATCH, env.BLOCK_OUT)).astype(np.int32)


def reference(x, p):
    """NumPy: int8 wrap of the first sum, widened, plus p, wrapped again."""
    first = (x.astype(np.int64) + p).astype(np.int8)
    return (first.astype(np.int64) + p).astype(np.int8)
