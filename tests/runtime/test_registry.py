"""The global function registry: registration rules, lookup, listing, removal."""

from __future__ import annotations

import pytest

from vta.runtime import PackedFunc
from vta.runtime.registry import (
    get_global_func, list_global_func_names, register_func, remove_global_func,
)


@pytest.fixture
def name(request):
    """A registry name unique to the test, removed afterwards."""
    key = f"test.registry.{request.node.name}"
    yield key
    if get_global_func(key, allow_missing=True) is not None:
        remove_global_func(key)


def test_register_call_form_returns_packed_func(name):
    packed = register_func(name, lambda a, b: a * b)
    assert isinstance(packed, PackedFunc)
    assert get_global_func(name)(6, 7) == 42


def test_register_decorator_returns_function_unchanged(name):
    @register_func(name)
    def triple(x):
        return 3 * x

    assert triple(2) == 6
    assert get_global_func(name)(5) == 15


def test_taken_name_is_an_error_unless_override(name):
    register_func(name, lambda: 1)
    with pytest.raises(ValueError, match="already registered"):
        register_func(name, lambda: 2)
    assert get_global_func(name)() == 1
    register_func(name, lambda: 2, override=True)
    assert get_global_func(name)() == 2


def test_missing_name_error_names_it(name):
    with pytest.raises(ValueError, match=repr(name)):
        get_global_func(name)
    assert get_global_func(name, allow_missing=True) is None


def test_list_and_remove(name):
    register_func(name, lambda: None)
    names = list_global_func_names()
    assert name in names and names == sorted(names)
    remove_global_func(name)
    assert name not in list_global_func_names()
    with pytest.raises(ValueError, match="not registered"):
        remove_global_func(name)


@pytest.mark.parametrize("bad", [None, "", 3])
def test_names_must_be_non_empty_strings(bad):
    with pytest.raises(TypeError, match="non-empty str"):
        register_func(bad, lambda: None)
    with pytest.raises(TypeError):
        get_global_func(bad)


def test_non_callable_is_rejected(name):
    with pytest.raises(TypeError, match="callable"):
        register_func(name, 42)
    assert get_global_func(name, allow_missing=True) is None


def test_module_loaders_are_registered():
    names = list_global_func_names()
    assert "runtime.module.loadfile_so" in names
    assert "__tvm_set_device" in names
