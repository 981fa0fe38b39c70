"""The hardware configuration and every parameter derived from it.

This is the one place where configuration files and environment variables are read. Everything
else receives an :class:`Environment` (or asks :func:`get_env` for the current one).

The derived parameters follow the ISA reference, section 1.2: element widths, tile shapes,
buffer sizes in bytes and depths in elements, and the encodability rules of section 2.8.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
from pathlib import Path
from typing import Any, Iterable, Mapping, NamedTuple

from . import target
from .errors import ConfigError

__all__ = ["Environment", "get_env", "load_config", "default_config_path", "data_dir", "DevContext",
           "CONFIG_KEYS", "ConfigKey", "DRAM_KEYS", "DRAM_PRESETS", "OPTION_KEYS", "check_keys"]

class ConfigKey(NamedTuple):
    """What one configuration key accepts.

    ``kind`` is ``int`` or ``str``; an ``int`` key accepts ``lo..hi``; a ``required`` key must be in
    every configuration file; a ``derived`` key is computed from the others (a file may state it,
    and then it must agree); ``group`` sorts the keys for the views below (``core``, ``dram``,
    ``option``: a hardware option, a bool); ``suffix``: what an option adds to ``BITSTREAM``.
    """

    kind: type
    lo: int | None = None
    hi: int | None = None
    required: bool = False
    derived: bool = False
    group: str = "core"
    suffix: str = ""


#: Every key a configuration may hold, one line per key: a key not listed here is refused
#: (ConfigError naming the closest known key). Adding a key is adding its line (and reading it in
#: :class:`Environment`).
CONFIG_KEYS: dict[str, ConfigKey] = {
    "TARGET": ConfigKey(str, required=True),
    "HW_VER": ConfigKey(str, required=True),
    "LOG_INP_WIDTH": ConfigKey(int, 0, 3, required=True),
    "LOG_WGT_WIDTH": ConfigKey(int, 0, 3, required=True),
    "LOG_ACC_WIDTH": ConfigKey(int, 3, 5, required=True),
    "LOG_BATCH": ConfigKey(int, 0, 4, required=True),
    "LOG_BLOCK": ConfigKey(int, 1, 6, required=True),
    "LOG_UOP_BUFF_SIZE": ConfigKey(int, 2, 24, required=True),
    "LOG_INP_BUFF_SIZE": ConfigKey(int, 4, 24, required=True),
    "LOG_WGT_BUFF_SIZE": ConfigKey(int, 4, 26, required=True),
    "LOG_ACC_BUFF_SIZE": ConfigKey(int, 4, 24, required=True),
    # Derived from the keys above (upstream files spell them out).
    "LOG_BLOCK_IN": ConfigKey(int, derived=True),
    "LOG_BLOCK_OUT": ConfigKey(int, derived=True),
    "LOG_OUT_WIDTH": ConfigKey(int, derived=True),
    "LOG_OUT_BUFF_SIZE": ConfigKey(int, derived=True),
    # The simulated DRAM behind the core's memory channel (simulation parameters of tsim's memory
    # shim and of the cycle model; they never change the RTL). ``DRAM``: a preset of DRAM_PRESETS;
    # ``DRAM_LATENCY``: cycles from a read burst's request to its first beat (1: the ideal memory);
    # ``DRAM_BYTES_PER_CYCLE``: sustained read bandwidth (8 or more: the 64-bit bus is the limit);
    # ``DRAM_MAX_OUTSTANDING``: read bursts in flight at once (0: no limit).
    "DRAM": ConfigKey(str, group="dram"),
    "DRAM_LATENCY": ConfigKey(int, 1, 4096, group="dram"),
    "DRAM_BYTES_PER_CYCLE": ConfigKey(int, 1, 64, group="dram"),
    "DRAM_MAX_OUTSTANDING": ConfigKey(int, 0, 1024, group="dram"),
    # Hardware options (OPTION_KEYS below): true or false, false when absent; ``suffix``: what the
    # option adds to the build name BITSTREAM when it is on.
    "ALU_REQUANT": ConfigKey(bool, group="option", suffix="rq"),
    "ALU_MOV": ConfigKey(bool, group="option", suffix="mv"),
    "COMPUTE_OVERLAP": ConfigKey(bool, group="option", suffix="ov"),
}

#: Views of :data:`CONFIG_KEYS`: the required integer keys and the range each accepts ...
INT_KEYS: dict[str, tuple[int, int]] = {
    k: (v.lo, v.hi) for k, v in CONFIG_KEYS.items() if v.kind is int and v.required and v.group == "core"}
#: ... the required string keys ...
STR_KEYS = tuple(k for k, v in CONFIG_KEYS.items() if v.kind is str and v.required)
#: ... and the optional DRAM figures with their ranges.
DRAM_KEYS: dict[str, tuple[int, int]] = {
    k: (v.lo, v.hi) for k, v in CONFIG_KEYS.items() if v.kind is int and v.group == "dram"}
#: Named memories for the optional ``DRAM`` key; explicit ``DRAM_*`` keys override a preset's values.
#: ``ideal``: every read answered the cycle after its request, one beat per cycle, no limit (the
#: default, the figures before the DRAM model). ``ddr4``: one DDR4-2400 x64 channel (19.2 GB/s
#: peak) seen from an accelerator clocked at 1 GHz: about 90 ns from request to first data
#: (controller, PHY and CAS latency) = 90 cycles, 19 bytes per cycle (more than the 8-byte
#: bus moves, so the bus stays the limit), and 8 read bursts in flight (a typical AXI port).
DRAM_PRESETS: dict[str, dict[str, int]] = {
    "ideal": {"DRAM_LATENCY": 1, "DRAM_BYTES_PER_CYCLE": 8, "DRAM_MAX_OUTSTANDING": 0},
    "ddr4": {"DRAM_LATENCY": 90, "DRAM_BYTES_PER_CYCLE": 19, "DRAM_MAX_OUTSTANDING": 8},
}
#: Optional hardware options (booleans, false when absent): each adds to the core and changes its RTL,
#: its generated C header and what the compiler emits; with every option off the instruction
#: streams and cycle counts are those of the upstream-compatible core. The value is the suffix the
#: option adds to ``BITSTREAM`` (the name of a build) when it is on.
#: ``ALU_REQUANT``: the ALU opcode REQ (5), a one-micro-op fixed-point requantisation.
#: ``ALU_MOV``: the ALU opcode MOV (6), ``acc = b`` (a copy of a row, or a constant fill).
#: ``COMPUTE_OVERLAP``: the compute unit runs a GEMM and an ALU (or LOAD) instruction at the same
#: time when their accumulator and uop footprints do not conflict (timing only; no new instruction).
OPTION_KEYS: dict[str, str] = {
    k: v.suffix for k, v in CONFIG_KEYS.items() if v.group == "option"}


def unknown_key_error(key: Any, known: Iterable[str], where: str,
                      error: type[ConfigError] = ConfigError) -> ConfigError:
    """The error for a key ``key`` that ``where`` does not know: it names the closest known key.

    Parameters
    ----------
    key : object
        The offending key.
    known : iterable of str
        Every key ``where`` accepts.
    where : str
        What holds the key (``"VTA config 'x.json'"``, ``"spec file 's.json'"``).
    error : type, optional
        The ConfigError subclass to build (default ConfigError).

    Returns
    -------
    ConfigError
        For the caller to raise.
    """
    known = list(known)
    folded = {k.casefold(): k for k in known}  # a wrong case is the likeliest typo of all
    close = difflib.get_close_matches(str(key).casefold(), list(folded), n=1, cutoff=0.6)
    hint = f"; did you mean {folded[close[0]]}?" if close else f"; accepted: {', '.join(known)}"
    return error(f"{where}: unknown key {key!r}{hint}")


def check_keys(doc: Mapping[str, Any], known: Iterable[str], where: str,
               error: type[ConfigError] = ConfigError) -> None:
    """Refuse the first key of ``doc`` not in ``known`` (see :func:`unknown_key_error`).

    Raises
    ------
    ConfigError
        Naming the unknown key and the closest known one.
    """
    known = list(known)
    for key in doc:
        if key not in known:
            raise unknown_key_error(key, known, where, error)


#: Targets that this project can execute; any other string is accepted but cannot run programs.
RUNNABLE_TARGETS = ("sim", "tsim", "model")

#: Fixed ISA constants (ISA reference 1.2, hw_spec_const.h).
INS_WIDTH = 128
UOP_WIDTH = 32
LOOP_ITER_WIDTH = 14
MEMOP_SRAM_ADDR_WIDTH = 16
MEMOP_DRAM_ADDR_WIDTH = 32
MEMOP_SIZE_WIDTH = 16
MEMOP_STRIDE_WIDTH = 16
MEMOP_PAD_WIDTH = 4
ALUOP_IMM_WIDTH = 16
PAGE_BYTES = 4096


#: Directories of files shipped with the package that live at the top of the source tree.
DATA_DIRS = ("configs", "hw", "sim")


def data_dir(name: str) -> Path:
    """The directory of shipped files ``name``: ``configs`` (configuration files), ``hw`` (the
    RTL) or ``sim`` (the C++ shim of tsim).

    In a source checkout (editable install, or ``PYTHONPATH`` on the tree) it is the directory
    at the top of the tree; in an installed package (``pip install .``, a wheel) it is the copy
    packaged as ``vta/share/<name>``.

    Raises
    ------
    ValueError
        If ``name`` is not one of :data:`DATA_DIRS`.
    ConfigError
        If neither place holds the directory (a broken installation).
    """
    if name not in DATA_DIRS:
        raise ValueError(f"unknown data directory {name!r}; accepted: {', '.join(DATA_DIRS)}")
    here = Path(__file__).resolve().parent
    checkout = here.parent
    candidates = [here / "share" / name]
    if (checkout / "pyproject.toml").is_file():
        candidates.insert(0, checkout / name)
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    raise ConfigError(
        f"cannot find the {name!r} files of the package (looked in {', '.join(str(c) for c in candidates)}); "
        "reinstall it (pip install .) or run from a source checkout"
    )


def default_config_path() -> Path:
    """Return the path of the default configuration file shipped with the project.

    Returns
    -------
    Path
        ``vta_config.json`` of :func:`data_dir` ``("configs")``.

    Raises
    ------
    ConfigError
        If the file is missing (a broken installation).
    """
    path = data_dir("configs") / "vta_config.json"
    if not path.is_file():
        raise ConfigError(f"cannot find the default configuration {str(path)!r}; set VTA_CONFIG to a config file")
    return path


def load_config(path: str | os.PathLike | None = None) -> dict[str, Any]:
    """Read a configuration file.

    Parameters
    ----------
    path : path-like, optional
        The file to read. When omitted, the ``VTA_CONFIG`` environment variable names it, and
        without that the default configuration is used.

    Returns
    -------
    dict
        The raw keys of the file.

    Raises
    ------
    ConfigError
        If the file is missing, is not valid JSON or is not a JSON object.
    """
    if path is None:
        path = os.environ.get("VTA_CONFIG") or default_config_path()
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read VTA config {str(path)!r}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"VTA config {str(path)!r} is not UTF-8 text: {exc}") from exc
    try:
        cfg = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"VTA config {str(path)!r} is not valid JSON: {exc}") from exc
    if not isinstance(cfg, dict):
        raise ConfigError(f"VTA config {str(path)!r} must hold a JSON object, got {type(cfg).__name__}")
    check_keys(cfg, CONFIG_KEYS, f"VTA config {str(path)!r}")
    return cfg


#: The compiler objects an Environment hands out (``env.gemm``, ``env.dev.vta_axis``,
#: ``env.dev.vta_push_uop``) are built by :mod:`vta.intrin`, which sits above the environment in
#: the flow (it needs the tensor expressions); it installs itself here when imported, and
#: ``import vta`` imports it.
_intrinsics: Any = None


def set_intrinsics(provider: Any) -> None:
    """Install the module that builds the GEMM intrinsic and the co-processor axis (vta.intrin)."""
    global _intrinsics
    _intrinsics = provider


def _intrinsics_of(what: str) -> Any:
    if _intrinsics is None:
        raise ConfigError(f"{what} needs the compiler's intrinsics; import vta (or vta.intrin) first")
    return _intrinsics


class DevContext:
    """Compiler-facing constants: memory ids, ALU opcodes and queue ids (reference section 0)."""

    MEM_ID_UOP = 0
    MEM_ID_WGT = 1
    MEM_ID_INP = 2
    MEM_ID_ACC = 3
    MEM_ID_OUT = 4
    MEM_ID_ACC_8BIT = 5
    ALU_OPCODE_MIN = 0
    ALU_OPCODE_MAX = 1
    ALU_OPCODE_ADD = 2
    ALU_OPCODE_SHR = 3
    ALU_OPCODE_MUL = 4
    ALU_OPCODE_REQ = 5  # the hardware option ALU_REQUANT
    ALU_OPCODE_MOV = 6  # the hardware option ALU_MOV
    QID_LOAD_INP = 1
    QID_LOAD_WGT = 1
    QID_LOAD_OUT = 2
    QID_COMPUTE = 2
    QID_STORE_OUT = 3

    def __init__(self, env: "Environment"):
        self.env = env

    @property
    def vta_axis(self):
        """The co-processor IterVar whose name ("vta") names the coproc_* intrinsics."""
        return _intrinsics_of("env.dev.vta_axis").vta_axis(self.env)

    @property
    def vta_push_uop(self):
        """The shared StringImm naming the GEMM uop scope (``VTAPushGEMMOp``)."""
        return _intrinsics_of("env.dev.vta_push_uop").vta_push_uop(self.env)


class Environment:
    """A VTA hardware configuration with all derived parameters.

    Parameters
    ----------
    cfg : mapping
        The keys of ``vta_config.json`` (``TARGET``, ``HW_VER`` and the ``LOG_*`` keys). Derived
        keys (``LOG_BLOCK_IN`` ...) may be present; they are recomputed and must agree.

    Raises
    ------
    ConfigError
        If a key is missing or unknown (the message names the closest known key), has the wrong
        type or range, or the configuration cannot be encoded by the 128-bit instruction and
        32-bit micro-op formats.

    Examples
    --------
    >>> env = Environment(load_config())
    >>> env.BATCH, env.BLOCK_IN, env.BLOCK_OUT
    (1, 16, 16)
    >>> with env:
    ...     assert get_env() is env
    """

    current: "Environment | None" = None

    # Debug flags of the runtime (reference 4.1).
    DEBUG_DUMP_INSN = 1 << 1
    DEBUG_DUMP_UOP = 1 << 2
    DEBUG_SKIP_READ_BARRIER = 1 << 3
    DEBUG_SKIP_WRITE_BARRIER = 1 << 4
    DEBUG_FORCE_SERIAL = 1 << 5
    MAX_XFER = 1 << 22
    #: Bytes of the runtime's instruction and uop staging buffers (driver.h VTA_MAX_XFER).
    RUNTIME_MAX_XFER = 1 << 25

    def __init__(self, cfg: Mapping[str, Any]):
        if not isinstance(cfg, Mapping):
            raise ConfigError(f"a VTA config must be a mapping, got {type(cfg).__name__}")
        self.cfg_dict: dict[str, Any] = dict(cfg)
        self._prev: list[Environment | None] = []
        self.mock_mode = False
        self._derive()
        self.dev = DevContext(self)

    # ------------------------------------------------------------------ derivation
    def _derive(self) -> None:
        cfg = self.cfg_dict
        check_keys(cfg, CONFIG_KEYS, "VTA config")
        for key in STR_KEYS:
            if key not in cfg:
                raise ConfigError(f"VTA config lacks key {key!r}")
            if not isinstance(cfg[key], str):
                raise ConfigError(f"VTA config key {key!r} must be a string, got {cfg[key]!r}")
        for key, (lo, hi) in INT_KEYS.items():
            if key not in cfg:
                raise ConfigError(f"VTA config lacks key {key!r}")
            val = cfg[key]
            if isinstance(val, bool) or not isinstance(val, int):
                raise ConfigError(f"VTA config key {key!r} must be an integer, got {val!r}")
            if not lo <= val <= hi:
                raise ConfigError(f"VTA config key {key!r} = {val!r} is outside the accepted range {lo}..{hi}")

        self._derive_dram()
        self._derive_options()
        self.TARGET: str = cfg["TARGET"]
        self.HW_VER: str = cfg["HW_VER"]
        for key in INT_KEYS:
            setattr(self, key, cfg[key])
        self.LOG_BLOCK_IN = self.LOG_BLOCK_OUT = self.LOG_BLOCK
        self.LOG_OUT_WIDTH = self.LOG_INP_WIDTH
        self.LOG_OUT_BUFF_SIZE = self.LOG_ACC_BUFF_SIZE + self.LOG_OUT_WIDTH - self.LOG_ACC_WIDTH
        derived = {
            "LOG_BLOCK_IN": self.LOG_BLOCK_IN,
            "LOG_BLOCK_OUT": self.LOG_BLOCK_OUT,
            "LOG_OUT_WIDTH": self.LOG_OUT_WIDTH,
            "LOG_OUT_BUFF_SIZE": self.LOG_OUT_BUFF_SIZE,
        }
        for key, val in derived.items():
            if key in cfg and cfg[key] != val:
                raise ConfigError(f"VTA config key {key!r} = {cfg[key]!r} contradicts the value {val} derived "
                                  "from the other keys")
            cfg[key] = val

        self.INP_WIDTH = 1 << self.LOG_INP_WIDTH
        self.WGT_WIDTH = 1 << self.LOG_WGT_WIDTH
        self.ACC_WIDTH = 1 << self.LOG_ACC_WIDTH
        self.OUT_WIDTH = 1 << self.LOG_OUT_WIDTH
        self.BATCH = 1 << self.LOG_BATCH
        self.BLOCK_IN = 1 << self.LOG_BLOCK_IN
        self.BLOCK_OUT = 1 << self.LOG_BLOCK_OUT
        self.BLOCK = self.BLOCK_IN

        self.UOP_BUFF_SIZE = 1 << self.LOG_UOP_BUFF_SIZE
        self.INP_BUFF_SIZE = 1 << self.LOG_INP_BUFF_SIZE
        self.WGT_BUFF_SIZE = 1 << self.LOG_WGT_BUFF_SIZE
        self.ACC_BUFF_SIZE = 1 << self.LOG_ACC_BUFF_SIZE
        self.OUT_BUFF_SIZE = 1 << self.LOG_OUT_BUFF_SIZE

        self.INP_ELEM_BITS = self.BATCH * self.BLOCK_IN * self.INP_WIDTH
        self.WGT_ELEM_BITS = self.BLOCK_OUT * self.BLOCK_IN * self.WGT_WIDTH
        self.ACC_ELEM_BITS = self.BATCH * self.BLOCK_OUT * self.ACC_WIDTH
        self.OUT_ELEM_BITS = self.BATCH * self.BLOCK_OUT * self.OUT_WIDTH
        self.UOP_ELEM_BITS = UOP_WIDTH
        self.INS_ELEM_BITS = INS_WIDTH
        for name in ("INP", "WGT", "ACC", "OUT", "UOP", "INS"):
            bits = getattr(self, f"{name}_ELEM_BITS")
            if bits % 8:
                raise ConfigError(
                    f"a {name} element would be {bits} bits, not a whole number of bytes; "
                    "raise LOG_BLOCK, LOG_BATCH or the element width"
                )
            setattr(self, f"{name}_ELEM_BYTES", bits // 8)
        # ACC_8BIT loads read one int8 per accumulator lane.
        self.ACC_8BIT_ELEM_BYTES = self.BATCH * self.BLOCK_OUT

        self.LOG_UOP_BUFF_DEPTH = self.LOG_UOP_BUFF_SIZE - 2  # 4-byte micro-ops
        self.LOG_INP_BUFF_DEPTH = self.LOG_INP_BUFF_SIZE - self.LOG_BATCH - self.LOG_BLOCK_IN - self.LOG_INP_WIDTH + 3
        self.LOG_WGT_BUFF_DEPTH = (self.LOG_WGT_BUFF_SIZE - self.LOG_BLOCK_OUT - self.LOG_BLOCK_IN
                                   - self.LOG_WGT_WIDTH + 3)
        self.LOG_ACC_BUFF_DEPTH = self.LOG_ACC_BUFF_SIZE - self.LOG_BATCH - self.LOG_BLOCK_OUT - self.LOG_ACC_WIDTH + 3
        self.LOG_OUT_BUFF_DEPTH = self.LOG_OUT_BUFF_SIZE - self.LOG_BATCH - self.LOG_BLOCK_OUT - self.LOG_OUT_WIDTH + 3
        for name, size_key in (
            ("UOP", "LOG_UOP_BUFF_SIZE"),
            ("INP", "LOG_INP_BUFF_SIZE"),
            ("WGT", "LOG_WGT_BUFF_SIZE"),
            ("ACC", "LOG_ACC_BUFF_SIZE"),
        ):
            log_depth = getattr(self, f"LOG_{name}_BUFF_DEPTH")
            if log_depth < 1:
                raise ConfigError(
                    f"{size_key} = {getattr(self, size_key)} holds fewer than 2 {name} elements of "
                    f"{getattr(self, f'{name}_ELEM_BYTES')} bytes; raise {size_key}"
                )
        self.UOP_BUFF_DEPTH = 1 << self.LOG_UOP_BUFF_DEPTH
        self.INP_BUFF_DEPTH = 1 << self.LOG_INP_BUFF_DEPTH
        self.WGT_BUFF_DEPTH = 1 << self.LOG_WGT_BUFF_DEPTH
        self.ACC_BUFF_DEPTH = 1 << self.LOG_ACC_BUFF_DEPTH
        self.OUT_BUFF_DEPTH = 1 << self.LOG_OUT_BUFF_DEPTH

        self._check_encodable()

        self.inp_dtype = f"int{self.INP_WIDTH}"
        self.wgt_dtype = f"int{self.WGT_WIDTH}"
        self.acc_dtype = f"int{self.ACC_WIDTH}"
        self.out_dtype = f"int{self.OUT_WIDTH}"
        self.BITSTREAM = (
            f"{self.BATCH}x{self.BLOCK}_i{self.INP_WIDTH}w{self.WGT_WIDTH}a{self.ACC_WIDTH}_"
            f"{self.LOG_UOP_BUFF_SIZE}_{self.LOG_INP_BUFF_SIZE}_{self.LOG_WGT_BUFF_SIZE}_{self.LOG_ACC_BUFF_SIZE}"
            + "".join(f"_{suffix}" for key, suffix in OPTION_KEYS.items() if getattr(self, key))
        )
        self.MODEL = f"{self.TARGET}_{self.BITSTREAM}"

    def _derive_options(self) -> None:
        """Set each key of :data:`OPTION_KEYS` (a bool, False when the file lacks it)."""
        cfg = self.cfg_dict
        for key in OPTION_KEYS:
            val = cfg.get(key, False)
            if not isinstance(val, bool):
                raise ConfigError(f"VTA config key {key!r} must be true or false, got {val!r}")
            setattr(self, key, val)

    @property
    def options(self) -> tuple[str, ...]:
        """The hardware options this configuration has (keys of :data:`OPTION_KEYS` set true)."""
        return tuple(key for key in OPTION_KEYS if getattr(self, key))

    def option_refusal(self, key: str, what: str) -> str:
        """The message every level gives when ``what`` (an instruction, an operation) needs the
        hardware option ``key`` and this configuration lacks it."""
        return (f"{what} needs the hardware option {key!r}, which this configuration ({self.BITSTREAM}) lacks; "
                f"set \"{key}\": true in the configuration file (configs/extended.json has every option)")

    def _derive_dram(self) -> None:
        """Set ``DRAM`` (the preset's name) and the ``DRAM_*`` figures from the optional keys."""
        cfg = self.cfg_dict
        name = cfg.get("DRAM", "ideal")
        if not isinstance(name, str) or name not in DRAM_PRESETS:
            raise ConfigError(f"VTA config key 'DRAM' = {name!r} is not a known memory; accepted: "
                              f"{', '.join(repr(k) for k in DRAM_PRESETS)}")
        values = dict(DRAM_PRESETS[name])
        for key, (lo, hi) in DRAM_KEYS.items():
            if key in cfg:
                val = cfg[key]
                if isinstance(val, bool) or not isinstance(val, int):
                    raise ConfigError(f"VTA config key {key!r} must be an integer, got {val!r}")
                if not lo <= val <= hi:
                    raise ConfigError(f"VTA config key {key!r} = {val!r} is outside the accepted range {lo}..{hi}")
                values[key] = val
        self.DRAM: str = name
        self.DRAM_LATENCY: int = values["DRAM_LATENCY"]
        self.DRAM_BYTES_PER_CYCLE: int = values["DRAM_BYTES_PER_CYCLE"]
        self.DRAM_MAX_OUTSTANDING: int = values["DRAM_MAX_OUTSTANDING"]

    @property
    def dram_timing(self) -> tuple[int, int, int]:
        """``(DRAM_LATENCY, DRAM_BYTES_PER_CYCLE, DRAM_MAX_OUTSTANDING)`` of the simulated memory."""
        return self.DRAM_LATENCY, self.DRAM_BYTES_PER_CYCLE, self.DRAM_MAX_OUTSTANDING

    def _check_encodable(self) -> None:
        """Apply the rules of ISA reference section 2.8; raise ConfigError naming the broken one."""
        u, i, w, a = (self.LOG_UOP_BUFF_DEPTH, self.LOG_INP_BUFF_DEPTH, self.LOG_WGT_BUFF_DEPTH,
                      self.LOG_ACC_BUFF_DEPTH)
        src = max(a, i)
        if 37 + 2 * u > 64:
            raise ConfigError(
                f"LOG_UOP_BUFF_SIZE = {self.LOG_UOP_BUFF_SIZE} gives a uop index of {u} bits; the GEMM/ALU "
                f"header needs 37 + 2*{u} = {37 + 2 * u} bits but one 64-bit word holds 64 "
                "(accepted: LOG_UOP_BUFF_SIZE <= 15)"
            )
        if a + src + w > UOP_WIDTH:
            raise ConfigError(
                f"a micro-op needs acc {a} + src {src} + wgt {w} = {a + src + w} bits but holds {UOP_WIDTH}; "
                "lower LOG_ACC_BUFF_SIZE, LOG_INP_BUFF_SIZE or LOG_WGT_BUFF_SIZE"
            )
        if 2 * a + 2 * i + 2 * w > 64:
            raise ConfigError(
                f"GEMM loop factors need 2*({a}+{i}+{w}) = {2 * (a + i + w)} bits but the second instruction "
                "word holds 64; lower LOG_ACC_BUFF_SIZE, LOG_INP_BUFF_SIZE or LOG_WGT_BUFF_SIZE"
            )
        if 4 * a + 20 > 64:
            raise ConfigError(
                f"ALU fields need 4*{a} + 20 = {4 * a + 20} bits but the second instruction word holds 64 "
                f"(accepted: an acc depth of at most 2^11, here 2^{a}); lower LOG_ACC_BUFF_SIZE"
            )
        for name in ("INP", "WGT", "ACC", "OUT"):
            nbytes = getattr(self, f"{name}_ELEM_BYTES")
            if nbytes > PAGE_BYTES:
                raise ConfigError(f"a {name} element of {nbytes} bytes exceeds the {PAGE_BYTES}-byte DRAM page")

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_file(cls, path: str | os.PathLike | None = None) -> "Environment":
        """Build an environment from a config file (see :func:`load_config`)."""
        return cls(load_config(path))

    # ------------------------------------------------------------------ context management
    def __enter__(self) -> "Environment":
        self._prev.append(Environment.current)
        Environment.current = self
        return self

    def __exit__(self, *exc_info) -> None:
        Environment.current = self._prev.pop()

    # ------------------------------------------------------------------ convenience
    @property
    def mock(self) -> "Environment":
        """A shallow copy whose pragmas and GEMM intrinsic do nothing (for unit benchmarks)."""
        env = copy.copy(self)
        env._prev = []
        env.mock_mode = True
        env.dev = DevContext(env)
        return env

    @property
    def dma_copy(self) -> str:
        """Pragma name of a DMA copy (``skip_dma_copy`` in mock mode)."""
        return "skip_dma_copy" if self.mock_mode else "dma_copy"

    @property
    def alu(self) -> str:
        """Pragma name of an ALU stage (``skip_alu`` in mock mode)."""
        return "skip_alu" if self.mock_mode else "alu"

    @property
    def gemm(self):
        """The GEMM tensor intrinsic for ``tensorize`` (a no-op body in mock mode)."""
        key = "_gemm_mock" if self.mock_mode else "_gemm"
        if key not in self.__dict__:
            self.__dict__[key] = _intrinsics_of("env.gemm").gemm(self, mock=self.mock_mode)
        return self.__dict__[key]

    @property
    def target(self):
        """The VTA target ``ext_dev -device=vta -keys=vta,cpu -model=<MODEL>`` (upstream ``env.target``)."""
        return target.vta(model=self.MODEL)

    @property
    def target_vta_cpu(self):
        """The board's CPU as a target (upstream ``env.target_vta_cpu``): ``llvm -keys=arm_cpu,cpu
        -device=arm_cpu -model=<TARGET>``; code built for it runs on the host."""
        return target.arm_cpu(model=self.TARGET)

    inp_scope = "local.inp_buffer"
    wgt_scope = "local.wgt_buffer"
    acc_scope = "local.acc_buffer"

    @property
    def target_host(self) -> str:
        """The host target: the system C compiler for every simulated target."""
        return "c"

    def elem_bytes(self, memory_type: int) -> int:
        """Bytes of one DRAM element of a memory type (UOP, WGT, INP, ACC, OUT, ACC_8BIT).

        Raises
        ------
        ValueError
            If ``memory_type`` is not one of 0..5.
        """
        table = (4, self.WGT_ELEM_BYTES, self.INP_ELEM_BYTES, self.ACC_ELEM_BYTES, self.OUT_ELEM_BYTES,
                 self.ACC_8BIT_ELEM_BYTES)
        if not 0 <= memory_type < len(table):
            raise ValueError(f"memory type {memory_type!r} is not one of 0 (UOP) .. 5 (ACC_8BIT)")
        return table[memory_type]

    def __repr__(self) -> str:
        return f"Environment({self.MODEL!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Environment) and self.cfg_dict == other.cfg_dict and self.mock_mode == other.mock_mode

    def __hash__(self) -> int:
        return hash((self.BITSTREAM, self.TARGET, self.mock_mode))


def get_env() -> Environment:
    """Return the current environment, building it from the config file on first use.

    The file is the one named by ``VTA_CONFIG``, else the default configuration.

    Raises
    ------
    ConfigError
        If the configuration file is missing, malformed or not encodable.
    """
    if Environment.current is None:
        Environment.current = Environment.from_file()
    return Environment.current
