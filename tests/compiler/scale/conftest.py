"""Fixtures of the scale tests: the BATCH=2 configuration made current."""

from __future__ import annotations

import pytest

from tests.conftest import make_env


@pytest.fixture
def batch2_env():
    """``configs/batch2.json`` (BATCH=2, halved inp/acc buffers), made current for the test."""
    with make_env("batch2.json") as e:
        yield e


@pytest.fixture
def block32_env():
    """``configs/block32.json`` (32 x 32 GEMM blocks), made current for the test."""
    with make_env("block32.json") as e:
        yield e
