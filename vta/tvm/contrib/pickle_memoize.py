"""``tvm.contrib.pickle_memoize``: remember a function's results by its arguments.

``@memoize("key")`` caches each result in memory under the call's arguments (which must be
hashable); with ``save_at_exit=True`` the cache is also kept in a pickle file under the
package's cache directory and read back by the next process that memoizes the same key.
Upstream tests use it to keep reference data between runs.
"""

from __future__ import annotations

import atexit
import functools
import pickle
import re
from pathlib import Path
from typing import Any, Callable

from ...cache import cache_dir

__all__ = ["memoize", "Cache"]


class Cache:
    """The results of one memoized key, optionally persisted to ``<cache>/pickle_memoize/<key>.pkl``.

    Parameters
    ----------
    key : str
        The cache's name: letters, digits, ``.``, ``_`` and ``-``.
    save_at_exit : bool
        Write the results to the pickle file when the interpreter exits.

    Raises
    ------
    ValueError
        If ``key`` holds other characters.
    """

    def __init__(self, key: str, save_at_exit: bool):
        if not isinstance(key, str) or not re.fullmatch(r"[\w.\-]+", key):
            raise ValueError(f"memoize key must be a non-empty name of letters, digits, '.', '_', '-', got {key!r}")
        self.key = key
        self.save_at_exit = save_at_exit
        self.cache: dict = {}
        self.dirty = False
        if save_at_exit:
            self.cache.update(self._read())
            atexit.register(self.save)

    @property
    def path(self) -> Path:
        """The pickle file of this key."""
        return cache_dir("pickle_memoize") / f"{self.key}.pkl"

    def _read(self) -> dict:
        try:
            with open(self.path, "rb") as fh:
                data = pickle.load(fh)
        except FileNotFoundError:
            return {}
        except (OSError, pickle.UnpicklingError, EOFError) as exc:
            # A damaged cache file only costs a recomputation; say so instead of failing.
            import warnings

            warnings.warn(f"pickle_memoize: ignoring the unreadable cache {str(self.path)!r}: {exc}", stacklevel=3)
            return {}
        return data if isinstance(data, dict) else {}

    def save(self) -> None:
        """Write the results to the pickle file (only if something new was computed)."""
        if not self.dirty:
            return
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "wb") as fh:
            pickle.dump(self.cache, fh)
        tmp.replace(self.path)
        self.dirty = False


def memoize(key: str, save_at_exit: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator caching a function's results by its positional arguments.

    Parameters
    ----------
    key : str
        The cache's name (unique per function).
    save_at_exit : bool
        Persist the cache between processes (see :class:`Cache`).

    Raises
    ------
    ValueError
        If ``key`` is not a valid name.
    TypeError
        When the memoized function is called with keyword or unhashable arguments.
    """
    cache = Cache(key, save_at_exit)

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if kwargs:
                raise TypeError(f"memoized function {func.__name__!r} takes positional arguments only, "
                                f"got {sorted(kwargs)!r}")
            if args not in cache.cache:
                cache.cache[args] = func(*args)
                cache.dirty = True
            return cache.cache[args]

        wrapper.cache = cache  # type: ignore[attr-defined]
        return wrapper

    return decorate
