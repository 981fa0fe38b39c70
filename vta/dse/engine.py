"""Running many points on Dask distributed: one task per (configuration, workload, level).

By default an embedded :class:`distributed.LocalCluster` runs the tasks in worker processes (one
thread each, as many as cores); ``scheduler="tcp://host:8786"`` uses an existing cluster, and
``workers=0`` evaluates in this process without Dask (for debugging). Points whose key is in the
:class:`~vta.dse.store.ResultStore` are not submitted; every finished task's row is stored at
once. A worker that dies loses only the tasks it held: the scheduler runs them again elsewhere
(up to ``allowed_failures`` times per task). Dask's text progress bar is drawn while the tasks
run when ``progress`` is set.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from . import workloads as wl
from .evaluate import Point, evaluate
from .store import ResultStore

__all__ = ["SweepOutcome", "local_cluster", "run_points"]


@dataclass
class SweepOutcome:
    """What a run of points produced.

    Attributes
    ----------
    rows : list of dict
        One row per point, in the order of the points.
    evaluated : int
        Points computed by this run (the others came from the store).
    cached : int
        Points read from the store.
    failed : int
        Rows whose status is ``"error"`` (not stored; a re-run tries them again).
    """

    rows: list = field(default_factory=list)
    evaluated: int = 0
    cached: int = 0
    failed: int = 0


def local_cluster(workers: int | None = None):
    """An embedded ``LocalCluster``: ``workers`` processes (default: the number of cores), one thread each.

    Raises
    ------
    ImportError
        If ``dask[distributed]`` is not installed (``pip install vta[dse]``).
    """
    import dask
    from distributed import LocalCluster

    n = workers or os.cpu_count() or 1
    # Give a restarted worker on a busy machine time to start and register.
    dask.config.set({"distributed.scheduler.allowed-failures": 5, "distributed.comm.timeouts.connect": "120s",
                     "distributed.comm.timeouts.tcp": "120s"})
    return LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                        silence_logs=logging.CRITICAL)


#: Start of the reason of a row that could not run because its worker's DRAM arena was full.
ARENA_FULL = "this process's DRAM arena is used up"
#: Fresh clusters an owned LocalCluster may be replaced by to finish such rows.
MAX_ROUNDS = 20


def _arena_full(row: dict) -> bool:
    return row.get("status") == "error" and str(row.get("reason", "")).startswith(ARENA_FULL)


def _lost_row(point: Point, exc: BaseException) -> dict:
    row = {"key": point.key, "workload": point.workload, "level": point.level, "status": "error",
           "reason": f"task failed on the cluster: {type(exc).__name__}: {exc}"}
    row.update(dict(point.config))
    return row


def run_points(points: Sequence[Point], *, store: ResultStore | None = None, client=None,
               scheduler: str | None = None, workers: int | None = None, progress: bool = False,
               on_row: Callable[[dict], None] | None = None) -> SweepOutcome:
    """Evaluate ``points`` (those not in ``store``) and return every row.

    Parameters
    ----------
    points : sequence of Point
    store : ResultStore, optional
        Cache of finished rows (default: the user cache, ``vta.cache.cache_dir("dse")``).
    client : distributed.Client, optional
        Use this client (and its cluster) as it is.
    scheduler : str, optional
        Address of an existing scheduler (``tcp://host:8786``).
    workers : int, optional
        Worker processes of the embedded LocalCluster (default: the number of cores); ``0``
        evaluates in this process, without Dask.
    progress : bool
        Draw Dask's text progress bar while the tasks run.
    on_row : callable, optional
        Called with each row computed by this run, as it arrives (in completion order).

    Returns
    -------
    SweepOutcome

    Raises
    ------
    ImportError
        If Dask is needed and not installed.
    KeyboardInterrupt
        When interrupted; the rows finished so far are in ``store``.
    """
    store = store if store is not None else ResultStore()
    points = list(points)
    rows: dict[int, dict] = {}
    todo: list[int] = []
    for i, point in enumerate(points):
        row = store.get(point.key)
        if row is None:
            todo.append(i)
        else:
            rows[i] = row
    outcome = SweepOutcome(cached=len(rows))

    def finish(i: int, row: dict) -> None:
        rows[i] = row
        store.put(row)
        outcome.evaluated += 1
        outcome.failed += row.get("status") == "error"
        if on_row is not None:
            on_row(row)

    if todo and workers == 0 and client is None and scheduler is None:
        for i in todo:
            finish(i, evaluate(points[i]))
    elif todo:
        _run_dask(points, todo, finish, client=client, scheduler=scheduler, workers=workers, progress=progress)
    outcome.rows = [rows[i] for i in range(len(points))]
    return outcome


def _run_dask(points, todo, finish, *, client, scheduler, workers, progress) -> None:
    """Run ``todo`` on Dask. With an embedded LocalCluster, rows that failed because a worker's
    DRAM arena filled up (each configuration's runtime keeps 64 MiB there) are run again on a
    fresh cluster, round after round; with a given client or scheduler they stay errors (a
    re-run of the sweep evaluates them)."""
    from distributed import Client

    if client is not None or scheduler:
        own = client is None
        client = client or Client(scheduler)
        try:
            _submit_round(client, points, todo, finish, progress)
        finally:
            if own:
                client.close()
        return
    pending = list(todo)
    for _ in range(MAX_ROUNDS):
        cluster = local_cluster(workers)
        try:
            with Client(cluster) as own_client:
                retry = _submit_round(own_client, points, pending, finish, progress, hold=_arena_full)
        finally:
            cluster.close()
        if not retry:
            return
        pending = retry
    for i in pending:
        finish(i, {**_lost_row(points[i], RuntimeError("no fresh worker finished it")), "reason": ARENA_FULL})


def evaluate_in_worker(point: Point, module: str | None) -> dict:
    """:func:`evaluate` in a worker process, after importing ``module``, the module that
    registered the point's workload kind (:func:`vta.dse.workloads.kind_module`)."""
    if module is not None:
        importlib.import_module(module)
    return evaluate(point)


def _submit_round(client, points, todo, finish, progress, hold=None) -> list:
    """Submit ``todo``, finish rows as they arrive; return the indices whose rows ``hold`` kept back."""
    from distributed import as_completed

    futures = {}
    run_id = uuid.uuid4().hex[:8]  # fresh keys: a cancelled earlier run may still hold the old ones
    for i in todo:
        module = wl.kind_module(wl.get(points[i].workload))
        fut = client.submit(evaluate_in_worker, points[i], module, key=f"vta-dse-{points[i].key}-{run_id}", pure=False)
        futures[fut] = i
    bar = None
    if progress:
        from distributed import progress as dask_progress

        bar = threading.Thread(target=dask_progress, args=(list(futures),), daemon=True)
        bar.start()
    held = []
    try:
        for fut, result in as_completed(list(futures), with_results=True, raise_errors=False):
            i = futures[fut]
            if fut.status == "error":  # (type, exception, traceback): the task itself failed
                exc = result[1] if isinstance(result, tuple) else result
                finish(i, _lost_row(points[i], exc))
            elif not isinstance(result, dict):
                finish(i, _lost_row(points[i], RuntimeError(f"task ended as {fut.status!r}")))
            elif hold is not None and hold(result):
                held.append(i)
            else:
                finish(i, result)
    except BaseException:
        client.cancel(list(futures))
        raise
    if bar is not None:
        bar.join(timeout=5)
    return sorted(held)
