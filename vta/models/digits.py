"""The bundled digits classifier: a small CNN trained on scikit-learn's 8x8 digits.

``scripts/train_digits.py`` trains it, exports it to ONNX, quantizes it with onnxruntime and
writes the two files this module locates: ``digits_int8.onnx`` (the int8 QDQ model) and
``digits_test.npz`` (the held-out split: ``x`` float32 ``(N, 1, 8, 8)`` scaled to [0, 1],
``y`` int64 labels, plus the accuracies measured by onnxruntime when the model was made).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["DIGITS_MODEL", "DIGITS_TEST", "digits_model_path", "load_digits_test"]

_HERE = Path(__file__).resolve().parent
#: The int8 model file (package data).
DIGITS_MODEL = _HERE / "digits_int8.onnx"
#: The test split (package data).
DIGITS_TEST = _HERE / "digits_test.npz"


def digits_model_path() -> Path:
    """Path of the bundled int8 digits model.

    Raises
    ------
    FileNotFoundError
        If the package was installed without its data files.
    """
    if not DIGITS_MODEL.is_file():
        raise FileNotFoundError(f"the bundled digits model is missing: {DIGITS_MODEL} "
                                "(regenerate it with scripts/train_digits.py)")
    return DIGITS_MODEL


def load_digits_test() -> tuple[np.ndarray, np.ndarray, dict]:
    """The bundled test split: images ``(N, 1, 8, 8)`` float32, labels ``(N,)`` and metadata.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray, dict)
        Images, labels, and ``{"float_accuracy", "int8_accuracy"}`` as measured by onnxruntime.

    Raises
    ------
    FileNotFoundError
        If the package was installed without its data files.
    """
    if not DIGITS_TEST.is_file():
        raise FileNotFoundError(f"the bundled digits test split is missing: {DIGITS_TEST} "
                                "(regenerate it with scripts/train_digits.py)")
    with np.load(DIGITS_TEST) as z:
        meta = {k: float(z[k]) for k in ("float_accuracy", "int8_accuracy") if k in z}
        return z["x"].astype(np.float32), z["y"].astype(np.int64), meta
