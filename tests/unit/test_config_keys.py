"""Every JSON file the project reads refuses keys it does not know, naming the closest known key;
every shipped JSON file still loads."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from vta.dse import baseline
from vta.dse.space import SpecError, load_spec
from vta.env import CONFIG_KEYS, INT_KEYS, Environment, load_config
from vta.errors import ConfigError, PackError

ROOT = Path(__file__).resolve().parents[2]
#: The reader of each directory of shipped JSON files.
READERS = {
    "configs": lambda p: Environment(load_config(p)),
    "baselines": lambda p: baseline.load(p, load_config(ROOT / "configs" / p.name)),
}


def _shipped_json() -> list[Path]:
    """Every JSON file of the source tree outside the test suite."""
    try:
        out = subprocess.run(["git", "ls-files", "*.json"], cwd=ROOT, capture_output=True, text=True, check=True)
        files = [ROOT / f for f in out.stdout.split()]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout (an unpacked sdist)
        files = sorted(ROOT.glob("*/*.json"))
    return sorted(f for f in files if f.parts[len(ROOT.parts)] != "tests")


SHIPPED = _shipped_json()


def test_every_shipped_json_file_has_a_reader():
    assert SHIPPED, "no shipped JSON file found"
    unread = [str(f.relative_to(ROOT)) for f in SHIPPED if f.parent.name not in READERS]
    assert not unread, f"shipped JSON files no test reads (add their reader to READERS): {unread}"


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_json_file_loads(path):
    assert READERS[path.parent.name](path) is not None


@pytest.mark.parametrize("typo, meant", [("LOG_BLOK", "LOG_BLOCK"), ("DRAM_LATENCYY", "DRAM_LATENCY"),
                                         ("log_acc_buff_size", "LOG_ACC_BUFF_SIZE"), ("TARGETS", "TARGET")])
def test_config_file_with_a_typo_is_refused_with_the_closest_key(tmp_path, typo, meant):
    cfg = load_config()
    cfg[typo] = 5
    path = tmp_path / "typo.json"
    path.write_text(json.dumps(cfg))
    with pytest.raises(ConfigError, match=f"unknown key {typo!r}; did you mean {meant}\\?"):
        load_config(path)
    with pytest.raises(ConfigError, match=f"unknown key {typo!r}; did you mean {meant}\\?"):
        Environment(cfg)


def test_unrelated_key_lists_the_accepted_keys():
    cfg = load_config()
    cfg["colour"] = "blue"
    with pytest.raises(ConfigError, match="unknown key 'colour'; accepted: TARGET, HW_VER, LOG_INP_WIDTH"):
        Environment(cfg)


def test_every_known_key_is_accepted_and_derived_keys_must_agree():
    cfg = load_config()
    env = Environment(cfg)
    full = dict(env.cfg_dict, DRAM="ddr4", DRAM_LATENCY=20, DRAM_BYTES_PER_CYCLE=8, DRAM_MAX_OUTSTANDING=4,
                ALU_REQUANT=True, ALU_MOV=True, COMPUTE_OVERLAP=True)
    assert set(full) == set(CONFIG_KEYS)
    assert Environment(full).DRAM_LATENCY == 20 and Environment(full).ALU_REQUANT and Environment(full).ALU_MOV
    assert Environment(full).COMPUTE_OVERLAP and Environment(full).BITSTREAM.endswith("rq_mv_ov")
    with pytest.raises(ConfigError, match="LOG_BLOCK_IN"):
        Environment(dict(cfg, LOG_BLOCK_IN=env.LOG_BLOCK + 1))


@pytest.mark.parametrize("key", sorted(INT_KEYS))
def test_wrong_type_and_out_of_range_values_stay_refused(key):
    lo, hi = INT_KEYS[key]
    with pytest.raises(ConfigError, match="must be an integer"):
        Environment(dict(load_config(), **{key: str(lo)}))
    with pytest.raises(ConfigError, match="outside the accepted range"):
        Environment(dict(load_config(), **{key: hi + 1}))


def test_spec_with_typos_is_a_config_error():
    with pytest.raises(ConfigError, match="unknown key 'parametres'; did you mean parameters"):
        load_spec({"parametres": {"LOG_BLOCK": [4]}})
    with pytest.raises(SpecError, match="unknown key 'LOG_BLOK'; did you mean LOG_BLOCK"):
        load_spec({"parameters": {"LOG_BLOK": [4]}})


def test_spec_base_file_with_a_typo_is_refused(tmp_path):
    base = tmp_path / "base.json"
    base.write_text(json.dumps(dict(load_config(), LOG_BLOK=5)))
    with pytest.raises(ConfigError, match="did you mean LOG_BLOCK"):
        load_spec({"base": str(base), "parameters": {"LOG_BATCH": [0]}})


def test_baseline_with_typos_is_refused(tmp_path):
    doc = json.loads((ROOT / "baselines" / "vta_config.json").read_text())
    path = tmp_path / "b.json"
    path.write_text(json.dumps(dict(doc, model_waiver={})))
    with pytest.raises(ConfigError, match="unknown key 'model_waiver'; did you mean model_waivers"):
        baseline.load(path)
    doc["config"]["LOG_BLOK"] = 4
    path.write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match="config: unknown key 'LOG_BLOK'; did you mean LOG_BLOCK"):
        baseline.load(path)


def test_pack_files_with_typos_are_refused(tmp_path, env):
    from vta.pack import Pack, Region

    region = Region("insn", "insn", 4096, 32, "uint8", (32,))
    pack = Pack(dict(load_config()), [region], {"insn": bytes(32)}, 4096, 2, {})
    pack.save(tmp_path / "p")
    Pack.load(tmp_path / "p")
    for name, typo, meant in (("config.json", "LOG_BLOK", "LOG_BLOCK"), ("program.json", "insn_cnt", "insn_count")):
        d = tmp_path / name
        pack.save(d)
        doc = json.loads((d / name).read_text())
        doc[typo] = 1
        (d / name).write_text(json.dumps(doc))
        with pytest.raises(PackError, match=f"{name}: unknown key {typo!r}; did you mean {meant}"):
            Pack.load(d)
    d = tmp_path / "regions"
    pack.save(d)
    regions = json.loads((d / "regions.json").read_text())
    regions[0]["dtpye"] = "uint8"
    (d / "regions.json").write_text(json.dumps(regions))
    with pytest.raises(PackError, match="entry 0: unknown key 'dtpye'; did you mean dtype"):
        Pack.load(d)
    assert np.array_equal(np.frombuffer(pack.image["insn"], "uint8"), np.zeros(32, "uint8"))
