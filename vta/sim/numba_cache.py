"""Compiling the simulators' plain-Python loops with numba, and where the compiled code is cached.

fsim's compiled engine (:mod:`vta.sim.fsim.kernels`) and the cycle model's replay
(:mod:`vta.sim.model.replay`) are ordinary Python modules whose functions call each other by
their module-level names, so readers and tools see where every name comes from. :func:`compile_into`
compiles some of them into a separate namespace in which each calls the compiled versions of
the others; the modules' own names stay the plain Python functions.

numba's on-disk cache checks the source file of the function it compiles, not the files of the
functions inlined into it. Both engines inline the per-instruction checks of
:mod:`vta.sim.rules`, so their cache lives in a directory named by the content of every source
file numba compiles (:data:`SOURCES`): after an edit to any of them, the code is compiled again
(some seconds, once) instead of a stale copy being loaded. The directory is under
``NUMBA_CACHE_DIR`` when the user set it, else under :func:`vta.cache.cache_dir` ``("numba")``;
other numba users in the process keep numba's own setting.
"""

from __future__ import annotations

import functools
import os
import types
from pathlib import Path

from ..cache import cache_dir, content_key

__all__ = ["SOURCES", "array_head", "cache_path", "compile_into"]

_HERE = Path(__file__).resolve().parent
#: Every source file whose functions numba compiles for the simulators.
SOURCES = (Path(__file__).resolve(), _HERE / "rules.py", _HERE / "fsim" / "kernels.py", _HERE / "model" / "replay.py",
           _HERE / "model" / "loop.py")
_PATH: list = []


def cache_path() -> str:
    """The cache directory of the compiled simulator loops (made on first use)."""
    if not _PATH:
        base = Path(os.environ["NUMBA_CACHE_DIR"]) if os.environ.get("NUMBA_CACHE_DIR") else cache_dir("numba")
        key = content_key(p.read_bytes() for p in SOURCES)
        path = base / f"vta-{key}"
        path.mkdir(parents=True, exist_ok=True)
        _PATH.append(str(path))
    return _PATH[0]


def compile_into(namespace: dict, names, njit, options) -> None:
    """Replace ``namespace[name]`` for each of ``names`` by its compiled version, cached on disk.

    Each function is remade with the globals of its module (``namespace`` for the module the
    namespace copies, a copy of its own module's globals for a function imported from
    elsewhere) in which every function compiled here is its compiled version, so the compiled
    functions call one another compiled (numba resolves the names when it first compiles).

    Parameters
    ----------
    namespace : dict
        A copy of a module's globals; updated in place.
    names : iterable of str
        The functions of ``namespace`` to compile.
    njit : callable
        numba's ``njit`` (or a stand-in with its signature).
    options : callable
        ``options(name)``: the keyword options of ``njit`` for that function (``cache`` is set here).
    """
    import numba

    originals = {name: namespace[name] for name in names}
    spaces = {namespace.get("__name__"): namespace}
    for fn in originals.values():
        if fn.__module__ not in spaces:
            spaces[fn.__module__] = dict(fn.__globals__)
    old = numba.config.CACHE_DIR
    numba.config.CACHE_DIR = cache_path()  # read when a function is decorated
    try:
        for name, fn in originals.items():
            remade = types.FunctionType(fn.__code__, spaces[fn.__module__], fn.__name__, fn.__defaults__)
            done = njit(cache=True, **options(name))(remade)
            for space in spaces.values():
                if space.get(name) is fn:
                    space[name] = done
    finally:
        numba.config.CACHE_DIR = old


@functools.lru_cache(maxsize=None)
def array_head():
    """A numba intrinsic ``head(array, k)``: the first ``k`` (a constant) entries of a 1-d array as
    a tuple, read with one load each (numba's ``to_fixed_tuple`` sets the entries one by one with a
    variable index, which takes time quadratic in ``k``: about 2.5 us for 78 entries).

    Returns
    -------
    numba intrinsic
        Callable from compiled code only.
    """
    from numba.core import cgutils, types as nbtypes
    from numba.core.errors import RequireLiteralValue
    from numba.extending import intrinsic

    @intrinsic
    def head(typingctx, array, length):
        if not isinstance(length, nbtypes.IntegerLiteral):
            raise RequireLiteralValue("the number of entries must be a constant")
        size = int(length.literal_value)
        tup = nbtypes.UniTuple(array.dtype, size)

        def codegen(context, builder, sig, args):
            arr = context.make_array(sig.args[0])(context, builder, args[0])
            out = context.get_constant_undef(tup)
            for i in range(size):
                out = builder.insert_value(out, builder.load(cgutils.gep_inbounds(builder, arr.data, i)), i)
            return out

        return tup(array, length), codegen

    return head
