"""The tsim hardware library: building it (Verilator on the RTL, the DPI modules and the C++
shim) and loading it (the ctypes binding of the shim's C API, ``sim/vta_tsim.h``).

The product of :func:`build` is one shared library (``libvta_tsim_hw.so``) exporting the C API of
``sim/vta_tsim.h``. It is cached under ``vta.cache.cache_dir("tsim")`` in a directory named by a
hash of every source file, the generated ``vta_pkg`` (so of the configuration), the Verilator
flags and the waveform option; a cache entry is created atomically (built in a temporary
directory, then renamed), so concurrent builds never see half a library. :func:`build` without
waveforms compiles the model with a profile taken on a training run (:mod:`vta.sim.tsim.pgo`).
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

from ...atomic import fsync_file
from ...cache import cache_dir, content_key
from ...env import Environment, data_dir
from ...errors import BuildError, ModuleLoadError
from . import pgo as _pgo
from . import verilator as _verilator

__all__ = ["build", "build_sources", "sources", "expand_limit", "LIBRARY_NAME", "TOP_MODULE", "TRACE_KINDS", "Library",
           "load_library", "PROGRESS_FN", "OK", "HW_ERROR", "DRAM_ERROR", "TIMEOUT", "STOPPED", "PROTOCOL_ERROR",
           "ASSERTION", "UNDRAINED", "BAD_HANDLE", "BAD_ARG"]

#: File name of the built library inside its cache entry.
LIBRARY_NAME = "libvta_tsim_hw.so"
#: The Verilator top module (hw/sim/vta_tsim_top.sv).
TOP_MODULE = "vta_tsim_top"
#: Accepted values of the ``trace`` argument.
TRACE_KINDS = (None, "vcd", "fst")



def _hw_dir() -> Path:
    """``hw/`` of the checkout or the installed package (:func:`vta.env.data_dir`)."""
    return data_dir("hw")


def _sim_dir() -> Path:
    """``sim/`` (the C++ shim) of the checkout or the installed package."""
    return data_dir("sim")

_SHIM_SOURCES = ("vta_tsim.cc", "vta_tsim.h")
#: Bump when the build recipe changes in a way the flags below do not show.
_RECIPE_VERSION = "2"
#: Verilator's run-time library objects: the same for every design, so they are compiled once
#: per Verilator installation and flags (``vta.cache.cache_dir("tsim-runtime")``) and copied
#: into each build, which then compiles only the design and the shim.
_RUNTIME_OBJS = ("verilated.o", "verilated_dpi.o", "verilated_threads.o", "verilated_vcd_c.o",
                 "verilated_fst_c.o")
#: Characters of compiler output kept in a BuildError.
_TAIL_CHARS = 6000


def sources() -> list[Path]:
    """The SystemVerilog sources of tsim: ``hw/*.sv`` then ``hw/sim/*.sv``, sorted.

    Returns
    -------
    list of Path
    """
    hw = _hw_dir()
    return sorted(hw.glob("*.sv")) + sorted((hw / "sim").glob("*.sv"))


#: CPU flags (Linux ``/proc/cpuinfo`` names; ``pni`` is SSE3) of the x86-64-v3 level: AVX2 and
#: its companions, plus everything of x86-64-v2.
_X86_64_V3_FLAGS = frozenset({"pni", "ssse3", "sse4_1", "sse4_2", "popcnt", "cx16", "lahf_lm", "avx", "avx2",
                              "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"})


@functools.lru_cache(maxsize=None)
def _host_march() -> list[str]:
    """``-march`` flags for the per-cycle code on this host: x86-64-v3 when the CPU has it.

    The Verilated GEMM and ALU lanes are straight-line integer code that the compiler vectorises;
    with AVX2 instead of the baseline SSE2 tsim runs about 15% faster on the ResNet-18 layers.
    Only the level the CPU reports is used (never ``-march=native``), and the library is cached
    under a key that includes the flags, so a cache shared with an older CPU gets its own build.
    """
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        return []
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    for line in text.splitlines():
        if line.startswith("flags"):
            have = set(line.split(":", 1)[1].split())
            return ["-CFLAGS", "-march=x86-64-v3"] if _X86_64_V3_FLAGS <= have else []
    return []


def _flags(trace: str | None) -> list[str]:
    flags = [
        "--cc", "--exe", "--build", "--top-module", TOP_MODULE,
        "-Wno-fatal", "-Wno-lint", "-Wno-style",
        "--x-assign", "fast", "--x-initial", "fast",
        # The per-cycle code (eval) at -O3: about a fifth faster than -O2 on this core. The code
        # that runs once per model (construction, initial settle) at -O0: it is half the C++ and
        # optimising it only lengthens the build.
        "-MAKEFLAGS", "OPT_FAST=-O3", "-MAKEFLAGS", "OPT_SLOW=-O0",
        # The PyPI wheel's verilated.mk leaves the precompiled-header include flag empty.
        "-MAKEFLAGS", "CFG_CXXFLAGS_PCH_I=-include",
        "-CFLAGS", "-fPIC -fvisibility=hidden -fvisibility-inlines-hidden",
        # The shim replaces Verilator's vl_stop and printf to notice failing RTL assertions; the
        # forced include declares them everywhere, which rules out the precompiled header.
        "-CFLAGS", "-DVL_USER_STOP -DVL_PRINTF=vta_tsim_vl_printf -include vta_tsim.h",
        "-MAKEFLAGS", "VK_PCH_I_FAST=", "-MAKEFLAGS", "VK_PCH_I_SLOW=",
        # verilated.mk still makes every object depend on the (unused) precompiled headers: make
        # them by running only the preprocessor, not the 11 s of compiling two of them.
        "-MAKEFLAGS", "CFG_CXXFLAGS_PCH=-E",
        "-LDFLAGS", "-shared -Wl,-Bsymbolic",
        *_host_march(),
    ]
    if trace == "vcd":
        flags += ["--trace"]
    elif trace == "fst":
        flags += ["--trace-fst", "-LDFLAGS", "-lz -llz4"]
    return flags


def expand_limit(env: Environment) -> int:
    """Verilator's ``--expand-limit`` for ``env``: the words of an accumulator row, at least 16.

    Verilator writes an operation on a wide vector of up to this many 32-bit words as one
    statement per word, and a wider one as a loop. Per-word statements suit the accumulator rows
    the GEMM and ALU results are assembled in (a loop there costs about a tenth more per cycle),
    but the 2048-bit weight row, copied into the weight SRAM's read register for every GEMM uop,
    is copied faster as a loop (the compiler vectorises it): about 2% of the instructions per
    simulated cycle on the default configuration, against Verilator's default limit.
    """
    return max(16, env.ACC_ELEM_BYTES // 4)


def _check_fst_headers() -> None:
    """Verilator's FST writer needs the zlib and LZ4 headers; say so before a long build fails."""
    probe = subprocess.run(["c++", "-fsyntax-only", "-x", "c++", "-"], input="#include <zlib.h>\n#include <lz4.h>\n",
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if probe.returncode != 0:
        raise BuildError("FST waveforms need the zlib and LZ4 development headers (e.g. the Debian packages "
                         "zlib1g-dev and liblz4-dev), which the C++ compiler cannot find; use trace='vcd' "
                         f"instead:\n{probe.stdout[-1000:]}")


def build(env: Environment, trace: str | None = None) -> Path:
    """Build (or find in the cache) the tsim library for ``env``.

    Parameters
    ----------
    env : Environment
        The configuration; its ``vta_pkg`` comes from :func:`vta.sim.tsim.hwgen.sv_package`.
    trace : {None, "vcd", "fst"}
        Build with waveform support of that kind (the file path is given when a model is
        created, see :class:`vta.sim.tsim.TSim`).

    Returns
    -------
    Path
        The shared library.

    Raises
    ------
    BuildError
        If Verilator is missing, the RTL generator is not available, FST is asked for without
        the zlib/LZ4 headers, or Verilator or the C++ compiler fails (the message ends with the
        tail of their output).
    ValueError
        If ``trace`` is not one of :data:`TRACE_KINDS`.
    """
    try:
        from . import hwgen
    except ImportError as exc:
        raise BuildError(f"the RTL package generator vta.sim.tsim.hwgen cannot be imported: {exc}") from exc
    package = hwgen.sv_package(env)
    train = env if trace is None and _pgo.enabled() else None
    return build_sources(sources(), package, trace=trace, expand=expand_limit(env), train=train)


def build_sources(sv_files: Sequence[Path], package: str, *, trace: str | None = None,
                  cache: Path | None = None, expand: int | None = None,
                  train: Environment | None = None) -> Path:
    """Build a tsim library from explicit SystemVerilog files and ``vta_pkg`` text.

    :func:`build` is this with the project's sources; tests and benchmarks use it to build in a
    temporary cache.

    Parameters
    ----------
    sv_files : sequence of Path
        RTL and simulation sources (one of them defines ``vta_tsim_top``).
    package : str
        Text of the ``vta_pkg`` SystemVerilog package (compiled first).
    trace : {None, "vcd", "fst"}
        Waveform support.
    cache : Path, optional
        Cache directory (default ``vta.cache.cache_dir("tsim")``).
    expand : int, optional
        Verilator's ``--expand-limit`` (:func:`expand_limit`; default Verilator's own).
    train : Environment, optional
        Build with a profile (:mod:`vta.sim.tsim.pgo`) taken on this configuration, which must
        be the one of ``package``; without waveform support only.

    Returns
    -------
    Path
        The shared library.

    Raises
    ------
    BuildError
        If Verilator is missing or the build fails.
    ValueError
        If ``trace`` is not one of :data:`TRACE_KINDS`, ``expand`` is not positive, or ``train``
        is given with a ``trace``.
    """
    if train is not None and trace is not None:
        raise ValueError(f"a profile-guided build (train) has no waveform support; got trace {trace!r}")
    if trace not in TRACE_KINDS:
        raise ValueError(f"trace {trace!r} is not one of {TRACE_KINDS!r}")
    if expand is not None and expand < 1:
        raise ValueError(f"expand {expand!r} is not a positive number of words")
    root = _verilator.ensure_on_path()
    if trace == "fst":
        _check_fst_headers()
    flags = _flags(trace)
    # the run-time objects do not depend on the expansion limit (keyed by ``flags`` alone)
    design_flags = flags + (["--expand-limit", str(expand)] if expand is not None else [])
    sv_files = [Path(p).resolve() for p in sv_files]
    parts: list[bytes | str] = [_RECIPE_VERSION, str(root), *design_flags, "vta_pkg.sv", package]
    if train is not None:
        parts += _pgo.recipe()
    for path in sv_files:
        parts += [path.name, path.read_bytes()]
    for name in _SHIM_SOURCES:
        parts += [name, (_sim_dir() / name).read_bytes()]
    base = Path(cache) if cache is not None else cache_dir("tsim")
    base.mkdir(parents=True, exist_ok=True)
    entry = base / content_key(parts)
    library = entry / LIBRARY_NAME
    if library.exists():
        return library

    runtime = _runtime_dir(root, flags)
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=base))
    try:
        seeded = _seed_runtime(runtime, tmp / "obj")
        pkg_file = tmp / "vta_pkg.sv"
        pkg_file.write_text(package)
        out = tmp / LIBRARY_NAME
        if train is not None:
            _build_with_profile(design_flags, flags, seeded, pkg_file, sv_files, tmp, out, runtime, train)
            return _publish(tmp, out, entry, library)
        cmd = [
            _verilator.verilator_bin(), *design_flags,
            "-Mdir", str(tmp / "obj"), "-o", str(out),
            "-CFLAGS", f"-I{_sim_dir()}",
            "--build-jobs", str(min(2, os.cpu_count() or 1)),
            # the cached run-time objects are up to date (make would rebuild them because the
            # generated makefile is newer)
            *[arg for name in seeded for arg in ("-MAKEFLAGS", f"--assume-old={name}")],
            str(pkg_file), *map(str, sv_files), str(_sim_dir() / "vta_tsim.cc"),
        ]
        proc = subprocess.run(cmd, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if proc.returncode != 0 or not out.exists():
            tail = proc.stdout[-_TAIL_CHARS:]
            raise BuildError(f"Verilator build of {TOP_MODULE} failed (exit code {proc.returncode}):\n{tail}")
        _keep_runtime(tmp / "obj", runtime)
        return _publish(tmp, out, entry, library)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _publish(tmp: Path, out: Path, entry: Path, library: Path) -> Path:
    """Drop the build's objects and publish ``tmp`` as the cache ``entry`` (atomically, by renaming)."""
    shutil.rmtree(tmp / "obj")
    fsync_file(out)  # the entry is published whole, by renaming its directory
    try:
        os.rename(tmp, entry)
    except OSError:
        if not library.exists():  # not a concurrent build that won the race
            raise
    return library


def _make(obj: Path, flags: list[str], runtime_objs: list[str], targets: Sequence[str] = (),
          user: tuple[str, str] = ("", "")) -> None:
    """Run the generated makefile in ``obj`` with the make variables of ``flags`` (its ``-MAKEFLAGS``),
    the cached run-time objects taken as up to date and ``user`` = (compiler, link) flags."""
    make_vars = [flags[i + 1] for i, arg in enumerate(flags) if arg == "-MAKEFLAGS"]
    make = shutil.which("make")
    if make is None:
        raise BuildError("the tsim build needs make, which is not on PATH")
    cmd = [make, "-C", str(obj), "-f", f"V{TOP_MODULE}.mk", "-j", str(min(2, os.cpu_count() or 1)), *make_vars,
           f"USER_CPPFLAGS={user[0]}", f"USER_LDFLAGS={user[1]}",
           *[f"--assume-old={name}" for name in runtime_objs], *targets]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        raise BuildError(f"C++ build of {TOP_MODULE} failed (exit code {proc.returncode}):\n"
                         f"{proc.stdout[-_TAIL_CHARS:]}")


def _build_with_profile(design_flags: list[str], flags: list[str], seeded: list[str], pkg_file: Path,
                        sv_files: list[Path], tmp: Path, out: Path, runtime: Path, env: Environment) -> None:
    """Verilate, build instrumented, train (:mod:`vta.sim.tsim.pgo`), build again with the profile.

    The run-time objects are compiled without instrumentation (or taken from the cache), so they
    can be kept for other builds; only the design and the shim are compiled twice.
    """
    obj = tmp / "obj"
    cmd = [_verilator.verilator_bin(), *[a for a in design_flags if a != "--build"],
           "-Mdir", str(obj), "-o", str(out), "-CFLAGS", f"-I{_sim_dir()}",
           str(pkg_file), *map(str, sv_files), str(_sim_dir() / "vta_tsim.cc")]
    proc = subprocess.run(cmd, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        raise BuildError(f"Verilator of {TOP_MODULE} failed (exit code {proc.returncode}):\n"
                         f"{proc.stdout[-_TAIL_CHARS:]}")
    # The objects Verilator's makefile would compile from its run-time library for this build.
    wanted = [name for name in _RUNTIME_OBJS[:3] if name not in seeded]
    if wanted:
        _make(obj, flags, seeded, wanted)
    runtime_objs = seeded + wanted
    _make(obj, flags, runtime_objs, user=_pgo.GENERATE_FLAGS)
    _pgo.train(out, env, tmp)
    for path in obj.iterdir():
        if path.suffix in (".o", ".a") and path.name not in runtime_objs:
            path.unlink()
    out.unlink()
    _make(obj, flags, runtime_objs, user=(_pgo.USE_FLAGS, ""))
    if not out.exists():
        raise BuildError(f"the profile-guided build of {TOP_MODULE} produced no library")
    _keep_runtime(obj, runtime)


def _runtime_dir(root: Path, flags: list[str]) -> Path:
    """The cache entry of Verilator's run-time objects for this installation and these flags."""
    parts: list[bytes | str] = [_RECIPE_VERSION, str(root), *flags]
    for src in [Path(root) / "include" / name for name in ("verilated.cpp", "verilated_dpi.cpp",
                                                           "verilated_threads.cpp", "verilated.h")] + [
            _sim_dir() / "vta_tsim.h"]:  # force-included into every object
        parts += [src.name, src.read_bytes() if src.exists() else b""]
    return cache_dir("tsim-runtime") / content_key(parts)


def _seed_runtime(runtime: Path, obj: Path) -> list[str]:
    """Copy the cached run-time objects into a fresh build directory; return their names."""
    obj.mkdir(parents=True, exist_ok=True)
    seeded = []
    for name in _RUNTIME_OBJS:
        src = runtime / name
        if src.is_file():
            shutil.copyfile(src, obj / name)
            seeded.append(name)
    return seeded


def _keep_runtime(obj: Path, runtime: Path) -> None:
    """Store the run-time objects of a finished build in the cache (atomically, once)."""
    if runtime.is_dir():
        return
    found = [obj / name for name in _RUNTIME_OBJS if (obj / name).is_file()]
    if not found:
        return
    tmp = Path(tempfile.mkdtemp(prefix=".runtime-", dir=runtime.parent))
    try:
        for path in found:
            shutil.copyfile(path, tmp / path.name)
        try:
            os.rename(tmp, runtime)
        except OSError:
            pass  # a concurrent build stored them first
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


# ----------------------------------------------------------------------------- loading
# Status codes of vta_tsim.h.
OK, HW_ERROR, DRAM_ERROR, TIMEOUT, STOPPED, PROTOCOL_ERROR, ASSERTION, UNDRAINED = 0, 1, 2, 3, 4, 5, 6, 7
BAD_HANDLE, BAD_ARG = -1, -2

#: ``int progress(void* user, uint64_t cycles, uint64_t retired)``; non-zero stops the run.
PROGRESS_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64)


class Library:
    """A loaded tsim hardware library (the ctypes binding of ``sim/vta_tsim.h``).

    Parameters
    ----------
    path : str or Path
        The shared library built by :func:`build`.

    Raises
    ------
    ModuleLoadError
        If the file is missing or does not export the tsim C API.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        if not self.path.is_file():
            raise ModuleLoadError(f"tsim hardware library {str(self.path)!r} does not exist")
        try:
            lib = ctypes.CDLL(str(self.path))
        except OSError as exc:
            raise ModuleLoadError(f"cannot load tsim hardware library {str(self.path)!r}: {exc}") from exc
        u32, u64, vp, i = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_int
        sigs = {
            "vta_tsim_create": (vp, [vp, u64, ctypes.c_char_p, ctypes.c_char_p, u64]),
            "vta_tsim_destroy": (None, [vp]),
            "vta_tsim_reset": (i, [vp]),
            "vta_tsim_reg_write": (i, [vp, u32, u32]),
            "vta_tsim_reg_read": (i, [vp, u32, ctypes.POINTER(u32)]),
            "vta_tsim_set_progress": (i, [vp, PROGRESS_FN, vp, u64, ctypes.POINTER(u32), i]),
            "vta_tsim_run": (i, [vp, u32, u32, u64]),
            "vta_tsim_step": (i, [vp, u64]),
            "vta_tsim_cycles": (u64, [vp]),
            "vta_tsim_run_cycles": (u64, [vp]),
            "vta_tsim_dram_error": (i, [vp, ctypes.POINTER(u64), ctypes.POINTER(u32), ctypes.POINTER(i)]),
            "vta_tsim_trace_kind": (i, []),
            "vta_tsim_last_error": (ctypes.c_char_p, []),
            "vta_tsim_assertions": (u32, [vp, ctypes.POINTER(u64)]),
        }
        #: The profiler's probe (libraries built before it have none).
        probe_sigs = {
            "vta_tsim_probe": (i, [vp, i, u32]),
            "vta_tsim_probe_take": (u64, [vp, vp, u64]),
            "vta_tsim_probe_count": (u64, [vp]),
        }
        self.has_probe = all(hasattr(lib, name) for name in probe_sigs)
        if self.has_probe:
            sigs.update(probe_sigs)
        #: The DRAM model of the read channel (libraries built before it serve the ideal memory only).
        self.has_dram_model = hasattr(lib, "vta_tsim_set_dram")
        if self.has_dram_model:
            sigs["vta_tsim_set_dram"] = (i, [vp, u32, u32, u32])
        for name, (res, args) in sigs.items():
            try:
                fn = getattr(lib, name)
            except AttributeError as exc:
                raise ModuleLoadError(f"{str(self.path)!r} is not a tsim hardware library: "
                                      f"it does not export {name}") from exc
            fn.restype, fn.argtypes = res, args
        self.lib = lib
        #: 0 no waveform support, 1 VCD, 2 FST.
        self.trace_kind = lib.vta_tsim_trace_kind()

    def last_error(self) -> str:
        """The shim's explanation of its last failure on this thread."""
        return (self.lib.vta_tsim_last_error() or b"").decode(errors="replace")


_LIBRARIES: dict[Path, Library] = {}


def load_library(path: str | os.PathLike) -> Library:
    """Load (once per process) the tsim hardware library at ``path``.

    Raises
    ------
    ModuleLoadError
        If the file is missing or not a tsim library.
    """
    key = Path(path).resolve()
    if key not in _LIBRARIES:
        _LIBRARIES[key] = Library(key)
    return _LIBRARIES[key]
