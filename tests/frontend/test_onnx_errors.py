"""Bad input: each mistake gets a FrontendError that says what and where."""

from __future__ import annotations

import pytest

pytest.importorskip("onnx")

import onnx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

from vta.errors import FrontendError  # noqa: E402
from vta.frontend import from_onnx  # noqa: E402
from vta.models import digits_model_path  # noqa: E402



def _digits():
    return onnx.load(str(digits_model_path()))


def test_operator_neither_side_runs_names_node_and_operator():
    m = _digits()
    node = next(n for n in m.graph.node if n.op_type == "Flatten")
    node.op_type, node.domain = "NoSuchOp", "org.example"  # no schema, no onnxruntime kernel
    del node.attribute[:]
    m.opset_import.append(helper.make_opsetid("org.example", 1))
    with pytest.raises(FrontendError, match=r"node 'flatten'.*'NoSuchOp'.*'org.example'.*neither") as info:
        from_onnx(m)
    assert info.value.node == "flatten" and info.value.op_type == "NoSuchOp"


def test_model_onnxruntime_refuses_quotes_onnxruntime():
    m = _digits()
    node = next(n for n in m.graph.node if n.op_type == "Flatten")
    node.op_type = "Erf"  # valid ONNX, but QGemm then gets a rank-4 input: onnxruntime refuses
    del node.attribute[:]
    with pytest.raises(FrontendError, match=r"onnxruntime refuses the model.*QGemm"):
        from_onnx(m)


def test_dynamic_input_shape_names_the_input():
    m = _digits()
    dim = m.graph.input[0].type.tensor_type.shape.dim[0]
    dim.dim_param = "batch"
    with pytest.raises(FrontendError, match=r"input 'input'.*dynamic.*'batch'.*shape="):
        from_onnx(m)
    graph, _ = from_onnx(m, shape={"input": (1, 1, 8, 8)})
    assert graph.inputs[0].type.shape == (1, 1, 8, 8)
    with pytest.raises(FrontendError, match=r"not inputs of the model"):
        from_onnx(m, shape={"nope": (1, 1, 8, 8)})
    with pytest.raises(FrontendError, match=r"contradicts"):
        from_onnx(m, shape={"input": (1, 1, 9, 8)})


def test_truncated_file(tmp_path):
    data = digits_model_path().read_bytes()
    bad = tmp_path / "truncated.onnx"
    bad.write_bytes(data[: len(data) // 3])
    with pytest.raises(FrontendError, match=r"truncated\.onnx"):
        from_onnx(bad)


def test_garbage_and_missing_files(tmp_path):
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\xff\x00this is not a protobuf" * 7)
    with pytest.raises(FrontendError):
        from_onnx(junk)
    with pytest.raises(FrontendError, match="does not exist"):
        from_onnx(tmp_path / "missing.onnx")


def test_checker_finding_is_quoted():
    m = _digits()
    m.graph.node[0].input[0] = "no_such_tensor"
    with pytest.raises(FrontendError, match=r"onnx checker.*no_such_tensor"):
        from_onnx(m)


def test_opset_newer_than_onnx_knows():
    m = _digits()
    m.opset_import[0].version = 999
    with pytest.raises(FrontendError, match=r"opset 999.*knows opsets 1 to"):
        from_onnx(m)


def test_unused_opset_domains_are_tolerated():
    m = _digits()
    m.opset_import.extend([helper.make_opsetid("com.microsoft", 1), helper.make_opsetid("ai.onnx.ml", 3)])
    graph, _ = from_onnx(m)
    assert graph.outputs[0].type.shape == (1, 10)


def test_input_type_onnxruntime_refuses():
    m = _digits()
    m.graph.input[0].type.tensor_type.elem_type = TensorProto.DOUBLE
    with pytest.raises(FrontendError, match="onnxruntime refuses"):
        from_onnx(m)
