"""Callbacks of :meth:`Tuner.tune` (AutoTVM's ``autotvm.callback``): ``log_to_file`` and
``progress_bar``. A callback is called as ``callback(tuner, inputs, results)`` after each batch."""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np

from .record import encode

__all__ = ["log_to_file", "progress_bar"]


def log_to_file(file_out: Any, protocol: str = "json"):
    """Append every measurement to ``file_out`` (a path or an open file) as a JSON-lines record.

    Each batch is written and flushed at once, so an interrupted run keeps what it measured.
    """

    def _callback(tuner, inputs, results) -> None:
        del tuner
        lines = "".join(encode(i, r, protocol) + "\n" for i, r in zip(inputs, results, strict=True))
        if isinstance(file_out, (str, os.PathLike)):
            with open(file_out, "a", encoding="utf-8") as f:
                f.write(lines)
        else:
            file_out.write(lines)
            file_out.flush()

    return _callback


def progress_bar(total: int, prefix: str = "", si_prefix: str = "G", stream: Any = None):
    """Draw the progress of a task: trials done, the best cycle count and error count so far.

    Uses tqdm (a dependency of the package); ``stream`` defaults to standard error.
    """
    from tqdm import tqdm

    del si_prefix
    state: dict = {"bar": None, "errors": 0}

    def _callback(tuner, inputs, results) -> None:
        if state["bar"] is None:
            state["bar"] = tqdm(total=min(total, len(tuner.valid)), desc=prefix.strip() or tuner.task.name,
                                file=stream or sys.stderr, leave=True, dynamic_ncols=True)
        state["errors"] += sum(r.error_no != 0 for r in results)
        best = tuner.best_cost
        state["bar"].set_postfix_str(f"best {best * 1e9:,.0f} cycles, {state['errors']} errors"
                                     if np.isfinite(best) else f"no valid result yet, {state['errors']} errors")
        state["bar"].update(len(results))
        if state["bar"].n >= state["bar"].total:
            state["bar"].close()

    return _callback
