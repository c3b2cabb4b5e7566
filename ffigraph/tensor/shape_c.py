"""Plain-C code of ``Reshape`` (see shapes.py).

The target shape is read from the int64 shape vector, a -1 is resolved from
the size, and the result is a view of ``x`` whenever numpy would make one:
``x`` C-contiguous (or empty), or its strides allow the axes to be merged
and split without moving data (numpy's ``_attempt_nocopy_reshape``, C
order). Otherwise ``x`` is copied into a fresh C-contiguous block.
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.c_interface import MethodNotDefined
from ffigraph.tensor.build_c import STRIDED_COPY_C
from ffigraph.tensor.ctype import c_element_type

RESHAPE_C = r"""
#ifndef FFG_RESHAPE_DEFINED
#define FFG_RESHAPE_DEFINED
/* Check the target shape (at most one -1, no other negatives) and resolve its -1 from the
 * size of x, with numpy's rules; 0 on success, else -1 with the error set. */
static int ffg_reshape_resolve(int64_t *shape, int nd, const int64_t *xshape, int xnd, FfgError *err)
{
    int64_t size = ffg_size(xnd, xshape), known = 1;
    int unknown = -1, overflow = 0, d;
    for (d = 0; d < nd; ++d) {
        if (shape[d] == -1 && unknown < 0) {
            unknown = d;
        } else if (shape[d] < 0) {
            char s[160];
            ffg_format_shape(s, sizeof s, nd, shape);
            ffg_set_error(err, FFG_ERR_VALUE, -1,
                          "reshape: invalid target shape %s (at most one -1, no other negatives)", s);
            return -1;
        } else if (shape[d] != 0 && known > INT64_MAX / shape[d]) {
            overflow = 1;
        } else {
            known *= shape[d];
        }
    }
    if (overflow || (unknown >= 0 ? known == 0 || size % known != 0 : known != size)) {
        char s0[160], s1[160];
        ffg_format_shape(s0, sizeof s0, xnd, xshape);
        ffg_format_shape(s1, sizeof s1, nd, shape);
        ffg_set_error(err, FFG_ERR_VALUE, -1, "reshape: cannot reshape an array of shape %s (size %lld) into %s",
                      s0, (long long)size, s1);
        return -1;
    }
    if (unknown >= 0)
        shape[unknown] = size / known;
    return 0;
}

/* The strides (in elements) of x seen with the new shape without moving any data, as numpy
 * does it for C order: 1 on success, 0 when a copy is needed. The sizes must agree. */
static int ffg_reshape_view_strides(const int64_t *xshape, const int64_t *xstrides, int xnd,
                                    const int64_t *shape, int nd, int64_t *strides)
{
    int64_t olddims[FFG_MAX_NDIM], oldstrides[FFG_MAX_NDIM], stride = 1, last_stride;
    int oldnd = 0, oi, oj, ni, nj, ok, nk, d, contiguous = 1;

    /* an empty or C-contiguous x: plain C-contiguous strides */
    for (d = xnd - 1; d >= 0; --d) {
        if (xshape[d] == 0)
            break;
        if (xshape[d] != 1 && xstrides[d] != stride)
            contiguous = 0;
        stride *= xshape[d];
    }
    if (d >= 0 || contiguous) {
        stride = 1;
        for (d = nd - 1; d >= 0; --d) {
            strides[d] = stride;
            stride *= shape[d] > 0 ? shape[d] : 1;
        }
        return 1;
    }

    /* axes of length 1 never matter: leave them out */
    for (d = 0; d < xnd; ++d) {
        if (xshape[d] != 1) {
            olddims[oldnd] = xshape[d];
            oldstrides[oldnd] = xstrides[d];
            ++oldnd;
        }
    }
    /* match runs of old axes [oi, oj) with runs of new axes [ni, nj) of the same size */
    oi = 0; oj = 1; ni = 0; nj = 1;
    while (ni < nd && oi < oldnd) {
        int64_t np_ = shape[ni], op_ = olddims[oi];
        while (np_ != op_) {
            if (np_ < op_)
                np_ *= shape[nj++];
            else
                op_ *= olddims[oj++];
        }
        /* the old axes of the run must be contiguous with each other */
        for (ok = oi; ok < oj - 1; ++ok) {
            if (oldstrides[ok] != olddims[ok + 1] * oldstrides[ok + 1])
                return 0;
        }
        /* then the new axes of the run split them */
        strides[nj - 1] = oldstrides[oj - 1];
        for (nk = nj - 1; nk > ni; --nk)
            strides[nk - 1] = strides[nk] * shape[nk];
        ni = nj++;
        oi = oj++;
    }
    /* trailing new axes (all of length 1) */
    last_stride = ni >= 1 ? strides[ni - 1] : 1;
    for (nk = ni; nk < nd; ++nk)
        strides[nk] = last_stride;
    return 1;
}
#endif /* FFG_RESHAPE_DEFINED */
"""


def c_support_code_apply(op, node, name):
    return STRIDED_COPY_C + RESHAPE_C


def c_code_cache_version(op):
    return (1,)


def c_code(op, node, name, inputs, outputs, sub):
    x, shp = inputs
    (z,) = outputs
    xtype = node.inputs[0].type
    if np.dtype(xtype.dtype).kind == "c":
        raise MethodNotDefined("%s: no C code for complex values yet" % op)
    nd, xnd = op.ndim, xtype.ndim
    d = dict(xlast=xnd - 1, x=x, shp=shp, z=z, nd=nd, nd1=max(nd, 1), xnd=xnd, xnd1=max(xnd, 1),
             ctype=c_element_type(xtype.dtype), err=sub["err"], fail=sub["fail"], allocator=sub["allocator"])
    return """/* Reshape: %(x)s (%(xnd)d-d) to the %(nd)d sizes in %(shp)s, as a view when the strides allow */
int64_t shape[%(nd1)d];      /* the target shape, its -1 resolved */
int64_t strides[%(nd1)d];    /* the view's strides, when there is a view */
int d;
if (%(shp)s.shape[0] != %(nd)d) {
    ffg_set_error(%(err)s, FFG_ERR_VALUE, -1, "reshape: got a shape with %%lld entries, expected %(nd)d",
                  (long long)%(shp)s.shape[0]);
    %(fail)s
}
for (d = 0; d < %(nd)d; ++d)
    shape[d] = *(const int64_t *)(%(shp)s.data + d * %(shp)s.strides[0] * (int64_t)sizeof(int64_t));
if (ffg_reshape_resolve(shape, %(nd)d, %(x)s.shape, %(xnd)d, %(err)s))
    %(fail)s
if (ffg_reshape_view_strides(%(x)s.shape, %(x)s.strides, %(xnd)d, shape, %(nd)d, strides)) {
    /* a view: the same data, new shape and strides */
    %(z)s.data = %(x)s.data;
    %(z)s.owned = NULL;
    for (d = 0; d < %(nd)d; ++d) {
        %(z)s.shape[d] = shape[d];
        %(z)s.strides[d] = strides[d];
    }
} else {
    /* a copy: x's elements in C order into a fresh block of the new shape */
    int64_t xcontig[%(xnd1)d], stride = 1;
    for (d = %(xlast)d; d >= 0; --d) {
        xcontig[d] = stride;
        stride *= %(x)s.shape[d];
    }
    if (ffg_alloc_array(&%(z)s, %(nd)d, shape, sizeof(%(ctype)s), %(allocator)s, %(err)s))
        %(fail)s
    ffg_strided_copy(%(z)s.data, xcontig, %(x)s.data, %(x)s.strides, %(x)s.shape, %(xnd)d, sizeof(%(ctype)s));
}""" % d
