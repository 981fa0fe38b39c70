"""Tuning logs in AutoTVM's JSON-lines record format (``autotvm.record``).

One line per measurement::

    {"input": [target, task_name, args, kwargs],
     "config": {"index": i, "code_hash": null, "entity": [[knob, "sp"|"ot"|"re", value], ...]},
     "result": [costs, error_no, all_cost, timestamp],
     "version": 0.2, "tvm_version": "0.8.0"}

``costs`` are seconds per run (simulated cycles at the accelerator clock,
:data:`vta.autotvm.measure.CLOCK_HZ`); an error record has ``[1e9]``. Lines starting with ``#``
and blank lines are skipped.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

from ..errors import TuningLogError
from .dispatch import target_model
from .measure import MeasureInput, MeasureResult
from .space import ConfigEntity
from .task import Task

__all__ = ["AUTOTVM_LOG_VERSION", "TVM_VERSION", "best_by_workload", "decode", "encode", "load_from_file",
           "pick_best", "workload_key"]

AUTOTVM_LOG_VERSION = 0.2
#: The TVM release whose AutoTVM this module follows (VTA's last: 0.8).
TVM_VERSION = "0.8.0"


def encode(inp: MeasureInput, result: MeasureResult, protocol: str = "json") -> str:
    """One log line for a measurement.

    Raises
    ------
    ValueError
        If ``protocol`` is not ``"json"``.
    """
    if protocol != "json":
        raise ValueError(f"log protocol {protocol!r} is not supported; accepted: 'json'")
    row = {
        "input": [str(inp.target), inp.task.name, _jsonable(inp.task.args), inp.task.kwargs],
        "config": inp.config.to_json_dict(),
        "result": [list(result.costs) if result.error_no == 0 else [1e9], int(result.error_no),
                   float(result.all_cost), float(result.timestamp)],
        "version": AUTOTVM_LOG_VERSION,
        "tvm_version": TVM_VERSION,
    }
    return json.dumps(row)


def _jsonable(x):
    if isinstance(x, (list, tuple)):
        return [_jsonable(a) for a in x]
    return x


def _tuplify(x):
    if isinstance(x, list):
        return tuple(_tuplify(a) for a in x)
    return x


def decode(row: str, protocol: str = "json", where: str = "<string>") -> tuple[MeasureInput, MeasureResult]:
    """The ``(MeasureInput, MeasureResult)`` of one log line.

    Raises
    ------
    vta.errors.TuningLogError
        If the line is not valid JSON or lacks a field (``where`` names the file and line).
    """
    if protocol != "json":
        raise ValueError(f"log protocol {protocol!r} is not supported; accepted: 'json'")
    from ..target import Target

    try:
        d = json.loads(row)
        tgt, name, args, kwargs = d["input"]
        config = ConfigEntity.from_json_dict(d["config"])
        costs, error_no, all_cost, timestamp = d["result"]
        target = Target(str(tgt))
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise TuningLogError(f"{where}: not an AutoTVM record ({type(exc).__name__}: {exc}); expected a JSON object "
                             f"with 'input', 'config' and 'result'") from None
    task = Task.__new__(Task)
    task.name, task.args, task.kwargs = name, _tuplify(args), dict(kwargs or {})
    task.target, task.spec, task.config_space, task.flop, task.env_cfg = target, None, None, 0.0, {}
    inp = MeasureInput(target, task, config)
    return inp, MeasureResult(tuple(costs), int(error_no), float(all_cost), float(timestamp))


def load_from_file(filename) -> Iterator[tuple[MeasureInput, MeasureResult]]:
    """Every record of a log file, in order.

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    vta.errors.TuningLogError
        For a malformed line (file and line number named).
    """
    path = os.fspath(filename)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"tuning log {path!r} does not exist")
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if line.strip() and not line.lstrip().startswith("#"):
                yield decode(line, where=f"{path}:{lineno}")


def pick_best(in_file, out_file) -> int:
    """Write the best record of each workload of ``in_file`` to ``out_file``; returns how many.

    Raises
    ------
    FileNotFoundError, vta.errors.TuningLogError
        As :func:`load_from_file`.
    """
    best = best_by_workload(load_from_file(in_file))
    tmp = f"{os.fspath(out_file)}.{os.getpid()}.pick"
    with open(tmp, "w", encoding="utf-8") as f:
        f.writelines(encode(inp, res) + "\n" for inp, res in best.values())
    os.replace(tmp, out_file)
    return len(best)


def _clean(x):
    """JSON lists -> tuples (hashable), recursively."""
    if isinstance(x, list):
        return tuple(_clean(a) for a in x)
    return x


def _mean(costs) -> float:
    costs = list(costs)
    return sum(costs) / len(costs) if costs else float("inf")


def workload_key(target, name: str, args, kwargs: dict) -> tuple:
    """The key records of one workload share: the target's configuration (whatever level measured
    it), the task name, its arguments as JSON would give them back, its keyword arguments."""
    return (target_model(target), name, _clean(json.loads(json.dumps(list(args)))),
            json.dumps(kwargs, sort_keys=True))


def best_by_workload(pairs, best: dict | None = None) -> dict:
    """The lowest-cost error-free record of each workload of ``pairs`` (``(MeasureInput,
    MeasureResult)``), added to ``best`` (a new dict when None); returns it."""
    best = {} if best is None else best
    for inp, res in pairs:
        if res.error_no != 0:
            continue
        key = workload_key(inp.target, inp.task.name, inp.task.args, inp.task.kwargs)
        have = best.get(key)
        if have is None or _mean(res.costs) < _mean(have[1].costs):
            best[key] = (inp, res)
    return best
