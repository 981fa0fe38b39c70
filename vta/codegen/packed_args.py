"""The packed-function prologue: unpack and check every argument (reference 5.2 steps 1-3).

Each array argument must be a DLTensor (type code 7, 13 or 3) with the declared ndim, dtype and
constant shape, compact strides (or none), ``byte_offset`` 0, device type 12 (``ext_dev``) and
the same device id as the first array. A failed check reports a message naming the function,
the argument's position and name, the expected and the actual value.
"""

from __future__ import annotations

from ..tir import nodes as n
from .common import CodegenError, ctype

__all__ = ["arg_checks", "EXT_DEV"]

#: Device type of ``ext_dev`` (DLPack kDLExtDev): arrays passed to VTA functions live there.
EXT_DEV = 12


def _dtype_triple(dtype: str) -> tuple[int, int, int]:
    for prefix, code in (("uint", 1), ("int", 0), ("float", 2)):
        if dtype.startswith(prefix) and dtype[len(prefix):].isdigit():
            return code, int(dtype[len(prefix):]), 1
    raise CodegenError(f"argument dtype {dtype!r} cannot be checked; accepted: int<N>, uint<N>, float<N>")



def arg_checks(em, func: n.PrimFunc, name: str) -> list[str]:
    """C statements unpacking and checking the arguments of ``func``'s packed entry ``name``.

    ``em`` is the emitter (for variable names). Raises
    :class:`~vta.codegen.common.CodegenError` for a handle parameter without a buffer or a
    non-constant argument shape.
    """

    out: list[str] = []
    nargs = len(func.params)
    out.append(f"  if (num_args != {nargs}) return vta_gen_fail(\"expected {nargs} arguments, got %d\", num_args);")
    for i, param in enumerate(func.params):
        buf = func.buffer_map.get(param)
        pname = em.name_of(param)
        label = buf.name if buf is not None else param.name
        if buf is None:
            # A scalar argument.
            if param.dtype == "handle":
                raise CodegenError(f"parameter {param.name!r} of {name!r} is a handle without a buffer")
            code = 2 if param.dtype.startswith("float") else 0
            out.append(
                f"  if (type_codes[{i}] != {code}) return vta_gen_fail(\"argument {i} ({label}) must be a "
                f"{'float' if code == 2 else 'integer'} scalar, got type code %d\", type_codes[{i}]);"
            )
            field = "v_float64" if code == 2 else "v_int64"
            out.append(f"  {ctype(param.dtype)} {pname} = ({ctype(param.dtype)})args[{i}].{field};")
            continue
        t = f"vta_gen_t{i}"
        out.append(
            f"  if (type_codes[{i}] != 7 && type_codes[{i}] != 13 && type_codes[{i}] != 3) return vta_gen_fail("
            f"\"argument {i} ({label}) must be an array (DLTensor), got type code %d\", type_codes[{i}]);"
        )
        out.append(f"  DLTensor* {t} = (DLTensor*)args[{i}].v_handle;")
        out.append(f"  if ({t} == NULL) return vta_gen_fail(\"argument {i} ({label}) is a null array\");")
        ndim = len(buf.shape)
        out.append(
            f"  if ({t}->ndim != {ndim}) return vta_gen_fail(\"argument {i} ({label}) must have ndim {ndim}, "
            f"got %d\", (int){t}->ndim);"
        )
        code, bits, lanes = _dtype_triple(buf.dtype)
        out.append(
            f"  if ({t}->dtype.code != {code} || {t}->dtype.bits != {bits} || {t}->dtype.lanes != {lanes}) "
            f"return vta_gen_fail(\"argument {i} ({label}) must have dtype {buf.dtype}, got code %d bits %d lanes %d\", "
            f"(int){t}->dtype.code, (int){t}->dtype.bits, (int){t}->dtype.lanes);"
        )
        dims = []
        for d, extent in enumerate(buf.shape):
            if not isinstance(extent, n.IntImm):
                raise CodegenError(f"argument {label!r} of {name!r} has a non-constant extent {extent!r} in dimension {d}; only constant shapes are supported")
            dims.append(extent.value)
        shape_txt = "(" + ", ".join(str(d) for d in dims) + ")"
        cond = " || ".join(f"{t}->shape[{d}] != {v}" for d, v in enumerate(dims)) or "0"
        fmt = ", ".join("%lld" for _ in dims)
        vals = ", ".join(f"(long long){t}->shape[{d}]" for d in range(ndim))
        out.append(
            f"  if ({cond}) return vta_gen_fail(\"argument {i} ({label}) must have shape {shape_txt}, got ({fmt})\"{', ' if vals else ''}{vals});"
        )
        # Compact strides only (or none).
        strides, acc = [], 1
        for v in reversed(dims):
            strides.append(acc)
            acc *= v
        strides.reverse()
        checked = [(d, s) for d, s in enumerate(strides) if dims[d] != 1]
        if checked:
            scond = " || ".join(f"{t}->strides[{d}] != {s}" for d, s in checked)
            out.append(
                f"  if ({t}->strides != NULL && ({scond})) return vta_gen_fail(\"argument {i} ({label}) "
                f"must be compact (row-major strides)\");"
            )
        out.append(
            f"  if ({t}->byte_offset != 0) return vta_gen_fail(\"argument {i} ({label}) must have byte_offset 0, "
            f"got %llu\", (unsigned long long){t}->byte_offset);"
        )
        out.append(
            f"  if ({t}->device.device_type != {EXT_DEV}) return vta_gen_fail(\"argument {i} ({label}) must live on "
            f"ext_dev (device type {EXT_DEV}), got device type %d\", (int){t}->device.device_type);"
        )
        if i > 0 and any(func.buffer_map.get(p) is not None for p in func.params[:i]):
            first = next(j for j, p in enumerate(func.params[:i]) if func.buffer_map.get(p) is not None)
            out.append(
                f"  if ({t}->device.device_id != vta_gen_t{first}->device.device_id) return vta_gen_fail(\""
                f"argument {i} ({label}) is on device %d but argument {first} on device %d\", "
                f"(int){t}->device.device_id, (int)vta_gen_t{first}->device.device_id);"
            )
        out.append(f"  if ({t}->data == NULL) return vta_gen_fail(\"argument {i} ({label}) has no data\");")
        out.append(f"  void* {em.name_of(buf.data)} = {t}->data;")
    return out
