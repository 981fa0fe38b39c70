"""Getting started with VTA: add two vectors on the accelerator (upstream ``vta_get_started.py``).

The flow every VTA program follows, on the smallest example:

1. declare the computation with tensor expressions: two inputs copied into the accumulator
   SRAM, an add on the accelerator's ALU, and a cast on the way out;
2. schedule it: SRAM scopes for the intermediate stages, a DMA pragma on each copy, the ALU
   pragma on the add;
3. build it into a host object, upload and load it through an RPC session, run it on arrays
   that live in the accelerator's DRAM, and compare with NumPy.

Run with ``python examples/get_started.py`` (the configuration comes from ``VTA_CONFIG``).
Exits with status 1 if the accelerator's result differs from NumPy's.
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

    # In simulation the "remote" device is this process; on a board it is an RPC server.
    if env.TARGET not in ("sim", "tsim", "model"):
        print(f"this example runs on the simulators only (TARGET is {env.TARGET!r})")
        return 2
    remote = rpc.LocalSession()
    dev = remote.ext_dev(0)

    # ---- the computation: C = A + B on vectors of m * BLOCK_OUT 32-bit lanes, narrowed to
    #      env.inp_dtype (int8 on the default configuration) on the way out.
    # Data is laid out in tiles the accelerator handles as one unit: (outer, tile, BATCH, BLOCK_OUT).
    m, o = 64, 1
    shape = (o, m, env.BATCH, env.BLOCK_OUT)
    A = te.placeholder(shape, name="A", dtype=env.acc_dtype)
    B = te.placeholder(shape, name="B", dtype=env.acc_dtype)
    A_buf = te.compute(shape, lambda *i: A(*i), "A_buf")        # DRAM -> accumulator SRAM
    B_buf = te.compute(shape, lambda *i: B(*i), "B_buf")
    C_buf = te.compute(shape, lambda *i: A_buf(*i).astype(env.acc_dtype) + B_buf(*i).astype(env.acc_dtype),
                       name="C_buf")                              # on the ALU
    C = te.compute(shape, lambda *i: C_buf(*i).astype(env.inp_dtype), name="C")  # SRAM -> DRAM, narrowed

    s = te.create_schedule(C.op)
    print("---- the default schedule, as plain loops")
    print(tvm.lower(s, [A, B, C], simple_mode=True))

    # ---- the schedule: where each stage lives and which unit moves or computes it.
    for stage in (A_buf, B_buf, C_buf):
        s[stage].set_scope(env.acc_scope)
    s[A_buf].pragma(s[A_buf].op.axis[0], env.dma_copy)
    s[B_buf].pragma(s[B_buf].op.axis[0], env.dma_copy)
    s[C_buf].pragma(s[C_buf].op.axis[0], env.alu)
    s[C].pragma(s[C].op.axis[0], env.dma_copy)
    print("---- after the VTA passes: runtime calls and uop kernels")
    print(vta.lower(s, [A, B, C], simple_mode=True))

    # ---- build, save, upload, load.
    my_vadd = vta.build(s, [A, B, C], tvm.target.Target("ext_dev", host=env.target_host), name="my_vadd")
    temp = utils.tempdir()
    my_vadd.save(temp.relpath("vadd.o"))
    remote.upload(temp.relpath("vadd.o"))
    f = remote.load_module("vadd.o")

    # ---- run: random inputs, packed into tiles (reshape, then move the tile axis outward).
    # The values are drawn in the range of the output type C (int8 on the default configuration,
    # int4 on a narrow one), so that small sums come back unchanged and large ones wrap.
    rng = np.random.default_rng(0)
    A_orig = dtypes.random_ints(rng, C.dtype, (o * env.BATCH, m * env.BLOCK_OUT)).astype(A.dtype)
    B_orig = dtypes.random_ints(rng, C.dtype, (o * env.BATCH, m * env.BLOCK_OUT)).astype(B.dtype)

    def pack(x):
        return x.reshape(o, env.BATCH, m, env.BLOCK_OUT).transpose((0, 2, 1, 3))

    A_nd = tvm.nd.array(pack(A_orig), dev)
    B_nd = tvm.nd.array(pack(B_orig), dev)
    # The output is allocated by the runtime, which also handles types NumPy lacks (int4).
    C_nd = tvm.nd.empty(shape, C.dtype, dev)
    simulator.clear_stats()
    f(A_nd, B_nd, C_nd)
    stats = simulator.stats()

    # ---- check against NumPy: the sum, wrapped to C's type (its low OUT_WIDTH bits, signed)
    # like the hardware's narrowing store.
    C_ref = pack(dtypes.wrap(A_orig.astype(env.acc_dtype) + B_orig.astype(env.acc_dtype), C.dtype))
    ok = np.array_equal(C_nd.numpy(), C_ref)
    print("Execution statistics:")
    for key in ("inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "uop_load_nbytes",
                "out_store_nbytes", "gemm_counter", "alu_counter"):
        print(f"\t{key:<16}: {stats[key]:>10}")
    print("vector add: " + ("PASSED" if ok else "FAILED (the result differs from NumPy)"))
    remote.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
