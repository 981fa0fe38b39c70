"""AutoTVM on the simulated accelerator: templates with knobs, tasks, tuners measuring on the
cycle model (or tsim) in parallel on Dask, JSON-lines logs, and ``apply_history_best``.

::

    from vta import autotvm
    tasks = autotvm.task.extract_from_program("resnet18", ops=("nn.conv2d",))
    option = autotvm.measure_option(builder=autotvm.LocalBuilder(), runner=autotvm.LocalRunner())
    for t in tasks:
        tuner = autotvm.tuner.XGBTuner(t)
        tuner.tune(n_trial=200, measure_option=option,
                   callbacks=[autotvm.callback.progress_bar(200), autotvm.callback.log_to_file("log.json")])
    with autotvm.apply_history_best("log.json") as best:
        lib = vta.tvm.relay.build(graph, params=params)      # tuned tilings where records exist
    print(best.summary())                                    # which schedules were tuned, which default

The VTA operators' templates are ``conv2d_packed.vta`` and ``dense_packed.vta``
(:mod:`vta.autotvm.vta_ops`). ``vta.tvm.autotvm`` is this package under TVM's name.
"""

from __future__ import annotations

from . import (
    callback,
    measure,
    record,
    space,
    task,
    tophub,
    tuner,
    vta_ops,  # noqa: F401  (registers conv2d_packed.vta and dense_packed.vta)
)
from .dispatch import ApplyConfig, DispatchContext, FallbackContext
from .history import ApplyHistoryBest, apply_history_best
from .extract import extract_from_program
from .measure import (
    LocalBuilder,
    LocalRunner,
    MeasureErrorNo,
    MeasureInput,
    MeasureResult,
    RPCRunner,
    measure_option,
)
from .space import ConfigEntity, ConfigSpace, FallbackConfigEntity
from .task import get_config, register_topi_compute, register_topi_schedule, template

task.extract_from_program = extract_from_program

__all__ = [
    "ApplyConfig", "ApplyHistoryBest", "ConfigEntity", "ConfigSpace", "DispatchContext", "FallbackConfigEntity",
    "FallbackContext", "LocalBuilder", "LocalRunner", "MeasureErrorNo", "MeasureInput", "MeasureResult",
    "RPCRunner", "apply_history_best", "callback", "extract_from_program", "get_config", "measure",
    "measure_option", "record", "register_topi_compute", "register_topi_schedule", "space", "task", "template",
    "tophub", "tuner",
]
