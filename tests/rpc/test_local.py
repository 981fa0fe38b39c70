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
