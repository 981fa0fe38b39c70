"""Auto-tuning a convolutional network on VTA (upstream's ``tune_relay_vta.py``).

Upstream tuned ResNet-18's conv2d tasks on Pynq boards reached through an RPC tracker, then
compiled the network with the best records and measured it on a board. Here the candidates
are measured on the cycle model (exact against tsim) by a Dask cluster on this machine: the
board-specific lines (tracker, ``program_fpga``, ``reconfig_runtime``) are replaced by a
``LocalRunner``; the rest keeps upstream's structure and AutoTVM calls.

Run: ``python examples/tune_relay_vta.py [--quick]`` (``--quick``: two small tasks, 8 trials).
"""

import argparse
import os
import sys
import tempfile

import numpy as np

import vta
from vta import autotvm
from vta.autotvm.tuner import GATuner, GridSearchTuner, RandomTuner, XGBTuner
from vta.tvm import relay

ap = argparse.ArgumentParser()
ap.add_argument("--quick", action="store_true")
cli = ap.parse_args()

env = vta.get_env()
target = env.target

# The network: the package's ResNet-18, quantized (upstream: gluon's resnet18_v1 + relay quantize).
network = "resnet18"
log_file = os.path.join(tempfile.mkdtemp(), "%s.%s.log" % (env.TARGET, network))

tuning_option = {
    "log_filename": log_file,
    "tuner": "xgb" if not cli.quick else "random",
    "n_trial": 8 if cli.quick else 1000,
    "early_stopping": None,
    "measure_option": autotvm.measure_option(
        builder=autotvm.LocalBuilder(),
        # upstream: autotvm.RPCRunner(env.TARGET, host=tracker_host, port=tracker_port, number=5, timeout=60)
        runner=autotvm.LocalRunner(target="model", number=1, timeout=60, n_parallel=0 if cli.quick else None),
    ),
}


def tune_tasks(tasks, measure_option, tuner="xgb", n_trial=1000, early_stopping=None, log_filename="tuning.log",
               use_transfer_learning=True):
    # create tmp log file
    tmp_log_file = log_filename + ".tmp"
    if os.path.exists(tmp_log_file):
        os.remove(tmp_log_file)

    for i, tsk in enumerate(reversed(tasks)):
        prefix = "[Task %2d/%2d] " % (i + 1, len(tasks))

        # create tuner
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

        # do tuning
        tsk_trial = min(n_trial, len(tsk.config_space))
        tuner_obj.tune(
            n_trial=tsk_trial,
            early_stopping=early_stopping,
            measure_option=measure_option,
            callbacks=[
                autotvm.callback.progress_bar(tsk_trial, prefix=prefix),
                autotvm.callback.log_to_file(tmp_log_file),
            ],
        )

    # pick best records to a cache file
    autotvm.record.pick_best(tmp_log_file, log_filename)
    os.remove(tmp_log_file)


def tune_and_evaluate(tuning_opt):
    model = autotvm.extract.resnet18_model(seed=0)
    mod, params = relay.frontend.from_onnx(model)

    # extract the conv2d tasks (upstream: ops=(relay.op.get("nn.conv2d"),))
    tasks = autotvm.task.extract_from_program(mod, params=params, ops=("nn.conv2d",), target=target,
                                              target_host=env.target_host)
    if cli.quick:
        tasks = sorted(tasks, key=lambda t: len(t.config_space))[:2]

    # We should have extracted the conv2d tasks of the network
    assert len(tasks) > 0
    print("Extracted %d conv2d tasks" % len(tasks))

    # run tuning tasks
    print("Tuning...")
    tune_tasks(tasks, **tuning_opt)

    # compile kernels with history best records
    with autotvm.tophub.context(target, extra_files=[log_file]) as best:
        print("Compile...")
        with vta.build_config(opt_level=3, disabled_pass={"AlterOpLayout"}):
            lib = relay.build(mod, target=target, params=params)
    tuned = [d for d in best.decisions if d["source"] == "tuned"]
    print("%d accelerator schedules from the log, %d from the default chooser" %
          (len(tuned), len(best.decisions) - len(tuned)))
    assert len(tuned) >= len(tasks)

    # run the network once (upstream: time_evaluator on the board); the quick mode stops here
    if not cli.quick:
        from vta.runtime import ext_dev
        from vta.tvm.contrib import graph_executor

        m = graph_executor.GraphModule(lib["default"](ext_dev(0)))
        x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype("float32")
        m.set_input(0, x)
        m.run()
        print("output shape", np.asarray(m.get_output(0)).shape)
    print("PASSED")


tune_and_evaluate(tuning_option)
sys.exit(0)
