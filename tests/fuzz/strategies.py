"""Hypothesis strategies for the fuzz targets of :mod:`vta.testing.fuzz` (shared with the script)."""

from __future__ import annotations

import json

from hypothesis import strategies as st

from vta.env import load_config
from vta.rpc import protocol

_DEFAULT = load_config()
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(1 << 40), 1 << 40), st.floats(allow_nan=True),
                     st.text(max_size=12))
JSON = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                      st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                    max_leaves=12)


@st.composite
def configs(draw):
    """The default configuration with some keys changed, dropped or added."""
    cfg = dict(_DEFAULT)
    for key in draw(st.lists(st.sampled_from(sorted(cfg)), max_size=4, unique=True)):
        action = draw(st.sampled_from(["small int", "any", "drop"]))
        if action == "drop":
            del cfg[key]
        elif action == "small int":
            cfg[key] = draw(st.integers(-2, 40))
        else:
            cfg[key] = draw(_SCALARS)
    if draw(st.booleans()):
        cfg[draw(st.text(max_size=10))] = draw(_SCALARS)
    return cfg


@st.composite
def frames(draw):
    """Byte streams that are mostly well-formed frames: prefix, JSON header, payloads."""
    out = b""
    for _ in range(draw(st.integers(1, 3))):
        header = draw(st.dictionaries(st.sampled_from(["op", "value", "name", "args", "payloads"]), JSON, max_size=4))
        payloads = draw(st.lists(st.binary(max_size=24), max_size=3))
        if draw(st.booleans()):
            header["payloads"] = [len(p) for p in payloads]
        text = json.dumps(header).encode()
        hlen = draw(st.one_of(st.just(len(text)), st.integers(0, (1 << 32) - 1)))
        plen = draw(st.one_of(st.just(sum(len(p) for p in payloads)), st.integers(0, 1 << 40)))
        magic = draw(st.one_of(st.just(protocol.MAGIC), st.binary(min_size=len(protocol.MAGIC),
                                                                  max_size=len(protocol.MAGIC))))
        frame = protocol._PREFIX.pack(magic, hlen % (1 << 32), plen % (1 << 64)) + text + b"".join(payloads)
        cut = draw(st.integers(0, len(frame)))
        out += frame if draw(st.integers(0, 4)) else frame[:cut]
    return out


@st.composite
def pack_files(draw):
    """A file of a valid pack picked by the first byte, the rest its damaged contents."""
    from vta.testing.fuzz import _pack_dir, pack_files

    files = [_pack_dir() / name for name in pack_files()]
    k = draw(st.integers(0, len(files) - 1))
    data = bytearray(files[k].read_bytes())
    how = draw(st.sampled_from(["flip", "truncate", "json", "random"]))
    if how == "flip" and data:
        for _ in range(draw(st.integers(1, 4))):
            i = draw(st.integers(0, len(data) - 1))
            data[i] ^= 1 << draw(st.integers(0, 7))
    elif how == "truncate":
        data = data[:draw(st.integers(0, len(data)))]
    elif how == "json" and files[k].suffix == ".json":
        try:
            obj = json.loads(data)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and obj:
            key = draw(st.sampled_from(sorted(obj)))
            obj[key] = draw(JSON)
            data = bytearray(json.dumps(obj).encode())
    elif how == "random":
        data = bytearray(draw(st.binary(max_size=64)))
    return bytes([k]) + bytes(data)


def inputs(target):
    """The strategy for one target: structured where it helps, raw bytes as well."""
    name = target.name
    if name == "config_json":
        return st.one_of(configs(), JSON)
    if name == "rpc_value":
        return st.one_of(JSON, st.dictionaries(st.sampled_from(["bytes", "array", "handle", "dtype", "shape", "tag"]),
                                               JSON, max_size=4))
    if name == "rpc_frame":
        return st.one_of(frames(), st.binary(max_size=64))
    if name == "config_bytes":
        return st.one_of(st.binary(max_size=64), configs().map(lambda c: json.dumps(c).encode()))
    if name == "insn":
        return st.binary(min_size=16, max_size=16)
    if name == "uop":
        return st.binary(min_size=4, max_size=4)
    if name == "pack":
        return st.one_of(pack_files(), st.binary(max_size=64))
    return st.binary(max_size=256)
