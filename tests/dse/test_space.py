"""The design space: grid and random sampling, SPEC files and their errors (pure Python)."""

from __future__ import annotations

import itertools
import json

import pytest

from vta.dse.space import Space, SpecError, load_spec, shipped_config


def test_grid_is_the_cartesian_product_over_the_base():
    base = shipped_config("batch2.json")
    space = Space({"LOG_BLOCK": [5, 4], "LOG_ACC_BUFF_SIZE": [16, 17, 18]}, base)
    points = space.grid()
    assert space.size == 6 and len(points) == 6
    want = {(b, a) for b, a in itertools.product([4, 5], [16, 17, 18])}
    assert {(p["LOG_BLOCK"], p["LOG_ACC_BUFF_SIZE"]) for p in points} == want
    assert all(p["LOG_BATCH"] == 1 for p in points)  # unswept keys come from the base


def test_random_sampling_is_distinct_deterministic_and_inside_the_grid():
    space = Space({"LOG_BLOCK": [3, 4, 5, 6], "LOG_INP_BUFF_SIZE": [13, 14, 15, 16], "LOG_BATCH": [0, 1, 2]})
    a = space.random(10, seed=3)
    assert a == space.random(10, seed=3)
    assert a != space.random(10, seed=4)
    keys = [tuple(sorted(p.items())) for p in a]
    assert len(set(keys)) == 10
    grid = {tuple(sorted(p.items())) for p in space.grid()}
    assert set(keys) <= grid
    assert len(space.random(500)) == space.size  # more samples than points: the whole grid


@pytest.mark.parametrize("params, words", [
    ({"LOG_FOO": [1]}, "unknown key 'LOG_FOO'"),
    ({"LOG_BLOK": [1]}, "unknown key 'LOG_BLOK'; did you mean LOG_BLOCK"),
    ({"LOG_BLOCK": []}, "non-empty list of integers"),
    ({"LOG_BLOCK": ["4"]}, "non-empty list of integers"),
    ({}, "non-empty object"),
])
def test_bad_parameters_are_rejected_with_the_reason(params, words):
    with pytest.raises(SpecError, match=words):
        Space(params)


def test_spec_file_round_trip(tmp_path):
    path = tmp_path / "spec.json"
    path.write_text(json.dumps({"base": "block32.json", "parameters": {"LOG_ACC_BUFF_SIZE": [17, 18]},
                                "sampling": "random", "samples": 1, "seed": 2, "workloads": "alu.chain"}))
    spec = load_spec(path)
    assert spec.workloads == ["alu.chain"]
    points = spec.points()
    assert len(points) == 1 and points[0]["LOG_BLOCK"] == 5


@pytest.mark.parametrize("doc, words", [
    ({"parameters": {"LOG_BLOCK": [4]}, "sampling": "sobol"}, "sampling"),
    ({"parameters": {"LOG_BLOCK": [4]}, "sampling": "random"}, "samples"),
    ({"parameters": {"LOG_BLOCK": [4]}, "colour": 1}, "unknown key 'colour'"),
    ({"parameters": {"LOG_BLOCK": [4]}, "sample": 3}, "unknown key 'sample'; did you mean samples"),
    ({"parameters": {"LOG_BLOCK": [4]}, "base": "nowhere.json"}, "neither a file nor a shipped name"),
    ({"parameters": {"LOG_BLOCK": [4]}, "workloads": []}, "workloads"),
])
def test_bad_specs_name_the_field(doc, words):
    with pytest.raises(SpecError, match=words):
        load_spec(doc)


def test_missing_and_malformed_spec_files(tmp_path):
    with pytest.raises(SpecError, match="does not exist"):
        load_spec(tmp_path / "none.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(SpecError, match="not JSON"):
        load_spec(bad)


def test_hardware_options_are_axes():
    from vta.dse.space import load_spec
    from vta.dse.sweep import points_of

    spec = load_spec({"parameters": {"LOG_BLOCK": [4], "ALU_REQUANT": [True, False]}, "workloads": ["gemm.blocked"],
                      "area": True})
    assert spec.area and [p["ALU_REQUANT"] for p in spec.points()] == [False, True]
    points = points_of(spec)
    assert [dict(p.config).get("ALU_REQUANT", False) for p in points] == [False, True]
    assert load_spec({"parameters": {"ALU_REQUANT": True}}).points()[0]["ALU_REQUANT"] is True


@pytest.mark.parametrize("values", [[0, 1], [], "yes", [True, 1]])
def test_hardware_option_values_must_be_booleans(values):
    from vta.dse.space import SpecError, load_spec

    with pytest.raises(SpecError, match="ALU_REQUANT.*true/false"):
        load_spec({"parameters": {"ALU_REQUANT": values}})


def test_area_field_must_be_a_boolean():
    from vta.dse.space import SpecError, load_spec

    with pytest.raises(SpecError, match="area must be true or false, got 'yes'"):
        load_spec({"parameters": {"LOG_BLOCK": [4]}, "area": "yes"})
