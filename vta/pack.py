"""Program packs: a VTA program with its data, saved as a directory of plain files.

A pack holds everything needed to run one instruction stream on any device and to check its
results, without the compiler that produced it::

    PACK/
      config.json          the raw configuration keys (TARGET, HW_VER, LOG_*)
      program.json         {"format_version": 1, "insn_addr": A, "insn_count": N}
      regions.json         [{"name", "kind", "addr", "size", "offset", "dtype", "shape"}, ...]
      dram.bin             the bytes of every region, concatenated in regions.json order
      expected/<name>.npy  the expected final contents of output regions (optional per region)

``addr`` is the physical DRAM address the instruction stream refers to, so a pack is installed
at exactly those addresses (:meth:`Pack.install`). ``offset`` is the region's position in
``dram.bin`` and must equal the sum of the sizes before it. ``size`` is in bytes and must equal
``prod(shape) * itemsize(dtype)``. Multi-byte values are little-endian, as in device DRAM.
Region kinds are ``input``, ``output``, ``insn`` (the instruction stream), ``uop`` (the micro-op
table) and ``data`` (anything else the program touches).
"""

from __future__ import annotations

import itertools
import json
import math
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from .dram import DRAM
from .env import CONFIG_KEYS, INT_KEYS, PAGE_BYTES, STR_KEYS, Environment, check_keys
from .errors import AllocationError, ConfigError, PackError

__all__ = ["FORMAT_VERSION", "REGION_KINDS", "Region", "Pack"]

#: Version written to ``program.json``; :meth:`Pack.load` accepts only this one.
FORMAT_VERSION = 1
REGION_KINDS = ("input", "output", "insn", "uop", "data")
#: Element types a region may declare (little-endian in the pack and in DRAM).
REGION_DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
                 "float32", "float64")
INSN_BYTES = 16
_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
_REGION_KEYS = ("name", "kind", "addr", "size", "offset", "dtype", "shape")
_PROGRAM_KEYS = ("format_version", "insn_addr", "insn_count")


def _pages(nbytes: int) -> int:
    return -(-nbytes // PAGE_BYTES)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class Region:
    """One named block of DRAM used by a program.

    Attributes
    ----------
    name : str
        Identifier (letters, digits, ``_ . -``; it names ``expected/<name>.npy``).
    kind : str
        One of :data:`REGION_KINDS`.
    addr : int
        Physical address (page aligned, never 0).
    size : int
        Bytes; equals ``prod(shape) * itemsize``.
    dtype : str
        One of :data:`REGION_DTYPES`.
    shape : tuple of int
        Shape of the region read as an array.
    """

    name: str
    kind: str
    addr: int
    size: int
    dtype: str
    shape: tuple[int, ...]

    @property
    def np_dtype(self) -> np.dtype:
        """The little-endian NumPy dtype of the region."""
        return np.dtype(self.dtype).newbyteorder("<")

    @property
    def end(self) -> int:
        """First address past the region's pages."""
        return self.addr + _pages(self.size) * PAGE_BYTES

    def validate(self, where: str = "regions.json") -> None:
        """Check every field.

        Raises
        ------
        PackError
            Naming ``where``, the region and the field that is wrong.
        """
        label = f"{where}: region {self.name!r}"
        if not isinstance(self.name, str) or not _NAME_RE.match(self.name):
            raise PackError(f"{where}: region name {self.name!r} must be 1..64 characters of letters, "
                            "digits, '_', '.', '-' and not start with '.' or '-'")
        if self.kind not in REGION_KINDS:
            raise PackError(f"{label}: kind {self.kind!r} is not one of {', '.join(REGION_KINDS)}")
        if not _is_int(self.addr) or self.addr <= 0 or self.addr % PAGE_BYTES or self.addr >= 1 << 32:
            raise PackError(f"{label}: addr {self.addr!r} must be a non-zero multiple of {PAGE_BYTES} below 2**32")
        if self.dtype not in REGION_DTYPES:
            raise PackError(f"{label}: dtype {self.dtype!r} is not one of {', '.join(REGION_DTYPES)}")
        if not isinstance(self.shape, tuple) or not all(_is_int(d) and d >= 0 for d in self.shape):
            raise PackError(f"{label}: shape {self.shape!r} must be a list of non-negative integers")
        if not _is_int(self.size) or self.size <= 0:
            raise PackError(f"{label}: size {self.size!r} must be a positive integer")
        if self.end > 1 << 32:
            raise PackError(f"{label}: 0x{self.addr:x} + {self.size} bytes runs past the 4 GiB physical address space")
        want = math.prod(self.shape) * np.dtype(self.dtype).itemsize
        if want != self.size:
            raise PackError(f"{label}: size {self.size!r} disagrees with shape {list(self.shape)} of "
                            f"{self.dtype} ({want} bytes)")

    def to_json(self, offset: int) -> dict:
        return {"name": self.name, "kind": self.kind, "addr": self.addr, "size": self.size,
                "offset": offset, "dtype": self.dtype, "shape": list(self.shape)}


def _check_keys(doc: dict, known, where: str) -> None:
    """Refuse a key not in ``known``, naming the closest known key (PackError)."""
    try:
        check_keys(doc, known, where)
    except ConfigError as exc:
        raise PackError(str(exc)) from None


def _read_json(path: Path) -> Any:
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise PackError(f"{path.name}: missing from the pack directory {str(path.parent)!r}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PackError(f"{path.name}: cannot be read: {exc}") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise PackError(f"{path.name}: not valid JSON ({exc})") from exc


def _parse_regions(obj: Any) -> list[Region]:
    if not isinstance(obj, list) or not obj:
        raise PackError(f"regions.json: must hold a non-empty JSON list of region objects, got {type(obj).__name__}")
    regions: list[Region] = []
    offset = 0
    for n, item in enumerate(obj):
        if not isinstance(item, dict):
            raise PackError(f"regions.json: entry {n} must be an object, got {item!r}")
        _check_keys(item, _REGION_KEYS, f"regions.json: entry {n}")
        missing = [k for k in _REGION_KEYS if k not in item]
        if missing:
            raise PackError(f"regions.json: entry {n} lacks the keys {missing!r}")
        shape = item["shape"]
        region = Region(item["name"], item["kind"], item["addr"], item["size"], item["dtype"],
                        tuple(shape) if isinstance(shape, list) else shape)
        region.validate()
        if item["offset"] != offset:
            raise PackError(f"regions.json: region {region.name!r} has offset {item['offset']!r} but the sizes "
                            f"of the regions before it add up to {offset}")
        offset += region.size
        regions.append(region)
    return regions


def _check_layout(regions: list[Region], insn_addr: int, insn_count: int) -> None:
    names = [r.name for r in regions]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise PackError(f"regions.json: region names {dup!r} appear more than once")
    ordered = sorted(regions, key=lambda r: r.addr)
    for a, b in itertools.pairwise(ordered):
        if b.addr < a.end:
            raise PackError(f"regions.json: regions {a.name!r} (0x{a.addr:x}..0x{a.end:x}) and {b.name!r} "
                            f"(at 0x{b.addr:x}) share DRAM pages")
    if not _is_int(insn_addr) or not _is_int(insn_count) or insn_count <= 0:
        raise PackError(f"program.json: insn_addr {insn_addr!r} and insn_count {insn_count!r} must be integers, "
                        "the count positive")
    end = insn_addr + insn_count * INSN_BYTES
    for r in regions:
        if r.addr <= insn_addr and end <= r.addr + r.size:
            return
    raise PackError(f"program.json: the instruction stream 0x{insn_addr:x}..0x{end:x} ({insn_count} instructions) "
                    "does not lie inside one region of regions.json")


def _raw_config(cfg: Mapping[str, Any]) -> dict[str, Any]:
    return {k: cfg[k] for k in (*STR_KEYS, *INT_KEYS) if k in cfg}


@dataclass
class Pack:
    """A program, its DRAM image and its expected outputs.

    Parameters
    ----------
    config : mapping
        The raw configuration keys the program was built for.
    regions : list of Region
        Every DRAM region the program uses.
    image : dict of str to bytes
        Initial contents of each region (``size`` bytes each).
    insn_addr, insn_count : int
        Physical address and number of instructions of the stream.
    expected : dict of str to numpy.ndarray
        Expected final contents of some regions (shape and dtype of the region).

    Raises
    ------
    PackError
        If regions overlap, the instruction stream lies outside every region, an image or an
        expected array does not match its region, or the configuration is invalid.
    """

    config: dict[str, Any]
    regions: list[Region]
    image: dict[str, bytes]
    insn_addr: int
    insn_count: int
    expected: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.config = _raw_config(self.config)
        try:
            self._env = Environment(self.config)
        except ConfigError as exc:
            raise PackError(f"config.json: {exc}") from exc
        for r in self.regions:
            r.validate("pack")
        _check_layout(self.regions, self.insn_addr, self.insn_count)
        by_name = self.region_map()
        for name, data in self.image.items():
            if name not in by_name:
                raise PackError(f"dram.bin: image given for unknown region {name!r}")
            if len(data) != by_name[name].size:
                raise PackError(f"dram.bin: region {name!r} has {len(data)} bytes of image but size {by_name[name].size}")
        lacking = [r.name for r in self.regions if r.name not in self.image]
        if lacking:
            raise PackError(f"dram.bin: no image for regions {lacking!r}")
        for name, arr in list(self.expected.items()):
            self.expected[name] = self._check_expected(name, arr, f"expected/{name}.npy")

    # ------------------------------------------------------------------ views
    @property
    def env(self) -> Environment:
        """The :class:`~vta.env.Environment` of the pack's configuration."""
        return self._env

    def region_map(self) -> dict[str, Region]:
        """Regions by name."""
        return {r.name: r for r in self.regions}

    def region(self, name: str) -> Region:
        """The region called ``name``.

        Raises
        ------
        PackError
            If there is none.
        """
        try:
            return self.region_map()[name]
        except KeyError:
            raise PackError(f"the pack has no region {name!r}; it has {[r.name for r in self.regions]!r}") from None

    def initial(self, name: str) -> np.ndarray:
        """The initial contents of region ``name`` as an array of its dtype and shape."""
        r = self.region(name)
        return np.frombuffer(self.image[name], dtype=r.np_dtype).reshape(r.shape).copy()

    def instructions(self) -> bytes:
        """The raw bytes of the instruction stream (``insn_count * 16``)."""
        for r in self.regions:
            if r.addr <= self.insn_addr < r.addr + r.size:
                start = self.insn_addr - r.addr
                return self.image[r.name][start:start + self.insn_count * INSN_BYTES]
        raise PackError(f"no region holds the instruction address 0x{self.insn_addr:x}")  # unreachable after checks

    def _check_expected(self, name: str, arr: Any, where: str) -> np.ndarray:
        if name not in self.region_map():
            raise PackError(f"{where}: there is no region {name!r} in regions.json")
        r = self.region_map()[name]
        arr = np.asarray(arr)
        if arr.shape != r.shape or arr.dtype.newbyteorder("<") != r.np_dtype:
            raise PackError(f"{where}: array of shape {list(arr.shape)} and dtype {arr.dtype} does not match "
                            f"region {name!r} (shape {list(r.shape)}, dtype {r.dtype})")
        return arr.astype(r.np_dtype, copy=False)

    # ------------------------------------------------------------------ construction
    @classmethod
    def capture(cls, env: Environment, dram: DRAM, regions: list[Region], insn_addr: int,
                insn_count: int, expected: Mapping[str, np.ndarray] | None = None) -> "Pack":
        """Make a pack from the current contents of ``dram``.

        Raises
        ------
        DRAMAccessError
            If a region is not inside a live allocation of ``dram``.
        PackError
            As for the constructor.
        """
        image = {r.name: dram.read(r.addr, r.size) for r in regions}
        return cls(dict(env.cfg_dict), list(regions), image, insn_addr, insn_count, dict(expected or {}))

    @classmethod
    def capture_arena(cls, env: Environment, dram: DRAM, insn_addr: int, insn_count: int) -> "Pack":
        """Make a pack of every live allocation of ``dram`` (for example a program built with
        :class:`vta.testing.programs.ProgramBuilder`, to reproduce a failure elsewhere).

        Each allocation becomes a ``uint8`` region named ``mem_<address in hex>``; the one holding
        the instruction stream has kind ``insn``, the others ``data``. Add expected outputs by
        assigning ``pack.expected[name] = pack.read(dram, name)`` after a trusted run.

        Raises
        ------
        PackError
            If the arena has no allocation holding the instruction stream.
        """
        regions = []
        for addr, size in dram.allocations():
            holds_insns = addr <= insn_addr < addr + size
            regions.append(Region(f"mem_{addr:08x}", "insn" if holds_insns else "data", addr, size, "uint8", (size,)))
        return cls.capture(env, dram, regions, insn_addr, insn_count)

    # ------------------------------------------------------------------ files
    def save(self, path: str | Path) -> Path:
        """Write the pack into directory ``path`` (created if needed; existing pack files are replaced).

        Returns
        -------
        Path
            The directory.

        Raises
        ------
        OSError
            If the directory cannot be written.
        """
        path = Path(path)
        (path / "expected").mkdir(parents=True, exist_ok=True)
        for old in (path / "expected").glob("*.npy"):
            old.unlink()
        (path / "config.json").write_text(json.dumps(self.config, indent=2) + "\n")
        program = {"format_version": FORMAT_VERSION, "insn_addr": self.insn_addr, "insn_count": self.insn_count}
        (path / "program.json").write_text(json.dumps(program, indent=2) + "\n")
        entries, offset = [], 0
        for r in self.regions:
            entries.append(r.to_json(offset))
            offset += r.size
        (path / "regions.json").write_text("[\n" + ",\n".join("  " + json.dumps(e) for e in entries) + "\n]\n")
        with open(path / "dram.bin", "wb") as f:
            for r in self.regions:
                f.write(self.image[r.name])
        for name, arr in self.expected.items():
            np.save(path / "expected" / f"{name}.npy", arr, allow_pickle=False)
        return path

    @classmethod
    def load(cls, path: str | Path) -> "Pack":
        """Read a pack directory.

        Raises
        ------
        PackError
            If a file is missing or malformed, holds a key it should not (the message names the
            closest known key), sizes disagree, or the format version is unknown; the message
            names the file.
        """
        path = Path(path)
        if not path.is_dir():
            raise PackError(f"pack directory {str(path)!r} does not exist or is not a directory")
        config = _read_json(path / "config.json")
        if not isinstance(config, dict):
            raise PackError(f"config.json: must hold a JSON object, got {type(config).__name__}")
        _check_keys(config, CONFIG_KEYS, "config.json")
        program = _read_json(path / "program.json")
        if not isinstance(program, dict):
            raise PackError(f"program.json: must hold a JSON object, got {type(program).__name__}")
        _check_keys(program, _PROGRAM_KEYS, "program.json")
        version = program.get("format_version")
        if version != FORMAT_VERSION:
            raise PackError(f"program.json: format_version {version!r} is not supported (accepted: {FORMAT_VERSION})")
        for key in ("insn_addr", "insn_count"):
            if key not in program:
                raise PackError(f"program.json: lacks the key {key!r}")
        regions = _parse_regions(_read_json(path / "regions.json"))
        try:
            blob = (path / "dram.bin").read_bytes()
        except FileNotFoundError:
            raise PackError(f"dram.bin: missing from the pack directory {str(path)!r}") from None
        except OSError as exc:
            raise PackError(f"dram.bin: cannot be read: {exc}") from exc
        total = sum(r.size for r in regions)
        if len(blob) != total:
            raise PackError(f"dram.bin: holds {len(blob)} bytes but regions.json declares {total}")
        image, offset = {}, 0
        for r in regions:
            image[r.name] = blob[offset:offset + r.size]
            offset += r.size
        expected = {}
        exp_dir = path / "expected"
        if exp_dir.exists():
            for f in sorted(exp_dir.iterdir()):
                if f.suffix != ".npy":
                    raise PackError(f"expected/{f.name}: only <region>.npy files belong in expected/")
                try:
                    expected[f.stem] = np.load(f, allow_pickle=False)
                except (ValueError, OSError, EOFError, SyntaxError, tokenize.TokenError) as exc:
                    # (NumPy parses the header with Python's tokenizer: a damaged header can
                    # raise its TokenError or SyntaxError)
                    raise PackError(f"expected/{f.name}: not a readable .npy array ({exc})") from exc
        return cls(config, regions, image, program["insn_addr"], program["insn_count"], expected)

    # ------------------------------------------------------------------ execution
    def install(self, dram: DRAM) -> None:
        """Allocate every region at its physical address in ``dram`` and write its image.

        Raises
        ------
        PackError
            If a region would collide with a live allocation or leave the arena; nothing stays
            allocated in that case.
        """
        placed: list[int] = []
        try:
            for r in sorted(self.regions, key=lambda r: r.addr):
                try:
                    placed.append(dram.reserve(r.addr, r.size))
                except AllocationError as exc:
                    raise PackError(f"cannot place region {r.name!r} at 0x{r.addr:x}..0x{r.end:x}: {exc}") from exc
                dram.write(r.addr, np.frombuffer(self.image[r.name], dtype=np.uint8))
        except BaseException:
            for addr in placed:
                dram.free(addr)
            raise

    def uninstall(self, dram: DRAM) -> None:
        """Free the regions placed by :meth:`install`.

        Raises
        ------
        AllocationError
            If a region is not a live allocation of ``dram``.
        """
        for r in self.regions:
            dram.free(r.addr)

    def _check_device_env(self, env: Environment) -> None:
        mine = {k: self.config[k] for k in INT_KEYS}
        theirs = {k: env.cfg_dict.get(k) for k in INT_KEYS}
        if mine != theirs:
            diff = {k: (mine[k], theirs[k]) for k in INT_KEYS if mine[k] != theirs[k]}
            raise PackError(f"the device implements another configuration than the pack: (pack, device) = {diff!r}")

    def run(self, device, wait_cycles: int = 0) -> dict:
        """Run the installed program on ``device`` and return its statistics.

        Parameters
        ----------
        device : vta.sim.device.Device
            A device attached to the arena the pack was installed in.
        wait_cycles : int
            Passed to :meth:`Device.run`.

        Raises
        ------
        PackError
            If the device's configuration differs from the pack's.
        vta.errors.SimulationError
            If the device reports an error while executing.
        """
        self._check_device_env(device.env)
        device.run(self.insn_addr, self.insn_count, wait_cycles)
        return device.stats()

    def read(self, dram: DRAM, name: str) -> np.ndarray:
        """The current contents of region ``name`` in ``dram`` (a copy)."""
        r = self.region(name)
        return dram.copy_out(r.addr, r.shape, r.np_dtype)

    def check(self, dram: DRAM) -> dict[str, int]:
        """Compare every region with an expected array against ``dram``.

        Returns
        -------
        dict of str to int
            Number of mismatching elements per region (0 means the region is correct).
        """
        return {name: int(np.count_nonzero(self.read(dram, name) != exp)) for name, exp in self.expected.items()}
