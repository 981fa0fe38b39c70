"""Fixtures of the deployment tests: the tiny network's factory, built once per module."""

from __future__ import annotations

import pytest

from vta.graph.factory import GraphExecutorFactoryModule

from . import double, netlib

double.install()


@pytest.fixture(scope="module")
def factory(tmp_path_factory):
    """A GraphExecutorFactoryModule over the hand-written graph of :mod:`netlib`."""
    from tests.conftest import make_env

    with make_env() as env:
        yield GraphExecutorFactoryModule(netlib.graph_json(env), netlib.make_lib(env), netlib.make_params(env))


@pytest.fixture(scope="module")
def net_so(factory, tmp_path_factory):
    """The factory exported as ``net.so``."""
    path = tmp_path_factory.mktemp("export") / "net.so"
    factory.export_library(path)
    return path
