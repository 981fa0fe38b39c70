"""2-D convolution on VTA (upstream ``optimize/convolution_opt.py``).

One ResNet-18 layer: a 14 x 14 feature map with 256 channels convolved with 256 3 x 3 filters,
padding 1, stride 1, in int8 with int32 accumulation, then ``>> 8`` and a clip to [0, 127].
(These are the numbers of the default configuration: the element types, the shift and the clip
follow the configuration's input width, e.g. int4, ``>> 4`` and [0, 7] on
``configs/narrow.json``, and the tile factors follow its BLOCK.)
New compared with ``matrix_multiply_opt.py``:

* the input is zero-padded by a ``topi.nn.pad`` stage placed in the input SRAM: the DMA engine
  writes the zeros itself, and how many rows of padding a tile needs depends on the tile (the
  load's pad fields are run-time expressions);
* activations and weights are packed into VTA's blocked layouts (NCHWnc, OIHWoi);
* two virtual threads (``cthread``) split the output channels so that loads of one thread can
  overlap the GEMMs of the other;
* the shift and the clip run on the vector ALU in the accumulator SRAM.

Run with ``python examples/convolution_opt.py``; exits with status 1 on a wrong result.
The layer has batch 1, so it needs a configuration with BATCH = 1; on another one (such as
``configs/batch2.json``) the script says so and exits with status 2.
"""

import sys

import numpy as np

from vta import tvm
from vta.tvm import te, rpc
from vta.tvm.contrib import utils
import vta
from vta.tvm import topi
from vta.testing import dtypes, simulator


def main() -> int:
    env = vta.get_env()
    if env.TARGET not in ("sim", "tsim", "model"):
        print(f"this example runs on the simulators only (TARGET is {env.TARGET!r})")
        return 2
    # ---- the layer (ResNet-18, 14 x 14 x 256 -> 256).
    batch_size, height, width = 1, 14, 14
    in_channels, out_channels = 256, 256
    kernel_h = kernel_w = 3
    pad_h = pad_w = 1
    stride_h = stride_w = 1
    # The layer must split evenly into the GEMM core's tiles of BATCH x BLOCK_IN inputs.
    if batch_size % env.BATCH != 0:
        print(f"this layer has batch {batch_size}, which does not split into tiles of BATCH = {env.BATCH}: "
              "use a configuration with BATCH = 1 (LOG_BATCH = 0), such as the default "
              "configs/vta_config.json, configs/narrow.json or configs/block32.json")
        return 2
    # The schedule below also cuts the output channels into blocks of 128.
    if in_channels % env.BLOCK_IN != 0 or 128 % env.BLOCK_OUT != 0:
        print(f"this layer's {in_channels} input channels and its blocks of 128 output channels do not split "
              f"into tiles of BLOCK_IN = {env.BLOCK_IN} and BLOCK_OUT = {env.BLOCK_OUT}: "
              "use a configuration whose BLOCK divides 128, such as the shipped ones in configs/")
        return 2

    # In simulation the "remote" device is this process; on a board it is an RPC server.
    remote = rpc.LocalSession()
    dev = remote.ext_dev(0)

    data_shape = (batch_size // env.BATCH, in_channels // env.BLOCK_IN, height, width, env.BATCH, env.BLOCK_IN)
    kernel_shape = (out_channels // env.BLOCK_OUT, in_channels // env.BLOCK_IN, kernel_h, kernel_w,
                    env.BLOCK_OUT, env.BLOCK_IN)
    fout_height = (height + 2 * pad_h - kernel_h) // stride_h + 1
    fout_width = (width + 2 * pad_w - kernel_w) // stride_w + 1
    output_shape = (batch_size // env.BATCH, out_channels // env.BLOCK_OUT, fout_height, fout_width,
                    env.BATCH, env.BLOCK_OUT)

    dy = te.reduce_axis((0, kernel_h), name="dy")
    dx = te.reduce_axis((0, kernel_w), name="dx")
    ic = te.reduce_axis((0, in_channels // env.BLOCK_IN), name="ic")
    ic_tns = te.reduce_axis((0, env.BLOCK_IN), name="ic_tns")
    data = te.placeholder(data_shape, name="data", dtype=env.inp_dtype)
    kernel = te.placeholder(kernel_shape, name="kernel", dtype=env.wgt_dtype)

    # Copy stages: the padded input and the weights (they become DMA loads).
    data_buf = topi.nn.pad(data, [0, 0, pad_h, pad_w, 0, 0], name="data_buf")
    kernel_buf = te.compute(kernel_shape, lambda *i: kernel(*i), "kernel_buf")
    res_conv = te.compute(
        output_shape,
        lambda bo, co, i, j, bi, ci: te.sum(
            data_buf[bo, ic, i * stride_h + dy, j * stride_w + dx, bi, ic_tns].astype(env.acc_dtype)
            * kernel_buf[co, ic, dy, dx, ci, ic_tns].astype(env.acc_dtype),
            axis=[ic, dy, dx, ic_tns]),
        name="res_conv")
    res_shr = te.compute(output_shape, lambda *i: res_conv(*i) >> env.INP_WIDTH, name="res_shr")
    inp_max = (1 << (env.INP_WIDTH - 1)) - 1
    res_max = te.compute(output_shape, lambda *i: te.max(res_shr(*i), 0), "res_max")
    res_min = te.compute(output_shape, lambda *i: te.min(res_max(*i), inp_max), "res_min")
    res = te.compute(output_shape, lambda *i: res_min(*i).astype(env.inp_dtype), name="res")

    s = te.create_schedule(res.op)
    print("---- the default schedule, as plain loops")
    print(tvm.lower(s, [data, kernel, res], simple_mode=True))

    # ---- tiling: 8 output-channel blocks x 7 rows x 14 columns per output tile.
    b_block = 1 // env.BATCH
    oc_block = 128 // env.BLOCK_OUT     # 128 output channels per block
    # 16 input channels per reduction step, but at least one whole tile when a tile holds more
    # (BLOCK_IN = 32 on configs/block32.json).
    ic_block = max(1, 16 // env.BLOCK_IN)
    h_block = 7
    w_block = 14
    b, oc, y, x, b_tns, oc_tns = s[res].op.axis
    b_out, b_inn = s[res].split(b, factor=b_block)
    oc_out, oc_inn = s[res].split(oc, factor=oc_block)
    y_out, y_inn = s[res].split(y, factor=h_block)
    x_out, x_inn = s[res].split(x, factor=w_block)
    s[res].reorder(b_out, oc_out, y_out, x_out, b_inn, oc_inn, y_inn, x_inn, b_tns, oc_tns)
    # The convolution and the epilogue are computed per output tile.
    for stage in (res_conv, res_shr, res_max, res_min):
        s[stage].compute_at(s[res], x_out)
    # Block the reduction over input channels; GEMM tile axes innermost; a loop that moves the
    # output (x_inn) right outside them, since every GEMM must write a different accumulator.
    b_inn, oc_inn, y_inn, x_inn, b_tns, oc_tns = s[res_conv].op.axis
    ic_out, ic_inn = s[res_conv].split(ic, factor=ic_block)
    s[res_conv].reorder(ic_out, b_inn, oc_inn, y_inn, ic_inn, dy, dx, x_inn, b_tns, oc_tns, ic_tns)

    # ---- two virtual threads over the output-channel tiles.
    v_threads = 2
    _, tx = s[res].split(oc_out, factor=v_threads)
    s[res].reorder(tx, b_out)
    s[res].bind(tx, te.thread_axis("cthread"))

    # ---- SRAM scopes, DMA, tensorization, ALU.
    s[data_buf].set_scope(env.inp_scope)
    s[kernel_buf].set_scope(env.wgt_scope)
    for stage in (res_conv, res_shr, res_min, res_max):
        s[stage].set_scope(env.acc_scope)
    s[data_buf].compute_at(s[res_conv], ic_out)
    s[kernel_buf].compute_at(s[res_conv], ic_out)
    s[data_buf].pragma(s[data_buf].op.axis[0], env.dma_copy)
    s[kernel_buf].pragma(s[kernel_buf].op.axis[0], env.dma_copy)
    s[res].pragma(s[res].op.axis[4], env.dma_copy)
    s[res_conv].tensorize(b_tns, env.gemm)
    for stage in (res_shr, res_min, res_max):
        s[stage].pragma(s[stage].op.axis[0], env.alu)
    print("---- after the VTA passes")
    print(vta.lower(s, [data, kernel, res], simple_mode=True))

    # ---- build, save, upload, load.
    my_conv = vta.build(s, [data, kernel, res], tvm.target.Target("ext_dev", host=env.target_host), name="my_conv")
    temp = utils.tempdir()
    my_conv.save(temp.relpath("conv2d.o"))
    remote.upload(temp.relpath("conv2d.o"))
    f = remote.load_module("conv2d.o")

    # ---- data in NCHW / OIHW, packed into the blocked layouts.
    # Random values over the whole range of each input type (int8, or int4 on a narrow
    # configuration; NumPy carries int4 values in int8 and tvm.nd.array packs them).
    rng = np.random.default_rng(0)
    data_np = dtypes.random_ints(rng, data.dtype, (batch_size, in_channels, height, width))
    kernel_np = dtypes.random_ints(rng, kernel.dtype, (out_channels, in_channels, kernel_h, kernel_w))
    data_packed = data_np.reshape(batch_size // env.BATCH, env.BATCH, in_channels // env.BLOCK_IN, env.BLOCK_IN,
                                  height, width).transpose((0, 2, 4, 5, 1, 3))
    kernel_packed = kernel_np.reshape(out_channels // env.BLOCK_OUT, env.BLOCK_OUT, in_channels // env.BLOCK_IN,
                                      env.BLOCK_IN, kernel_h, kernel_w).transpose((0, 2, 4, 5, 1, 3))
    data_nd = tvm.nd.array(data_packed, dev, dtype=data.dtype)
    kernel_nd = tvm.nd.array(kernel_packed, dev, dtype=kernel.dtype)
    res_nd = tvm.nd.empty(output_shape, res.dtype, dev)

    simulator.clear_stats()
    f(data_nd, kernel_nd, res_nd)
    stats = simulator.stats()

    # ---- check against the NumPy convolution.
    res_ref = topi.testing.conv2d_nchw_python(data_np.astype(env.acc_dtype), kernel_np.astype(env.acc_dtype),
                                              (stride_h, stride_w), (pad_h, pad_w)).astype(env.acc_dtype)
    res_ref = np.clip(res_ref >> env.INP_WIDTH, 0, inp_max)
    res_ref = dtypes.wrap(res_ref, res.dtype)        # the final cast (after the clip every value fits)
    res_ref = res_ref.reshape(batch_size // env.BATCH, env.BATCH, out_channels // env.BLOCK_OUT, env.BLOCK_OUT,
                              fout_height, fout_width).transpose((0, 2, 4, 5, 1, 3))
    ok = np.array_equal(res_nd.numpy(), res_ref)
    print("Execution statistics:")
    for key in ("inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "uop_load_nbytes",
                "out_store_nbytes", "gemm_counter", "alu_counter"):
        print(f"\t{key:<16}: {stats[key]:>10}")
    print("2-D convolution: " + ("PASSED" if ok else "FAILED (the result differs from NumPy)"))
    remote.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
