"""Plain-C code of ``CumOp``, ``SearchsortedOp`` and ``BinCountOp`` (extra_ops.py).

* CumOp: per lane along ``op.axis`` (lanes as in sort_c.py), a running sum or product in the
  output's dtype, written as it goes: the same sequential order and rounding as numpy's
  ``cumsum``/``cumprod`` (which accumulate in the output dtype too).
* SearchsortedOp: per value of ``v`` (walked in C order, the output C-contiguous), a binary
  search of ``x`` (through ``sorter`` when given) in numpy's order, NaN last. 'left' finds the
  first position whose element is not before the value, 'right' the first one after it. The
  sorter is checked first: its length against ``x``'s and every entry against ``[0, len(x))``
  (FFG_ERR_VALUE, naming the entry).
* BinCountOp: a first pass finds the largest value and refuses a negative one (FFG_ERR_VALUE
  naming its position), the output (``max(largest + 1, minlength)`` zeros) is allocated, and a
  second pass adds 1 (or the weight) at each value. ``minlength`` must not be negative, the
  weights must be as many as the values.
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.c_interface import MethodNotDefined
from ffigraph.tensor.ctype import c_element_type
from ffigraph.tensor.reduce_c import _Lines
from ffigraph.tensor.sort_c import c_message, close_lanes, less_macro, offset, open_lanes, sortable_type

VERSION = (1,)


def _numeric_type(op, dtype):
    d = np.dtype(dtype)
    if d.kind not in "biuf" or d.name == "float16":
        raise MethodNotDefined("%s: C code for bools, integers, float32 and float64, not %s" % (op, dtype))
    return c_element_type(d)


# ------------------------------------------------------------------ cumsum, cumprod


def _cum_code(op, node, x, z, sub):
    xtype, ztype = node.inputs[0].type, node.outputs[0].type
    xc, zc = _numeric_type(op, xtype.dtype), _numeric_type(op, ztype.dtype)
    nd, axis = xtype.ndim, op.axis
    sign, start = ("+", "0") if op.mode == "add" else ("*", "1")
    err, fail, allocator = sub["err"], sub["fail"], sub["allocator"]
    c = _Lines()
    c.add("/* %s: the running %s along axis %d, in %s as numpy */"
          % (op, "sum" if op.mode == "add" else "product", axis, ztype.dtype))
    c.open()
    c.add("int64_t k;")
    c.add("if (ffg_alloc_array(&%s, %d, %s.shape, sizeof(%s), %s, %s))" % (z, nd, x, zc, allocator, err))
    c.add("    " + fail)
    c.open("if (ffg_size(%d, %s.shape) > 0) {" % (nd, x))
    ivars, kept = open_lanes(c, x, nd, axis)
    c.add("const %s *xl = (const %s *)%s.data + %s;" % (xc, xc, x, offset(ivars, x, kept)))
    c.add("%s *zl = (%s *)%s.data + %s;" % (zc, zc, z, offset(ivars, z, kept)))
    c.add("%s acc = %s;" % (zc, start))
    c.open("for (k = 0; k < %s.shape[%d]; ++k) {" % (x, axis))
    c.add("acc = acc %s (%s)xl[k * %s.strides[%d]];" % (sign, zc, x, axis))
    c.add("zl[k * %s.strides[%d]] = acc;" % (z, axis))
    c.close()
    close_lanes(c, ivars)
    c.close()
    c.close()
    return c.text()


# ------------------------------------------------------------------ searchsorted


def _read_int(ctype, data, index, stride):
    return "(int64_t)((const %s *)%s.data)[%s * %s.strides[0]]" % (ctype, data, index, stride)


def _searchsorted_code(op, node, inputs, outputs, sub):
    x, v = inputs[:2]
    sorter = inputs[2] if len(inputs) == 3 else None
    (z,) = outputs
    xtype, vtype = node.inputs[0].type, node.inputs[1].type
    ctype = sortable_type(op, xtype.dtype)
    nd = vtype.ndim
    err, fail, allocator = sub["err"], sub["fail"], sub["allocator"]
    label = c_message(op)
    c = _Lines()
    c.add("/* %s: for each value of v (C order), its insertion point in the sorted x, side %s */" % (op, op.side))
    c.open()
    c.add("const int64_t n = %s.shape[0];" % x)
    c.add("const %s *xp = (const %s *)%s.data;" % (ctype, ctype, x))
    c.add("int64_t *zp, k = 0, lo, hi, mid;")
    if sorter is not None:
        stype = c_element_type(node.inputs[2].type.dtype)
        signed = np.dtype(node.inputs[2].type.dtype).kind == "i"
        c.add("/* the sorter: as many positions as x has elements, each one inside x */")
        c.open("if (%s.shape[0] != n) {" % sorter)
        c.add('ffg_set_error(%s, FFG_ERR_VALUE, -1, "%s: sorter has %%lld entries but x has %%lld elements", '
              "(long long)%s.shape[0], (long long)n);" % (err, label, sorter))
        c.add(fail)
        c.close()
        c.open("for (lo = 0; lo < n; ++lo) {")
        c.add("const %s s = ((const %s *)%s.data)[lo * %s.strides[0]];" % (stype, stype, sorter, sorter))
        bad = "s < 0 || (uint64_t)s >= (uint64_t)n" if signed else "(uint64_t)s >= (uint64_t)n"
        c.open("if (%s) {" % bad)
        c.add('ffg_set_error(%s, FFG_ERR_VALUE, -1, "%s: sorter index %s (entry %%lld) is out of range for x of '
              'length %%lld", %ss, (long long)lo, (long long)n);'
              % (err, label, "%lld" if signed else "%llu", "(long long)" if signed else "(unsigned long long)"))
        c.add(fail)
        c.close()
        c.close()
        at = "xp[%s * %s.strides[0]]" % (_read_int(stype, sorter, "mid", sorter), x)
    else:
        at = "xp[mid * %s.strides[0]]" % x
    c.add("if (ffg_alloc_array(&%s, %d, %s.shape, sizeof(int64_t), %s, %s))" % (z, nd, v, allocator, err))
    c.add("    " + fail)
    c.add("zp = (int64_t *)%s.data;" % z)
    c.add("#define FFG_LESS(a, b) %s" % less_macro(xtype.dtype))
    if nd:
        c.add("int64_t %s;" % ", ".join("j%d" % a for a in range(nd)))
    for a in range(nd):
        c.open("for (j%d = 0; j%d < %s.shape[%d]; ++j%d) {" % (a, a, v, a, a))
    if not nd:
        c.open()   # a 0-d v: one value, at offset 0
    c.add("const %s key = ((const %s *)%s.data)[%s];" % (ctype, ctype, v, offset(["j%d" % a for a in range(nd)],
                                                                            v, range(nd))))
    c.add("lo = 0;")
    c.add("hi = n;")
    if op.side == "left":
        c.add("/* the first position whose element is not before key */")
        test = "FFG_LESS(%s, key)" % at
    else:
        c.add("/* the first position whose element comes after key */")
        test = "!FFG_LESS(key, %s)" % at
    c.open("while (lo < hi) {")
    c.add("mid = lo + (hi - lo) / 2;")
    c.add("if (%s)" % test)
    c.add("    lo = mid + 1;")
    c.add("else")
    c.add("    hi = mid;")
    c.close()
    c.add("zp[k++] = lo;")
    for _ in range(max(nd, 1)):
        c.close()
    c.add("#undef FFG_LESS")
    c.close()
    return c.text()


# ------------------------------------------------------------------ bincount


def _bincount_code(op, node, inputs, outputs, sub):
    x, minlength = inputs[0], inputs[1]
    weights = inputs[2] if len(inputs) == 3 else None
    (z,) = outputs
    xdtype = np.dtype(node.inputs[0].type.dtype)
    xc = c_element_type(xdtype)
    zc = _numeric_type(op, node.outputs[0].type.dtype)
    err, fail, allocator = sub["err"], sub["fail"], sub["allocator"]
    label = c_message(op)
    signed = xdtype.kind == "i"
    c = _Lines()
    c.add("/* %s: how often each value 0, 1, ... occurs in x%s */" % (op, " (summing the weights)" if weights else ""))
    c.open()
    c.add("const int64_t n = %s.shape[0];" % x)
    c.add("const int64_t minlength = *(const int64_t *)%s.data;" % minlength)
    c.add("const %s *xp = (const %s *)%s.data;" % (xc, xc, x))
    c.add("int64_t i, bins = 0;")
    c.add("%s *zp;" % zc)
    c.open("if (minlength < 0) {")
    c.add('ffg_set_error(%s, FFG_ERR_VALUE, -1, "%s: minlength must not be negative, got %%lld", '
          "(long long)minlength);" % (err, label))
    c.add(fail)
    c.close()
    if weights is not None:
        c.open("if (%s.shape[0] != n) {" % weights)
        c.add('ffg_set_error(%s, FFG_ERR_VALUE, -1, "%s: %%lld weights for %%lld values (they must be as many)", '
              "(long long)%s.shape[0], (long long)n);" % (err, label, weights))
        c.add(fail)
        c.close()
    c.add("/* the number of bins: one past the largest value; a negative value is an error */")
    c.open("for (i = 0; i < n; ++i) {")
    c.add("const %s value = xp[i * %s.strides[0]];" % (xc, x))
    if signed:
        c.open("if (value < 0) {")
        c.add('ffg_set_error(%s, FFG_ERR_VALUE, -1, "%s: x must not hold negative values, found %%lld at position '
              '%%lld", (long long)value, (long long)i);' % (err, label))
        c.add(fail)
        c.close()
    if xdtype.itemsize == 8 and xdtype.kind == "u":
        c.open("if (value >= (uint64_t)INT64_MAX) {")
        c.add('ffg_set_error(%s, FFG_ERR_VALUE, -1, "%s: the value %%llu at position %%lld is too large to count", '
              "(unsigned long long)value, (long long)i);" % (err, label))
        c.add(fail)
        c.close()
    c.add("if ((int64_t)value >= bins)")
    c.add("    bins = (int64_t)value + 1;")
    c.close()
    c.add("if (bins < minlength)")
    c.add("    bins = minlength;")
    c.add("if (ffg_alloc_array(&%s, 1, &bins, sizeof(%s), %s, %s))" % (z, zc, allocator, err))
    c.add("    " + fail)
    c.add("zp = (%s *)%s.data;" % (zc, z))
    c.add("memset(zp, 0, (size_t)bins * sizeof(%s));" % zc)
    c.add("/* count (or sum the weights) */")
    if weights is not None:
        wc = c_element_type(node.inputs[2].type.dtype)
        c.add("for (i = 0; i < n; ++i)")
        c.add("    zp[(int64_t)xp[i * %s.strides[0]]] += (%s)((const %s *)%s.data)[i * %s.strides[0]];"
              % (x, zc, wc, weights, weights))
    else:
        c.add("for (i = 0; i < n; ++i)")
        c.add("    zp[(int64_t)xp[i * %s.strides[0]]] += 1;" % x)
    c.close()
    return c.text()


# ------------------------------------------------------------------ the DelegatedCOp interface


def c_code(op, node, name, inputs, outputs, sub):
    kind = op.c_kind
    if kind == "cum":
        return _cum_code(op, node, inputs[0], outputs[0], sub)
    if kind == "searchsorted":
        return _searchsorted_code(op, node, inputs, outputs, sub)
    if kind == "bincount":
        return _bincount_code(op, node, inputs, outputs, sub)
    raise MethodNotDefined("%s has no C code" % op)


def c_headers(op):
    return ["<math.h>", "<string.h>"]


def c_code_cache_version(op):
    return VERSION
