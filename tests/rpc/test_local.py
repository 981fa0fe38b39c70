"""LocalSession: the session API in-process (files, path refusal, modules, devices)."""

from __future__ import annotations

import numpy as np
import pytest

from vta import runtime
from vta.errors import RPCError
from vta.rpc import LocalSession

BAD_NAMES = ["..", ".", "../escape", "a/b", "/etc/passwd", "a\\b", "nul\x00byte", "", "x" * 300]


def test_files_round_trip_and_workdir_is_removed(tmp_path):
    src = tmp_path / "payload.bin"
    data = bytes(range(256)) * 3
    src.write_bytes(data)
    with LocalSession() as sess:
        work = sess.workdir
        sess.upload(src)                          # under its base name
        sess.upload(b"second", target="two.txt")  # bytes need a target
        sess.upload(str(src), target="copy.bin")
        assert sess.listdir() == ["copy.bin", "payload.bin", "two.txt"]
        assert sess.download("payload.bin") == data
        assert sess.download("two.txt") == b"second"
        assert (work / "copy.bin").read_bytes() == data
        sess.remove("copy.bin")
        assert sess.listdir() == ["payload.bin", "two.txt"]
        with pytest.raises(RPCError, match="no file 'copy.bin'"):
            sess.download("copy.bin")
    assert not work.exists()
    with pytest.raises(RPCError, match="closed"):
        sess.listdir()


@pytest.mark.parametrize("name", BAD_NAMES)
def test_names_that_leave_the_workdir_are_refused(tmp_path, name):
    with LocalSession(workdir_parent=tmp_path) as sess:
        for op in (lambda: sess.upload(b"x", target=name), lambda: sess.download(name),
                   lambda: sess.remove(name), lambda: sess.load_module(name)):
            with pytest.raises(RPCError, match="file name"):
                op()
        # nothing was written anywhere under tmp_path except the (empty) work directory
        assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == [sess.workdir.relative_to(tmp_path)]


def test_upload_size_limit_and_bytes_without_target(tmp_path):
    with LocalSession(workdir_parent=tmp_path, max_upload=10) as sess:
        sess.upload(b"0123456789", target="ok")
        with pytest.raises(RPCError, match="exceeds the limit of 10 bytes"):
            sess.upload(b"0123456789A", target="big")
        with pytest.raises(RPCError, match="target"):
            sess.upload(b"data")
        assert sess.listdir() == ["ok"]


def test_devices_are_local():
    with LocalSession() as sess:
        assert (sess.ext_dev(0).device_type, sess.cpu(0).device_type) == (12, 1)
        assert sess.device("llvm -mcpu=core-avx2", 0).device_type == 1
        assert sess.device(12, 3).device_id == 3
        assert sess.ext_dev(0).session is None
        with pytest.raises(ValueError):
            sess.device("fpga", 0)


def test_get_function_and_load_module(kernels_obj):
    runtime.register_func("tests.rpc.local_mul", lambda a, b: a * b, override=True)
    with LocalSession() as sess:
        assert sess.get_function("tests.rpc.local_mul")(6, 7) == 42
        with pytest.raises(RPCError, match="no global function"):
            sess.get_function("tests.rpc.no_such_function")
        sess.upload(kernels_obj)
        mod = sess.load_module(kernels_obj.name)
        try:
            x = runtime.array(np.arange(5, dtype="int32"), sess.ext_dev(0))
            y = runtime.array(np.full(5, 10, dtype="int32"), sess.ext_dev(0))
            assert mod(x, y, 3) == 5
            np.testing.assert_array_equal(y.numpy(), 10 + 3 * np.arange(5))
            x.close()
            y.close()
        finally:
            mod.close()


def test_unclosed_session_removes_its_workdir_at_exit(tmp_path):
    """Upstream tutorials write ``remote = rpc.LocalSession()`` and never close it."""
    import subprocess
    import sys

    script = (
        "from vta.rpc import LocalSession\n"
        f"remote = LocalSession(workdir_parent={str(tmp_path)!r})\n"
        "remote.upload(b'x' * 1000, target='lib.o')\n"
        "print(remote.workdir)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    workdir = proc.stdout.strip().splitlines()[-1]
    assert workdir.startswith(str(tmp_path))
    assert list(tmp_path.iterdir()) == []


def test_dropped_session_removes_its_workdir(tmp_path):
    import gc

    remote = LocalSession(workdir_parent=tmp_path)
    remote.upload(b"abc", target="a.bin")
    assert len(list(tmp_path.iterdir())) == 1
    del remote
    gc.collect()
    assert list(tmp_path.iterdir()) == []


def test_failed_upload_leaves_no_partial_file(tmp_path, monkeypatch):
    import os

    remote = LocalSession(workdir_parent=tmp_path)
    real_fdopen = os.fdopen

    class Boom(Exception):
        pass

    def failing_fdopen(fd, mode="r", *a, **k):
        f = real_fdopen(fd, mode, *a, **k)

        class Half:
            def __enter__(self):
                return self

            def __exit__(self, *exc):
                f.close()

            def write(self, data):
                f.write(data[: len(data) // 2])
                raise Boom("disk full")

        return Half()

    remote.upload(b"old contents", target="net.so")
    monkeypatch.setattr(os, "fdopen", failing_fdopen)
    with pytest.raises(Boom):
        remote.upload(b"n" * 4096, target="net.so")
    monkeypatch.undo()
    assert remote.listdir() == ["net.so"]
    assert remote.download("net.so") == b"old contents"
    remote.close()
