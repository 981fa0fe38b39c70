"""Seeing what was built: the instructions and uop kernels of the matrix-multiply tutorial.

A compiled module (``vta.build``) and a loaded one (``remote.load_module``) can show what a
call generates, without running the accelerator:

* ``mod.disassemble(*args)`` — the instruction stream in the upstream runtime's dump format;
* ``mod.instructions(*args)`` — the same stream as ``vta.isa`` records;
* ``mod.uop_kernels(*args)`` — the distinct GEMM/ALU micro-op kernels, their hardware loops and
  the instructions that run them.

Pass ``execute=True`` to run the stream as well. Run with ``python examples/show_instructions.py``;
exits with status 1 if the stream differs from the 56 instructions upstream's runtime generates.
"""

import collections
import sys

import numpy as np

from vta import tvm
from vta.tvm import te
import vta


def main() -> int:
    env = vta.get_env()
    m, n, o = 16, 16, 1
    A = te.placeholder((o, n, env.BATCH, env.BLOCK_IN), name="A", dtype=env.inp_dtype)
    B = te.placeholder((m, n, env.BLOCK_OUT, env.BLOCK_IN), name="B", dtype=env.wgt_dtype)
    A_buf = te.compute(A.shape, lambda *i: A(*i), "A_buf")
    B_buf = te.compute(B.shape, lambda *i: B(*i), "B_buf")
    ko = te.reduce_axis((0, n), name="ko")
    ki = te.reduce_axis((0, env.BLOCK_IN), name="ki")
    C_buf = te.compute(
        (o, m, env.BATCH, env.BLOCK_OUT),
        lambda bo, co, bi, ci: te.sum(
            A_buf[bo, ko, bi, ki].astype(env.acc_dtype) * B_buf[co, ko, ci, ki].astype(env.acc_dtype),
            axis=[ko, ki]),
        name="C_buf")
    C = te.compute(C_buf.shape, lambda *i: C_buf(*i).astype(env.inp_dtype), name="C")
    s = te.create_schedule(C.op)
    s[A_buf].set_scope(env.inp_scope)
    s[B_buf].set_scope(env.wgt_scope)
    s[C_buf].set_scope(env.acc_scope)
    bo, co, bi, ci = s[C_buf].op.axis
    s[C_buf].reorder(ko, bo, co, bi, ci, ki)
    s[A_buf].compute_at(s[C_buf], ko)
    s[B_buf].compute_at(s[C_buf], ko)
    for stage in (A_buf, B_buf, C):
        s[stage].pragma(s[stage].op.axis[0], env.dma_copy)
    s[C_buf].tensorize(bi, env.gemm)
    mod = vta.build(s, [A, B, C], tvm.target.Target("ext_dev", host=env.target_host), name="my_gemm")

    # The stream refers to the arrays' DRAM addresses, so it is generated for concrete arrays.
    dev = tvm.ext_dev(0)
    args = [tvm.nd.array(np.zeros(t.shape, dtype=t.dtype), dev) for t in (A, B, C)]

    text = mod.disassemble(*args)
    print("\n".join(text.splitlines()[:24]))
    print("...")
    insns = mod.instructions(*args)
    titles = [line.split(": ", 1)[1].split(" - ")[0] for line in text.splitlines() if line.startswith("INSTRUCTION ")]
    counts = collections.Counter(titles)
    print(f"{len(insns)} instructions: " + ", ".join(f"{k} x{v}" for k, v in sorted(counts.items())))
    print("uop kernels:")
    for kernel in mod.uop_kernels(*args):
        print(kernel)
    for arr in args:
        arr.close()
    mod.close()
    # Upstream's stream for this schedule (reference tvm-vta-software.md 3.2).
    expected = {"LOAD INP": 16, "LOAD WGT": 16, "LOAD UOP": 2, "GEMM": 17, "STORE OUT": 1,
                "NOP-MEMORY-STAGE": 2, "NOP-COMPUTE-STAGE": 1, "FINISH": 1}
    ok = dict(counts) == expected and len(insns) == 56
    print("instruction stream: " + ("PASSED" if ok else f"FAILED (expected {expected}, got {dict(counts)})"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
