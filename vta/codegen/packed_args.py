"""The packed-function prologue: unpack and check every argument (reference 5.2 steps 1-3).

Each array argument must be a DLTensor (type code 7, 13 or 3) with the declared ndim, dtype and
constant shape, compact strides (or none), ``byte_offset`` 0, device type 12 (``ext_dev``) and
the same device id as the first array. A failed check reports a message naming the function,
the argument's position and name, the expected and the actual value.
"""

from __future__ import annotations

from ..tir import nodes as n
from .common import CodegenError, c_string, ctype

__all__ = ["arg_checks", "EXT_DEV", "CPU", "CHECK_ARRAY_C"]

#: Device type of ``ext_dev`` (DLPack kDLExtDev): arrays passed to VTA functions live there.
EXT_DEV = 12
#: Device type of the host CPU (DLPack kDLCPU): arrays passed to host-only functions live there.
CPU = 1


#: The C helper every entry calls once per array argument (emitted once per source file: one
#: loop instead of a dozen checks and format strings per argument keeps the C compiler's work
#: small). It returns 0 and the data pointer, or reports the first failed check and returns -1.
CHECK_ARRAY_C = r"""
static int vta_gen_check_array(TVMValue* args, int* type_codes, int i, const char* label, int ndim, int code,
                               int bits, int lanes, const char* dtype, const int64_t* shape, const char* shape_txt,
                               const int64_t* strides, int first, int dev_type, void** data) {
  if (type_codes[i] != 7 && type_codes[i] != 13 && type_codes[i] != 3)
    return vta_gen_fail("argument %d (%s) must be an array (DLTensor), got type code %d", i, label, type_codes[i]);
  DLTensor* t = (DLTensor*)args[i].v_handle;
  if (t == NULL) return vta_gen_fail("argument %d (%s) is a null array", i, label);
  if (t->ndim != ndim) return vta_gen_fail("argument %d (%s) must have ndim %d, got %d", i, label, ndim, (int)t->ndim);
  if (t->dtype.code != code || t->dtype.bits != bits || t->dtype.lanes != lanes)
    return vta_gen_fail("argument %d (%s) must have dtype %s, got code %d bits %d lanes %d", i, label, dtype,
                        (int)t->dtype.code, (int)t->dtype.bits, (int)t->dtype.lanes);
  for (int d = 0; d < ndim; ++d) {
    if (t->shape[d] != shape[d]) {
      char got[256];
      int len = snprintf(got, sizeof(got), "(");
      for (int k = 0; k < ndim && len < (int)sizeof(got); ++k)
        len += snprintf(got + len, sizeof(got) - len, k ? ", %lld" : "%lld", (long long)t->shape[k]);
      if (len < (int)sizeof(got)) snprintf(got + len, sizeof(got) - len, ")");
      return vta_gen_fail("argument %d (%s) must have shape %s, got %s", i, label, shape_txt, got);
    }
  }
  if (t->strides != NULL) {
    for (int d = 0; d < ndim; ++d) {
      if (shape[d] != 1 && t->strides[d] != strides[d])
        return vta_gen_fail("argument %d (%s) must be compact (row-major strides)", i, label);
    }
  }
  if (t->byte_offset != 0)
    return vta_gen_fail("argument %d (%s) must have byte_offset 0, got %llu", i, label,
                        (unsigned long long)t->byte_offset);
  if (t->device.device_type != dev_type)
    return vta_gen_fail("argument %d (%s) must live on %s (device type %d), got device type %d", i, label,
                        dev_type == @EXT_DEV@ ? "ext_dev" : "cpu", dev_type, (int)t->device.device_type);
  if (first >= 0) {
    DLTensor* f = (DLTensor*)args[first].v_handle;
    if (t->device.device_id != f->device.device_id)
      return vta_gen_fail("argument %d (%s) is on device %d but argument %d on device %d", i, label,
                          (int)t->device.device_id, first, (int)f->device.device_id);
  }
  if (t->data == NULL) return vta_gen_fail("argument %d (%s) has no data", i, label);
  *data = t->data;
  return 0;
}
""".replace("@EXT_DEV@", str(EXT_DEV))


def _dtype_triple(dtype: str) -> tuple[int, int, int]:
    for prefix, code in (("uint", 1), ("int", 0), ("float", 2)):
        if dtype.startswith(prefix) and dtype[len(prefix):].isdigit():
            return code, int(dtype[len(prefix):]), 1
    raise CodegenError(f"argument dtype {dtype!r} cannot be checked; accepted: int<N>, uint<N>, float<N>")



def arg_checks(em, func: n.PrimFunc, name: str, device_type: int = EXT_DEV) -> list[str]:
    """C statements unpacking and checking the arguments of ``func``'s packed entry ``name``.

    Array arguments must live on ``device_type`` (:data:`EXT_DEV` for accelerator functions,
    :data:`CPU` for functions built for the host).

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
        code, bits, lanes = _dtype_triple(buf.dtype)
        dims = []
        for d, extent in enumerate(buf.shape):
            if not isinstance(extent, n.IntImm):
                raise CodegenError(f"argument {label!r} of {name!r} has a non-constant extent {extent!r} in "
                                   f"dimension {d}; only constant shapes are supported")
            dims.append(extent.value)
        shape_txt = "(" + ", ".join(str(d) for d in dims) + ")"
        # Compact strides only (or none); the helper skips dimensions of extent 1.
        strides, acc = [], 1
        for v in reversed(dims):
            strides.append(acc)
            acc *= v
        strides.reverse()
        first = next((j for j, p in enumerate(func.params[:i]) if func.buffer_map.get(p) is not None), -1)
        data = em.name_of(buf.data)
        out.append(f"  static const int64_t vta_gen_shape{i}[] = {{{', '.join(str(d) for d in dims) or '0'}}};")
        out.append(f"  static const int64_t vta_gen_strides{i}[] = {{{', '.join(str(s) for s in strides) or '0'}}};")
        out.append(f"  void* {data};")
        out.append(
            f"  if (vta_gen_check_array(args, type_codes, {i}, {c_string(label)}, {len(dims)}, {code}, {bits}, "
            f"{lanes}, {c_string(buf.dtype)}, vta_gen_shape{i}, {c_string(shape_txt)}, vta_gen_strides{i}, {first}, "
            f"{int(device_type)}, &{data}) != 0) "
            f"return -1;"
        )
    return out
