"""Plain-C code of the layout ops of layout.py: ``SpecifyShape``, ``Unbroadcast``, ``Repeat`` and ``Split``.

``SpecifyShape`` is a view that only checks lengths. ``Repeat`` and ``Split`` allocate fresh
C-contiguous outputs and fill them with ``ffg_strided_copy`` (build_c.py): ``Repeat`` copies
each slab of ``x`` along the axis ``r`` times in one call (a source stride of 0 along the
axis), ``Split`` copies each piece of ``x`` into its own output.
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.c_interface import MethodNotDefined, c_string
from ffigraph.tensor.build_c import STRIDED_COPY_C
from ffigraph.tensor.ctype import c_element_type


def c_support_code_apply(op, node, name):
    return STRIDED_COPY_C


def c_code_cache_version(op):
    return (2,)


def c_code(op, node, name, inputs, outputs, sub):
    for v in node.inputs[:1] + node.outputs:
        if np.dtype(v.type.dtype).kind == "c":
            raise MethodNotDefined("%s: no C code for complex values yet" % op)
    kind = type(op).__name__
    if kind == "SpecifyShape":
        return _specify_shape_code(op, node, inputs, outputs, sub)
    if kind == "Unbroadcast":
        return _unbroadcast_code(op, node, inputs, outputs, sub)
    if kind == "Repeat":
        return _repeat_code(op, node, inputs, outputs, sub)
    if kind == "Split":
        return _split_code(op, node, inputs, outputs, sub)
    raise MethodNotDefined("ffigraph.tensor.layout_c has no C code for %s" % op)


def _read_int64(var, index="0"):
    """Element ``index`` of a 0-d or 1-d int64 ffg_array (strides in elements)."""
    return "(*(const int64_t *)(%s.data + (%s) * %s.strides[0] * (int64_t)sizeof(int64_t)))" % (var, index, var)


# ------------------------------------------------------------------ SpecifyShape


def _specify_shape_code(op, node, inputs, outputs, sub):
    x, sizes = inputs[0], inputs[1:]
    (z,) = outputs
    nd = node.inputs[0].type.ndim
    d = dict(x=x, z=z, nd=nd, nd1=max(nd, 1), err=sub["err"], fail=sub["fail"],
             what=c_string(op.input_label(node)))
    lines = ["/* SpecifyShape: %(x)s must have the given lengths (the others are free); the output is x */" % d,
             "int64_t want[%(nd1)d];   /* the lengths asked for, -1 where unchecked */" % d,
             "int bad = 0, d;",
             "for (d = 0; d < %(nd1)d; ++d)\n    want[d] = -1;" % d]
    for axis, s in zip(op.checked, sizes):
        lines.append("want[%d] = *(const int64_t *)%s.data;" % (axis, s))
        lines.append("if (%s.shape[%d] != want[%d])\n    bad = 1;" % (x, axis, axis))
    lines.append("""if (bad) {
    char got[160], expected[240];
    size_t used = 0;
    ffg_format_shape(got, sizeof got, %(nd)d, %(x)s.shape);
    /* the expected shape as Python prints it, None where any length goes */
    used += (size_t)snprintf(expected, sizeof expected, "(");
    for (d = 0; d < %(nd)d && used < sizeof expected; ++d) {
        if (want[d] < 0)
            used += (size_t)snprintf(expected + used, sizeof expected - used, "%%sNone", d ? ", " : "");
        else
            used += (size_t)snprintf(expected + used, sizeof expected - used, "%%s%%lld", d ? ", " : "",
                                     (long long)want[d]);
    }
    if (used < sizeof expected)
        snprintf(expected + used, sizeof expected - used, %(close)s);
    ffg_set_error(%(err)s, FFG_ERR_VALUE, -1, "specify_shape: %%s has shape %%s, expected %%s", %(what)s, got,
                  expected);
    %(fail)s
}
(void)want;
%(z)s.data = %(x)s.data;
%(z)s.owned = NULL;""" % dict(d, close='"%s"' % (",)" if nd == 1 else ")")))
    for a in range(nd):
        lines.append("%s.shape[%d] = %s.shape[%d]; %s.strides[%d] = %s.strides[%d];" % (z, a, x, a, z, a, x, a))
    return "\n".join(lines)


# ------------------------------------------------------------------ Unbroadcast


def _unbroadcast_code(op, node, inputs, outputs, sub):
    (x,), (z,) = inputs, outputs
    lines = ["/* Unbroadcast: the output is %s, its length-1 axes %s no longer broadcast */" % (x, list(op.axes)),
             "%s.data = %s.data;" % (z, x),
             "%s.owned = NULL;" % z]
    for a in range(node.inputs[0].type.ndim):
        lines.append("%s.shape[%d] = %s.shape[%d]; %s.strides[%d] = %s.strides[%d];" % (z, a, x, a, z, a, x, a))
    return "\n".join(lines)


# ------------------------------------------------------------------ Repeat


def _repeat_code(op, node, inputs, outputs, sub):
    x, reps = inputs
    (z,) = outputs
    nd = node.inputs[0].type.ndim
    vector = node.inputs[1].type.ndim == 1
    d = dict(x=x, r=reps, z=z, nd=nd, axis=op.axis, ctype=c_element_type(node.outputs[0].type.dtype),
             err=sub["err"], fail=sub["fail"], allocator=sub["allocator"],
             nrep="%s.shape[0]" % reps if vector else "1",
             count=_read_int64(reps, "nrep == 1 ? 0 : i") if vector else "*(const int64_t *)%s.data" % reps)
    return """/* Repeat along axis %(axis)d: each slab of %(x)s along the axis copied count times in a row */
{
    const int64_t n = %(x)s.shape[%(axis)d];
    const int64_t nrep = %(nrep)s;   /* 1: one count for every slab */
    int64_t shape[%(nd)d], src_strides[%(nd)d], total = 0, offset = 0, i;
    int d;
    if (nrep != 1 && nrep != n) {
        ffg_set_error(%(err)s, FFG_ERR_VALUE, -1, "repeat: got %%lld repeat counts for an axis of length %%lld "
                      "(give one count, or one per element)", (long long)nrep, (long long)n);
        %(fail)s
    }
    for (i = 0; i < n || (n == 0 && i < nrep); ++i) {
        const int64_t count = %(count)s;
        if (count < 0) {
            ffg_set_error(%(err)s, FFG_ERR_VALUE, -1, "repeat: negative repeat count %%lld", (long long)count);
            %(fail)s
        }
        if (i >= n)
            break;   /* (an empty axis: its single count is only checked) */
        if (count > INT64_MAX - total) {
            ffg_set_error(%(err)s, FFG_ERR_VALUE, -1, "repeat: the repeated length overflows int64");
            %(fail)s
        }
        total += count;
    }
    for (d = 0; d < %(nd)d; ++d) {
        shape[d] = %(x)s.shape[d];
        src_strides[d] = %(x)s.strides[d];
    }
    shape[%(axis)d] = total;
    if (ffg_alloc_array(&%(z)s, %(nd)d, shape, sizeof(%(ctype)s), %(allocator)s, %(err)s))
        %(fail)s
    src_strides[%(axis)d] = 0;   /* the same slab again along the axis */
    for (i = 0; i < n; ++i) {
        const int64_t count = %(count)s;
        shape[%(axis)d] = count;
        ffg_strided_copy(%(z)s.data + offset * %(z)s.strides[%(axis)d] * (int64_t)sizeof(%(ctype)s), %(z)s.strides,
                         %(x)s.data + i * %(x)s.strides[%(axis)d] * (int64_t)sizeof(%(ctype)s), src_strides, shape,
                         %(nd)d, sizeof(%(ctype)s));
        offset += count;
    }
}""" % d


# ------------------------------------------------------------------ Split


def _split_code(op, node, inputs, outputs, sub):
    x, splits = inputs
    nd = node.inputs[0].type.ndim
    d = dict(x=x, s=splits, nd=nd, axis=op.axis, n=op.len_splits, ctype=c_element_type(node.inputs[0].type.dtype),
             err=sub["err"], fail=sub["fail"], allocator=sub["allocator"], first=_read_int64(splits, "k"))
    lines = ["""/* Split: %(x)s cut along axis %(axis)d into %(n)d pieces of the lengths in %(s)s (fresh copies) */
int64_t sizes[%(n)d], shape[%(nd)d], total = 0, offset = 0;
int k, d;
if (%(s)s.shape[0] != %(n)d) {
    ffg_set_error(%(err)s, FFG_ERR_VALUE, -1, "split: got %%lld split sizes, expected %(n)d",
                  (long long)%(s)s.shape[0]);
    %(fail)s
}
for (k = 0; k < %(n)d; ++k) {
    sizes[k] = %(first)s;
    if (sizes[k] < 0) {
        ffg_set_error(%(err)s, FFG_ERR_VALUE, -1, "split: negative split size %%lld", (long long)sizes[k]);
        %(fail)s
    }
    total = sizes[k] > INT64_MAX - total ? INT64_MAX : total + sizes[k];
}
if (total != %(x)s.shape[%(axis)d]) {
    ffg_set_error(%(err)s, FFG_ERR_VALUE, -1, "split: the split sizes add up to %%lld, but axis %(axis)d of the "
                  "input has length %%lld", (long long)total, (long long)%(x)s.shape[%(axis)d]);
    %(fail)s
}
for (d = 0; d < %(nd)d; ++d)
    shape[d] = %(x)s.shape[d];""" % d]
    for k, z in enumerate(outputs):
        lines.append("""/* piece %(k)d */
shape[%(axis)d] = sizes[%(k)d];
if (ffg_alloc_array(&%(z)s, %(nd)d, shape, sizeof(%(ctype)s), %(allocator)s, %(err)s))
    %(fail)s
ffg_strided_copy(%(z)s.data, %(z)s.strides, %(x)s.data + offset * %(x)s.strides[%(axis)d] * (int64_t)sizeof(%(ctype)s),
                 %(x)s.strides, shape, %(nd)d, sizeof(%(ctype)s));
offset += sizes[%(k)d];""" % dict(d, k=k, z=z))
    lines.append("(void)offset;")
    return "\n".join(lines)
