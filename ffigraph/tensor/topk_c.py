"""Plain-C code of ``TopKOp`` (topk.py): a bounded heap per lane.

Each lane along ``op.axis`` (the other axes walked by sort_c's nested loops) is read in place,
whatever its stride. A heap of ``m = |kth|`` positions keeps the best ``m`` seen so far, the worst
of them at the root: a position that ranks before the root replaces it and sifts down, so a lane
costs ``n log m`` comparisons and the heap is the only buffer (``m`` int64, from the state's
allocator, once per call). Then the heap is sorted in place: by rank (``sorted=True``: the best
first) or by position (``sorted=False``), and the lane's outputs are written from it.

The rank order is the one topk.py's module doc gives, as ``perform`` computes it with numpy:
numpy's sort order (NaN above every number), ties by position, the largest first for kth > 0
and the smallest first for kth < 0. ``kth`` is read from its 0-d input; 0, more than the lane's
length, or positions that ``idx_dtype`` cannot hold are errors naming them.
"""
from __future__ import annotations

import numpy as np

from ffigraph.tensor.ctype import c_element_type
from ffigraph.tensor.reduce_c import _guarded, _Lines
from ffigraph.tensor.sort_c import c_message, close_lanes, less_macro, offset, open_lanes, sortable_type

VERSION = (1,)


def _select_function(dtype):
    """The C support functions that leave a lane's top ``m`` positions in ``heap``, in rank order
    or in position order; the name of the one the node calls, and their text."""
    suffix = np.dtype(dtype).name
    ctype = c_element_type(dtype)
    name = "ffg_topk_%s" % suffix
    text = r"""
#define FFG_LESS(a, b) %(less)s
/* 1 when position p of the lane x (stride s) ranks before position q: the larger value when
 * largest is set, else the smaller, in numpy's order (NaN above every number); ties by position. */
static int %(name)s_before(const %(ctype)s *x, int64_t s, int largest, int64_t p, int64_t q)
{
    const %(ctype)s a = x[p * s], b = x[q * s];
    if (largest ? FFG_LESS(b, a) : FFG_LESS(a, b))
        return 1;
    if (largest ? FFG_LESS(a, b) : FFG_LESS(b, a))
        return 0;
    return p < q;
}

/* Sift heap[hole] down the heap of size positions whose parents come after their children: in
 * rank order when by_rank is set, else in order of position. */
static void %(name)s_sift(const %(ctype)s *x, int64_t s, int largest, int by_rank, int64_t *heap,
                          int64_t size, int64_t hole)
{
    const int64_t item = heap[hole];
    for (;;) {
        int64_t child = 2 * hole + 1;
        if (child >= size)
            break;
        if (child + 1 < size && (by_rank ? %(name)s_before(x, s, largest, heap[child], heap[child + 1])
                                         : heap[child + 1] > heap[child]))
            ++child;   /* the child that comes later */
        if (by_rank ? !%(name)s_before(x, s, largest, item, heap[child]) : heap[child] < item)
            break;
        heap[hole] = heap[child];
        hole = child;
    }
    heap[hole] = item;
}

/* The m top positions (1 <= m <= n) of the lane x[0], x[s], ..., x[(n-1)s] into heap: in rank
 * order (the best first) when by_rank is set, else in order of position. */
static void %(name)s(const %(ctype)s *x, int64_t s, int64_t n, int64_t m, int largest, int by_rank,
                     int64_t *heap)
{
    int64_t i, k, last;
    %(ctype)s worst;
    /* the first m positions, as a heap whose root is the one that ranks last */
    for (i = 0; i < m; ++i)
        heap[i] = i;
    for (k = m / 2; k-- > 0;)
        %(name)s_sift(x, s, largest, 1, heap, m, k);
    /* each later position whose value ranks before the root's takes its place: a later position
     * never wins a tie, so only the values are compared (the root's value kept at hand) */
    worst = x[heap[0] * s];
    for (i = m; i < n; ++i) {
        const %(ctype)s v = x[i * s];
        if (largest ? FFG_LESS(worst, v) : FFG_LESS(v, worst)) {
            heap[0] = i;
            %(name)s_sift(x, s, largest, 1, heap, m, 0);
            worst = x[heap[0] * s];
        }
    }
    /* heap sort, in the order asked for (by position: made a heap of that order first) */
    if (!by_rank)
        for (k = m / 2; k-- > 0;)
            %(name)s_sift(x, s, largest, 0, heap, m, k);
    for (k = m - 1; k > 0; --k) {
        last = heap[0];
        heap[0] = heap[k];
        heap[k] = last;
        %(name)s_sift(x, s, largest, by_rank, heap, k, 0);
    }
}
#undef FFG_LESS
""" % dict(name=name, ctype=ctype, less=less_macro(dtype))
    return name, _guarded(name, text.strip("\n"))


def _topk_code(op, node, inputs, outputs, sub):
    (x, kth), xtype, ktype = inputs, node.inputs[0].type, node.inputs[1].type
    ctype = sortable_type(op, xtype.dtype)
    fn, _ = _select_function(xtype.dtype)
    nd, axis = xtype.ndim, op.axis % xtype.ndim
    kctype = c_element_type(ktype.dtype)
    idx_ctype = c_element_type(op.idx_dtype)
    values = outputs[0] if op.return_values else None
    positions = outputs[-1] if op.return_indices else None
    err, fail, allocator = sub["err"], sub["fail"], sub["allocator"]
    what = c_message(op)
    c = _Lines()
    c.add("/* %s: the |kth| %s of each lane along axis %d (kth < 0: the smallest), %s */"
          % (op, "top elements and their positions" if values and positions else
             ("top elements" if values else "positions of the top elements"), axis,
             "in rank order" if op.sorted else "in order of position"))
    c.open()
    c.add("const int64_t n = %s.shape[%d];   /* the lanes' length */" % (x, axis))
    c.add("const %s kth_value = *(const %s *)%s.data;" % (kctype, kctype, kth))
    c.add("int64_t m, shape[%d], *heap = NULL, j;" % nd)
    c.add("int largest;")
    c.open("if (kth_value == 0) {")
    c.add('ffg_set_error(%s, FFG_ERR_VALUE, -1, "%s: kth must not be 0");' % (err, what))
    c.add(fail)
    c.close()
    if np.dtype(ktype.dtype).kind == "u":   # no sign: the largest, and kth_value > n is all to check
        too_many, print_type, print_format = "(uint64_t)kth_value > (uint64_t)n", "unsigned long long", "%llu"
        c.add("largest = 1;")
    else:
        too_many, print_type, print_format = "(int64_t)kth_value > n || (int64_t)kth_value < -n", "long long", "%lld"
        c.add("largest = kth_value > 0;")
    c.open("if (%s) {" % too_many)
    c.add('ffg_set_error(%s, FFG_ERR_VALUE, -1, "%s: kth = %s asks for more than the %%lld elements along axis %d '
          'of x", (%s)kth_value, (long long)n);' % (err, what, print_format, axis, print_type))
    c.add(fail)
    c.close()
    c.add("m = kth_value < 0 ? -(int64_t)kth_value : (int64_t)kth_value;   /* |kth| <= n: no overflow */"
          if print_type == "long long" else "m = (int64_t)kth_value;")
    idx_max = int(np.iinfo(op.idx_dtype).max)
    if positions is not None and idx_max < 2 ** 63 - 1:
        c.add("if (n - 1 > %dLL) {" % idx_max)
        c.add("    ffg_set_error(%s, FFG_ERR_VALUE, -1, \"%s: idx_dtype %s cannot hold the positions 0 .. %%lld "
              "along axis %d of x\", (long long)(n - 1));" % (err, what, op.idx_dtype, axis))
        c.add("    " + fail)
        c.add("}")
    c.add("for (j = 0; j < %d; ++j)" % nd)
    c.add("    shape[j] = %s.shape[j];" % x)
    c.add("shape[%d] = m;" % axis)
    if values is not None:
        c.add("if (ffg_alloc_array(&%s, %d, shape, sizeof(%s), %s, %s))" % (values, nd, ctype, allocator, err))
        c.add("    " + fail)
    if positions is not None:
        c.add("if (ffg_alloc_array(&%s, %d, shape, sizeof(%s), %s, %s))" % (positions, nd, idx_ctype, allocator, err))
        c.add("    " + fail)
    c.open("if (ffg_size(%d, shape) > 0) {" % nd)
    c.add("heap = (int64_t *)ffg_malloc(%s, (size_t)m * sizeof(int64_t));" % allocator)
    c.open("if (heap == NULL) {")
    c.add('ffg_set_error(%s, FFG_ERR_NOMEM, -1, "%s: cannot allocate the heap of %%lld positions", (long long)m);'
          % (err, what))
    c.add(fail)
    c.close()
    ivars, kept = open_lanes(c, x, nd, axis)
    c.add("const %s *xl = (const %s *)%s.data + %s;" % (ctype, ctype, x, offset(ivars, x, kept)))
    if values is not None:
        c.add("%s *vl = (%s *)%s.data + %s;" % (ctype, ctype, values, offset(ivars, values, kept)))
    if positions is not None:
        c.add("%s *pl = (%s *)%s.data + %s;" % (idx_ctype, idx_ctype, positions, offset(ivars, positions, kept)))
    c.add("%s(xl, %s.strides[%d], n, m, largest, %d, heap);" % (fn, x, axis, 1 if op.sorted else 0))
    c.open("for (j = 0; j < m; ++j) {")
    if values is not None:
        c.add("vl[j * %s.strides[%d]] = xl[heap[j] * %s.strides[%d]];" % (values, axis, x, axis))
    if positions is not None:
        c.add("pl[j * %s.strides[%d]] = (%s)heap[j];" % (positions, axis, idx_ctype))
    c.close()
    close_lanes(c, ivars)
    c.add("ffg_release(%s, heap);" % allocator)
    c.close()
    c.close()
    return c.text()


# ------------------------------------------------------------------ the DelegatedCOp interface


def c_code(op, node, name, inputs, outputs, sub):
    return _topk_code(op, node, inputs, outputs, sub)


def c_support_code_apply(op, node, name):
    sortable_type(op, node.inputs[0].type.dtype)
    return _select_function(node.inputs[0].type.dtype)[1]


def c_headers(op):
    return ["<stdint.h>"]


def c_code_cache_version(op):
    return VERSION
