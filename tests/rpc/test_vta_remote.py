"""The "Get Started" flow through the socket server: build, save, upload, load, run on fsim."""

from __future__ import annotations

import numpy as np
import pytest

from vta import nd, rpc, te
from vta.testing import simulator

pytestmark = pytest.mark.native


def _vadd_object(env, path):
    """Compile the tutorial's vector add (C = int8(A + B) on the accumulator buffer) to ``path``."""
    from vta.build import build

    shape = (1, 64, env.BATCH, env.BLOCK_OUT)
    A = te.placeholder(shape, name="A", dtype=env.acc_dtype)
    B = te.placeholder(shape, name="B", dtype=env.acc_dtype)
    A_buf = te.compute(shape, lambda *i: A(*i), "A_buf")
    B_buf = te.compute(shape, lambda *i: B(*i), "B_buf")
    C_buf = te.compute(shape, lambda *i: A_buf(*i).astype(env.acc_dtype) + B_buf(*i).astype(env.acc_dtype),
                       name="C_buf")
    C = te.compute(shape, lambda *i: C_buf(*i).astype(env.inp_dtype), name="C")
    s = te.create_schedule(C.op)
    for t in (A_buf, B_buf, C_buf):
        s[t].set_scope(env.acc_scope)
    s[A_buf].pragma(s[A_buf].op.axis[0], env.dma_copy)
    s[B_buf].pragma(s[B_buf].op.axis[0], env.dma_copy)
    s[C_buf].pragma(s[C_buf].op.axis[0], env.alu)
    s[C].pragma(s[C].op.axis[0], env.dma_copy)
    build(s, [A, B, C], "ext_dev", name="my_vadd").save(path)
    return shape


def test_vadd_tutorial_over_the_socket(env, server, tmp_path):
    shape = _vadd_object(env, tmp_path / "vadd.o")
    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, size=shape).astype(np.int32)
    b = rng.integers(-128, 128, size=shape).astype(np.int32)
    with rpc.connect(server.host, server.port, timeout=30) as remote:
        remote.upload(str(tmp_path / "vadd.o"))
        f = remote.load_module("vadd.o")
        dev = remote.ext_dev(0)
        a_nd, b_nd = nd.array(a, dev), nd.array(b, dev)
        c_nd = nd.empty(shape, "int8", dev)
        assert isinstance(c_nd, rpc.RemoteNDArray)
        simulator.clear_stats()  # the server runs in this process, so its simulator is ours
        f(a_nd, b_nd, c_nd)
        stats = simulator.stats()
        np.testing.assert_array_equal(c_nd.numpy(), (a + b).astype(np.int8))
    assert stats["alu_counter"] == 64 and stats["out_store_nbytes"] == a.size


def test_testing_run_reaches_the_server_named_by_vta_local_sim_rpc(env, server, monkeypatch):
    import vta.testing

    monkeypatch.setenv("VTA_LOCAL_SIM_RPC", str(server.port))

    def job(run_env, remote):
        remote.upload(b"ok", target="marker")
        return run_env is env, isinstance(remote, rpc.ClientSession), remote.listdir()

    assert vta.testing.run(job) == (True, True, ["marker"])


def test_concurrent_sessions_each_get_their_own_results(env, server, tmp_path):
    """Two clients calling kernels at once share one runtime queue; each must see its own sums."""
    import threading

    shape = _vadd_object(env, tmp_path / "vadd.o")
    failures: list[str] = []

    def client(seed: int) -> None:
        rng = np.random.default_rng(seed)
        try:
            with rpc.connect(server.host, server.port, timeout=60) as remote:
                remote.upload(str(tmp_path / "vadd.o"))
                f = remote.load_module("vadd.o")
                dev = remote.ext_dev(0)
                c_nd = nd.empty(shape, "int8", dev)
                for _ in range(15):
                    a = rng.integers(-128, 128, size=shape).astype(np.int32)
                    b = rng.integers(-128, 128, size=shape).astype(np.int32)
                    f(nd.array(a, dev), nd.array(b, dev), c_nd)
                    if not np.array_equal(c_nd.numpy(), (a + b).astype(np.int8)):
                        failures.append(f"client {seed}: wrong sum")
        except Exception as exc:  # collected and asserted on below, in the test's thread
            failures.append(f"client {seed}: {exc!r}")

    threads = [threading.Thread(target=client, args=(seed,)) for seed in (1, 2, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not failures, failures



def _strip_addresses(insn):
    """An instruction without its DRAM address (arrays differ between the two processes' views)."""
    from vta import isa

    return isa.replace(insn, dram_base=0) if isinstance(insn, isa.MemInsn) else insn


def test_remote_module_disassembles_like_a_local_one(env, server, tmp_path):
    """Oracles: the same object loaded locally, and section 3.1's eight vadd instructions."""
    from vta import runtime

    shape = _vadd_object(env, tmp_path / "vadd.o")
    a = np.ones(shape, np.int32)
    with rpc.connect(server.host, server.port, timeout=30) as remote:
        remote.upload(str(tmp_path / "vadd.o"))
        f = remote.load_module("vadd.o")
        dev = remote.ext_dev(0)
        args = [nd.array(a, dev), nd.array(a, dev), nd.empty(shape, "int8", dev)]
        text = f.disassemble(*args, uops=True)
        insns = f.instructions(*args)
        kernels = f.uop_kernels(*args)
        assert not args[2].numpy().any(), "capture without execute must not run the device"
        ran = f.capture(*args, execute=True)
        assert ran.runs[0].executed and (args[2].numpy() == 2).all()
    titles = [line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("INSTRUCTION ")]
    assert titles == ["LOAD ACC", "LOAD ACC", "LOAD UOP", "ALU - add", "STORE OUT", "NOP-MEMORY-STAGE",
                      "NOP-COMPUTE-STAGE", "FINISH"]
    assert "UOP KERNELS" in text and "ALU kernel (ADD): 1 uop(s)" in text
    assert len(kernels) == 1 and kernels[0].alu_ops == ("ADD",) and kernels[0].uops[0].src_idx == 64
    dev0 = runtime.ext_dev(0)
    with runtime.load_module(tmp_path / "vadd.o") as local, nd.array(a, dev0) as x, nd.array(a, dev0) as y, \
            nd.empty(shape, "int8", dev0) as z:
        local_insns = local.instructions(x, y, z)
        local_text = local.disassemble(x, y, z, uops=True)
    assert [_strip_addresses(i) for i in insns] == [_strip_addresses(i) for i in local_insns]
    # Line for line the same text but for the DRAM addresses.
    drop = lambda t: [ln for ln in t.splitlines() if not ln.startswith("\tDRAM")]  # noqa: E731
    assert drop(text) == drop(local_text)


def test_remote_capture_errors_come_back_as_rpc_errors(env, server, tmp_path):
    from vta.errors import RPCError

    _vadd_object(env, tmp_path / "vadd.o")
    with rpc.connect(server.host, server.port, timeout=30) as remote:
        remote.upload(str(tmp_path / "vadd.o"))
        f = remote.load_module("vadd.o")
        with pytest.raises(RPCError, match="no function 'nope'"):
            f.disassemble(func_name="nope")
