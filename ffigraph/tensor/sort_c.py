"""Plain-C code of ``SortOp`` and ``ArgSortOp`` (sort.py), and the lane walk shared with extra_ops_c.py.

Both ops work on *lanes*: the elements that share an index on every axis but ``op.axis``. Nested
loops walk the other axes; each lane is gathered into a contiguous buffer of values (its stride
may be anything, negative included), a permutation ``0 .. n-1`` is sorted by those values, and
the output lane gets the values (sort) or the positions (argsort) in that order.

The sort is a stable merge sort (insertion sort of runs of 16, then bottom-up merges through a
second index buffer): equal values keep their order, as ``numpy.sort(kind="stable")``. numpy's
default quicksort leaves the order of ties unspecified, so every ``kind`` gets the stable order
(``perform`` asks numpy for it too, so the C and Python results agree element for element).
Floats order NaN after everything, +inf included, as numpy does: ``a`` comes before ``b`` when
``a < b``, or when ``b`` is NaN and ``a`` is not.

The buffers (the lane's values and two index arrays, as long as the longest lane) are allocated
once per call from the state's allocator (ffg_malloc) and released before the node's code ends; an empty array allocates
nothing and writes nothing.
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.c_interface import MethodNotDefined
from ffigraph.tensor.ctype import c_element_type
from ffigraph.tensor.reduce_c import _guarded, _Lines

VERSION = (2,)


# ------------------------------------------------------------------ shared helpers


def c_message(text):
    """``text`` inside a C string literal used as a printf format."""
    return (str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ").replace("%", "%%")
            .replace("?", "\\?"))


def sortable_type(op, dtype):
    """The C element type of a dtype the ops order (bools, integers, float32, float64)."""
    d = np.dtype(dtype)
    if d.kind not in "biuf" or d.name == "float16":
        raise MethodNotDefined("%s: C code for bools, integers, float32 and float64, not %s" % (op, dtype))
    return c_element_type(d)


def less_macro(dtype):
    """The C expression of numpy's order ``a < b`` for values of ``dtype`` (NaN last for floats)."""
    if np.dtype(dtype).kind == "f":
        return "((a) < (b) || ((b) != (b) && (a) == (a)))"
    return "((a) < (b))"


def offset(index_names, array, axes):
    """C for the element offset ``i * array.strides[a] + ...`` (``0`` with no axes)."""
    terms = ["%s * %s.strides[%d]" % (i, array, a) for i, a in zip(index_names, axes)]
    return " + ".join(terms) or "0"


def open_lanes(c, x, nd, axis):
    """Open one loop per axis of ``x`` but ``axis`` (declaring their counters); returns the
    counters and their axes, for ``offset``. Close them with ``close_lanes``."""
    kept = [a for a in range(nd) if a != axis]
    ivars = ["i%d" % a for a in kept]
    if ivars:
        c.add("int64_t %s;" % ", ".join(ivars))
    c.add("/* one lane per index of the other axes */")
    for i, a in zip(ivars, kept):
        c.open("for (%s = 0; %s < %s.shape[%d]; ++%s) {" % (i, i, x, a, i))
    return ivars, kept


def close_lanes(c, ivars):
    for _ in ivars:
        c.close()


# ------------------------------------------------------------------ the merge sort


def _argsort_function(dtype):
    """The C support function sorting a permutation by a contiguous buffer of ``dtype`` values."""
    suffix = np.dtype(dtype).name
    ctype = c_element_type(dtype)
    name = "ffg_stable_argsort_%s" % suffix
    text = r"""
/* Stable sort of idx (n positions into v) by the values v[idx[k]], in numpy's order (NaN last):
 * insertion sort of runs of 16, then bottom-up merges between idx and tmp (both n long). */
static void %(name)s(const %(ctype)s *v, int64_t *idx, int64_t *tmp, int64_t n)
{
#define FFG_LESS(a, b) %(less)s
    int64_t *src = idx, *dst = tmp, *swap;
    int64_t lo, width;
    /* runs of 16 by insertion: an element moves left only past greater ones (stable) */
    for (lo = 0; lo < n; lo += 16) {
        const int64_t hi = n - lo > 16 ? lo + 16 : n;
        int64_t i;
        for (i = lo + 1; i < hi; ++i) {
            const int64_t key = src[i];
            int64_t j = i;
            while (j > lo && FFG_LESS(v[key], v[src[j - 1]])) {
                src[j] = src[j - 1];
                --j;
            }
            src[j] = key;
        }
    }
    /* merge neighbouring runs, twice as long each round; ties take the left run's first */
    for (width = 16; width < n; width *= 2) {
        for (lo = 0; lo < n; lo += 2 * width) {
            const int64_t mid = n - lo > width ? lo + width : n;
            const int64_t hi = n - mid > width ? mid + width : n;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                dst[k++] = FFG_LESS(v[src[j]], v[src[i]]) ? src[j++] : src[i++];
            while (i < mid)
                dst[k++] = src[i++];
            while (j < hi)
                dst[k++] = src[j++];
        }
        swap = src;
        src = dst;
        dst = swap;
    }
    if (src != idx)
        memcpy(idx, src, (size_t)n * sizeof(int64_t));
#undef FFG_LESS
}
""" % dict(name=name, ctype=ctype, less=less_macro(dtype))
    return name, _guarded(name, text.strip("\n"))


# ------------------------------------------------------------------ the node code


def _sort_code(op, node, x, z, sub):
    xtype = node.inputs[0].type
    ctype = sortable_type(op, xtype.dtype)
    fn, _ = _argsort_function(xtype.dtype)
    nd, axis = xtype.ndim, op.axis
    argsort = op.returns == "indices"
    ztype = "int64_t" if argsort else ctype
    err, fail, allocator = sub["err"], sub["fail"], sub["allocator"]
    c = _Lines()
    c.add("/* %s: each lane along axis %d %s, in a stable order (NaN last) */"
          % (op, axis, "replaced by the positions that sort it" if argsort else "sorted"))
    c.open()
    c.add("const int64_t n = %s.shape[%d];   /* the lanes' length */" % (x, axis))
    c.add("%s *buf = NULL;" % ctype)
    c.add("int64_t *idx = NULL, *tmp = NULL, k;")
    c.add("if (ffg_alloc_array(&%s, %d, %s.shape, sizeof(%s), %s, %s))" % (z, nd, x, ztype, allocator, err))
    c.add("    " + fail)
    c.open("if (ffg_size(%d, %s.shape) > 0) {" % (nd, x))
    c.add("/* the lane's values, and the two index buffers of the merge sort */")
    c.add("buf = (%s *)ffg_malloc(%s, (size_t)n * sizeof(%s));" % (ctype, allocator, ctype))
    c.add("idx = (int64_t *)ffg_malloc(%s, (size_t)n * sizeof(int64_t));" % allocator)
    c.add("tmp = (int64_t *)ffg_malloc(%s, (size_t)n * sizeof(int64_t));" % allocator)
    c.open("if (buf == NULL || idx == NULL || tmp == NULL) {")
    c.add("ffg_release(%s, buf);" % allocator)
    c.add("ffg_release(%s, idx);" % allocator)
    c.add("ffg_release(%s, tmp);" % allocator)
    c.add('ffg_set_error(%s, FFG_ERR_NOMEM, -1, "%s: cannot allocate the buffers for lanes of %%lld elements", '
          "(long long)n);" % (err, c_message(op)))
    c.add(fail)
    c.close()
    ivars, kept = open_lanes(c, x, nd, axis)
    c.add("const %s *xl = (const %s *)%s.data + %s;" % (ctype, ctype, x, offset(ivars, x, kept)))
    c.add("%s *zl = (%s *)%s.data + %s;" % (ztype, ztype, z, offset(ivars, z, kept)))
    c.add("/* gather the lane, sort its positions by value */")
    c.open("for (k = 0; k < n; ++k) {")
    c.add("buf[k] = xl[k * %s.strides[%d]];" % (x, axis))
    c.add("idx[k] = k;")
    c.close()
    c.add("%s(buf, idx, tmp, n);" % fn)
    c.add("/* write the %s in sorted order */" % ("positions" if argsort else "values"))
    c.add("for (k = 0; k < n; ++k)")
    c.add("    zl[k * %s.strides[%d]] = %s;" % (z, axis, "idx[k]" if argsort else "buf[idx[k]]"))
    close_lanes(c, ivars)
    c.add("ffg_release(%s, buf);" % allocator)
    c.add("ffg_release(%s, idx);" % allocator)
    c.add("ffg_release(%s, tmp);" % allocator)
    c.close()
    c.close()
    return c.text()


# ------------------------------------------------------------------ the DelegatedCOp interface


def c_code(op, node, name, inputs, outputs, sub):
    return _sort_code(op, node, inputs[0], outputs[0], sub)


def c_support_code_apply(op, node, name):
    sortable_type(op, node.inputs[0].type.dtype)
    return _argsort_function(node.inputs[0].type.dtype)[1]


def c_headers(op):
    return ["<math.h>", "<stdlib.h>", "<string.h>"]


def c_code_cache_version(op):
    return VERSION
