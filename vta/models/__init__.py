"""Models shipped with the package: the ResNet-18 builder, the quantize helper (onnxruntime's
quantizer with a calibration reader) and the bundled int8 digits classifier.

``onnx`` and ``onnxruntime`` are the optional extra ``vta[onnx]``; they are imported only when a
function needs them.
"""

from .digits import DIGITS_MODEL, DIGITS_TEST, digits_model_path, load_digits_test
from .quantize import ArrayCalibrationReader, quantize
from .resnet import resnet18


def _register_profiler() -> None:
    # ``python -m vta profile MODEL.onnx`` runs the model through this package.
    from ..profile.session import register_model_runner
    from .profile import profile_model

    register_model_runner(profile_model)


_register_profiler()

from . import workloads as _workloads  # noqa: E402,F401  (registers onnx:, zoo: and digits as sweep workloads)

__all__ = ["resnet18", "quantize", "ArrayCalibrationReader", "DIGITS_MODEL", "DIGITS_TEST",
           "digits_model_path", "load_digits_test"]
