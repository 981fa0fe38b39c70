"""Every schedule the compiler tests build, in one place.

Each builder takes an environment, an optional NumPy generator (seed 0 when left out) and its
own size parameters, and returns a :class:`Workload`: the schedule, its arguments, the input
arrays and a NumPy reference of the output. ``tutorials`` holds reference section 3 (vadd,
matrix multiply, blocked GEMM, convolution), ``unit`` section 7.2 and further unit cases,
``resnet`` the ResNet-18 layers of section 7.3 built with ``vta.topi`` (these return
``(schedule, args, inputs, expected unpacked output)``).
"""

from __future__ import annotations

from .base import (
    Workload,
    clip_max,
    gemm_reference,
    random_like,
    wrap_int32,
    wrap_to,
    zero_pad,
)
from .resnet import RESNET18_CONV, conv_layer, dense_layer
from .tutorials import blocked_gemm, conv2d, matrix_multiply, vadd, vadd_with_cpu_stages
from .unit import (
    ALU_OPS,
    PAD_CASES,
    AluOp,
    acc_8bit_load,
    alu,
    conv2d_transpose,
    conv2d_transpose_macs,
    gemm,
    gemm_by_pragma,
    padded_load,
    random_alu_pipeline,
    relu,
    residual,
    save_load_out,
    shift_and_scale,
    strided_window_load,
)

__all__ = [
    "ALU_OPS", "PAD_CASES", "RESNET18_CONV", "AluOp", "Workload", "acc_8bit_load", "alu", "blocked_gemm",
    "clip_max", "conv2d", "conv2d_transpose", "conv2d_transpose_macs", "conv_layer", "dense_layer", "gemm",
    "gemm_by_pragma", "gemm_reference", "matrix_multiply", "padded_load", "random_alu_pipeline", "random_like",
    "relu", "residual", "save_load_out", "shift_and_scale", "strided_window_load", "vadd", "vadd_with_cpu_stages",
    "wrap_int32", "wrap_to", "zero_pad",
]
