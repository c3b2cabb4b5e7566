"""Plain-C code of ``Subtensor`` (basic indexing, see subtensor.py): always a view.

An integer index drops its axis (negative counts from the end, out of range
is an IndexError); a slice keeps it with Python's clamping rules
(``PySlice_Unpack`` + ``PySlice_AdjustIndices``), negative steps included.
Axes after the indexed ones are kept as they are.
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.c_interface import MethodNotDefined
from ffigraph.tensor.ctype import c_element_type

SYMBOLIC = "?"
INT64_MAX = 2**63 - 1
INT64_MIN = -2**63

SLICE_C = r"""
#ifndef FFG_SLICE_DEFINED
#define FFG_SLICE_DEFINED
/* Python's slice rules for an axis of the given length: start and stop, already defaulted
 * for the step's sign, are clamped into range; returns the number of elements. */
static int64_t ffg_slice_adjust(int64_t length, int64_t *start, int64_t *stop, int64_t step)
{
    if (*start < 0) {
        *start += length;
        if (*start < 0)
            *start = step < 0 ? -1 : 0;
    } else if (*start >= length) {
        *start = step < 0 ? length - 1 : length;
    }
    if (*stop < 0) {
        *stop += length;
        if (*stop < 0)
            *stop = step < 0 ? -1 : 0;
    } else if (*stop >= length) {
        *stop = step < 0 ? length - 1 : length;
    }
    if (step < 0) {
        if (*stop < *start)
            return (*start - *stop - 1) / (-step) + 1;
    } else if (*start < *stop) {
        return (*stop - *start - 1) / step + 1;
    }
    return 0;
}
#endif /* FFG_SLICE_DEFINED */
"""


def _c_message(text):
    """Text safe inside a C string literal used as a printf format."""
    return str(text).replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%").replace("?", "\\?")


def _c_int(value):
    """A C int64 literal, with Python ints out of range clamped as Python clamps slice bounds."""
    v = max(min(int(value), INT64_MAX), INT64_MIN)
    return "INT64_MIN" if v == INT64_MIN else "%dLL" % v


def c_support_code_apply(op, node, name):
    return SLICE_C


def c_code_cache_version(op):
    return (1,)


def c_code(op, node, name, inputs, outputs, sub):
    x, scalars = inputs[0], list(inputs[1:])
    (z,) = outputs
    xtype = node.inputs[0].type
    if np.dtype(xtype.dtype).kind == "c":
        raise MethodNotDefined("%s: no C code for complex values yet" % op)
    ctype = c_element_type(xtype.dtype)
    label = _c_message(op)
    err, fail = sub["err"], sub["fail"]
    it = iter(scalars)

    def part(p, default=None):
        if p == SYMBOLIC:
            return "*(const int64_t *)%s.data" % next(it)
        return default if p is None else _c_int(p)

    # First read every index part in order, and reject a zero step before anything else
    # (as perform does), then walk the axes.
    decl = ["/* %s: a view of %s */" % (str(op).replace("*/", "* /"), x),
            "int64_t offset = 0;   /* of the view's first element, in elements from %s.data */" % x]
    reads, checks, body = [], [], []
    out_axis = 0
    for axis, entry in enumerate(op.idx_list):
        if entry[0] == "int":
            v = "i%d" % axis
            reads.append("const int64_t %s = %s;   /* index on axis %d */" % (v, part(entry[1]), axis))
            body.append("""/* axis %(a)d: an integer index, the axis goes away */
{
    const int64_t n = %(x)s.shape[%(a)d];
    if (%(v)s < -n || %(v)s >= n) {
        char s[160];
        ffg_format_shape(s, sizeof s, %(xnd)d, %(x)s.shape);
        ffg_set_error(%(err)s, FFG_ERR_INDEX, -1,
                      "%(label)s: index %%lld is out of bounds for axis %(a)d with size %%lld (input shape %%s)",
                      (long long)%(v)s, (long long)n, s);
        %(fail)s
    }
    offset += (%(v)s < 0 ? %(v)s + n : %(v)s) * %(x)s.strides[%(a)d];
}""" % dict(a=axis, x=x, v=v, xnd=xtype.ndim, err=err, fail=fail, label=label))
        else:
            start, stop, step = entry[1:]
            st = "step%d" % axis
            # symbolic parts come from the inputs in the order start, stop, step
            start_c, stop_c, step_c = part(start), part(stop), part(step, "1")
            reads.append("int64_t start%d, stop%d, %s;   /* slice on axis %d */" % (axis, axis, st, axis))
            reads.append("%s = %s;" % (st, step_c))
            # absent bounds: the far ends for the step's direction (Python's defaults)
            if step == SYMBOLIC:
                start_d, stop_d = "%s < 0 ? INT64_MAX : 0" % st, "%s < 0 ? INT64_MIN : INT64_MAX" % st
            elif step is not None and step < 0:
                start_d, stop_d = "INT64_MAX", "INT64_MIN"
            else:
                start_d, stop_d = "0", "INT64_MAX"
            reads.append("start%d = %s;" % (axis, start_d if start_c is None else start_c))
            reads.append("stop%d = %s;" % (axis, stop_d if stop_c is None else stop_c))
            if step == SYMBOLIC or step == 0:
                checks.append("""if (%(st)s == 0) {
    ffg_set_error(%(err)s, FFG_ERR_VALUE, -1, "%(label)s: slice step cannot be zero");
    %(fail)s
}""" % dict(st=st, err=err, fail=fail, label=label))
            if step == SYMBOLIC:
                checks.append("if (%s == INT64_MIN)\n    %s = -INT64_MAX;   /* as Python clamps it */" % (st, st))
            body.append("""/* axis %(a)d: a slice, the axis stays (output axis %(o)d) */
{
    const int64_t len = ffg_slice_adjust(%(x)s.shape[%(a)d], &start%(a)d, &stop%(a)d, %(st)s);
    %(z)s.shape[%(o)d] = len;
    /* (with at most one element the stride is never used: keep it free of overflow) */
    %(z)s.strides[%(o)d] = len > 1 ? %(x)s.strides[%(a)d] * %(st)s : %(x)s.strides[%(a)d];
    if (len > 0)
        offset += start%(a)d * %(x)s.strides[%(a)d];
}""" % dict(a=axis, o=out_axis, x=x, z=z, st=st))
            out_axis += 1
    rest = range(len(op.idx_list), xtype.ndim)
    if rest:
        body.append("/* the remaining axes, as they are */")
        for axis in rest:
            body.append("%s.shape[%d] = %s.shape[%d]; %s.strides[%d] = %s.strides[%d];"
                        % (z, out_axis, x, axis, z, out_axis, x, axis))
            out_axis += 1
    body.append("%s.data = %s.data + offset * (int64_t)sizeof(%s);\n%s.owned = NULL;" % (z, x, ctype, z))
    return "\n".join(decl + reads + checks + body)
