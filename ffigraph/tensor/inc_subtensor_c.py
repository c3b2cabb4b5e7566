"""Plain-C code of ``IncSubtensor`` (``inc_subtensor``/``set_subtensor``, see subtensor.py).

The output is a fresh C-contiguous copy of ``x`` (through the host allocator, as
``Alloc`` does, filled with ``ffg_strided_copy``). The indexed region is then found
inside the output by ``Subtensor``'s own C (subtensor_c.py: the same index
semantics, clamping, negative steps and bounds errors), ``y``'s strides are lined up
with the region's axes (aligned right, 0 along the axes it is broadcast over), and
``y`` is copied into the region (set) or added to it element by element (inc: integer
sums wrap, done in unsigned arithmetic; bool sums are logical or, as numpy's).
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.c_interface import MethodNotDefined
from ffigraph.tensor import subtensor_c
from ffigraph.tensor.build_c import STRIDED_COPY_C
from ffigraph.tensor.ctype import c_element_type


def c_support_code_apply(op, node, name):
    return subtensor_c.SLICE_C + STRIDED_COPY_C


def c_code_cache_version(op):
    return (1,)


def _update(dtype, ctype, dst, src):
    """C statement doing ``dst += src`` in ``dtype``."""
    kind = np.dtype(dtype).kind
    if kind == "b":
        return "%s = (uint8_t)(%s | %s);" % (dst, dst, src)
    if kind == "i":
        return "%s = (%s)((u%s)%s + (u%s)%s);" % (dst, ctype, ctype, dst, ctype, src)
    return "%s = %s + %s;" % (dst, dst, src)


def _y_strides_code(d, steps, rshape):
    """C (in a block declaring ``int k``) that sets ``steps[lead + k]`` to y's stride along each of
    its axes ``k`` (y lines up with the last axes of the region, of shape ``rshape``), 0 where y has
    length 1, and fails with FFG_ERR_VALUE naming the shapes where y has another length than the
    region's. ``d``: the names y, x, err, fail, label and the numbers ynd, rnd, nd, lead."""
    return """    for (k = 0; k < %(ynd)d; ++k) {
        if (%(y)s.shape[k] == %(rshape)s[%(lead)d + k]) {
            %(steps)s[%(lead)d + k] = %(y)s.strides[k];
        } else if (%(y)s.shape[k] == 1) {
            %(steps)s[%(lead)d + k] = 0;
        } else {
            char sy[160], sr[160], sx[160];
            ffg_format_shape(sy, sizeof sy, %(ynd)d, %(y)s.shape);
            ffg_format_shape(sr, sizeof sr, %(rnd)d, %(rshape)s);
            ffg_format_shape(sx, sizeof sx, %(nd)d, %(x)s.shape);
            ffg_set_error(%(err)s, FFG_ERR_VALUE, -1,
                          "%(label)s: y of shape %%s cannot be broadcast to the indexed region's shape %%s "
                          "(x has shape %%s)", sy, sr, sx);
            %(fail)s
        }
    }""" % dict(d, steps=steps, rshape=rshape)


def c_code(op, node, name, inputs, outputs, sub):
    x, y, scalars = inputs[0], inputs[1], list(inputs[2:])
    (z,) = outputs
    dtype = node.inputs[0].type.dtype
    if np.dtype(dtype).kind == "c":
        raise MethodNotDefined("%s: no C code for complex values yet" % op)
    ctype = c_element_type(dtype)
    nd = node.inputs[0].type.ndim
    ynd = node.inputs[1].type.ndim
    # the region's ndim: one axis per slice entry, plus the axes after the indexed ones
    rnd = sum(1 for e in op.idx_list if e[0] == "slice") + nd - len(op.idx_list)
    d = dict(x=x, y=y, z=z, nd=nd, ynd=ynd, rnd=rnd, rnd1=max(rnd, 1), lead=rnd - ynd, ctype=ctype,
             err=sub["err"], fail=sub["fail"], allocator=sub["allocator"], label=subtensor_c._c_message(op),
             what="set y into" if op.set_instead_of_inc else "add y to")
    # Subtensor's C, run on the output, gives the region as a view ("region")
    region = subtensor_c.c_code(op, node, name, [z] + scalars, ["region"], sub)
    d["region"] = "\n    ".join(region.splitlines())
    d["update"] = _update(dtype, ctype, "r[i * rs]", "v[i * ys]")
    code = ["""/* %(label)s: a fresh copy of %(x)s, then %(what)s the indexed region */
if (ffg_alloc_array(&%(z)s, %(nd)d, %(x)s.shape, sizeof(%(ctype)s), %(allocator)s, %(err)s))
    %(fail)s
ffg_strided_copy(%(z)s.data, %(z)s.strides, %(x)s.data, %(x)s.strides, %(x)s.shape, %(nd)d, sizeof(%(ctype)s));
{
    ffg_array region;              /* the indexed part of the output, a view */
    int64_t y_strides[%(rnd1)d];   /* y's strides over the region's axes (0: broadcast) */
    int k;
    {
    %(region)s
    }
    /* y lines up with the region's last axes; each of its lengths must match or be 1 */
    for (k = 0; k < %(lead)d; ++k)
        y_strides[k] = 0;""" % d]
    if ynd:
        code.append(_y_strides_code(d, "y_strides", "region.shape"))
    if op.set_instead_of_inc:
        code.append("""    ffg_strided_copy(region.data, region.strides, %(y)s.data, y_strides, region.shape, %(rnd)d,
                     sizeof(%(ctype)s));
    (void)k;
}""" % d)
    else:
        code.append("""    if (ffg_size(%(rnd)d, region.shape) > 0) {
        /* walk the region in C order: a loop along its last axis inside an odometer on the others */
        int64_t idx[%(rnd1)d];
        int64_t roff = 0, yoff = 0, i;   /* in elements, from region.data and %(y)s.data */
        const int64_t n = %(rnd)d ? region.shape[%(rnd1)d - 1] : 1;
        const int64_t rs = %(rnd)d ? region.strides[%(rnd1)d - 1] : 0;
        const int64_t ys = %(rnd)d ? y_strides[%(rnd1)d - 1] : 0;
        for (k = 0; k < %(rnd)d; ++k)
            idx[k] = 0;
        for (;;) {
            %(ctype)s *r = (%(ctype)s *)region.data + roff;
            const %(ctype)s *v = (const %(ctype)s *)%(y)s.data + yoff;
            for (i = 0; i < n; ++i)
                %(update)s
            for (k = %(rnd)d - 2; k >= 0; --k) {
                roff += region.strides[k];
                yoff += y_strides[k];
                if (++idx[k] < region.shape[k])
                    break;
                roff -= region.shape[k] * region.strides[k];
                yoff -= region.shape[k] * y_strides[k];
                idx[k] = 0;
            }
            if (k < 0)
                break;
        }
    }
}""" % d)
    return "\n".join(code)
