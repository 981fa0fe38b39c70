"""Design tools for hardware designers: design-space sweeps and the RTL regression.

Sweeps (``python -m vta sweep SPEC``)::

    from vta.dse import load_spec, run_sweep
    report = run_sweep(load_spec("spec.json"), "out/")     # a LocalCluster of Dask workers
    print(report.summary())

* :mod:`~vta.dse.space`      the parameters, grid and random sampling, SPEC files
* :mod:`~vta.dse.workloads`  ResNet-18 layers, the blocked GEMM, an ALU-heavy program; the hook
                             (:func:`~vta.dse.workloads.register_kind`) for whole networks
* :mod:`~vta.dse.evaluate`   one (configuration, workload, level) -> one row; infeasible points
                             carry their reason
* :mod:`~vta.dse.store`      rows cached by a content hash (resuming interrupted sweeps)
* :mod:`~vta.dse.engine`     Dask distributed: one task per point
* :mod:`~vta.dse.results`    CSV / JSON lines, per-configuration totals, Pareto front and plot
* :mod:`~vta.dse.rtl`        tsim libraries of any RTL directory, built once under a file lock

The regression (``python -m vta regress``) is :mod:`vta.dse.regress`: lint, cocotb unit tests,
random differential programs fsim against tsim, and workload cycles against committed baselines.

Dask (``dask[distributed]``) and matplotlib come with the ``dse`` extra: ``pip install vta[dse]``.
"""

from .engine import SweepOutcome, run_points
from .evaluate import Point, evaluate
from .results import config_totals, pareto_front, plot_pareto
from .space import Space, Spec, SpecError, load_spec
from .store import ResultStore
from .sweep import SweepReport, run_sweep

__all__ = [
           "Point",
           "ResultStore",
           "Space",
           "Spec",
           "SpecError",
           "SweepOutcome",
           "SweepReport",
           "config_totals",
           "evaluate",
           "load_spec",
           "pareto_front",
           "plot_pareto",
           "run_points",
           "run_sweep",
]
