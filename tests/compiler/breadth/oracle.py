"""NumPy oracles of the breadth operators, on plain NCHW / OIHW arrays (int64, exact).

Written from the definitions, independently of the compiler: a convolution is a sum over kernel
taps of channel contractions of strided windows of the zero-padded input; a transposed
convolution scatters each input pixel times the kernel into the output (the adjoint of a
strided convolution) and crops the padding.
"""

from __future__ import annotations

import numpy as np


def conv2d(x, w, stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1):
    """``x`` (N, C, H, W), ``w`` (O, C/groups, KH, KW); padding (top, left, bottom, right)."""
    x, w = x.astype(np.int64), w.astype(np.int64)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    assert c == cg * groups and o % groups == 0
    sh, sw = stride
    dh, dw = dilation
    pt, pl, pb, pr = padding
    xp = np.zeros((n, c, h + pt + pb, wd + pl + pr), np.int64)
    xp[:, :, pt:pt + h, pl:pl + wd] = x
    oh = (h + pt + pb - (kh - 1) * dh - 1) // sh + 1
    ow = (wd + pl + pr - (kw - 1) * dw - 1) // sw + 1
    out = np.zeros((n, o, oh, ow), np.int64)
    og = o // groups
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        ws = w[g * og:(g + 1) * og]
        for a in range(kh):
            for b in range(kw):
                win = xs[:, :, a * dh:a * dh + sh * (oh - 1) + 1:sh, b * dw:b * dw + sw * (ow - 1) + 1:sw]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", win, ws[:, :, a, b])
    return out


def conv2d_transpose(x, w, stride=(1, 1), padding=(0, 0, 0, 0), output_padding=(0, 0)):
    """``x`` (N, CI, H, W), ``w`` (CI, CO, KH, KW) (TVM's IOHW); scatter then crop."""
    x, w = x.astype(np.int64), w.astype(np.int64)
    n, _ci, h, wd = x.shape
    _, co, kh, kw = w.shape
    sh, sw = stride
    pt, pl, pb, pr = padding
    oph, opw = output_padding
    full = np.zeros((n, co, (h - 1) * sh + kh + oph, (wd - 1) * sw + kw + opw), np.int64)
    for i in range(h):
        for j in range(wd):
            full[:, :, i * sh:i * sh + kh, j * sw:j * sw + kw] += np.einsum("nc,cokl->nokl", x[:, :, i, j], w)
    oh = (h - 1) * sh - pt - pb + kh + oph
    ow = (wd - 1) * sw - pl - pr + kw + opw
    return full[:, :, pt:pt + oh, pl:pl + ow]


def requant(acc, shift=8):
    """``clip(acc >> shift, 0, 127)`` of the int32 accumulator: :func:`vta.topi.requantize`."""
    r = acc.astype(np.int64).astype(np.int32).astype(np.int64) >> shift
    return np.clip(r, 0, 127).astype(np.int8)


def pack_nchw(a, batch, block):
    n, c, h, w = a.shape
    return np.ascontiguousarray(a.reshape(n // batch, batch, c // block, block, h, w).transpose(0, 2, 4, 5, 1, 3))


def unpack_nchw(p):
    n0, c0, h, w, b, c = p.shape
    return p.transpose(0, 4, 1, 5, 2, 3).reshape(n0 * b, c0 * c, h, w)


def pack_oihw(w, bo, bi):
    o, i, kh, kw = w.shape
    return np.ascontiguousarray(w.reshape(o // bo, bo, i // bi, bi, kh, kw).transpose(0, 2, 4, 5, 1, 3))


def pack_transpose_kernel(w, bo, bi):
    """IOHW (CI, CO, KH, KW) -> the packed kernel of ``conv2d_transpose_packed``: OIHW blocks
    of the spatially flipped kernel (as upstream's integration test packs it)."""
    return pack_oihw(np.flip(w, (2, 3)).transpose(1, 0, 2, 3), bo, bi)
