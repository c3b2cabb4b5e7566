"""Plain-C code of ``SumToShape`` (see sum_to_shape.py).

The target shape is read from the int64 vector input and checked against ``g``'s
(each length equal to ``g``'s or 1). When no axis is summed the output is a view of
``g``. Otherwise a fresh C-contiguous output of the target shape is zero-filled and
``g`` is walked in C order (a loop along its last axis inside an odometer on the
others), each element added into its output slot: the output's stride is 0 along
the summed axes. Sums are in ``g``'s dtype; integer sums wrap (unsigned arithmetic).
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.c_interface import MethodNotDefined
from ffigraph.tensor.ctype import c_element_type


def c_code_cache_version(op):
    return (1,)


def c_code(op, node, name, inputs, outputs, sub):
    g, shp = inputs
    (z,) = outputs
    dtype = node.inputs[0].type.dtype
    kind = np.dtype(dtype).kind
    if kind not in "iuf":
        raise MethodNotDefined("%s: no C code for %s values" % (op, dtype))
    ctype = c_element_type(dtype)
    nd = node.inputs[0].type.ndim
    if kind == "i":
        update = "zp[i * zs] = (%s)((u%s)zp[i * zs] + (u%s)gp[i * gs]);" % (ctype, ctype, ctype)
    else:
        update = "zp[i * zs] += gp[i * gs];"
    d = dict(g=g, shp=shp, z=z, nd=nd, nd1=max(nd, 1), ctype=ctype, update=update, err=sub["err"],
             fail=sub["fail"], allocator=sub["allocator"], label=str(op))
    d["sum_part"] = _SUM_PART % d if nd else ""  # a 0-d g is never summed
    return """/* %(label)s: sum %(g)s down to the shape in %(shp)s */
{
    int64_t target[%(nd1)d];
    int64_t z_strides[%(nd1)d];   /* the output's strides over g's axes (0 where summed) */
    int summed = 0, k;
    if (%(shp)s.shape[0] != %(nd)d) {
        char sg[160];
        ffg_format_shape(sg, sizeof sg, %(nd)d, %(g)s.shape);
        ffg_set_error(%(err)s, FFG_ERR_VALUE, -1, "%(label)s: the target shape has %%lld entries but g of shape "
                      "%%s has %(nd)d dimensions", (long long)%(shp)s.shape[0], sg);
        %(fail)s
    }
    for (k = 0; k < %(nd)d; ++k)
        target[k] = *(const int64_t *)(%(shp)s.data + k * %(shp)s.strides[0] * (int64_t)sizeof(int64_t));
    for (k = 0; k < %(nd)d; ++k) {
        if (target[k] != %(g)s.shape[k] && target[k] != 1) {
            char sg[160], st[160];
            ffg_format_shape(sg, sizeof sg, %(nd)d, %(g)s.shape);
            ffg_format_shape(st, sizeof st, %(nd)d, target);
            ffg_set_error(%(err)s, FFG_ERR_VALUE, -1, "%(label)s: cannot sum g of shape %%s to shape %%s "
                          "(each target length must equal g's or be 1)", sg, st);
            %(fail)s
        }
        if (target[k] != %(g)s.shape[k])
            summed = 1;
    }
    if (!summed) {
        /* nothing to sum: the output is g itself */
        %(z)s.data = %(g)s.data;
        %(z)s.owned = NULL;
        for (k = 0; k < %(nd)d; ++k) {
            %(z)s.shape[k] = %(g)s.shape[k];
            %(z)s.strides[k] = %(g)s.strides[k];
        }
    }%(sum_part)s
}""" % d


_SUM_PART = """ else {
        if (ffg_alloc_array(&%(z)s, %(nd)d, target, sizeof(%(ctype)s), %(allocator)s, %(err)s))
            %(fail)s
        memset(%(z)s.data, 0, (size_t)ffg_size(%(nd)d, target) * sizeof(%(ctype)s));
        for (k = 0; k < %(nd)d; ++k)
            z_strides[k] = target[k] == %(g)s.shape[k] ? %(z)s.strides[k] : 0;
        if (ffg_size(%(nd)d, %(g)s.shape) > 0) {
            /* walk g in C order, adding each element into its output slot */
            int64_t idx[%(nd1)d];
            int64_t goff = 0, zoff = 0, i;   /* in elements, from %(g)s.data and %(z)s.data */
            const int64_t n = %(g)s.shape[%(nd)d - 1];
            const int64_t gs = %(g)s.strides[%(nd)d - 1], zs = z_strides[%(nd)d - 1];
            for (k = 0; k < %(nd)d; ++k)
                idx[k] = 0;
            for (;;) {
                %(ctype)s *zp = (%(ctype)s *)%(z)s.data + zoff;
                const %(ctype)s *gp = (const %(ctype)s *)%(g)s.data + goff;
                for (i = 0; i < n; ++i)
                    %(update)s
                for (k = %(nd)d - 2; k >= 0; --k) {
                    goff += %(g)s.strides[k];
                    zoff += z_strides[k];
                    if (++idx[k] < %(g)s.shape[k])
                        break;
                    goff -= %(g)s.shape[k] * %(g)s.strides[k];
                    zoff -= %(g)s.shape[k] * z_strides[k];
                    idx[k] = 0;
                }
                if (k < 0)
                    break;
            }
        }
    }"""
