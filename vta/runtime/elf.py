"""A minimal reader of the dynamic symbol table of an ELF64 shared library.

The loader uses it before and after ``dlopen`` to know, without trusting the file, which
functions the library itself defines, how large its data symbols (``__tvm_dev_mblob``,
``__tvm_main__``) are, and which libraries it needs. Every offset is bounds-checked, so a
corrupt file gives a :class:`~vta.errors.ModuleLoadError`, never a crash.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ModuleLoadError

__all__ = ["Symbol", "DynamicInfo", "read_dynamic_info"]

_SHT_DYNAMIC = 6
_SHT_DYNSYM = 11
_DT_NEEDED = 1
_DT_SONAME = 14
_STT_OBJECT = 1
_STT_FUNC = 2
_SHN_UNDEF = 0
_PT_LOAD = 1
_PT_GNU_RELRO = 0x6474E552
_PF_W = 2


@dataclass(frozen=True)
class Symbol:
    """One dynamic symbol defined by the library.

    Attributes
    ----------
    name : str
    kind : str
        ``"func"``, ``"object"`` or ``"other"``.
    size : int
        Bytes, from the symbol table.
    mapped : bool
        The whole symbol lies inside a loadable segment (reading it cannot fault).
    writable : bool
        The whole symbol lies in a writable segment outside the region made read-only after
        relocation (``PT_GNU_RELRO``), so the loader may store into it.
    """

    name: str
    kind: str
    size: int
    mapped: bool = True
    writable: bool = False


@dataclass
class DynamicInfo:
    """What the dynamic section says about a library.

    Attributes
    ----------
    symbols : dict of str to Symbol
        The dynamic symbols defined by the library itself.
    needed : list of str
        ``DT_NEEDED`` entries (sonames of dependencies).
    soname : str or None
        ``DT_SONAME``.
    undefined : set of str
        Dynamic symbols the library uses but does not define (resolved by the dynamic loader).
    """

    symbols: dict[str, Symbol] = field(default_factory=dict)
    needed: list[str] = field(default_factory=list)
    soname: str | None = None
    undefined: set[str] = field(default_factory=set)

    def function(self, name: str) -> bool:
        """True if the library defines a function ``name``."""
        sym = self.symbols.get(name)
        return sym is not None and sym.kind == "func"

    def data(self, name: str) -> Symbol | None:
        """The data symbol ``name`` defined by the library, or None."""
        sym = self.symbols.get(name)
        return sym if sym is not None and sym.kind == "object" else None


class _Image:
    def __init__(self, data: bytes, path: Path):
        self.data = data
        self.path = path

    def fail(self, what: str) -> ModuleLoadError:
        return ModuleLoadError(f"{str(self.path)!r} is not a valid ELF64 shared library: {what}")

    def unpack(self, fmt: str, offset: int, what: str) -> tuple:
        size = struct.calcsize(fmt)
        if offset < 0 or offset + size > len(self.data):
            raise self.fail(f"{what} at offset {offset} runs past the end of the {len(self.data)}-byte file")
        return struct.unpack_from(fmt, self.data, offset)

    def string(self, table: tuple[int, int], index: int, what: str) -> str:
        start, size = table
        if not 0 <= index < size:
            raise self.fail(f"{what} name index {index} is outside its string table of {size} bytes")
        end = self.data.find(b"\0", start + index, start + size)
        if end < 0:
            raise self.fail(f"{what} name at index {index} is not NUL-terminated")
        return self.data[start + index:end].decode("utf-8", errors="replace")


def read_dynamic_info(path: str | os.PathLike) -> DynamicInfo:
    """Read the dynamic symbols, needed libraries and soname of a little-endian ELF64 file.

    Raises
    ------
    ModuleLoadError
        If the file cannot be read, is not a little-endian ELF64 file, or any table in it is
        out of bounds.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ModuleLoadError(f"cannot read {str(path)!r}: {exc}") from exc
    img = _Image(data, path)
    if data[:4] != b"\x7fELF":
        raise img.fail("it does not start with the ELF magic number")
    if len(data) < 64 or data[4] != 2 or data[5] != 1:
        raise img.fail("only little-endian 64-bit ELF files are supported")
    shoff, = img.unpack("<Q", 0x28, "section header offset")
    shentsize, shnum = img.unpack("<HH", 0x3A, "section header size and count")
    if shnum and shentsize < 64:
        raise img.fail(f"section header entries of {shentsize} bytes are too small")
    sections = []
    for i in range(shnum):
        base = shoff + i * shentsize
        sh_type, = img.unpack("<I", base + 4, f"section header {i}")
        sh_offset, sh_size, sh_link = img.unpack("<QQI", base + 0x18, f"section header {i}")
        if sh_type != 8 and sh_offset + sh_size > len(data):  # 8 = SHT_NOBITS occupies no file space
            raise img.fail(f"section {i} ({sh_offset}+{sh_size} bytes) runs past the end of the file")
        sections.append((sh_type, sh_offset, sh_size, sh_link))

    def strtab(link: int, what: str) -> tuple[int, int]:
        if not 0 <= link < len(sections):
            raise img.fail(f"{what} links to missing string table section {link}")
        return sections[link][1], sections[link][2]

    loads, relro = _segments(img)

    def inside(ranges, start: int, size: int) -> bool:
        return any(lo <= start and start + size <= lo + n for lo, n in ranges)

    info = DynamicInfo()
    for sh_type, offset, size, link in sections:
        if sh_type == _SHT_DYNSYM:
            names = strtab(link, "the dynamic symbol table")
            for k in range(size // 24):
                st_name, st_info, _other, st_shndx, st_value, st_size = img.unpack(
                    "<IBBHQQ", offset + 24 * k, f"dynamic symbol {k}")
                if st_name == 0:
                    continue
                if st_shndx == _SHN_UNDEF:
                    info.undefined.add(img.string(names, st_name, "symbol"))
                    continue
                kind = {_STT_FUNC: "func", _STT_OBJECT: "object"}.get(st_info & 0xF, "other")
                name = img.string(names, st_name, "symbol")
                mapped = inside([(lo, n) for lo, n, _ in loads], st_value, st_size)
                writable = (inside([(lo, n) for lo, n, flags in loads if flags & _PF_W], st_value, st_size)
                            and not any(lo < st_value + st_size and st_value < lo + n for lo, n in relro))
                info.symbols[name] = Symbol(name, kind, int(st_size), mapped, writable)
        elif sh_type == _SHT_DYNAMIC:
            names = strtab(link, "the dynamic section")
            for k in range(size // 16):
                tag, val = img.unpack("<qQ", offset + 16 * k, f"dynamic entry {k}")
                if tag == 0:
                    break
                if tag == _DT_NEEDED:
                    info.needed.append(img.string(names, val, "needed library"))
                elif tag == _DT_SONAME:
                    info.soname = img.string(names, val, "soname")
    return info


def _segments(img: _Image) -> tuple[list[tuple[int, int, int]], list[tuple[int, int]]]:
    """``(vaddr, memsz, flags)`` of the loadable segments and ``(vaddr, memsz)`` of RELRO."""
    phoff, = img.unpack("<Q", 0x20, "program header offset")
    phentsize, phnum = img.unpack("<HH", 0x36, "program header size and count")
    if phnum and phentsize < 56:
        raise img.fail(f"program header entries of {phentsize} bytes are too small")
    loads, relro = [], []
    for i in range(phnum):
        p_type, p_flags = img.unpack("<II", phoff + i * phentsize, f"program header {i}")
        p_vaddr, = img.unpack("<Q", phoff + i * phentsize + 0x10, f"program header {i}")
        p_memsz, = img.unpack("<Q", phoff + i * phentsize + 0x28, f"program header {i}")
        if p_type == _PT_LOAD:
            loads.append((p_vaddr, p_memsz, p_flags))
        elif p_type == _PT_GNU_RELRO:
            relro.append((p_vaddr, p_memsz))
    return loads, relro
