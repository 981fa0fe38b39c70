"""Fixtures of the deployment tests: two small networks, built and exported once per module.

* ``vadd``: a graph JSON written by hand (two accelerator vector adds around a host cast,
  :mod:`.netlib`), wrapped into a factory directly;
* ``qnet``: conv -> relu -> conv built with GraphBuilder and compiled by ``vta.graph.build``
  (:mod:`.qnet`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from vta.graph.build_module import build
from vta.graph.factory import GraphExecutorFactoryModule

from . import netlib, qnet


@dataclass
class Net:
    name: str
    factory: Any
    so: Path
    input_name: str
    x: np.ndarray
    expected: np.ndarray


@pytest.fixture(scope="module")
def factory():
    """A GraphExecutorFactoryModule over the hand-written graph of :mod:`netlib`."""
    from tests.conftest import make_env

    with make_env() as env:
        yield GraphExecutorFactoryModule(netlib.graph_json(env), netlib.make_lib(env), netlib.make_params(env))


@pytest.fixture(scope="module")
def net_so(factory, tmp_path_factory):
    """The hand-written network exported as ``net.so``."""
    path = tmp_path_factory.mktemp("export") / "net.so"
    factory.export_library(path)
    return path


@pytest.fixture(scope="module")
def qfactory():
    """The conv -> relu -> conv network built with ``vta.graph.build``."""
    from tests.conftest import make_env

    with make_env():
        yield build(qnet.make_graph())


@pytest.fixture(scope="module", params=["vadd", "qnet"])
def net(request, factory, net_so, qfactory, tmp_path_factory) -> Net:
    """Each network, exported, with an input and the NumPy oracle's output."""
    from tests.conftest import make_env

    if request.param == "vadd":
        with make_env() as env:
            x = netlib.make_input(env)
            return Net("vadd", factory, net_so, "x", x, netlib.reference(x, netlib.make_params(env)["p"]))
    path = tmp_path_factory.mktemp("qexport") / "net.so"
    qfactory.export_library(path)
    x = qnet.make_input()
    return Net("qnet", qfactory, path, "data", x, qnet.reference(x))
