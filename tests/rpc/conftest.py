"""Fixtures of the RPC tests: an in-process server, a connected client, a compiled test module."""

from __future__ import annotations

from pathlib import Path

import pytest

from vta import rpc
from vta.rpc.server import Server

CSRC = Path(__file__).resolve().parent / "csrc"


@pytest.fixture
def server(tmp_path):
    """A server on a free loopback port whose sessions live under ``tmp_path/sessions``."""
    parent = tmp_path / "sessions"
    parent.mkdir()
    with Server("127.0.0.1", 0, workdir=parent, max_upload=1 << 20) as srv:
        srv.start()
        yield srv


@pytest.fixture
def remote(server):
    """A client session with ``server`` (a 60 s limit per reply, so a bug cannot hang the suite)."""
    with rpc.connect(server.host, server.port, timeout=60) as sess:
        yield sess


@pytest.fixture(scope="module")
def kernels_obj(tmp_path_factory) -> Path:
    """``csrc/remote_kernels.c`` compiled to an object file."""
    from vta.runtime.native_lib import INCLUDE_DIR, compile_object

    out = tmp_path_factory.mktemp("rpc_kernels") / "remote_kernels.o"
    return compile_object(CSRC / "remote_kernels.c", output=out, include_dirs=(INCLUDE_DIR,))
