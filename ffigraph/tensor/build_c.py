"""Plain-C code of the ops that build fresh arrays: ``Alloc``, ``Join`` and ``ARange`` (see basic.py).

Both allocate a C-contiguous output through the host allocator and fill it
with one helper, ``ffg_strided_copy``: it copies an n-d block between any two
strided layouts (strides in elements, any sign, 0 for a broadcast source
axis). ``Alloc`` copies the value with stride 0 along the axes it is
broadcast over; ``Join`` copies each piece into its slab of the output.
The helper is also used by ``Reshape`` when it has to copy (shape_c.py).
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.c_interface import MethodNotDefined
from ffigraph.tensor.ctype import c_element_type

# Shared support code. Every op that uses it returns this exact text, so the
# code generator keeps one copy per library (and the guard makes sure of it).
STRIDED_COPY_C = r"""
#ifndef FFG_STRIDED_COPY_DEFINED
#define FFG_STRIDED_COPY_DEFINED
/* Copy n elements of itemsize bytes, dst stepping dstep and src sstep elements. */
static void ffg_copy_run(char *dst, int64_t dstep, const char *src, int64_t sstep, int64_t n,
                         size_t itemsize)
{
    int64_t i;
    if (dstep == 1 && sstep == 1) {
        memcpy(dst, src, (size_t)n * itemsize);
        return;
    }
    /* fixed-size memcpy compiles to one load and one store, whatever the alignment */
    switch (itemsize) {
    case 8:
        for (i = 0; i < n; ++i)
            memcpy(dst + i * dstep * 8, src + i * sstep * 8, 8);
        break;
    case 4:
        for (i = 0; i < n; ++i)
            memcpy(dst + i * dstep * 4, src + i * sstep * 4, 4);
        break;
    case 2:
        for (i = 0; i < n; ++i)
            memcpy(dst + i * dstep * 2, src + i * sstep * 2, 2);
        break;
    case 1:
        for (i = 0; i < n; ++i)
            dst[i * dstep] = src[i * sstep];
        break;
    default:
        for (i = 0; i < n; ++i)
            memcpy(dst + i * dstep * (int64_t)itemsize, src + i * sstep * (int64_t)itemsize, itemsize);
        break;
    }
}

/* Copy the block src (strides src_strides) into dst (strides dst_strides); both have the
 * given shape, strides are in elements. Axes of length 1 are skipped and an axis is merged
 * into the one before it when that is contiguous with it in both blocks, so a contiguous
 * copy is one memcpy and a broadcast fill is one long run. dst must not overlap src. */
static void ffg_strided_copy(char *dst, const int64_t *dst_strides, const char *src,
                             const int64_t *src_strides, const int64_t *shape, int ndim,
                             size_t itemsize)
{
    int64_t n[FFG_MAX_NDIM], ds[FFG_MAX_NDIM], ss[FFG_MAX_NDIM], idx[FFG_MAX_NDIM];
    int64_t doff = 0, soff = 0;   /* offsets of the current run, in elements */
    int nd = 0, d;

    for (d = 0; d < ndim; ++d) {
        if (shape[d] == 0)
            return;               /* an empty block: nothing to copy */
        if (shape[d] == 1)
            continue;             /* its stride never matters */
        if (nd > 0 && ds[nd - 1] == shape[d] * dst_strides[d] && ss[nd - 1] == shape[d] * src_strides[d]) {
            n[nd - 1] *= shape[d];   /* merge into the previous axis */
            ds[nd - 1] = dst_strides[d];
            ss[nd - 1] = src_strides[d];
            continue;
        }
        n[nd] = shape[d];
        ds[nd] = dst_strides[d];
        ss[nd] = src_strides[d];
        ++nd;
    }
    if (nd == 0) {
        memcpy(dst, src, itemsize);   /* a single element */
        return;
    }
    for (d = 0; d < nd - 1; ++d)
        idx[d] = 0;
    for (;;) {
        /* one run along the innermost remaining axis */
        ffg_copy_run(dst + doff * (int64_t)itemsize, ds[nd - 1], src + soff * (int64_t)itemsize,
                     ss[nd - 1], n[nd - 1], itemsize);
        /* step the outer axes like an odometer */
        for (d = nd - 2; d >= 0; --d) {
            doff += ds[d];
            soff += ss[d];
            if (++idx[d] < n[d])
                break;
            doff -= n[d] * ds[d];
            soff -= n[d] * ss[d];
            idx[d] = 0;
        }
        if (d < 0)
            break;
    }
}
#endif /* FFG_STRIDED_COPY_DEFINED */
"""

# Support code of Join only: its error message lists every input's shape.
SHAPE_LIST_C = r"""
#ifndef FFG_FORMAT_SHAPE_LIST_DEFINED
#define FFG_FORMAT_SHAPE_LIST_DEFINED
/* "[(2, 3), (2, 4)]": the shapes of n arrays, as Python prints a list of shape tuples. */
static void ffg_format_shape_list(char *buf, size_t size, int n, const ffg_array *const *arrays, int ndim)
{
    size_t used = 0;
    int k;
    used += (size_t)snprintf(buf, size, "[");
    for (k = 0; k < n && used < size; ++k) {
        if (k)
            used += (size_t)snprintf(buf + used, size - used, ", ");
        if (used < size) {
            ffg_format_shape(buf + used, size - used, ndim, arrays[k]->shape);
            used += strlen(buf + used);
        }
    }
    if (used < size)
        snprintf(buf + used, size - used, "]");
}
#endif /* FFG_FORMAT_SHAPE_LIST_DEFINED */
"""


def _check_dtypes(op, node):
    for v in node.inputs + node.outputs:
        if np.dtype(v.type.dtype).kind == "c":
            raise MethodNotDefined("%s: no C code for complex values yet" % op)


def c_support_code_apply(op, node, name):
    if type(op).__name__ == "Join":
        return STRIDED_COPY_C + SHAPE_LIST_C
    return STRIDED_COPY_C


def c_headers(op):
    return ["<math.h>"] if type(op).__name__ == "ARange" else []


def c_code_cache_version(op):
    return (1,)


def c_code(op, node, name, inputs, outputs, sub):
    _check_dtypes(op, node)
    kind = type(op).__name__
    if kind == "Alloc":
        return _alloc_code(op, node, inputs, outputs, sub)
    if kind == "Join":
        return _join_code(op, node, inputs, outputs, sub)
    if kind == "ARange":
        return _arange_code(op, node, inputs, outputs, sub)
    raise MethodNotDefined("ffigraph.tensor.build_c has no C code for %s" % op)


# ------------------------------------------------------------------ Alloc


def _alloc_code(op, node, inputs, outputs, sub):
    value, sizes = inputs[0], inputs[1:]
    (z,) = outputs
    nd = len(sizes)
    vnd = node.inputs[0].type.ndim
    ctype = c_element_type(node.outputs[0].type.dtype)
    lead = nd - vnd   # value axis j lines up with output axis lead + j
    d = dict(z=z, v=value, nd=nd, nd1=max(nd, 1), ctype=ctype, err=sub["err"], fail=sub["fail"],
             allocator=sub["allocator"], lead=lead, vnd=vnd)
    lines = ["/* Alloc: a fresh %(nd)d-d array filled with the %(vnd)d-d value %(v)s, "
             "broadcast numpy-style (aligned right) */" % d,
             "int64_t shape[%(nd1)d];        /* the requested sizes */" % d,
             "int64_t value_strides[%(nd1)d]; /* the value's strides over the output's axes (0: broadcast) */" % d,
             "int64_t nbytes = (int64_t)sizeof(%(ctype)s);" % d, "int d;"]
    for i, s in enumerate(sizes):
        lines.append("shape[%d] = *(const int64_t *)%s.data;" % (i, s))
    if nd:
        lines.append("""
/* every size must be >= 0, and the array must fit in memory (numpy's rule: the
   product of the nonzero sizes, in bytes, must not overflow) */
for (d = 0; d < %(nd)d; ++d) {
    if (shape[d] < 0) {
        char s[160];
        ffg_format_shape(s, sizeof s, %(nd)d, shape);
        ffg_set_error(%(err)s, FFG_ERR_VALUE, -1, "alloc: negative size in shape %%s", s);
        %(fail)s
    }
}
for (d = 0; d < %(nd)d; ++d) {
    if (shape[d] == 0)
        continue;
    if (nbytes > INT64_MAX / shape[d]) {
        char s[160];
        ffg_format_shape(s, sizeof s, %(nd)d, shape);
        ffg_set_error(%(err)s, FFG_ERR_VALUE, -1, "alloc: an array of shape %%s is too big", s);
        %(fail)s
    }
    nbytes *= shape[d];
}""" % d)
    lines.append("/* the value's axes must match the trailing sizes or have length 1 */")
    if lead:
        lines.append("for (d = 0; d < %(lead)d; ++d)\n    value_strides[d] = 0;" % d)
    if vnd:
        lines.append("""for (d = 0; d < %(vnd)d; ++d) {
    if (%(v)s.shape[d] == shape[%(lead)d + d]) {
        value_strides[%(lead)d + d] = %(v)s.strides[d];
    } else if (%(v)s.shape[d] == 1) {
        value_strides[%(lead)d + d] = 0;
    } else {
        char s0[160], s1[160];
        ffg_format_shape(s0, sizeof s0, %(vnd)d, %(v)s.shape);
        ffg_format_shape(s1, sizeof s1, %(nd)d, shape);
        ffg_set_error(%(err)s, FFG_ERR_VALUE, -1, "alloc: value of shape %%s cannot be broadcast to %%s", s0, s1);
        %(fail)s
    }
}""" % d)
    lines.append("""(void)d;
(void)nbytes;
/* allocate, then copy the value into every position */
if (ffg_alloc_array(&%(z)s, %(nd)d, shape, sizeof(%(ctype)s), %(allocator)s, %(err)s))
    %(fail)s
ffg_strided_copy(%(z)s.data, %(z)s.strides, %(v)s.data, value_strides, shape, %(nd)d, sizeof(%(ctype)s));""" % d)
    return "\n".join(lines)


# ------------------------------------------------------------------ Join


def _join_code(op, node, inputs, outputs, sub):
    (z,) = outputs
    axis = op.axis
    nd = node.outputs[0].type.ndim
    ctype = c_element_type(node.outputs[0].type.dtype)
    d = dict(z=z, nd=nd, axis=axis, n=len(inputs), ctype=ctype, err=sub["err"], fail=sub["fail"],
             allocator=sub["allocator"], pieces=", ".join("&%s" % i for i in inputs))
    d["what"] = "the joined axis adds up" if nd == 1 else "the other axes must agree; the joined axis adds up"
    d["check"] = "" if nd == 1 else """    for (d = 0; d < %(nd)d; ++d) {
        if (d != %(axis)d && pieces[k]->shape[d] != shape[d]) {
            char shapes[400];
            ffg_format_shape_list(shapes, sizeof shapes, %(n)d, pieces, %(nd)d);
            ffg_set_error(%(err)s, FFG_ERR_VALUE, -1,
                          "concatenate along axis %(axis)d: input shapes %%s do not match on the other axes", shapes);
            %(fail)s
        }
    }
""" % d
    return """/* Join: concatenate %(n)d pieces along axis %(axis)d into a fresh array */
const ffg_array *const pieces[%(n)d] = {%(pieces)s};
int64_t shape[%(nd)d];
int64_t offset = 0;   /* where the next piece starts along the axis */
int k, d;
/* %(what)s */
for (d = 0; d < %(nd)d; ++d)
    shape[d] = pieces[0]->shape[d];
shape[%(axis)d] = 0;
for (k = 0; k < %(n)d; ++k) {
%(check)s    if (pieces[k]->shape[%(axis)d] > INT64_MAX - shape[%(axis)d]) {
        ffg_set_error(%(err)s, FFG_ERR_VALUE, -1,
                      "concatenate along axis %(axis)d: the joined length overflows int64 (the array is too big)");
        %(fail)s
    }
    shape[%(axis)d] += pieces[k]->shape[%(axis)d];
}
if (ffg_alloc_array(&%(z)s, %(nd)d, shape, sizeof(%(ctype)s), %(allocator)s, %(err)s))
    %(fail)s
/* copy each piece into its slab of the output */
for (k = 0; k < %(n)d; ++k) {
    char *slab = %(z)s.data + offset * %(z)s.strides[%(axis)d] * (int64_t)sizeof(%(ctype)s);
    ffg_strided_copy(slab, %(z)s.strides, pieces[k]->data, pieces[k]->strides, pieces[k]->shape, %(nd)d,
                     sizeof(%(ctype)s));
    offset += pieces[k]->shape[%(axis)d];
}""" % d


# ------------------------------------------------------------------ ARange


def _arange_code(op, node, inputs, outputs, sub):
    start, stop, step = inputs
    (z,) = outputs
    dtype = np.dtype(op.dtype)
    ctype = c_element_type(dtype)
    d = dict(z=z, start=start, stop=stop, step=step, ctype=ctype, dtype=dtype.name, err=sub["err"],
             fail=sub["fail"], allocator=sub["allocator"], itemsize=dtype.itemsize)
    if dtype.kind == "f":
        # as numpy: the difference and the quotient in the dtype, then ceil
        d.update(qtype=ctype, span="stop - start", q="span / step", ceil="ceilf" if dtype.itemsize == 4 else "ceil",
                 add="start + step", sub="second - start", at="start + (%s)i * delta" % ctype)
    else:
        # integer sums wrap (in unsigned arithmetic); the quotient is in double, as numpy's
        u = ctype if dtype.kind == "u" else "u" + ctype
        d.update(qtype="double", span="(%s)((%s)stop - (%s)start)" % (ctype, u, u),
                 q="(double)span / (double)step", ceil="ceil",
                 add="(%s)((%s)start + (%s)step)" % (ctype, u, u), sub="(%s)((%s)second - (%s)start)" % (ctype, u, u),
                 at="(%s)((%s)start + (%s)i * (%s)delta)" % (ctype, u, u, u))
    return """/* ARange{%(dtype)s}: numpy's arange of the three scalars */
{
    const %(ctype)s start = *(const %(ctype)s *)%(start)s.data;
    const %(ctype)s stop = *(const %(ctype)s *)%(stop)s.data;
    const %(ctype)s step = *(const %(ctype)s *)%(step)s.data;
    int64_t n, i, shape[1];
    %(ctype)s span;
    %(qtype)s q;
    double c;
    if (step == 0) {
        ffg_set_error(%(err)s, FFG_ERR_VALUE, -1, "arange: step cannot be zero");
        %(fail)s
    }
    span = %(span)s;
    q = %(q)s;
    c = (double)%(ceil)s(q);
    if (q == 0 && span != 0) {
        n = signbit(q) ? 0 : 1;   /* the quotient underflowed: numpy's divide-by-inf rule */
    } else if (isnan(q)) {
        ffg_set_error(%(err)s, FFG_ERR_VALUE, -1,
                      "arange: cannot compute a length for start=%%g, stop=%%g, step=%%g (dtype %(dtype)s)",
                      (double)start, (double)stop, (double)step);
        %(fail)s
    } else if (!(c >= -9223372036854775808.0 && c <= (double)(INT64_MAX / %(itemsize)d))) {
        ffg_set_error(%(err)s, FFG_ERR_VALUE, -1,
                      "arange: the length for start=%%g, stop=%%g, step=%%g (dtype %(dtype)s) is too big",
                      (double)start, (double)stop, (double)step);
        %(fail)s
    } else {
        n = c > 0 ? (int64_t)c : 0;
    }
    shape[0] = n;
    if (ffg_alloc_array(&%(z)s, 1, shape, sizeof(%(ctype)s), %(allocator)s, %(err)s))
        %(fail)s
    {
        /* numpy's fill: start, start + step, then start + i * delta with delta = (start + step) - start */
        %(ctype)s *out = (%(ctype)s *)%(z)s.data;
        if (n > 0)
            out[0] = start;
        if (n > 1) {
            const %(ctype)s second = %(add)s;
            const %(ctype)s delta = %(sub)s;
            out[1] = second;
            for (i = 2; i < n; ++i)
                out[i] = %(at)s;
        }
    }
}""" % d
