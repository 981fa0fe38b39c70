"""Short seeded fuzzing of the whole-network formats: TVM's parameter dict and ONNX model bytes.

Damaged inputs (bit flips, truncation, spliced random bytes) must either load or raise the
format's own error (``ParamFormatError``, ``FrontendError``): never another exception.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vta.errors import FrontendError, ParamFormatError
from vta.graph.params import load_param_dict, save_param_dict

SETTINGS = settings(max_examples=150, derandomize=True, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


@st.composite
def damaged(draw, valid: bytes):
    data = bytearray(valid)
    how = draw(st.sampled_from(["flip", "truncate", "splice", "random"]))
    if how == "flip":
        for _ in range(draw(st.integers(1, 8))):
            i = draw(st.integers(0, len(data) - 1))
            data[i] ^= 1 << draw(st.integers(0, 7))
    elif how == "truncate":
        data = data[:draw(st.integers(0, len(data) - 1))]
    elif how == "splice":
        i = draw(st.integers(0, len(data)))
        data[i:i + draw(st.integers(0, 16))] = draw(st.binary(max_size=16))
    else:
        data = bytearray(draw(st.binary(max_size=128)))
    return bytes(data)


def _param_blob() -> bytes:
    rng = np.random.default_rng(0)
    return save_param_dict({"w": rng.integers(-128, 128, (4, 3, 3, 3)).astype(np.int8),
                            "bias": rng.integers(-1000, 1000, (4,)).astype(np.int32),
                            "scale": np.float32([0.5, 0.25])})


PARAMS = _param_blob()


@SETTINGS
@given(damaged(PARAMS))
def test_param_dict(data):
    try:
        out = load_param_dict(data, as_numpy=True)
    except ParamFormatError:
        return
    assert isinstance(out, dict) and all(isinstance(v, np.ndarray) for v in out.values())


def test_param_dict_round_trip_is_the_fuzzers_starting_point():
    out = load_param_dict(PARAMS, as_numpy=True)
    assert sorted(out) == ["bias", "scale", "w"] and out["w"].shape == (4, 3, 3, 3)


@pytest.fixture(scope="module")
def digits_bytes() -> bytes:
    pytest.importorskip("onnx")
    from vta.models import digits_model_path

    return digits_model_path().read_bytes()


def test_onnx_model_bytes(digits_bytes):
    from vta.frontend import from_onnx

    @SETTINGS
    @given(damaged(digits_bytes))
    def check(data):
        try:
            graph, params = from_onnx(data)
        except FrontendError:
            return
        assert graph.outputs and isinstance(params, dict)

    check()


def test_kept_case_a_string_field_that_is_not_utf8(digits_bytes):
    """Found by the fuzzer: the onnx checker raised UnicodeDecodeError on a damaged name."""
    from vta.frontend import from_onnx

    data = bytearray(digits_bytes)
    at = data.index(b"input")  # the graph input's name
    data[at] = 0xFF
    with pytest.raises(FrontendError, match="not UTF-8|not a readable ONNX file"):
        from_onnx(bytes(data))
