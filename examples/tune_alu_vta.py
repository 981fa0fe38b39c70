"""Auto-tuning the ALU operators on VTA (upstream's ``tune_alu_vta.py``).

Upstream extracted the element-wise ``add`` / ``multiply`` tasks of ResNet-18 and tuned their
tiling on boards through an RPC tracker. Here the ALU operator is a template written in this
file (an element-wise add and shift in the accumulator, tiled along its rows by a
``define_split`` knob, with a ``define_knob`` choosing where the shift runs), its candidates are
measured on the cycle model by a ``LocalRunner`` (the tracker lines replaced), each output
checked against the plain schedule compiled for the host, and the best record applied with
``apply_history_best``.

Run: ``python examples/tune_alu_vta.py [--quick]``.
"""

import argparse
import os
import tempfile

import vta
from vta import autotvm
from vta.autotvm.tuner import GATuner, GridSearchTuner, RandomTuner, XGBTuner
from vta.tvm import te

ap = argparse.ArgumentParser()
ap.add_argument("--quick", action="store_true")
cli = ap.parse_args()

env = vta.get_env()
target = env.target
log_file = os.path.join(tempfile.mkdtemp(), "%s.alu.log" % env.TARGET)


@autotvm.template("vta/add_shift")
def add_shift(rows, shift):
    shape = (1, rows, env.BATCH, env.BLOCK_OUT)
    A = te.placeholder(shape, name="A", dtype=env.acc_dtype)
    B = te.placeholder(shape, name="B", dtype=env.acc_dtype)
    A_buf = te.compute(shape, lambda *i: A(*i), "A_buf")
    B_buf = te.compute(shape, lambda *i: B(*i), "B_buf")
    C_buf = te.compute(shape, lambda *i: A_buf(*i) + B_buf(*i), "C_buf")
    D_buf = te.compute(shape, lambda *i: C_buf(*i) >> shift, "D_buf")
    C = te.compute(shape, lambda *i: D_buf(*i).astype(env.inp_dtype), "C")

    s = te.create_schedule(C.op)
    cfg = autotvm.get_config()
    cfg.define_split("tile_rows", rows, num_outputs=2)
    # three accumulator tiles must fit the accumulator buffer
    cfg.multi_filter(lambda e: 3 * e["tile_rows"].size[-1] <= env.ACC_BUFF_DEPTH)
    outer, inner = cfg["tile_rows"].apply(s, C, C.op.axis[1])
    for buf in (A_buf, B_buf, C_buf, D_buf):
        s[buf].set_scope(env.acc_scope)
        s[buf].compute_at(s[C], outer)
    s[A_buf].pragma(s[A_buf].op.axis[0], env.dma_copy)
    s[B_buf].pragma(s[B_buf].op.axis[0], env.dma_copy)
    s[C_buf].pragma(s[C_buf].op.axis[0], env.alu)
    s[D_buf].pragma(s[D_buf].op.axis[0], env.alu)
    s[C].pragma(inner, env.dma_copy)
    return s, [A, B, C]


def tune_tasks(tasks, measure_option, tuner="xgb", n_trial=10, early_stopping=None, log_filename="tuning.log"):
    for i, tsk in enumerate(tasks):
        prefix = "[Task %2d/%2d] " % (i + 1, len(tasks))
        if tuner == "xgb":
            tuner_obj = XGBTuner(tsk)
        elif tuner == "ga":
            tuner_obj = GATuner(tsk, pop_size=50)
        elif tuner == "random":
            tuner_obj = RandomTuner(tsk)
        elif tuner == "gridsearch":
            tuner_obj = GridSearchTuner(tsk)
        else:
            raise ValueError("Invalid tuner: " + tuner)
        tsk_trial = min(n_trial, len(tsk.config_space))
        tuner_obj.tune(
            n_trial=tsk_trial,
            early_stopping=early_stopping,
            measure_option=measure_option,
            callbacks=[
                autotvm.callback.progress_bar(tsk_trial, prefix=prefix),
                autotvm.callback.log_to_file(log_filename),
            ],
        )


# the ALU workloads (upstream: the add/multiply layers of ResNet-18)
shapes = [(256, 8), (1024, 4)] if not cli.quick else [(64, 8)]
tasks = [autotvm.task.create("vta/add_shift", args=(rows, shift), target=target) for rows, shift in shapes]
measure_option = autotvm.measure_option(
    builder=autotvm.LocalBuilder(),
    # upstream: autotvm.RPCRunner(env.TARGET, host=tracker_host, port=tracker_port, number=5, timeout=60)
    runner=autotvm.LocalRunner(target="model", number=1, timeout=60, n_parallel=0 if cli.quick else None),
)
print("Tuning %d ALU tasks..." % len(tasks))
tune_tasks(tasks, measure_option, tuner="gridsearch", n_trial=6 if cli.quick else 100, log_filename=log_file)

with autotvm.apply_history_best(log_file) as best:
    for tsk in tasks:
        cfg = best.query(target, tsk.workload)
        s, args = add_shift(*tsk.args)   # built with the best record's tiling
        vta.build(s, args, "ext_dev")
        print("%s: best %s" % (tsk.args, cfg))
        assert cfg is not None
print("%d schedules from the log" % len(tasks))
print("PASSED")
