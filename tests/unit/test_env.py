"""Environment: derived parameters, scoping and configuration errors."""

from __future__ import annotations

import json

import pytest

import vta
from vta.env import Environment, load_config
from vta.errors import ConfigError

from ..conftest import CONFIG_DIR, make_env


def test_default_derived_parameters(env):
    # Values from the ISA reference, section 1.2.
    assert (env.BATCH, env.BLOCK_IN, env.BLOCK_OUT) == (1, 16, 16)
    assert (env.INP_ELEM_BYTES, env.WGT_ELEM_BYTES, env.ACC_ELEM_BYTES, env.OUT_ELEM_BYTES) == (16, 256, 64, 16)
    assert (env.UOP_BUFF_DEPTH, env.INP_BUFF_DEPTH, env.WGT_BUFF_DEPTH, env.ACC_BUFF_DEPTH, env.OUT_BUFF_DEPTH) == (
        8192, 2048, 1024, 2048, 2048)
    assert env.LOG_OUT_BUFF_SIZE == 15
    assert (env.inp_dtype, env.wgt_dtype, env.acc_dtype, env.out_dtype) == ("int8", "int8", "int32", "int8")
    assert env.BITSTREAM == "1x16_i8w8a32_15_15_18_17"
    assert env.MODEL == "sim_1x16_i8w8a32_15_15_18_17"
    assert env.acc_scope == "local.acc_buffer"
    assert env.dma_copy == "dma_copy" and env.alu == "alu"
    assert env.mock.dma_copy == "skip_dma_copy" and env.mock.alu == "skip_alu"


def test_batch2_config():
    env = make_env("batch2.json")
    assert env.BATCH == 2
    assert env.INP_ELEM_BYTES == 32 and env.ACC_ELEM_BYTES == 128
    assert env.INP_BUFF_DEPTH == 1024 and env.ACC_BUFF_DEPTH == 1024


def test_scope_nesting_restores_previous():
    outer = vta.get_env()
    cfg = dict(outer.cfg_dict)
    cfg["TARGET"] = "xyz"
    with Environment(cfg) as a:
        assert vta.get_env() is a and a.TARGET == "xyz"
        with make_env("batch2.json") as b:
            assert vta.get_env() is b
        assert vta.get_env() is a
    assert vta.get_env() is outer


def test_vta_config_variable(tmp_path, monkeypatch):
    cfg = load_config(CONFIG_DIR / "batch2.json")
    path = tmp_path / "c.json"
    path.write_text(json.dumps(cfg))
    monkeypatch.setenv("VTA_CONFIG", str(path))
    assert Environment.from_file().BATCH == 2


@pytest.mark.parametrize(
    "change, words",
    [
        ({"LOG_ACC_BUFF_SIZE": 18}, ["micro-op", "34 bits"]),
        ({"LOG_ACC_BUFF_SIZE": 18, "LOG_WGT_BUFF_SIZE": 16, "LOG_INP_BUFF_SIZE": 14}, ["ALU", "LOG_ACC_BUFF_SIZE"]),
        ({"LOG_UOP_BUFF_SIZE": 16}, ["LOG_UOP_BUFF_SIZE"]),
        ({"LOG_INP_BUFF_SIZE": 16}, ["micro-op"]),
        ({"LOG_BLOCK": "4"}, ["LOG_BLOCK", "integer"]),
        ({"LOG_BATCH": 9}, ["LOG_BATCH", "range"]),
        ({"LOG_BLOCK_IN": 3}, ["LOG_BLOCK_IN", "contradicts"]),
    ],
)
def test_unencodable_or_malformed_config(change, words):
    cfg = load_config(CONFIG_DIR / "vta_config.json")
    cfg.update(change)
    with pytest.raises(ConfigError) as info:
        Environment(cfg)
    for w in words:
        assert w in str(info.value)


def test_missing_key_and_bad_file(tmp_path):
    cfg = load_config(CONFIG_DIR / "vta_config.json")
    del cfg["LOG_WGT_WIDTH"]
    with pytest.raises(ConfigError, match="LOG_WGT_WIDTH"):
        Environment(cfg)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_config(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "absent.json")
