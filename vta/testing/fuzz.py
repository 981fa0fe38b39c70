"""Fuzz targets: the parsers that take outside bytes, each with the errors it may raise.

Every target is a function of one input (bytes or a structured value) that either returns or
raises one of its ``accepted`` exception classes (all :class:`vta.errors.VTAError` subclasses).
Anything else -- a generic Python exception, a crash, a hang -- is a bug. The tests in
``tests/fuzz`` drive them with short seeded Hypothesis runs and replay the inputs kept in
``tests/fuzz/regressions``; ``scripts/fuzz_parsers.py`` runs them for long and keeps what fails.

The module-object blob and the ELF reader have their own property tests
(``tests/runtime/test_module_fuzz.py``).
"""

from __future__ import annotations

import json
import socket
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import isa
from ..env import Environment, load_config
from ..errors import (
    ConfigError,
    DecodeError,
    EncodingError,
    PackError,
    RPCError,
)

__all__ = ["TARGETS", "Target", "run_target"]


@dataclass(frozen=True)
class Target:
    """One parser under test.

    Attributes
    ----------
    name : str
        Short name (the directory of its regression inputs).
    run : callable
        ``run(data)``: feed one input to the parser.
    accepted : tuple of exception classes
        What it may raise on bad input.
    kind : str
        ``"bytes"`` or ``"json"``: the shape of its input (for strategies and saved files).
    """

    name: str
    run: Callable[[Any], Any]
    accepted: tuple
    kind: str = "bytes"


def run_target(target: Target, data: Any) -> str | None:
    """Run ``target`` on ``data``; None when it returned or raised an accepted error, else the
    description of what went wrong (the exception's type and message)."""
    try:
        target.run(data)
    except target.accepted:
        return None
    except Exception as exc:  # noqa: BLE001 - the point is to report them
        return f"{type(exc).__name__}: {exc}"
    return None


# ------------------------------------------------------------------------------ config files
_TMP = Path(tempfile.mkdtemp(prefix="vta-fuzz-"))


def _config_bytes(data: bytes) -> None:
    path = _TMP / "config.json"
    path.write_bytes(data)
    Environment(load_config(path))


def _config_json(obj: Any) -> None:
    _config_bytes(json.dumps(obj).encode())


# ------------------------------------------------------------------------------ ISA
_ENV: Environment | None = None


def _env() -> Environment:
    global _ENV
    if _ENV is None:
        _ENV = Environment(load_config())
    return _ENV


def _insn(data: bytes) -> None:
    env = _env()
    data = (data + bytes(16))[:16]
    insn = isa.decode(data, env)
    # a decoded instruction encodes back to the same bits of every field it has
    assert isa.decode(isa.encode(insn, env), env) == insn
    isa.disassemble([insn], env)


def _program(data: bytes) -> None:
    env = _env()
    words = np.frombuffer(data[:len(data) // 16 * 16], dtype="<u8").reshape(-1, 2)
    isa.decode_program(words, env)
    isa.decode_array(words.copy(), env)


def _uop(data: bytes) -> None:
    env = _env()
    word = int.from_bytes((data + bytes(4))[:4], "little")
    uop = isa.decode_uop(word, env)
    isa.encode_uop(uop, env)


# ------------------------------------------------------------------------------ program packs
_PACK_DIR: Path | None = None


def _pack_dir() -> Path:
    """A small valid pack (a FINISH and four regions), written once; the target damages copies."""
    global _PACK_DIR
    if _PACK_DIR is None:
        from ..env import PAGE_BYTES
        from ..pack import Pack, Region

        env = _env()
        page = PAGE_BYTES
        inp = np.arange(32, dtype=np.int8).reshape(2, 16)
        acc = np.arange(-8, 8, dtype=np.int32).reshape(4, 4)
        insn = isa.encode_program([isa.FinishInsn()], env).astype("<u8")
        out = np.zeros((2, 16), dtype=np.int8)
        regions = [Region("inp", "input", 2 * page, inp.nbytes, "int8", inp.shape),
                   Region("acc", "data", 3 * page, acc.nbytes, "int32", acc.shape),
                   Region("insn", "insn", 4 * page, insn.nbytes, "uint64", insn.shape),
                   Region("out", "output", 5 * page, out.nbytes, "int8", out.shape)]
        image = {"inp": inp.tobytes(), "acc": acc.astype("<i4").tobytes(), "insn": insn.tobytes(),
                 "out": out.tobytes()}
        pack = Pack(dict(env.cfg_dict), regions, image, 4 * page, 1, {"out": out})
        _PACK_DIR = pack.save(_TMP / "pack")
    return _PACK_DIR


def _pack(data: bytes) -> None:
    """The first byte picks a file of a valid pack; the rest replaces it."""
    from ..pack import Pack

    src = _pack_dir()
    files = pack_files()
    pick = files[data[0] % len(files)] if data else files[0]
    dst = _TMP / "damaged"
    for name in files:
        (dst / name).parent.mkdir(parents=True, exist_ok=True)
        (dst / name).write_bytes(data[1:] if name == pick else (src / name).read_bytes())
    Pack.load(dst)


def pack_files() -> list[str]:
    """Paths, relative to the pack, of every file of the valid pack the pack target damages."""
    src = _pack_dir()
    return sorted(str(p.relative_to(src)) for p in src.rglob("*") if p.is_file())


# ------------------------------------------------------------------------------ RPC frames
def _frame(data: bytes) -> None:
    from ..rpc import protocol

    a, b = socket.socketpair()
    try:
        b.settimeout(5.0)
        sender = threading.Thread(target=_send_and_close, args=(a, data), daemon=True)
        sender.start()
        try:
            while True:  # every frame the bytes hold, until the stream is lost or closed
                header, payloads = protocol.recv_frame(b, 1 << 20)
                protocol.decode_value(header.get("value"), payloads)
        finally:
            sender.join()
    finally:
        a.close()
        b.close()


def _send_and_close(sock: socket.socket, data: bytes) -> None:
    try:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def _value(obj: Any) -> None:
    from ..rpc import protocol

    protocol.decode_value(obj, [b"\x00" * 16, b"abc"])


#: Every target, by name.
TARGETS = {t.name: t for t in (
    Target("config_bytes", _config_bytes, (ConfigError,)),
    Target("config_json", _config_json, (ConfigError,), "json"),
    Target("insn", _insn, (DecodeError, EncodingError)),
    Target("program", _program, (DecodeError, EncodingError)),
    Target("uop", _uop, (DecodeError, EncodingError)),
    Target("pack", _pack, (PackError, ConfigError)),
    Target("rpc_frame", _frame, (RPCError,)),
    Target("rpc_value", _value, (RPCError,), "json"),
)}
