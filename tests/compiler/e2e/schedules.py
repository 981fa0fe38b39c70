"""Old import path of two tutorial builders, kept only for ``tests/examples/test_disassemble.py``.

Every compiler-test schedule lives in :mod:`tests.compiler.workloads`; import from there. This
module goes away once that test imports ``tests.compiler.workloads`` itself.
"""

from __future__ import annotations

from ..workloads import Workload, conv2d
from ..workloads import blocked_gemm as _blocked_gemm

__all__ = ["blocked_gemm", "conv2d"]


def blocked_gemm(env, rng=None) -> Workload:
    """The blocked GEMM tutorial with one store per output-channel block (as the e2e tests run it)."""
    return _blocked_gemm(env, rng, store_at="row")
