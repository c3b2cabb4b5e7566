"""Plain-C code of the advanced-indexing ops (see advanced_subtensor.py).

``AdvancedSubtensor1`` (one integer vector on axis 0) copies whole rows: per index,
one bounds check and one ``ffg_strided_copy`` of the row.

The other three ops share one plan, built at run time from the op's ``Plan``:

1. per result axis, its length, its stride in ``x`` (slices, full axes, newaxes)
   and its stride in a table of offsets (the axes of the broadcast index shape);
   ``base``, the offset of the slices' first elements;
2. each boolean mask is checked against the axes it indexes and replaced by the
   coordinates of its true elements (a vector of as many positions as they are);
3. the advanced indices' shapes broadcast together; the table holds, per position
   of the broadcast shape (C order), the offset in ``x`` that the indices pick
   there, each index bounds-checked once (negative ones count from the end);
4. the result is walked in C order (an odometer over the outer axes, a loop
   along the last), element offset ``xoff + table[boff]``.

Reading copies each picked element into a fresh C-contiguous result; the
increment ops copy ``x`` into a fresh array, build the plan on that copy, and
add ``y`` (broadcast to the result's shape) at each picked place in that
order, so repeated places add up (``numpy.add.at``) or the last write wins
(``x[idx] = y``). Index arrays may have any integer dtype and any strides.
"""
from __future__ import annotations

import numpy as np

from ffigraph.tensor import advanced_subtensor as adv
from ffigraph.tensor.build_c import STRIDED_COPY_C
from ffigraph.tensor.ctype import c_element_type
from ffigraph.tensor.inc_subtensor_c import _update, _y_strides_code
from ffigraph.tensor.subtensor_c import SLICE_C, _c_int, _c_message

ADVANCED_INDEX_C = r"""
#ifndef FFG_ADVANCED_INDEX_DEFINED
#define FFG_ADVANCED_INDEX_DEFINED
/* One integer index at p: signed or unsigned, of 1, 2, 4 or 8 bytes. An unsigned value above
 * INT64_MAX sets *huge (it is out of bounds for any axis). */
static int64_t ffg_read_index(const char *p, int is_signed, int itemsize, int *huge)
{
    union {
        int8_t i8;
        uint8_t u8;
        int16_t i16;
        uint16_t u16;
        int32_t i32;
        uint32_t u32;
        int64_t i64;
        uint64_t u64;
    } v;   /* the value's bytes, copied (p need not be aligned) */
    *huge = 0;
    switch (itemsize) {
    case 1:
        memcpy(&v, p, 1);
        return is_signed ? (int64_t)v.i8 : (int64_t)v.u8;
    case 2:
        memcpy(&v, p, 2);
        return is_signed ? (int64_t)v.i16 : (int64_t)v.u16;
    case 4:
        memcpy(&v, p, 4);
        return is_signed ? (int64_t)v.i32 : (int64_t)v.u32;
    default:
        memcpy(&v, p, 8);
        if (is_signed)
            return v.i64;
        if (v.u64 > (uint64_t)INT64_MAX) {
            *huge = 1;
            return INT64_MAX;
        }
        return (int64_t)v.u64;
    }
}

/* The next position of an odometer over k axes of lengths shape, in C order: the indices idx
 * advance (the last fastest, back to 0 after the last position) and *off by the strides. */
static void ffg_odometer_next(int k, const int64_t *shape, const int64_t *strides, int64_t *idx, int64_t *off)
{
    int d;
    for (d = k - 1; d >= 0; --d) {
        *off += strides[d];
        if (++idx[d] < shape[d])
            return;
        *off -= shape[d] * strides[d];
        idx[d] = 0;
    }
}

/* 1, with v written into bad, when the index v is out of [-n, n); else 0. */
static int ffg_index_out_of_bounds(int64_t v, int64_t n, char *bad, size_t badsize)
{
    if (v >= -n && v < n)
        return 0;
    snprintf(bad, badsize, "%lld", (long long)v);
    return 1;
}

/* Add to table[b], for each position b (C order) of the broadcast index shape bshape (nb axes),
 * the offset that one index array picks along an axis of length n and stride xstride: its value
 * at that position (counted from the end when negative) times xstride. The array's element at a
 * position lies sum(position * strides) items after data; strides are in items, 0 along the axes
 * it is stretched over. Returns 0, or -1 with the first value out of [-n, n) written into bad. */
static int ffg_index_offsets(int64_t *table, int nb, const int64_t *bshape, const char *data,
                             const int64_t *strides, int is_signed, int itemsize, int64_t n,
                             int64_t xstride, char *bad, size_t badsize)
{
    int64_t idx[FFG_MAX_NDIM], off = 0, b, total = ffg_size(nb, bshape);
    int d;
    for (d = 0; d < nb; ++d)
        idx[d] = 0;
    for (b = 0; b < total; ++b) {
        int huge;
        const char *p = data + off * itemsize;
        const int64_t v = ffg_read_index(p, is_signed, itemsize, &huge);
        if (huge || v < -n || v >= n) {
            if (huge) {
                uint64_t u;
                memcpy(&u, p, 8);
                snprintf(bad, badsize, "%llu", (unsigned long long)u);
            } else {
                snprintf(bad, badsize, "%lld", (long long)v);
            }
            return -1;
        }
        table[b] += (v < 0 ? v + n : v) * xstride;
        ffg_odometer_next(nb, bshape, strides, idx, &off);   /* the next position */
    }
    return 0;
}

/* The true elements of a boolean mask of k axes (strides in items, any sign), in C order: returns
 * how many there are, and with coords not NULL writes each one's k coordinates there in turn.
 * A 0-d mask (k = 0) has one element: it counts 1 when true, 0 when false. */
static int64_t ffg_mask_true(const char *data, int k, const int64_t *shape, const int64_t *strides,
                             int64_t *coords)
{
    int64_t idx[FFG_MAX_NDIM], off = 0, i, count = 0, total = ffg_size(k, shape);
    int d;
    for (d = 0; d < k; ++d)
        idx[d] = 0;
    for (i = 0; i < total; ++i) {
        if (data[off]) {
            if (coords != NULL)
                for (d = 0; d < k; ++d)
                    coords[count * k + d] = idx[d];
            ++count;
        }
        ffg_odometer_next(k, shape, strides, idx, &off);
    }
    return count;
}
#endif /* FFG_ADVANCED_INDEX_DEFINED */
"""


def c_support_code_apply(op, node, name):
    return SLICE_C + STRIDED_COPY_C + ADVANCED_INDEX_C


def c_code_cache_version(op):
    return (1,)


def _comment(text):
    return "/* %s */" % str(text).replace("*/", "* /")


def _indent(code, spaces=4):
    pad = " " * spaces
    return "\n".join(pad + line if line.strip() else line for line in code.splitlines())


def c_code(op, node, name, inputs, outputs, sub):
    if isinstance(op, adv.AdvancedSubtensor1):
        return _subtensor1_code(op, node, inputs, outputs, sub)
    if isinstance(op, adv.AdvancedSubtensor):
        return _gather_code(op, node, name, inputs, outputs, sub)
    return _scatter_code(op, node, name, inputs, outputs, sub)


def c_code_cleanup(op, node, name, inputs, outputs, sub):
    """Free the plan's temporaries (NULL when the node failed before making them)."""
    if isinstance(op, adv.AdvancedSubtensor1):
        return ""
    plan = op.plan(node)
    masks = sum(1 for item in plan.items if item.kind == "mask")
    return "\n".join(["free(%s_table);" % name] + ["free(%s_mask%d);" % (name, m) for m in range(masks)])


# ------------------------------------------------------------------ AdvancedSubtensor1: whole rows


def _subtensor1_code(op, node, inputs, outputs, sub):
    x, ilist = inputs
    (z,) = outputs
    xtype, itype = node.inputs[0].type, node.inputs[1].type
    nd = xtype.ndim
    d = dict(x=x, i=ilist, z=z, nd=nd, rest=nd - 1, ctype=c_element_type(xtype.dtype),
             itype=c_element_type(itype.dtype), err=sub["err"], fail=sub["fail"], allocator=sub["allocator"],
             label=_c_message(op))
    if itype.dtype == "uint64":
        # values above INT64_MAX are out of bounds for any axis: compared unsigned
        d["read"] = "const uint64_t u = *(const uint64_t *)(%(i)s.data + r * %(i)s.strides[0] * 8);" % d
        d["check"] = "u >= (uint64_t)n"
        d["value"] = "(int64_t)u"
        d["fmt"], d["bad"] = "%llu", "(unsigned long long)u"
    else:
        d["read"] = ("const int64_t v = (int64_t)*(const %(itype)s *)(%(i)s.data + r * %(i)s.strides[0] * "
                     "(int64_t)sizeof(%(itype)s));" % d)
        d["check"] = "v < -n || v >= n"
        d["value"] = "(v < 0 ? v + n : v)"
        d["fmt"], d["bad"] = "%lld", "(long long)v"
    return """/* %(label)s: the rows of %(x)s named by the index vector %(i)s, copied */
{
    int64_t shape[%(nd)d];
    const int64_t n = %(x)s.shape[0];   /* the rows of x */
    int64_t r, row;                      /* a row of the result, and its size in items */
    int k;
    shape[0] = %(i)s.shape[0];
    for (k = 1; k < %(nd)d; ++k)
        shape[k] = %(x)s.shape[k];
    if (ffg_alloc_array(&%(z)s, %(nd)d, shape, sizeof(%(ctype)s), %(allocator)s, %(err)s))
        %(fail)s
    row = ffg_size(%(rest)d, shape + 1);
    for (r = 0; r < shape[0]; ++r) {
        /* check the index, then copy the row it names */
        %(read)s
        if (%(check)s) {
            char s[160];
            ffg_format_shape(s, sizeof s, %(nd)d, %(x)s.shape);
            ffg_set_error(%(err)s, FFG_ERR_INDEX, -1,
                          "%(label)s: index %(fmt)s is out of bounds for axis 0 with size %%lld "
                          "(index input 1, at position %%lld; x has shape %%s)", %(bad)s, (long long)n,
                          (long long)r, s);
            %(fail)s
        }
        ffg_strided_copy(%(z)s.data + r * row * (int64_t)sizeof(%(ctype)s), %(z)s.strides + 1,
                         %(x)s.data + %(value)s * %(x)s.strides[0] * (int64_t)sizeof(%(ctype)s),
                         %(x)s.strides + 1, shape + 1, %(rest)d, sizeof(%(ctype)s));
    }
}""" % d


# ------------------------------------------------------------------ the plan shared by the other ops


class _Plan:
    """C text of the run-time plan of an advanced index (see the module docstring)."""

    def __init__(self, op, node, name, arr, xname, index_names, first_index, sub):
        self.op, self.name, self.arr, self.xname, self.sub = op, name, arr, xname, sub
        self.plan = op.plan(node)
        self.index_names = index_names
        self.index_types = [v.type for v in node.inputs[first_index:]]
        self.first_index = first_index
        self.xnd = node.inputs[0].type.ndim
        self.rnd = len(self.plan.dims)
        self.label = _c_message(op)
        self.masks = [item for item in self.plan.items if item.kind == "mask"]

    def declarations(self):
        """Top-level locals, freed by c_code_cleanup."""
        lines = ["int64_t *%s_table = NULL;   /* per position of the broadcast index shape: "
                 "the offset it picks */" % self.name]
        for m in range(len(self.masks)):
            lines.append("int64_t *%s_mask%d = NULL;   /* the coordinates of mask %d's true elements */"
                         % (self.name, m, m))
        return "\n".join(lines)

    def locals(self):
        r1, nb1 = max(self.rnd, 1), max(self.plan.nb, 1)
        lines = ["int64_t rshape[%d];   /* the result's shape */" % r1,
                 "int64_t xstep[%d];    /* per result axis, its stride in x (0 for the index axes) */" % r1,
                 "int64_t bstep[%d];    /* per result axis, its stride in the table (index axes only) */" % r1,
                 "int64_t bshape[%d];   /* the broadcast shape of the advanced indices */" % nb1,
                 "int64_t base = 0;     /* the offset in x of the slices' first elements */",
                 "char bad[32];         /* an index out of bounds, as text */"]
        lines += ["int64_t count%d;       /* mask %d's true elements */" % (m, m) for m in range(len(self.masks))]
        return "\n".join(lines)

    def _error(self, code, fmt, *args):
        """Set the error record (``fmt`` a printf format after the op's name) and fail."""
        d = self.sub
        return "ffg_set_error(%s, %s, -1,\n              \"%s: %s\"%s);\n%s" % (
            d["err"], code, self.label, fmt, "".join(", " + a for a in args), d["fail"])

    def _scalar(self, k):
        return "*(const int64_t *)%s.data" % self.index_names[k]

    def body(self):
        """Statements filling rshape, xstep, bstep, base, bshape and the table."""
        arr, out = self.arr, ["(void)bad;"]
        # 1. the result's axes that come from slices, full axes and newaxes
        for r, dim in enumerate(self.plan.dims):
            if dim[0] == "slice":
                out.append(self._slice(r, dim[1], dim[2]))
            elif dim[0] == "full":
                out.append("%s\nrshape[%d] = %s.shape[%d]; xstep[%d] = %s.strides[%d]; bstep[%d] = 0;"
                           % (_comment("result axis %d: x's axis %d, whole" % (r, dim[1])),
                              r, arr, dim[1], r, arr, dim[1], r))
            elif dim[0] == "newaxis":
                out.append("%s\nrshape[%d] = 1; xstep[%d] = 0; bstep[%d] = 0;"
                           % (_comment("result axis %d: a new axis" % r), r, r, r))
        # 2. masks: their shapes, their true elements
        for m, item in enumerate(self.masks):
            out.append(self._mask(m, item))
        # 3. the broadcast shape, 4. the table, 5. the index axes of the result
        out.append(self._broadcast())
        out.append(self._table())
        adv_axes = [r for r, dim in enumerate(self.plan.dims) if dim[0] == "adv"]
        if adv_axes:
            out.append("""/* %(what)s: the broadcast index shape, stepping through the table */
{
    int64_t stride = 1;
    int d;
    for (d = %(last)d; d >= 0; --d) {
        rshape[%(a)d + d] = bshape[d];
        xstep[%(a)d + d] = 0;
        bstep[%(a)d + d] = stride;
        stride *= bshape[d] > 0 ? bshape[d] : 1;
    }
}""" % dict(a=adv_axes[0], last=self.plan.nb - 1,
            what=("result axes %d to %d" % (adv_axes[0], adv_axes[-1])) if len(adv_axes) > 1
            else "result axis %d" % adv_axes[0]))
        return "\n".join(out)

    def _slice(self, r, axis, parts):
        (sk, sv), (ek, ev), (pk, pv) = parts

        def value(kind, v, default):
            if kind == "in":
                return self._scalar(v)
            return default if v is None else _c_int(v)

        step = value(pk, pv, "1")
        if pk == "in":
            start_d, stop_d = "step < 0 ? INT64_MAX : 0", "step < 0 ? INT64_MIN : INT64_MAX"
        elif pv is not None and pv < 0:
            start_d, stop_d = "INT64_MAX", "INT64_MIN"
        else:
            start_d, stop_d = "0", "INT64_MAX"
        lines = ["%s\n{" % _comment("result axis %d: a slice of x's axis %d" % (r, axis)),
                 "    int64_t step = %s, start, stop, len;" % step]
        if pk == "in" or pv == 0:
            lines.append("    if (step == 0) {\n%s\n    }" % _indent(_indent(
                self._error("FFG_ERR_VALUE", "slice step cannot be zero"))))
        if pk == "in":
            lines.append("    if (step == INT64_MIN)\n        step = -INT64_MAX;   /* as Python clamps it */")
        lines += ["    start = %s;" % value(sk, sv, start_d),
                  "    stop = %s;" % value(ek, ev, stop_d),
                  "    len = ffg_slice_adjust(%s.shape[%d], &start, &stop, step);" % (self.arr, axis),
                  "    rshape[%d] = len;" % r,
                  "    /* (with at most one element the stride is never used: keep it free of overflow) */",
                  "    xstep[%d] = len > 1 ? %s.strides[%d] * step : %s.strides[%d];" % (r, self.arr, axis, self.arr,
                                                                                       axis),
                  "    bstep[%d] = 0;" % r,
                  "    if (len > 0)\n        base += start * %s.strides[%d];" % (self.arr, axis),
                  "}"]
        return "\n".join(lines)

    def _mask(self, m, item):
        k = len(item.axes)
        mk = self.index_names[item.source[1]]
        checks = []
        for i, a in enumerate(item.axes):
            checks.append("""if (%(mk)s.shape[%(i)d] != %(arr)s.shape[%(a)d]) {
%(err)s
}""" % dict(mk=mk, i=i, a=a, arr=self.arr, err=_indent(self._error(
                "FFG_ERR_INDEX", "boolean index did not match indexed array along axis %d; size of axis is "
                "%%lld but size of corresponding boolean axis is %%lld (index input %d)"
                % (a, self.first_index + item.source[1]),
                "(long long)%s.shape[%d]" % (self.arr, a), "(long long)%s.shape[%d]" % (mk, i)))))
        d = dict(m=m, mk=mk, k=k, name=self.name, a0=item.axes[0] if item.axes else 0,
                 what=("x's axes %d to %d" % (item.axes[0], item.axes[-1])) if k > 1
                 else ("x's axis %d" % item.axes[0]) if k else "no axis of x (a 0-d mask)",
                 size="count%d * %d" % (m, k) if k != 1 else "count%d" % m,
                 nomem=_indent(self._error("FFG_ERR_NOMEM", "unable to allocate the coordinates of %lld true "
                                                            "elements of a mask", "(long long)count%d" % m)))
        return """/* mask %(m)d (%(mk)s) indexes %(what)s: its shape must be theirs; it stands for the
   coordinates of its true elements, in C order */
%(checks)s
count%(m)d = ffg_mask_true(%(mk)s.data, %(k)d, %(mk)s.shape, %(mk)s.strides, NULL);
%(name)s_mask%(m)d = (int64_t *)malloc((size_t)(%(size)s > 0 ? %(size)s : 1) * sizeof(int64_t));
if (%(name)s_mask%(m)d == NULL) {
%(nomem)s
}
ffg_mask_true(%(mk)s.data, %(k)d, %(mk)s.shape, %(mk)s.strides, %(name)s_mask%(m)d);""" % dict(
            d, checks="\n".join(checks))

    def _item_shape(self, item):
        """(ndim, C expression of its shape pointer) of an advanced index's broadcast contribution."""
        if item.kind == "int":
            return 0, None
        if item.kind == "array":
            return item.bnd, "%s.shape" % self.index_names[item.source[1]]
        return 1, "(&count%d)" % self.masks.index(item)

    def _broadcast(self):
        nb = self.plan.nb
        conds = []
        for item in self.plan.items:
            n, shape = self._item_shape(item)
            for e in range(n):
                conds.append("ffg_broadcast_dim(&bshape[%d], %s[%d])" % (nb - n + e, shape, e))
        lines = [_comment("the broadcast shape of the advanced indices (a mask counts as a vector of its "
                          "true elements)")]
        if nb:
            lines.append("{\n    int d;\n    for (d = 0; d < %d; ++d)\n        bshape[d] = 1;\n}" % nb)
        else:
            lines.append("bshape[0] = 1;   /* (no axis: one position) */")
        if conds:
            pieces = []
            for item in self.plan.items:
                n, shape = self._item_shape(item)
                pieces.append("ffg_format_shape(s + strlen(s), sizeof s - strlen(s), %d, %s);\n"
                              "strncat(s, \" \", sizeof s - strlen(s) - 1);" % (n, shape or "bshape"))
            lines.append("""if (%s) {
    char s[512] = "";
%s
%s
}""" % ("\n    || ".join(conds), _indent("\n".join(pieces)), _indent(self._error(
                "FFG_ERR_INDEX", "shape mismatch: indexing arrays could not be broadcast together with shapes %s",
                "s"))))
        return "\n".join(lines)

    def _table(self):
        nb, nb1 = self.plan.nb, max(self.plan.nb, 1)
        name, arr = self.name, self.arr
        out = ["""/* the table: per position of the broadcast shape (C order), the offset in x that the advanced
   indices pick there, each index checked against its axis once */
if (ffg_size_overflows(%(nb)d, bshape, (int64_t)sizeof(int64_t))) {
%(big)s
}
{
    const int64_t total = ffg_size(%(nb)d, bshape);
    int64_t b;
    %(name)s_table = (int64_t *)malloc((size_t)(total > 0 ? total : 1) * sizeof(int64_t));
    if (%(name)s_table == NULL) {
%(nomem)s
    }
    for (b = 0; b < total; ++b)
        %(name)s_table[b] = 0;
}""" % dict(nb=nb, name=name, big=_indent(self._error(
            "FFG_ERR_VALUE", "the broadcast index shape is too big")), nomem=_indent(_indent(self._error(
                "FFG_ERR_NOMEM", "unable to allocate the offsets of the broadcast index shape"))))]
        for item in self.plan.items:
            if item.kind == "mask":
                m = self.masks.index(item)
                for i, a in enumerate(item.axes):
                    out.append("""/* mask %(m)d's coordinates along x's axis %(a)d (always in range) */
{
    int64_t st[%(nb1)d] = {0};   /* the coordinates' strides over the broadcast axes */
    st[%(last)d] = count%(m)d == 1 ? 0 : %(k)d;
    ffg_index_offsets(%(name)s_table, %(nb)d, bshape, (const char *)(%(name)s_mask%(m)d + %(i)d), st, 1, 8,
                      %(arr)s.shape[%(a)d], %(arr)s.strides[%(a)d], bad, sizeof bad);
}""" % dict(m=m, a=a, nb1=nb1, nb=nb, last=nb - 1, k=len(item.axes), name=name, i=i, arr=arr))
                continue
            a = item.axes[0]
            position = self.first_index + item.source[1] if item.source[0] == "in" else None
            where = "index input %d" % position if position is not None else "the integer %d of the index" % item.source[1]
            if item.kind == "int":
                value = self._scalar(item.source[1]) if item.source[0] == "in" else _c_int(item.source[1])
                setup = ["const int64_t v = %s;" % value, "int64_t st[%d] = {0};" % nb1]
                data, signed, size = "(const char *)&v", 1, 8
                # an integer is checked even when the broadcast shape is empty (as numpy does)
                precheck = "ffg_index_out_of_bounds(v, %s.shape[%d], bad, sizeof bad)\n        || " % (arr, a)
            else:
                ik = self.index_names[item.source[1]]
                itype = self.index_types[item.source[1]]
                n = item.bnd
                setup = ["int64_t st[%d] = {0};   /* its strides over the broadcast axes (0: stretched) */" % nb1,
                         "int e;",
                         "for (e = 0; e < %d; ++e)" % n,
                         "    st[%d + e] = %s.shape[e] == 1 ? 0 : %s.strides[e];" % (nb - n, ik, ik)]
                data = "%s.data" % ik
                precheck = ""
                dtype = np.dtype(itype.dtype)
                signed, size = int(dtype.kind == "i"), dtype.itemsize
            err = self._error("FFG_ERR_INDEX", "index %%s is out of bounds for axis %d with size %%lld (%s; x has "
                              "shape %%s)" % (a, where), "bad", "(long long)%s.shape[%d]" % (arr, a), "s")
            out.append("""/* %(what)s along x's axis %(a)d */
{
%(setup)s
    if (%(precheck)sffg_index_offsets(%(name)s_table, %(nb)d, bshape, %(data)s, st, %(signed)d, %(size)d,
                             %(arr)s.shape[%(a)d], %(arr)s.strides[%(a)d], bad, sizeof bad)) {
        char s[160];
        ffg_format_shape(s, sizeof s, %(xnd)d, %(xname)s.shape);
%(err)s
    }
}""" % dict(what=where, a=a, setup=_indent("\n".join(setup)), name=name, nb=nb, data=data, signed=signed,
            precheck=precheck,
            size=size, arr=arr, xnd=self.xnd, xname=self.xname, err=_indent(_indent(err))))
        return "\n".join(out)

    def walk(self, inner, with_y=False):
        """The loop over the result in C order; ``inner`` is the statement for element ``i`` of a run,
        at ``xoff + i * xs + table[boff + i * bs]`` (and ``yoff + i * ys`` in y)."""
        rnd = self.rnd
        if rnd:
            last = dict(n="rshape[%d]" % (rnd - 1), xs="xstep[%d]" % (rnd - 1), bs="bstep[%d]" % (rnd - 1),
                        ys="ystep[%d]" % (rnd - 1))
        else:
            last = dict(n="1", xs="0", bs="0", ys="0")
        d = dict(last, rnd=rnd, rnd1=max(rnd, 1), outer=rnd - 2, inner=_indent(inner, 12),
                 table="%s_table" % self.name)
        y_decl = "    const int64_t ys = %(ys)s;\n" % d if with_y else ""
        y_step = "            yoff += ystep[k];\n" if with_y else ""
        y_back = "            yoff -= rshape[k] * ystep[k];\n" if with_y else ""
        d.update(y_decl=y_decl, y_step=y_step, y_back=y_back)
        return """/* walk the result in C order: a loop along its last axis inside an odometer on the others */
if (ffg_size(%(rnd)d, rshape) > 0) {
    int64_t idx[%(rnd1)d];
    int64_t xoff = base, boff = 0, yoff = 0, out = 0, i;   /* in items */
    const int64_t n = %(n)s, xs = %(xs)s, bs = %(bs)s;
%(y_decl)s    const int64_t *table = %(table)s;
    int k;
    for (k = 0; k < %(rnd)d; ++k)
        idx[k] = 0;
    for (;;) {
        for (i = 0; i < n; ++i) {
%(inner)s
        }
        out += n;
        for (k = %(outer)d; k >= 0; --k) {
            xoff += xstep[k];
            boff += bstep[k];
%(y_step)s            if (++idx[k] < rshape[k])
                break;
            xoff -= rshape[k] * xstep[k];
            boff -= rshape[k] * bstep[k];
%(y_back)s            idx[k] = 0;
        }
        if (k < 0)
            break;
    }
    (void)yoff;
    (void)out;
}""" % d


def _gather_code(op, node, name, inputs, outputs, sub):
    x, index_names = inputs[0], list(inputs[1:])
    (z,) = outputs
    dtype = node.inputs[0].type.dtype
    ctype = c_element_type(dtype)
    plan = _Plan(op, node, name, x, x, index_names, 1, sub)
    inner = "dst[out + i] = src[xoff + i * xs + table[boff + i * bs]];"
    return """/* %(label)s: a fresh array of the elements of %(x)s that the index picks */
%(decls)s
{
%(locals)s
%(body)s
    if (ffg_alloc_array(&%(z)s, %(rnd)d, rshape, sizeof(%(ctype)s), %(allocator)s, %(err)s))
        %(fail)s
    {
        %(ctype)s *dst = (%(ctype)s *)%(z)s.data;
        const %(ctype)s *src = (const %(ctype)s *)%(x)s.data;
%(walk)s
    }
}""" % dict(label=plan.label, x=x, z=z, decls=plan.declarations(), locals=_indent(plan.locals()),
            body=_indent(plan.body()), rnd=plan.rnd, ctype=ctype, allocator=sub["allocator"], err=sub["err"],
            fail=sub["fail"], walk=_indent(plan.walk(inner), 8))


def _scatter_code(op, node, name, inputs, outputs, sub):
    x, y, index_names = inputs[0], inputs[1], list(inputs[2:])
    (z,) = outputs
    dtype = node.inputs[0].type.dtype
    ctype = c_element_type(dtype)
    nd, ynd = node.inputs[0].type.ndim, node.inputs[1].type.ndim
    plan = _Plan(op, node, name, z, x, index_names, 2, sub)
    rnd = plan.rnd
    if op.set_instead_of_inc:
        update = "*r = *v;"
    else:
        update = _update(dtype, ctype, "*r", "*v")
    inner = "%s *r = dst + xoff + i * xs + table[boff + i * bs];\nconst %s *v = src + yoff + i * ys;\n%s" % (
        ctype, ctype, update)
    d = dict(label=plan.label, x=x, y=y, z=z, nd=nd, ynd=ynd, rnd=rnd, rnd1=max(rnd, 1), lead=rnd - ynd, ctype=ctype,
             decls=plan.declarations(), locals=_indent(plan.locals()), body=_indent(plan.body()),
             allocator=sub["allocator"], err=sub["err"], fail=sub["fail"], walk=_indent(plan.walk(inner, True), 8),
             what="set y into" if op.set_instead_of_inc else "add y to",
             order="the last write wins" if op.set_instead_of_inc else "repeated places add up")
    d["ycheck"] = _y_strides_code(d, "ystep", "rshape") + "\n" if ynd else ""
    return """/* %(label)s: a fresh copy of %(x)s, then %(what)s the places the index picks (%(order)s) */
%(decls)s
if (ffg_alloc_array(&%(z)s, %(nd)d, %(x)s.shape, sizeof(%(ctype)s), %(allocator)s, %(err)s))
    %(fail)s
ffg_strided_copy(%(z)s.data, %(z)s.strides, %(x)s.data, %(x)s.strides, %(x)s.shape, %(nd)d, sizeof(%(ctype)s));
{
%(locals)s
    int64_t ystep[%(rnd1)d];   /* y's strides over the result's axes (0: broadcast) */
    int k;
%(body)s
    /* y lines up with the result's last axes; each of its lengths must match or be 1 */
    for (k = 0; k < %(rnd)d; ++k)
        ystep[k] = 0;
%(ycheck)s    {
        %(ctype)s *dst = (%(ctype)s *)%(z)s.data;
        const %(ctype)s *src = (const %(ctype)s *)%(y)s.data;
%(walk)s
    }
}""" % d
