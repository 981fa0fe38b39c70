"""Tuning tasks and templates (AutoTVM's ``autotvm.task``).

A *template* is a function building a schedule whose knobs it reads from ``cfg``
(:func:`get_config`); ``@template(name)`` registers one, and ``register_topi_compute`` +
``register_topi_schedule`` register an operator's compute and schedule as one template (the
schedule reads the configuration of the workload its compute recorded). :func:`create` makes a
:class:`Task`: the template with concrete arguments and its configuration space.

Task arguments are kept in AutoTVM's serialised form (tensors as ``("TENSOR", shape, dtype)``)
so a record's ``input`` is plain JSON; the template receives placeholders again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..env import get_env
from ..errors import ScheduleError
from .dispatch import FALLBACK, ApplyConfig, DispatchContext
from .space import ConfigSpace

__all__ = ["TASK_TABLE", "Task", "TaskTemplate", "args_to_workload", "create", "deserialize_args", "get_config",
           "register_topi_compute", "register_topi_schedule", "serialize_args", "template"]

#: Registered templates by task name.
TASK_TABLE: dict[str, TaskTemplate] = {}
#: Tasks whose schedules are built outside their template (the graph tasks of
#: :mod:`vta.autotvm.vta_ops`, which registers itself when the package is imported): each hook is
#: ``(instantiate(task, config) -> (s, args) | None, define_space(task) -> ConfigSpace | None)``.
SPECIAL_HOOKS: list[tuple[Callable, Callable]] = []


def register_special(instantiate: Callable, define_space: Callable) -> None:
    """Add a hook for tasks whose schedule and space do not come from calling their template."""
    SPECIAL_HOOKS.append((instantiate, define_space))


def serialize_args(args) -> tuple:
    """Tensors -> ``("TENSOR", shape, dtype)``; tuples kept; other values as they are.

    Raises
    ------
    TypeError
        If a value cannot be written to JSON.
    """
    from ..te.tensor import Tensor

    out = []
    for a in args:
        if isinstance(a, Tensor):
            out.append(("TENSOR", tuple(int(d) for d in a.shape), str(a.dtype)))
        elif isinstance(a, (list, tuple)):
            out.append(tuple(serialize_args(a)))
        elif a is None or isinstance(a, (bool, int, float, str)):
            out.append(a)
        elif isinstance(a, np.integer):
            out.append(int(a))
        else:
            raise TypeError(f"task argument {a!r} cannot be serialised; accepted: tensors, numbers, strings, tuples")
    return tuple(out)


def deserialize_args(args) -> list:
    """``("TENSOR", shape, dtype)`` -> placeholders; other values as they are."""
    from ..te import placeholder

    out = []
    for i, a in enumerate(args):
        if isinstance(a, (list, tuple)) and len(a) == 3 and a[0] == "TENSOR":
            out.append(placeholder(tuple(a[1]), name=f"arg{i}", dtype=a[2]))
        elif isinstance(a, list):
            out.append(tuple(a))
        else:
            out.append(a)
    return out


def args_to_workload(args, task_name: str) -> tuple:
    """``(task_name, *serialised args)``, AutoTVM's workload tuple."""
    return (task_name,) + serialize_args(args)


class TaskTemplate:
    """A template: ``fcompute`` + ``fschedule`` (topi style) or one function returning ``(s, args)``.

    ``reference`` (optional) maps the input arrays to the expected output, for checking
    measurements; without one the measurement compares with the plain schedule compiled for the
    host CPU. ``config_hook`` (optional) adds knobs and filters from the compute's outputs.
    """

    def __init__(self):
        self.fcompute: Callable | None = None
        self.fschedule: Callable | None = None
        self.func: Callable | None = None
        self.reference: Callable | None = None

    def __call__(self, *args, **kwargs):
        args = deserialize_args(args)
        if self.func is not None:
            return self.func(*args, **kwargs)
        if self.fcompute is None or self.fschedule is None:
            raise ScheduleError("this template has no compute or no schedule registered")
        inputs = [a for a in args if _is_tensor(a)]
        out = self.fcompute(*args, **kwargs)
        s = self.fschedule([out])
        return s, inputs + [out]


def _is_tensor(a) -> bool:
    from ..te.tensor import Tensor

    return isinstance(a, Tensor)


def template(task_name: str, func: Callable | None = None):
    """``@autotvm.template("name")``: register a function ``f(*args) -> (s, [tensors])`` whose
    knobs come from :func:`get_config`. The decorated function still works when called directly
    (the default configuration, or the one the current context holds)."""

    def register(f: Callable):
        tmpl = TASK_TABLE.setdefault(task_name, TaskTemplate())
        tmpl.func = f

        def wrapper(*args, **kwargs):
            cfg = _config_for((task_name, serialize_args(args), dict(kwargs)))
            with ApplyConfig(cfg):
                return f(*args, **kwargs)

        wrapper.__name__ = getattr(f, "__name__", task_name)
        wrapper.__doc__ = f.__doc__
        wrapper.template = tmpl
        return wrapper

    return register(func) if func is not None else register


def register_topi_compute(task_name: str, func: Callable | None = None):
    """``@autotvm.register_topi_compute("name")`` on ``f(cfg, *args)``: calling the result computes
    with the configuration the current context holds for this workload (recorded on the output
    as ``attrs["workload"]``)."""

    def register(f: Callable):
        tmpl = TASK_TABLE.setdefault(task_name, TaskTemplate())

        def compute(*args, **kwargs):
            workload = (task_name, serialize_args(args), dict(kwargs))
            cfg = _config_for(workload)
            out = f(cfg, *args, **kwargs)
            out.op.attrs["workload"] = workload
            return out

        tmpl.fcompute = compute
        compute.__name__ = getattr(f, "__name__", task_name)
        compute.__doc__ = f.__doc__
        return compute

    return register(func) if func is not None else register


def register_topi_schedule(task_name: str, func: Callable | None = None):
    """``@autotvm.register_topi_schedule("name")`` on ``f(cfg, outs)``: the configuration is the
    one of the workload the registered compute recorded below ``outs``."""

    def register(f: Callable):
        tmpl = TASK_TABLE.setdefault(task_name, TaskTemplate())

        def schedule(outs):
            outs = [outs] if _is_tensor(outs) else list(outs)
            workload = _find_workload(outs, task_name)
            return f(_config_for(workload), outs)

        tmpl.fschedule = schedule
        schedule.__name__ = getattr(f, "__name__", task_name)
        schedule.__doc__ = f.__doc__
        return schedule

    return register(func) if func is not None else register


def _find_workload(outs, task_name: str):
    seen = set()
    todo = [t.op for t in outs]
    while todo:
        op = todo.pop()
        if id(op) in seen:
            continue
        seen.add(id(op))
        wl = getattr(op, "attrs", {}).get("workload") if hasattr(op, "attrs") else None
        if wl is not None and wl[0] == task_name:
            return wl
        todo.extend(t.op for t in getattr(op, "input_tensors", []))
    raise ScheduleError(f"register_topi_schedule({task_name!r}): no {task_name!r} compute below {outs!r}")


def _config_for(workload):
    ctx = DispatchContext.current()
    cfg = ctx.query(get_env().target, workload) if ctx is not None else None
    if cfg is None:
        cfg = FALLBACK.query(get_env().target, workload)
    return cfg


def get_config():
    """The configuration the current template instantiation uses (AutoTVM's ``get_config``)."""
    ctx = DispatchContext.current()
    cfg = ctx.query(get_env().target, None) if ctx is not None else None
    return cfg if cfg is not None else FALLBACK.query(get_env().target, None)


class Task:
    """A template with concrete arguments: ``name``, ``args``, ``kwargs``, ``target``,
    ``config_space``, ``flop``; :meth:`instantiate` builds the schedule of one configuration.

    ``spec`` (for tasks extracted from a graph) is the fused operator the measurement builds
    exactly as the graph does; it is not part of the record.
    """

    def __init__(self, name: str, args, kwargs: dict | None = None, target: Any = None, spec: Any = None):
        self.name = name
        self.args = serialize_args(args)
        self.kwargs = dict(kwargs or {})
        self.target = target if target is not None else get_env().target
        self.spec = spec
        self.config_space: ConfigSpace | None = None
        self.flop = 0.0
        self.env_cfg = dict(get_env().cfg_dict)

    @property
    def func(self) -> TaskTemplate:
        try:
            return TASK_TABLE[self.name]
        except KeyError:
            raise KeyError(f"no template is registered as {self.name!r}; registered: {sorted(TASK_TABLE)!r}") from None

    @property
    def workload(self) -> tuple:
        """``(name, args, kwargs)``: the key records are matched by."""
        return (self.name, self.args, self.kwargs)

    def instantiate(self, config):
        """The schedule and argument tensors of ``config`` (a point of :attr:`config_space`).

        Raises
        ------
        vta.autotvm.space.InstantiationError, vta.errors.ScheduleError
            If the template refuses the configuration.
        """
        for instantiate, _ in SPECIAL_HOOKS:
            special = instantiate(self, config)
            if special is not None:
                return special
        with ApplyConfig(config):
            return self.func(*self.args, **self.kwargs)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["target"] = str(self.target)
        state["config_space"] = None  # workers get configurations, not the space
        return state

    def __setstate__(self, state):
        from ..target import Target

        self.__dict__.update(state)
        self.target = Target(state["target"])

    def __repr__(self):
        return f"Task(func_name={self.name}, args={self.args!r}, kwargs={self.kwargs!r}, workload={self.workload!r})"


def create(task_name: str, args, target: Any = None, target_host: Any = None, kwargs: dict | None = None) -> Task:
    """``autotvm.task.create``: a task of a registered template with its configuration space.

    Raises
    ------
    KeyError
        If no template is registered under ``task_name``.
    vta.errors.ScheduleError
        If the template fails on its default configuration.
    """
    del target_host
    if task_name not in TASK_TABLE:
        raise KeyError(f"no template is registered as {task_name!r}; registered: {sorted(TASK_TABLE)!r}")
    from ..target import Target

    if target is not None and not isinstance(target, Target):
        target = Target(target)
    task = Task(task_name, args, kwargs, target)
    space = next((sp for sp in (define(task) for _, define in SPECIAL_HOOKS) if sp is not None), None)
    if space is None:
        space = ConfigSpace()
        with ApplyConfig(space):
            task.func(*task.args, **task.kwargs)
    task.config_space = space
    task.flop = space.flop
    return task
