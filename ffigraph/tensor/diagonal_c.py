"""Plain-C code of ``ExtractDiag``, ``FillDiagonal`` and ``FillDiagonalOffset`` (diagonal.py).

* ExtractDiag: a view. The kept axes keep their lengths and strides, in order; the diagonal is
  the last axis, of stride ``strides[axis1] + strides[axis2]``, starting ``offset`` columns right
  (or ``-offset`` rows down) of the first element. An empty diagonal starts at the first element.
* FillDiagonal / FillDiagonalOffset: the input copied into a fresh C-contiguous array, then the
  value written along the diagonal's flat positions (numpy's walk: start, then every
  ``columns + 1``; for n-d FillDiagonal, every ``1 + n + n**2 + ...``), after the same checks as
  ``perform`` (an n-d array's lengths must be equal: FFG_ERR_VALUE).
"""
from __future__ import annotations

from ffigraph.graph.c_interface import MethodNotDefined
from ffigraph.tensor.ctype import c_element_type
from ffigraph.tensor.reduce_c import _Lines
from ffigraph.tensor.sort_c import c_message

VERSION = (1,)


def _ctype(op, dtype):
    if dtype in ("complex64", "complex128", "float16"):
        raise MethodNotDefined("%s: no C code for %s values" % (op, dtype))
    return c_element_type(dtype)


def _extract_code(op, node, x, z):
    ndim = node.inputs[0].type.ndim
    a1, a2 = op.axes(ndim)
    rest = [d for d in range(ndim) if d not in (a1, a2)]
    c = _Lines()
    c.add("/* %s: a view of %s */" % (c_message(op), x))
    c.open()
    c.add("const int64_t off = %d;" % op.offset)
    c.add("int64_t rows = %s.shape[%d] - (off < 0 ? -off : 0), cols = %s.shape[%d] - (off > 0 ? off : 0);"
          % (x, a1, x, a2))
    c.add("int64_t length = rows < cols ? rows : cols;")
    c.add("if (length < 0) length = 0;")
    for j, d in enumerate(rest):
        c.add("%s.shape[%d] = %s.shape[%d]; %s.strides[%d] = %s.strides[%d];" % (z, j, x, d, z, j, x, d))
    last = len(rest)
    c.add("%s.shape[%d] = length; %s.strides[%d] = %s.strides[%d] + %s.strides[%d];"
          % (z, last, z, last, x, a1, x, a2))
    c.add("%s.data = %s.data + (length == 0 ? 0 : (off >= 0 ? off * %s.strides[%d] : -off * %s.strides[%d]))"
          " * (int64_t)sizeof(%s);" % (z, x, x, a2, x, a1, _ctype(op, node.inputs[0].type.dtype)))
    c.add("%s.owned = NULL;" % z)
    c.close()
    return c.text()


def _fill_code(op, node, inputs, z, sub):
    a, val = inputs[:2]
    atype = node.inputs[0].type
    ndim, ctype = atype.ndim, _ctype(op, atype.dtype)
    err, fail, allocator = sub["err"], sub["fail"], sub["allocator"]
    c = _Lines()
    c.add("/* %s: a copy of %s with %s on its diagonal */" % (c_message(op), a, val))
    c.open()
    c.add("int64_t start, count, step, k;")
    if op.c_kind == "fill_offset":
        off_type = c_element_type(node.inputs[2].type.dtype)
        c.add("const int64_t off = (int64_t)*(const %s *)%s.data;" % (off_type, inputs[2]))
        c.add("const int64_t height = %s.shape[0], width = %s.shape[1];" % (a, a))
        c.add("const int64_t smaller = height < width ? height : width;")
        c.open("if (off >= 0) {")
        c.add("start = off; count = width - off < smaller ? width - off : smaller;")
        c.close()
        c.open("else {")
        c.add("/* (-off rows down; off is never INT64_MIN here: it would leave no rows) */")
        c.add("start = off < -height ? 0 : -off * width; count = height + off < smaller ? height + off : smaller;")
        c.close()
        c.add("if (count < 0) count = 0;")
        c.add("step = width + 1;")
    elif ndim == 2:
        c.add("start = 0; step = %s.shape[1] + 1;" % a)
        c.add("count = %s.shape[0] < %s.shape[1] ? %s.shape[0] : %s.shape[1];" % (a, a, a, a))
    else:
        c.open("{")
        c.add("int d;")
        c.add("int64_t power = 1;")
        c.open("for (d = 1; d < %d; ++d) {" % ndim)
        c.open("if (%s.shape[d] != %s.shape[0]) {" % (a, a))
        c.add('ffg_set_error(%s, FFG_ERR_VALUE, -1, "%s: an array of more than 2 dimensions must have all '
              'lengths equal, got lengths %%lld and %%lld (axes 0 and %%d)", (long long)%s.shape[0], '
              '(long long)%s.shape[d], d);' % (err, c_message(op), a, a))
        c.add(fail)
        c.close()
        c.close()
        c.add("start = 0; step = 1; count = %s.shape[0];" % a)
        c.add("for (d = 1; d < %d; ++d) { power *= %s.shape[0]; step += power; }" % (ndim, a))
        c.close()
    c.add("if (ffg_copy_array(&%s, &%s, %d, sizeof(%s), %s, %s))" % (z, a, ndim, ctype, allocator, err))
    c.add("    " + fail)
    c.open("{")
    c.add("%s *out = (%s *)%s.data;" % (ctype, ctype, z))
    c.add("const %s value = *(const %s *)%s.data;" % (ctype, ctype, val))
    c.add("for (k = 0; k < count; ++k)")
    c.add("    out[start + k * step] = value;")
    c.close()
    c.close()
    return c.text()


def c_code(op, node, name, inputs, outputs, sub):
    if op.c_kind == "extract":
        return _extract_code(op, node, inputs[0], outputs[0])
    return _fill_code(op, node, inputs, outputs[0], sub)


def c_headers(op):
    return ["<string.h>"]


def c_code_cache_version(op):
    return VERSION
