"""Blocked GEMM: a 1024 x 1024 layer on VTA (upstream ``optimize/matrix_multiply_opt.py``).

A (1 x 1024) int8 activation times a (1024 x 1024) int8 weight matrix, accumulated in int32,
then requantised on the ALU: shift right by 8, clip to [0, 127], cast to int8. (These are the
numbers of the default configuration: the element types, the shift and the clip follow the
configuration's input width, e.g. int4, >> 4 and [0, 7] on ``configs/narrow.json``.) The
operands do not fit in SRAM at once, so the schedule tiles the computation:

* the output channels are split into blocks of 256 (``oc_out``); every accumulator-side stage
  (GEMM, shift, max, min) is computed per block (``compute_at`` the block loop);
* the reduction over input channels is split into blocks of 256 (``ic_out``), moved outermost
  in the GEMM, and the input and weight loads (``cache_read`` into the input and weight SRAMs)
  are placed inside it, so each step loads one block of each;
* the result is stored one tile at a time (the DMA pragma on ``s[res].op.axis[2]``).

Run with ``python examples/matrix_multiply_opt.py``; exits with status 1 on a wrong result.
The layer has batch 1, so it needs a configuration with BATCH = 1; on another one (such as
``configs/batch2.json``) the script says so and exits with status 2.
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
    # ---- the layer: batch 1, 1024 input and 1024 output channels, in tiles.
    batch_size, in_channels, out_channels = 1, 1024, 1024
    # The layer must split evenly into the GEMM core's tiles of BATCH x BLOCK_IN inputs.
    if batch_size % env.BATCH != 0:
        print(f"this layer has batch {batch_size}, which does not split into tiles of BATCH = {env.BATCH}: "
              "use a configuration with BATCH = 1 (LOG_BATCH = 0), such as the default "
              "configs/vta_config.json, configs/narrow.json or configs/block32.json")
        return 2
    if in_channels % env.BLOCK_IN != 0 or out_channels % env.BLOCK_OUT != 0:
        print(f"this layer has {in_channels} input and {out_channels} output channels, which do not split "
              f"into tiles of BLOCK_IN = {env.BLOCK_IN} and BLOCK_OUT = {env.BLOCK_OUT}: "
              "use a configuration whose BLOCK divides 1024")
        return 2

    # In simulation the "remote" device is this process; on a board it is an RPC server.
    remote = rpc.LocalSession()
    dev = remote.ext_dev(0)
    data_shape = (batch_size // env.BATCH, in_channels // env.BLOCK_IN, env.BATCH, env.BLOCK_IN)
    weight_shape = (out_channels // env.BLOCK_OUT, in_channels // env.BLOCK_IN, env.BLOCK_OUT, env.BLOCK_IN)
    output_shape = (batch_size // env.BATCH, out_channels // env.BLOCK_OUT, env.BATCH, env.BLOCK_OUT)

    ic = te.reduce_axis((0, in_channels // env.BLOCK_IN), name="ic")
    ic_tns = te.reduce_axis((0, env.BLOCK_IN), name="ic_tns")
    data = te.placeholder(data_shape, name="data", dtype=env.inp_dtype)
    weight = te.placeholder(weight_shape, name="weight", dtype=env.wgt_dtype)

    res_gem = te.compute(
        output_shape,
        lambda bo, co, bi, ci: te.sum(
            data[bo, ic, bi, ic_tns].astype(env.acc_dtype) * weight[co, ic, ci, ic_tns].astype(env.acc_dtype),
            axis=[ic, ic_tns]),
        name="res_gem")
    res_shr = te.compute(output_shape, lambda *i: res_gem(*i) >> env.INP_WIDTH, name="res_shr")
    res_max = te.compute(output_shape, lambda *i: tvm.te.max(res_shr(*i), 0), "res_max")
    res_min = te.compute(output_shape, lambda *i: tvm.te.min(res_max(*i), (1 << (env.INP_WIDTH - 1)) - 1),
                         "res_min")
    res = te.compute(output_shape, lambda *i: res_min(*i).astype(env.inp_dtype), name="res")

    s = te.create_schedule(res.op)
    print("---- the default schedule, as plain loops")
    print(tvm.lower(s, [data, weight, res], simple_mode=True))

    # ---- blocking: tile sizes in tiles of the GEMM core.
    b_block = 1                       # batch tiles per block (the batch is one tile)
    i_block = 256 // env.BLOCK_IN
    o_block = 256 // env.BLOCK_OUT

    # Output blocks: every accumulator stage is computed per block of output channels.
    b, oc, b_tns, oc_tns = s[res].op.axis
    b_out, b_inn = s[res].split(b, b_block)
    oc_out, oc_inn = s[res].split(oc, o_block)
    s[res].reorder(b_out, oc_out, b_inn, oc_inn)
    for stage in (res_gem, res_shr, res_max, res_min):
        s[stage].compute_at(s[res], oc_out)

    # Reduction blocks: ic_out outermost in the GEMM, then the rest of the tile loops.
    b_inn, oc_inn, b_tns, oc_tns = s[res_gem].op.axis
    ic_out, ic_inn = s[res_gem].split(ic, i_block)
    s[res_gem].reorder(ic_out, b_inn, oc_inn, ic_inn, b_tns, oc_tns, ic_tns)

    # SRAM scopes: the accumulator stages, and copies of the inputs read through the caches.
    for stage in (res_gem, res_shr, res_max, res_min):
        s[stage].set_scope(env.acc_scope)
    data_buf = s.cache_read(data, env.inp_scope, [res_gem])
    weight_buf = s.cache_read(weight, env.wgt_scope, [res_gem])
    s[data_buf].compute_at(s[res_gem], ic_out)       # one block of each input per ic_out step
    s[weight_buf].compute_at(s[res_gem], ic_out)

    # Units: DMA for the copies, GEMM for the product, ALU for the requantisation.
    s[data_buf].pragma(s[data_buf].op.axis[0], env.dma_copy)
    s[weight_buf].pragma(s[weight_buf].op.axis[0], env.dma_copy)
    s[res].pragma(s[res].op.axis[2], env.dma_copy)   # store tile by tile
    s[res_gem].tensorize(b_tns, env.gemm)
    s[res_shr].pragma(s[res_shr].op.axis[0], env.alu)
    s[res_max].pragma(s[res_max].op.axis[0], env.alu)
    s[res_min].pragma(s[res_min].op.axis[0], env.alu)
    print("---- after the VTA passes")
    print(vta.lower(s, [data, weight, res], simple_mode=True))

    # ---- build, save, upload, load.
    my_gemm = vta.build(s, [data, weight, res], tvm.target.Target("ext_dev", host=env.target_host),
                        name="my_gemm")
    temp = utils.tempdir()
    my_gemm.save(temp.relpath("gemm.o"))
    remote.upload(temp.relpath("gemm.o"))
    f = remote.load_module("gemm.o")

    # ---- data: plain matrices, packed into tiles.
    # Random values over the whole range of each input type (int8, or int4 on a narrow
    # configuration; NumPy carries int4 values in int8 and tvm.nd.array packs them).
    rng = np.random.default_rng(0)
    data_np = dtypes.random_ints(rng, data.dtype, (batch_size, in_channels))
    weight_np = dtypes.random_ints(rng, weight.dtype, (out_channels, in_channels))
    data_packed = data_np.reshape(
        batch_size // env.BATCH, env.BATCH, in_channels // env.BLOCK_IN, env.BLOCK_IN).transpose((0, 2, 1, 3))
    weight_packed = weight_np.reshape(
        out_channels // env.BLOCK_OUT, env.BLOCK_OUT, in_channels // env.BLOCK_IN, env.BLOCK_IN
    ).transpose((0, 2, 1, 3))
    data_nd = tvm.nd.array(data_packed, dev, dtype=data.dtype)
    weight_nd = tvm.nd.array(weight_packed, dev, dtype=weight.dtype)
    res_nd = tvm.nd.empty(output_shape, res.dtype, dev)

    simulator.clear_stats()
    f(data_nd, weight_nd, res_nd)
    stats = simulator.stats()

    # ---- check: the same requantisation in NumPy.
    res_ref = np.dot(data_np.astype(env.acc_dtype), weight_np.T.astype(env.acc_dtype))
    res_ref = np.clip(res_ref >> env.INP_WIDTH, 0, (1 << (env.INP_WIDTH - 1)) - 1)
    res_ref = dtypes.wrap(res_ref, res.dtype)        # the final cast (after the clip every value fits)
    res_ref = res_ref.reshape(
        batch_size // env.BATCH, env.BATCH, out_channels // env.BLOCK_OUT, env.BLOCK_OUT).transpose((0, 2, 1, 3))
    ok = np.array_equal(res_nd.numpy(), res_ref)
    print("Execution statistics:")
    for key in ("inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "uop_load_nbytes",
                "out_store_nbytes", "gemm_counter", "alu_counter"):
        print(f"\t{key:<16}: {stats[key]:>10}")
    print("blocked GEMM: " + ("PASSED" if ok else "FAILED (the result differs from NumPy)"))
    remote.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
