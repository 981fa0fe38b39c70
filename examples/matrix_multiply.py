"""Matrix multiply on VTA's GEMM core (upstream ``matrix_multiply.py``).

A (1 x 256) int8 row times a (256 x 256) int8 weight matrix, accumulated in int32 and cast
back to int8 (on the default configuration; the element types and tile sizes come from the
configuration, e.g. int4 on ``configs/narrow.json``). New compared with ``get_started.py``:

* inputs go to the input and weight SRAMs (``inp_scope``, ``wgt_scope``), the product to the
  accumulator SRAM;
* the reduction axis is blocked: one block of input channels (``ko``) is loaded per step,
  because SRAMs are small (``compute_at`` of the loads inside the ``ko`` loop);
* the innermost (BATCH x BLOCK_OUT x BLOCK_IN) multiply is handed to the GEMM intrinsic with
  ``tensorize(..., env.gemm)``.

Run with ``python examples/matrix_multiply.py``; exits with status 1 on a wrong result.
"""

import sys

import numpy as np

from vta import tvm
from vta.tvm import te, rpc
from vta.tvm.contrib import utils
import vta
from vta.testing import dtypes, simulator


def main() -> int:
    env = vta.get_env()
    if env.TARGET not in ("sim", "tsim", "model"):
        print(f"this example runs on the simulators only (TARGET is {env.TARGET!r})")
        return 2
    remote = rpc.LocalSession()
    dev = remote.ext_dev(0)

    # ---- shapes in tiles: m blocks of output channels, n blocks of input channels, o batches.
    m, n, o = 16, 16, 1
    A = te.placeholder((o, n, env.BATCH, env.BLOCK_IN), name="A", dtype=env.inp_dtype)
    B = te.placeholder((m, n, env.BLOCK_OUT, env.BLOCK_IN), name="B", dtype=env.wgt_dtype)
    A_buf = te.compute((o, n, env.BATCH, env.BLOCK_IN), lambda *i: A(*i), "A_buf")
    B_buf = te.compute((m, n, env.BLOCK_OUT, env.BLOCK_IN), lambda *i: B(*i), "B_buf")

    # C_buf[bo, co, bi, ci] = sum over (ko, ki) of A[bo, ko, bi, ki] * B[co, ko, ci, ki]
    ko = te.reduce_axis((0, n), name="ko")
    ki = te.reduce_axis((0, env.BLOCK_IN), name="ki")
    C_buf = te.compute(
        (o, m, env.BATCH, env.BLOCK_OUT),
        lambda bo, co, bi, ci: te.sum(
            A_buf[bo, ko, bi, ki].astype(env.acc_dtype) * B_buf[co, ko, ci, ki].astype(env.acc_dtype),
            axis=[ko, ki]),
        name="C_buf")
    C = te.compute((o, m, env.BATCH, env.BLOCK_OUT), lambda *i: C_buf(*i).astype(env.inp_dtype), name="C")

    s = te.create_schedule(C.op)
    print("---- the default schedule, as plain loops")
    print(tvm.lower(s, [A, B, C], simple_mode=True))

    # ---- SRAM scopes, blocking of the reduction, DMA and tensorization.
    s[A_buf].set_scope(env.inp_scope)
    s[B_buf].set_scope(env.wgt_scope)
    s[C_buf].set_scope(env.acc_scope)
    bo, co, bi, ci = s[C_buf].op.axis
    s[C_buf].reorder(ko, bo, co, bi, ci, ki)        # the input-channel block loop outermost
    s[A_buf].compute_at(s[C_buf], ko)               # load one block of A and B per ko step
    s[B_buf].compute_at(s[C_buf], ko)
    s[A_buf].pragma(s[A_buf].op.axis[0], env.dma_copy)
    s[B_buf].pragma(s[B_buf].op.axis[0], env.dma_copy)
    s[C].pragma(s[C].op.axis[0], env.dma_copy)
    s[C_buf].tensorize(bi, env.gemm)                # (bi, ci, ki) is one GEMM micro-op
    print("---- after the VTA passes")
    print(vta.lower(s, [A, B, C], simple_mode=True))

    # ---- build, save, upload, load.
    my_gemm = vta.build(s, [A, B, C], tvm.target.Target("ext_dev", host=env.target_host), name="my_gemm")
    temp = utils.tempdir()
    my_gemm.save(temp.relpath("gemm.o"))
    remote.upload(temp.relpath("gemm.o"))
    f = remote.load_module("gemm.o")

    # ---- data: plain matrices, packed into tiles.
    # Random values over the whole range of each input type (int8, or int4 on a narrow
    # configuration; NumPy carries int4 values in int8 and tvm.nd.array packs them).
    rng = np.random.default_rng(0)
    A_orig = dtypes.random_ints(rng, A.dtype, (o * env.BATCH, n * env.BLOCK_IN))
    B_orig = dtypes.random_ints(rng, B.dtype, (m * env.BLOCK_OUT, n * env.BLOCK_IN))
    A_packed = A_orig.reshape(o, env.BATCH, n, env.BLOCK_IN).transpose((0, 2, 1, 3))
    B_packed = B_orig.reshape(m, env.BLOCK_OUT, n, env.BLOCK_IN).transpose((0, 2, 1, 3))
    A_nd = tvm.nd.array(A_packed, dev, dtype=A.dtype)
    B_nd = tvm.nd.array(B_packed, dev, dtype=B.dtype)
    C_nd = tvm.nd.empty((o, m, env.BATCH, env.BLOCK_OUT), C.dtype, dev)

    simulator.clear_stats()
    f(A_nd, B_nd, C_nd)
    stats = simulator.stats()

    # ---- check: the int32 product, wrapped to C's type by the cast (the low OUT_WIDTH bits).
    C_ref = dtypes.wrap(np.dot(A_orig.astype(env.acc_dtype), B_orig.T.astype(env.acc_dtype)), C.dtype)
    C_ref = C_ref.reshape(o, env.BATCH, m, env.BLOCK_OUT).transpose((0, 2, 1, 3))
    ok = np.array_equal(C_nd.numpy(), C_ref)
    print("Execution statistics:")
    for key in ("inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "uop_load_nbytes",
                "out_store_nbytes", "gemm_counter", "alu_counter"):
        print(f"\t{key:<16}: {stats[key]:>10}")
    print("matrix multiply: " + ("PASSED" if ok else "FAILED (the result differs from NumPy)"))
    remote.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
