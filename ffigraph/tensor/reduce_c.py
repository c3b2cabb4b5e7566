"""Plain-C code for the reductions of ``ffigraph.tensor.math``: ``Reduce`` and ``ArgReduce``.

The ops delegate here (``c_impl``). One generator covers every kind. The output is allocated
C-contiguous with the kept axes of the input, then one of two loop nests fills it:

* per output element (the general case): nested loops walk the kept axes in C order (the
  output is written with ``*po++``), and for each output element nested loops walk the reduced
  axes in C order, updating an accumulator that is finally converted to the output dtype; when
  the reduced axes form one run of memory they are walked as a single axis; float sums call a
  pairwise-summation helper and max/min a helper with eight independent lanes;
* into the output (when the input's last axis is kept and the output dtype is the accumulator's,
  as for a column sum): the output is initialised to the identity and the input is walked in C
  order, each element folded into its output slot, so the inner loop is contiguous on both sides.

Semantics follow ``Reduce.perform`` / ``ArgReduce.perform`` (that is, PyTensor's, and numpy's
where they agree):

* sum/prod/mean convert each element to the accumulator dtype (``Reduce.accumulator_dtype``:
  float32 accumulates in float64, ints in int64), accumulate there and convert the result to the
  output dtype once, so a float32 sum is the float64 sum rounded to float32; float accumulators
  sum with numpy's pairwise summation along the innermost reduced run (all the reduced axes when
  they form one run of memory); when the output is not the accumulator's dtype and the last axis
  is kept, the running sums live in a temporary of the accumulator's dtype;
* integer overflow wraps (the arithmetic is done in unsigned types, so the C is well defined);
* mean is the sum, converted to its dtype, over the count (both in ``mean_divide_dtype``: float32
  for a float32 sum, float64 for an integer one; 0/0 gives NaN);
* max/min propagate NaN; argmax/argmin give the first occurrence, a NaN counting as the extremum;
* max/min/argmax/argmin over an empty reduced axis fail with FFG_ERR_VALUE (a ValueError);
* all/any test ``!= 0`` (so NaN is true) and give bool (uint8 0/1);
* a reduction over no axes converts/copies each element.

Complex values (and dtypes without a C element type) raise MethodNotDefined, so the node
runs its Python ``perform`` (under the op-wise linker).
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.c_interface import MethodNotDefined
from ffigraph.scalar.c_table import c_cast
from ffigraph.tensor import threads_c
from ffigraph.tensor.ctype import C_ELEMENT_TYPES, c_element_type, c_number

VERSION = (1,)

ORDER_KINDS = ("max", "min", "argmax", "argmin")


# ------------------------------------------------------------------ what each kind computes


class _Plan:
    """The C pieces of one reduction: accumulator, per-element load and update, final value."""

    def __init__(self, op, node):
        from ffigraph.tensor.math import ACCUMULATING, mean_divide_dtype, reduce_acc_dtype, reduce_sum_dtype

        self.kind = kind = op.kind
        self.axes = tuple(op.axis)
        x, out = node.inputs[0], node.outputs[0]
        self.ndim = x.type.ndim
        self.in_dtype = in_dtype = np.dtype(x.type.dtype).name
        self.out_dtype = out_dtype = np.dtype(out.type.dtype).name
        if kind not in ("sum", "prod", "mean", "max", "min", "all", "any", "argmax", "argmin"):
            raise MethodNotDefined("%s: unknown reduction kind %r" % (op, kind))
        # sum/prod/mean: the accumulator, the dtype the accumulated value is converted to (a mean's
        # sum) and, for a mean, the dtype the division is done in (see Reduce.perform)
        self.sum_dtype = self.div_dtype = out_dtype
        if kind in ACCUMULATING:
            self.acc_dtype = reduce_acc_dtype(op, in_dtype, getattr(op, "acc_dtype", None))
            if kind == "mean":
                self.sum_dtype = reduce_sum_dtype(kind, in_dtype, op.dtype)
                self.div_dtype = mean_divide_dtype(self.sum_dtype)[1]
        for d in (in_dtype, out_dtype, getattr(self, "acc_dtype", in_dtype), self.sum_dtype, self.div_dtype):
            if np.dtype(d).kind == "c":
                raise MethodNotDefined("%s: no C code for complex values (it runs in Python)" % op)
            if d not in C_ELEMENT_TYPES:
                raise MethodNotDefined("%s: no C element type for %s" % (op, d))
        if kind == "mean" and np.dtype(self.div_dtype).kind != "f":
            raise MethodNotDefined("%s: a mean divided in %s runs in Python" % (op, self.div_dtype))
        if kind in ("argmax", "argmin") and out_dtype != "int64":
            raise MethodNotDefined("%s: argmax/argmin give int64, not %s" % (op, out_dtype))
        self.in_ctype = c_element_type(in_dtype)
        self.out_ctype = c_element_type(out_dtype)
        self.pairwise = None     # name of the pairwise-sum helper, for float sums and means
        self.lanes = None        # name of the max/min helper
        getattr(self, "_plan_" + {"mean": "sum", "prod": "sum", "min": "max", "argmin": "argmax",
                                  "any": "all"}.get(kind, kind))()

    # Each _plan_* sets: acc_dtype, acc_ctype, init (C literal), load(src) -> C expression of
    # acc_ctype (or of value_ctype for the order kinds), update (statements using v),
    # finish (expression of the output's C type), note (a comment).

    def _plan_sum(self):
        kind, out_dtype, acc_dtype = self.kind, self.out_dtype, self.acc_dtype
        adt = np.dtype(acc_dtype)
        mul = kind == "prod"
        self.acc_ctype = c_element_type(acc_dtype)
        self.note = "accumulated in %s" % acc_dtype
        self.value_ctype = self.acc_ctype
        # each element goes to the accumulator's dtype directly (PyTensor converts the input to
        # acc_dtype before reducing)
        self.load = lambda src: c_cast(src, self.in_dtype, acc_dtype, self.acc_ctype)
        if adt.kind == "b":
            # numpy: a bool sum is a logical or, a bool product a logical and
            self.init = "1" if mul else "0"
            self.update = ["acc = (uint8_t)(acc %s v);" % ("&" if mul else "|")]
        elif adt.kind in "iu":
            # wrap around like numpy: do the arithmetic in an unsigned type (no C overflow)
            utype = "uint64_t" if adt.itemsize == 8 else "uint32_t"
            self.init = "1" if mul else "0"
            self.update = ["acc = (%s)((%s)acc %s (%s)v);" % (self.acc_ctype, utype, "*" if mul else "+", utype)]
            self.note += " (wrapping on overflow)"
        else:
            self.init = ("1.0" if mul else "0.0") + ("f" if self.acc_ctype == "float" else "")
            self.update = ["acc %s= v;" % ("*" if mul else "+")]
            if not mul:
                self.pairwise = "ffg_reduce_pairwise_sum_%s_%s" % (self.in_dtype, acc_dtype)
                self.note += " with pairwise summation"
        if (self.sum_dtype if kind == "mean" else out_dtype) != acc_dtype:
            self.note += ", converted to %s" % (self.sum_dtype if kind == "mean" else out_dtype)
        if kind == "mean":
            self.note += ", then divided by the count in %s" % self.div_dtype
        self.finish = self.finish_expression("acc", "count")

    def finish_expression(self, acc, count):
        """C for the output value of accumulated value ``acc`` (of the accumulator's C type); for a
        mean, over the int64 ``count``."""
        return finish_value(self.kind, acc, self.acc_dtype, self.sum_dtype, self.out_dtype, count)

    def _plan_max(self):
        is_max = self.kind == "max"
        dt = np.dtype(self.in_dtype)
        self.acc_dtype, self.acc_ctype = self.in_dtype, self.in_ctype
        self.value_ctype = self.in_ctype
        self.load = lambda src: src
        cmp = ">" if is_max else "<"
        if dt.kind == "f":
            self.init = "(-INFINITY)" if is_max else "INFINITY"
            # once acc is NaN nothing compares above it, and a NaN v replaces it: NaN propagates
            self.update = ["if (v %s acc || v != v)" % cmp, "    acc = v;"]
            self.note = "NaN propagates"
        else:
            info = np.iinfo(dt) if dt.kind != "b" else None
            lowest = 0 if info is None else info.min
            highest = 1 if info is None else info.max
            self.init = c_number(lowest if is_max else highest, dt)
            self.update = ["if (v %s acc)" % cmp, "    acc = v;"]
            self.note = "starting from the %s %s" % ("lowest" if is_max else "highest", dt.name)
        self.finish = c_cast("acc", self.in_dtype, self.out_dtype, self.out_ctype)
        self.lanes = "ffg_reduce_%s_%s" % (self.kind, self.in_dtype)

    def _plan_all(self):
        is_all = self.kind == "all"
        self.acc_dtype, self.acc_ctype = "bool", "uint8_t"
        self.value_ctype = "uint8_t"
        self.load = lambda src: "(%s != 0)" % src
        self.init = "1" if is_all else "0"
        self.update = ["acc = (uint8_t)(acc %s v);" % ("&" if is_all else "|")]
        self.note = "a value is true when it is not 0 (NaN is true)"
        self.finish = c_cast("acc", "bool", self.out_dtype, self.out_ctype)

    def _plan_argmax(self):
        is_max = self.kind == "argmax"
        dt = np.dtype(self.in_dtype)
        self.acc_dtype, self.acc_ctype = self.in_dtype, self.in_ctype
        self.value_ctype = self.in_ctype
        self.load = lambda src: src
        cmp = ">" if is_max else "<"
        # "best" starts at the extreme of the type with index 0: if nothing beats it, every
        # element equals it and the first occurrence (index 0) is the answer.
        if dt.kind == "f":
            self.init = "(-INFINITY)" if is_max else "INFINITY"
            self.update = ["if (v %s acc || (v != v && acc == acc)) {   /* the first NaN wins */" % cmp,
                           "    acc = v;", "    idx = k;", "}", "++k;"]
            self.note = "first occurrence wins, a NaN counts as the %s" % self.kind[3:]
        else:
            info = np.iinfo(dt) if dt.kind != "b" else None
            lowest = 0 if info is None else info.min
            highest = 1 if info is None else info.max
            self.init = c_number(lowest if is_max else highest, dt)
            self.update = ["if (v %s acc) {" % cmp, "    acc = v;", "    idx = k;", "}", "++k;"]
            self.note = "first occurrence wins"
        self.finish = "idx"
        self.lanes = "ffg_reduce_%s_%s" % (self.kind, self.in_dtype)

    @property
    def is_arg(self):
        return self.kind in ("argmax", "argmin")


def finish_value(kind, acc, acc_dtype, sum_dtype, out_dtype, count):
    """C for the output value of a sum, product (or mean over the int64 ``count``) accumulated in
    ``acc``, of ``acc_dtype``: converted to ``sum_dtype`` (for a mean: then to the dtype of the
    division, ``mean_divide_dtype``, and divided), then to ``out_dtype``. As ``Reduce.perform``."""
    from ffigraph.tensor.math import mean_divide_dtype

    if kind != "mean":
        return c_cast(acc, acc_dtype, out_dtype, c_element_type(out_dtype))
    div_dtype = mean_divide_dtype(sum_dtype)[1]
    div_ctype = c_element_type(div_dtype)
    total = c_cast(c_cast(acc, acc_dtype, sum_dtype, c_element_type(sum_dtype)), sum_dtype, div_dtype, div_ctype)
    return c_cast("(%s / (%s)%s)" % (total, div_ctype, count), div_dtype, out_dtype, c_element_type(out_dtype))


# ------------------------------------------------------------------ C text helpers


class _Lines:
    """Lines of C with an indentation level."""

    def __init__(self):
        self.lines = []
        self.level = 0

    def add(self, *lines):
        for ln in lines:
            self.lines.append(("    " * self.level + ln) if ln else "")

    def open(self, line="{"):
        self.add(line)
        self.level += 1

    def close(self, line="}"):
        self.level -= 1
        self.add(line)

    def text(self):
        return "\n".join(self.lines)


def _c_format_literal(text):
    """``text`` inside a C string literal used as a printf format."""
    return (str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")
            .replace("%", "%%"))


def _comment(text):
    return "/* %s */" % str(text).replace("*/", "* /")


# ------------------------------------------------------------------ pairwise summation helper


def _guarded(name, text):
    """``text`` (the definition of C function ``name``) inside an include guard, so that two
    nodes' support code can both carry it."""
    macro = name.upper() + "_DEFINED"
    return "#ifndef %s\n#define %s\n%s\n#endif" % (macro, macro, text)


def _pairwise_helper(name, in_dtype, acc_dtype):
    """numpy's pairwise summation (blocks of 128, 8 partial sums) in ``acc_dtype``, for one
    dtype pair. Elements are converted to the accumulator's dtype as they are loaded.
    """
    in_ctype, acc = c_element_type(in_dtype), c_element_type(acc_dtype)
    load = c_cast("p[%s]", in_dtype, acc_dtype, acc)
    strided = load % "i * s"
    return _guarded(name, """\
/* Pairwise sum of n %(in_dtype)s elements (stride s, in elements), in %(acc)s:
   blocks of at most 128 summed with eight partial sums, halves summed recursively, so long
   sums stay accurate (the error grows like log n, not n). */
static %(acc)s %(name)s(const %(in_ctype)s *p, int64_t n, int64_t s)
{
    int64_t i;
    if (n < 8) {
        %(acc)s res = 0;
        for (i = 0; i < n; ++i)
            res += %(one_strided)s;
        return res;
    }
    if (n <= 128) {
        /* eight partial sums, combined in a balanced tree */
        %(acc)s r[8], res;
        int j;
        if (s == 1) {
            for (j = 0; j < 8; ++j)
                r[j] = %(first_contiguous)s;
            for (i = 8; i < n - (n %% 8); i += 8)
                for (j = 0; j < 8; ++j)
                    r[j] += %(next_contiguous)s;
        } else {
            for (j = 0; j < 8; ++j)
                r[j] = %(first_strided)s;
            for (i = 8; i < n - (n %% 8); i += 8)
                for (j = 0; j < 8; ++j)
                    r[j] += %(next_strided)s;
        }
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; ++i)
            res += %(one_strided)s;
        return res;
    } else {
        /* split at a multiple of 8 and sum the halves */
        int64_t n2 = n / 2;
        n2 -= n2 %% 8;
        return %(name)s(p, n2, s) + %(name)s(p + n2 * s, n - n2, s);
    }
}""" % dict(name=name, in_dtype=in_dtype, in_ctype=in_ctype, acc=acc,
            one_strided=strided.replace("%", "%%"),
            first_contiguous=(load % "j").replace("%", "%%"),
            next_contiguous=(load % "i + j").replace("%", "%%"),
            first_strided=(load % "j * s").replace("%", "%%"),
            next_strided=(load % "(i + j) * s").replace("%", "%%")))


def _better(kind, dtype, v, a):
    """C condition: value ``v`` replaces the running max/min ``a`` (a NaN replaces anything, and
    nothing replaces a NaN, so NaN propagates)."""
    cmp = ">" if kind == "max" else "<"
    if np.dtype(dtype).kind != "f":
        return "(%s %s %s)" % (v, cmp, a)
    return "((%s %s %s) | (%s != %s))" % (v, cmp, a, v, v)


def _lanes_helper(name, kind, dtype):
    """max/min over a run of elements, with eight independent running results over contiguous
    data (instruction-level parallelism instead of one long dependency chain)."""
    t = c_element_type(dtype)
    d = dict(kind=kind, dtype=dtype, t=t, name=name,
             lane=_better(kind, dtype, "v", "m[j]"), merge=_better(kind, dtype, "m[j]", "acc"),
             tail=_better(kind, dtype, "v", "acc"))
    return _guarded(name, """\
/* The %(kind)s of n %(dtype)s elements (stride s, in elements) folded into acc%(nan)s.
   Contiguous data is folded in eight lanes first. */
static %(t)s %(name)s(const %(t)s *p, int64_t n, int64_t s, %(t)s acc)
{
    int64_t i = 0;
    int j;
    if (s == 1 && n >= 16) {
        %(t)s m[8];
        for (j = 0; j < 8; ++j)
            m[j] = p[j];
        for (i = 8; i + 8 <= n; i += 8)
            for (j = 0; j < 8; ++j) {
                const %(t)s v = p[i + j];
                m[j] = %(lane)s ? v : m[j];
            }
        for (j = 0; j < 8; ++j)
            acc = %(merge)s ? m[j] : acc;
    }
    for (; i < n; ++i) {
        const %(t)s v = p[i * s];
        acc = %(tail)s ? v : acc;
    }
    return acc;
}""" % dict(d, nan="; a NaN propagates (nothing replaces a NaN result)" if t in ("float", "double") else ""))


def _arg_helper(name, kind, dtype, init):
    """argmax/argmin over a run: find the max/min with the lanes helper, then its first index
    (two quick passes instead of one pass with a branch per element)."""
    t = c_element_type(dtype)
    ext = kind[3:]
    is_float = np.dtype(dtype).kind == "f"
    d = dict(kind=kind, ext=ext, dtype=dtype, t=t, name=name, init=init,
             extreme="ffg_reduce_%s_%s" % (ext, dtype),
             better=_better(ext, dtype, "best", "*acc") if not is_float else
             "((best %s *acc) | ((best != best) & (*acc == *acc)))" % (">" if ext == "max" else "<"),
             nan="; the first NaN counts as the %s" % ext if is_float else "")
    if is_float:
        d["search"] = """if (best != best) {
        /* a NaN is the %(ext)s: find the first NaN */
        for (i = 0; p[i * s] == p[i * s]; ++i)
            ;
    } else {
        for (i = 0; p[i * s] != best; ++i)
            ;
    }""" % d
    else:
        d["search"] = """for (i = 0; p[i * s] != best; ++i)
        ;"""
    return _guarded(name, """\
/* The %(kind)s of n %(dtype)s elements (stride s, in elements) whose first index is k, folded
   into (*acc, *idx): the first occurrence wins%(nan)s.
   Two passes: the %(ext)s, then where it first is. */
static void %(name)s(const %(t)s *p, int64_t n, int64_t s, int64_t k, %(t)s *acc, int64_t *idx)
{
    int64_t i;
    const %(t)s best = %(extreme)s(p, n, s, %(init)s);
    /* what came before has smaller indices, so only a strictly better value replaces it */
    if (n == 0 || !%(better)s)
        return;
    %(search)s
    *acc = best;
    *idx = k + i;
}""" % d)


# ------------------------------------------------------------------ the generator


def _uses_temporary(plan):
    """A column-style reduction (last axis kept) whose output is not the accumulator's dtype folds
    into a temporary of accumulators, converted into the output at the end."""
    return (bool(plan.axes) and plan.ndim - 1 not in plan.axes and not plan.is_arg
            and plan.acc_dtype != plan.out_dtype and plan.kind in ("sum", "prod", "mean"))


def _into_output(plan):
    return (bool(plan.axes) and plan.ndim - 1 not in plan.axes and not plan.is_arg
            and (plan.acc_dtype == plan.out_dtype or _uses_temporary(plan)))


def _generate(op, node, name, x, out, sub):
    plan = _Plan(op, node)
    nd = plan.ndim
    axes = plan.axes
    kept = [a for a in range(nd) if a not in axes]
    nk = len(kept)
    OT = plan.out_ctype
    c = _Lines()

    if _uses_temporary(plan):
        # first, so that every fail path (and the cleanup after it) sees it initialised
        c.add("void *%s_acc = NULL;   /* the running %s values, released by the cleanup below */"
              % (name, plan.acc_dtype))
    c.add(_comment("%s: %s of %s (%d-d %s) over %s into %s (%d-d %s); %s" % (
        op, plan.kind, x, nd, plan.in_dtype, _describe_axes(axes),
        out, nk, plan.out_dtype, plan.note)))
    c.add("int64_t out_shape[%d];   /* the kept axes of the input */" % max(nk, 1))
    if plan.kind == "mean":
        # (0 when one is 0: the other lengths of an empty input may be huge, their product overflow)
        c.add("int64_t count = %s%s;   /* how many elements each mean is over */"
              % ("".join("%s.shape[%d] == 0 ? 0 : " % (x, a) for a in axes),
                 " * ".join("%s.shape[%d]" % (x, a) for a in axes) or "1"))

    if plan.kind in ORDER_KINDS and axes:
        empty = " || ".join("%s.shape[%d] == 0" % (x, a) for a in axes)
        if plan.is_arg:
            message = "%s: an empty axis has no %s (input shape %%s, axes %s)" % (
                _c_format_literal(op), plan.kind, _c_format_literal(repr(axes)))
        else:
            message = "%s: cannot take the %s over an empty axis (input shape %%s, axes %s)" % (
                _c_format_literal(op), plan.kind, _c_format_literal(repr(axes)))
        c.add("/* the %s of nothing is undefined: an empty reduced axis is an error */" % plan.kind[-3:])
        c.open("if (%s) {" % empty)
        c.add("char shape_text[160];")
        c.add("ffg_format_shape(shape_text, sizeof shape_text, %d, %s.shape);" % (nd, x))
        c.add('ffg_set_error(%s, FFG_ERR_VALUE, -1, "%s", shape_text);' % (sub["err"], message))
        c.add(sub["fail"])
        c.close("}")

    for j, a in enumerate(kept):
        c.add("out_shape[%d] = %s.shape[%d];" % (j, x, a))
    c.add("if (ffg_alloc_array(&%s, %d, out_shape, sizeof(%s), %s, %s))" % (out, nk, OT, sub["allocator"], sub["err"]))
    c.add("    " + sub["fail"])

    threaded = _threaded(node)
    if _into_output(plan):
        _body_into_output(c, plan, name, x, out, axes, kept, sub, threaded)
    elif threaded:
        _run_per_output_chunks(c, plan, name, x, out, axes, kept, sub)
    else:
        _body_per_output(c, plan, x, out, axes, kept)
    if threaded:
        # first, so that every fail path (and the cleanup after it) sees them initialised
        c.lines[:0] = ["void *%s_part = NULL;   /* the chunks' accumulators when a reduced axis is cut "
                       "(threads_c); released by the cleanup */" % name]
        if plan.is_arg:
            c.lines[:0] = ["void *%s_part_idx = NULL;   /* and their indices */" % name]
    return c.text()


def _threaded(node):
    """Whether the reduction's loops may be split over threads (threads_c)."""
    return threads_c.worth_threads(node.inputs[0].type.shape)


def _body_into_output(c, plan, name, x, out, axes, kept, sub, threaded=False):
    """The last axis is kept: walk the input in C order (memory order for C-contiguous data) and
    fold each element into its output slot, the output being the accumulator (or, when the output
    has another dtype, a temporary of accumulators laid out like it). The inner loop runs along
    the output too, so it vectorises; and it is what numpy does in this case."""
    nd = plan.ndim
    IT, OT, AT = plan.in_ctype, plan.out_ctype, plan.acc_ctype
    temporary = _uses_temporary(plan)
    c.add("/* the last axis is kept: %s is the accumulator, and the input is walked in C order */"
          % ("a temporary of %s" % plan.acc_dtype if temporary else "the output"))
    c.open("{")
    c.add("%s *po = (%s *)%s.data;" % (OT, OT, out))
    c.add("const %s *px = (const %s *)%s.data;" % (IT, IT, x))
    c.add("const int64_t size = ffg_size(%d, %s.shape);" % (len(kept), out))
    c.add("int64_t j;")
    if temporary:
        c.add("%s *pa;   /* the accumulators, C-contiguous like the output (so with its strides) */" % AT)
        c.open("if ((uint64_t)size > (uint64_t)(SIZE_MAX / sizeof(%s))" % AT)
        c.add("    || (%s_acc = ffg_malloc(%s, (size_t)size * sizeof(%s))) == NULL) {" % (name, sub["allocator"], AT))
        c.add('ffg_set_error(%s, FFG_ERR_NOMEM, -1, "%s: could not allocate %%lld %s accumulators", '
              '(long long)size);' % (sub["err"], _c_format_literal(plan_op_name(plan)), plan.acc_dtype))
        c.add(sub["fail"])
        c.close("}")
        c.add("pa = (%s *)%s_acc;" % (AT, name))
    else:
        c.add("%s *pa = po;" % AT)
    c.add("for (j = 0; j < size; ++j)")
    c.add("    pa[j] = %s;" % plan.init)
    if threaded:
        _run_into_output_chunks(c, plan, name, x, out, sub)
    else:
        # an empty input adds nothing; its other axes may be huge (walking them would take forever)
        c.open("if (ffg_size(%d, %s.shape) > 0) {" % (nd, x))
        _walk_into_output(c, plan, x, out, kept, "px", "pa")
        c.close("}")
    if temporary or plan.kind == "mean":
        c.add("/* the output values: %s */" % ("the accumulators converted to %s" % plan.out_dtype
                                                if plan.kind != "mean" else "each sum over the count"))
        c.add("for (j = 0; j < size; ++j)")
        c.add("    po[j] = %s;" % plan.finish_expression("pa[j]", "count"))
    c.close("}")


def _walk_into_output(c, plan, x, out, kept, ibase, obase, bounded=False):
    """The loops of ``_body_into_output`` over the input, in C order, folding each element into its
    accumulator (``obase``, laid out like ``out``); ``bounded``: over one chunk [lo, hi) of a
    threaded loop."""
    nd = plan.ndim
    IT, AT = plan.in_ctype, plan.acc_ctype
    for d in range(nd - 1):
        c.open("{")
        c.add("int64_t i%d;   /* %s axis */" % (d, "kept" if d in kept else "reduced"))
        if bounded:
            c.open("for (i%d = lo[%d]; i%d < hi[%d]; ++i%d) {" % (d, d, d, d, d))
        else:
            c.open("for (i%d = 0; i%d < %s.shape[%d]; ++i%d) {" % (d, d, x, d, d))
        c.add("const %s *px%d = %s + i%d * %s.strides[%d];" % (IT, d, ibase, d, x, d))
        ibase = "px%d" % d
        if d in kept:
            c.add("%s *pa%d = %s + i%d * %s.strides[%d];" % (AT, d, obase, d, out, kept.index(d)))
            obase = "pa%d" % d
    c.open("{")
    n = "hi[%d]" % (nd - 1) if bounded else "%s.shape[%d]" % (x, nd - 1)
    c.add("const int64_t n = %s, s = %s.strides[%d];" % (n, x, nd - 1))
    c.add("int64_t i;")
    start = "lo[%d]" % (nd - 1) if bounded else "0"
    c.open("if (s == 1) {   /* contiguous: plain indexing the compiler can vectorise */")
    _fold_loop(c, plan, "%s[i]" % ibase, "%s[i]" % obase, start)
    c.close("} else {")
    c.level += 1
    _fold_loop(c, plan, "%s[i * s]" % ibase, "%s[i]" % obase, start)
    c.close("}")
    c.close("}")
    for d in range(nd - 1):
        c.close("}")
        c.close("}")


def _run_into_output_chunks(c, plan, name, x, out, sub):
    """At the node: ``_body_into_output``'s walk in chunks run by the pool (threads_c). When the cut
    axis is reduced, chunks after the first fold into accumulators of their own (``<name>_part``),
    folded into ``pa`` in chunk order afterwards."""
    AT = plan.acc_ctype
    c.add("/* the walk, in chunks that the pool's threads share (%s_chunk above) */" % name)
    c.open("{")
    c.add("%s_loop L;" % name)
    c.add("L.x = &%s;" % x)
    c.add("L.out = &%s;" % out)
    c.add("L.acc = pa;")
    c.add("L.part = NULL;")
    c.add("L.count = size;")
    c.add("L.stride = size + FFG_PART_GAP;")
    c.add("ffg_split_loop(&L.split, %d, %s.shape, 1, %s, %s, size);"
          % (plan.ndim, x, threads_c.mask(range(plan.ndim)), threads_c.mask(plan.axes)))
    _alloc_parts(c, plan, name, sub, idx=False)
    c.add("L.part = (%s *)%s_part;" % (AT, name))
    c.add(*threads_c.run_chunks(name, "L", sub))
    c.open("if (L.split.partial && L.split.n > 1) {")
    c.add("/* the chunks' accumulators, folded in chunk order (whichever threads ran them) */")
    c.add("int ch;")
    c.open("for (ch = 0; ch < L.split.n; ++ch) {")
    c.add("const %s *pc = L.part + ch * L.stride;" % AT)
    c.open("for (j = 0; j < size; ++j) {")
    _combine_into(c, plan, "pa[j]", "pc[j]")
    c.close("}")
    c.close("}")
    c.close("}")
    c.close("}")


def _alloc_parts(c, plan, name, sub, idx):
    """C: when the cut axis is reduced, allocate ``L.stride`` accumulators per chunk (and, for
    argmax/argmin, as many indices) in ``<name>_part`` (``<name>_part_idx``), released by the cleanup."""
    c.open("if (L.split.partial && L.split.n > 1) {")
    blocks = [("%s_part" % name, plan.acc_ctype)] + ([("%s_part_idx" % name, "int64_t")] if idx else [])
    for var, ctype in blocks:
        c.open("if ((uint64_t)L.stride > (uint64_t)(SIZE_MAX / sizeof(%s) / (size_t)L.split.n)" % ctype)
        c.add("    || (%s = ffg_malloc(%s, (size_t)L.stride * (size_t)L.split.n * sizeof(%s))) == NULL) {"
              % (var, sub["allocator"], ctype))
        c.add('ffg_set_error(%s, FFG_ERR_NOMEM, -1, "%s: could not allocate %%lld accumulators per thread", '
              '(long long)L.count);' % (sub["err"], _c_format_literal(plan_op_name(plan))))
        c.add(sub["fail"])
        c.close("}")
    c.close("}")


def _combine_into(c, plan, acc, value):
    """Fold the accumulated ``value`` into the accumulator ``acc`` (not for argmax/argmin): the
    kind's own update, a sum adding, a max keeping the larger or the NaN."""
    c.open("{")
    c.add("%s acc = %s;" % (plan.acc_ctype, acc))
    c.add("const %s v = %s;" % (plan.value_ctype, value))
    c.add(*plan.update)
    c.add("%s = acc;" % acc)
    c.close("}")


def _into_output_chunk_function(plan, name):
    """``<name>_chunk``: ``_body_into_output``'s walk over one chunk (threads_c)."""
    IT, AT = plan.in_ctype, plan.acc_ctype
    nd = plan.ndim
    kept = [a for a in range(nd) if a not in plan.axes]
    c = _Lines()
    _chunk_function_head(c, plan, name, "its walk over one chunk", [
        "%s *acc;     /* the accumulators, laid out like out (when the cut axis is kept) */" % AT,
        "%s *part;    /* when it is reduced: each chunk's, count of them every stride */" % AT,
        "int64_t count, stride;",
    ], [
        "const %s *px = (const %s *)L->x->data;" % (IT, IT),
        "%s *pa = L->acc;" % AT,
    ])
    c.open("if (L->split.partial && L->split.n > 1) {")
    c.add("int64_t e;")
    c.add("pa = L->part + chunk * L->stride;")
    c.add("for (e = 0; e < L->count; ++e)")
    c.add("    pa[e] = %s;" % plan.init)
    c.close("}")
    c.open("if (ffg_size(%d, shape) > 0) {" % nd)
    _walk_into_output(c, plan, "(*L->x)", "(*L->out)", kept, "px", "pa", bounded=True)
    c.close("}")
    c.add("(void)err;")
    c.add("return 0;")
    c.close("}")
    return c.text()


def _chunk_function_head(c, plan, name, what, fields, locals_):
    """The start of ``<name>_chunk`` (threads_c): the struct ``<name>_loop`` the caller fills (the
    input, the output, ``fields``, the split), then the function's first lines: its context,
    ``locals_`` and this chunk's bounds (``lo``/``hi`` per axis)."""
    c.add("/* %s: %s -- %s (threads_c) */" % (name, plan_op_name(plan), what))
    c.open("typedef struct %s_loop {" % name)
    c.add("const ffg_array *x;")
    c.add("ffg_array *out;")
    c.add(*fields)
    c.add("ffg_split split;")
    c.close("} %s_loop;" % name)
    c.add("")
    c.add("static int %s_chunk(void *ctx, int chunk, FfgError *err)" % name)
    c.open("{")
    c.add("const %s_loop *L = (const %s_loop *)ctx;" % (name, name))
    c.add("const int64_t *shape = L->x->shape;")
    c.add(*locals_)
    c.add(*threads_c.bounded(plan.ndim, "shape"))
    c.add(*threads_c.chunk_bounds("L", "shape"))


def plan_op_name(plan):
    return "%s{axis=%s}" % (plan.kind.capitalize(), ",".join(map(str, plan.axes)))


def _fold_loop(c, plan, src, dst, start="0"):
    c.open("for (i = %s; i < n; ++i) {" % start)
    c.add("%s acc = %s;" % (plan.acc_ctype, dst))
    c.add("const %s v = %s;" % (plan.value_ctype, plan.load(src)))
    c.add(*plan.update)
    c.add("%s = acc;" % dst)
    c.close("}")


def _body_per_output(c, plan, x, out, axes, kept, bounded=False):
    """For each output element (kept axes in C order), loop over the reduced axes. ``bounded``: one
    chunk [lo, hi) of a threaded loop, cut along the first kept axis (its outputs are one run of the
    C-contiguous output) or the first reduced axis (then each output's accumulator, and index, is
    stored raw in the chunk's part of ``L->part``, for the node to combine)."""
    IT, OT = plan.in_ctype, plan.out_ctype
    c.open("{")
    if bounded:
        c.add("%s *po = (%s *)%s.data%s;   /* this chunk's outputs, written in C order */"
              % (OT, OT, out, " + lo[%d] * %s.strides[0]" % (kept[0], out) if kept else ""))
        c.add("%s *pp = L->part ? L->part + chunk * L->stride : NULL;   /* or their raw accumulators */"
              % plan.acc_ctype)
        if plan.is_arg:
            c.add("int64_t *pi = L->part_idx ? L->part_idx + chunk * L->stride : NULL;")
    else:
        c.add("%s *po = (%s *)%s.data;   /* the output, written in C order */" % (OT, OT, out))
    c.add("const %s *px = (const %s *)%s.data;" % (IT, IT, x))
    # an empty input: every output element is the initial value (no walk of its reduced axes,
    # which may be huge, nor a product of their lengths, which may overflow)
    c.add("const int x_empty = ffg_size(%d, %s.shape) == 0;" % (plan.ndim, x))
    collapsible = len(axes) >= 2 and axes == tuple(range(axes[0], axes[-1] + 1))
    if collapsible:
        cond = " && ".join("%s.strides[%d] == %s.strides[%d] * %s.shape[%d]" % (x, a, x, a + 1, x, a + 1)
                           for a in axes[:-1])
        c.add("/* do the reduced axes form one run of memory? then they are reduced as one axis */")
        c.add("const int merged = %s;" % cond)

    # loops over the kept axes
    base = "px"
    for a in kept:
        c.open("{")
        c.add("int64_t k%d;" % a)
        if bounded:
            c.open("for (k%d = lo[%d]; k%d < hi[%d]; ++k%d) {" % (a, a, a, a, a))
        else:
            c.open("for (k%d = 0; k%d < %s.shape[%d]; ++k%d) {" % (a, a, x, a, a))
        c.add("const %s *pk%d = %s + k%d * %s.strides[%d];" % (IT, a, base, a, x, a))
        base = "pk%d" % a

    # one output element
    c.add("%s acc = %s;" % (plan.acc_ctype, plan.init))
    if plan.is_arg:
        c.add("int64_t idx = 0;   /* index of acc in C order over the reduced axes */")
        if bounded and axes:
            c.add("int64_t k = lo[%d]%s;   /* index of the current element, likewise */"
                  % (axes[0], "".join(" * %s.shape[%d]" % (x, a) for a in axes[1:])))
        else:
            c.add("int64_t k = 0;     /* index of the current element, likewise */")
    if not axes:
        c.add("/* no reduced axes: the element itself */")
        c.open("{")
        c.add("const %s v = %s;" % (plan.value_ctype, plan.load("%s[0]" % base)))
        c.add(*plan.update)
        c.close("}")
    elif collapsible:
        count = " * ".join("%s.shape[%d]" % (x, a) for a in axes)
        run = base
        if bounded:
            count = " * ".join(["(hi[%d] - lo[%d])" % (axes[0], axes[0])]
                               + ["%s.shape[%d]" % (x, a) for a in axes[1:]])
            run = "(%s + lo[%d] * %s.strides[%d])" % (base, axes[0], x, axes[0])
        c.open("if (x_empty) {")
        c.add("/* nothing to fold */")
        c.close("} else if (merged) {")
        c.level += 1
        _inner_loop(c, plan, run, count, "%s.strides[%d]" % (x, axes[-1]))
        c.close("} else {")
        c.level += 1
        _reduced_loops(c, plan, x, axes, base, bounded)
        c.close("}")
    else:
        c.open("if (!x_empty) {")
        _reduced_loops(c, plan, x, axes, base, bounded)
        c.close("}")
    if bounded:
        c.open("if (pp) {")
        c.add("*pp++ = acc;")
        if plan.is_arg:
            c.add("*pi++ = idx;")
        c.close("} else {")
        c.add("    *po++ = %s;" % plan.finish)
        c.add("}")
    else:
        c.add("*po++ = %s;" % plan.finish)

    for a in reversed(kept):
        c.close("}")
        c.close("}")
    c.close("}")


def _run_per_output_chunks(c, plan, name, x, out, axes, kept, sub):
    """At the node: ``_body_per_output`` in chunks run by the pool (threads_c). Cut along the first
    reduced axis, every chunk leaves its raw accumulators (and indices) in ``<name>_part``; they are
    combined here in chunk order, then finished into the output."""
    AT, OT = plan.acc_ctype, plan.out_ctype
    cuttable = kept[:1] + list(axes[:1])
    c.add("/* the loops, in chunks that the pool's threads share (%s_chunk above) */" % name)
    c.open("{")
    c.add("%s_loop L;" % name)
    c.add("L.x = &%s;" % x)
    c.add("L.out = &%s;" % out)
    c.add("L.part = NULL;")
    c.add("L.part_idx = NULL;")
    c.add("L.count = ffg_size(%d, %s.shape);" % (len(kept), out))
    c.add("L.stride = L.count + FFG_PART_GAP;")
    c.add("L.n_mean = %s;" % ("count" if plan.kind == "mean" else "0"))
    c.add("ffg_split_loop(&L.split, %d, %s.shape, 1, %s, %s, L.count);"
          % (plan.ndim, x, threads_c.mask(cuttable), threads_c.mask(axes[:1])))
    _alloc_parts(c, plan, name, sub, idx=plan.is_arg)
    c.add("L.part = (%s *)%s_part;" % (AT, name))
    if plan.is_arg:
        c.add("L.part_idx = (int64_t *)%s_part_idx;" % name)
    c.add(*threads_c.run_chunks(name, "L", sub))
    c.open("if (L.split.partial && L.split.n > 1) {")
    c.add("/* each output: the chunks' accumulators combined in chunk order (whichever threads ran them) */")
    c.add("%s *po = (%s *)%s.data;" % (OT, OT, out))
    c.add("int64_t e;")
    c.add("int ch;")
    c.open("for (e = 0; e < L.count; ++e) {")
    c.add("%s acc = L.part[e];" % AT)
    if plan.is_arg:
        c.add("int64_t idx = L.part_idx[e];")
    c.open("for (ch = 1; ch < L.split.n; ++ch) {")
    c.add("const %s v = L.part[ch * L.stride + e];" % plan.value_ctype)
    if plan.is_arg:
        dt = np.dtype(plan.in_dtype)
        cmp = ">" if plan.kind == "argmax" else "<"
        better = "(v %s acc)" % cmp if dt.kind != "f" else "((v %s acc) | ((v != v) & (acc == acc)))" % cmp
        c.open("if (%s) {   /* strictly better: the first occurrence (a first NaN) wins */" % better)
        c.add("acc = v;")
        c.add("idx = L.part_idx[ch * L.stride + e];")
        c.close("}")
    else:
        c.add(*plan.update)
    c.close("}")
    c.add("po[e] = %s;" % plan.finish)
    c.close("}")
    c.close("}")
    c.close("}")


def _per_output_chunk_function(plan, name):
    """``<name>_chunk``: ``_body_per_output`` over one chunk (threads_c)."""
    nd = plan.ndim
    kept = [a for a in range(nd) if a not in plan.axes]
    c = _Lines()
    _chunk_function_head(c, plan, name, "its loops over one chunk", [
        "%s *part;         /* the cut axis is reduced: every chunk's raw accumulators, count of them "
        "every stride */" % plan.acc_ctype,
        "int64_t *part_idx;   /* and their indices (argmax, argmin) */",
        "int64_t count, stride;   /* output elements; accumulators per chunk */",
        "int64_t n_mean;      /* a mean: the elements each is over */",
    ], ["const int64_t count = L->n_mean;"] if plan.kind == "mean" else [])
    _body_per_output(c, plan, "(*L->x)", "(*L->out)", plan.axes, kept, bounded=True)
    c.add("(void)err;")
    c.add("return 0;")
    c.close("}")
    return c.text()


def _describe_axes(axes):
    if not axes:
        return "no axes"
    if len(axes) == 1:
        return "axis %d" % axes[0]
    return "axes (%s)" % ", ".join(map(str, axes))


def _reduced_loops(c, plan, x, axes, base, bounded=False):
    """Nested loops over the reduced axes (C order); the last one is the inner loop. ``bounded``:
    each over [lo, hi) (a chunk of a threaded loop)."""
    depth = 0
    for a in axes[:-1]:
        c.open("{")
        c.add("int64_t r%d;" % a)
        if bounded:
            c.open("for (r%d = lo[%d]; r%d < hi[%d]; ++r%d) {" % (a, a, a, a, a))
        else:
            c.open("for (r%d = 0; r%d < %s.shape[%d]; ++r%d) {" % (a, a, x, a, a))
        c.add("const %s *pr%d = %s + r%d * %s.strides[%d];" % (plan.in_ctype, a, base, a, x, a))
        base = "pr%d" % a
        depth += 1
    last = axes[-1]
    if bounded:
        _inner_loop(c, plan, "(%s + lo[%d] * %s.strides[%d])" % (base, last, x, last),
                    "(hi[%d] - lo[%d])" % (last, last), "%s.strides[%d]" % (x, last))
    else:
        _inner_loop(c, plan, base, "%s.shape[%d]" % (x, last), "%s.strides[%d]" % (x, last))
    for _ in range(depth):
        c.close("}")
        c.close("}")


def _inner_loop(c, plan, base, count, stride):
    """Fold the ``count`` elements at ``base`` (``stride`` apart) into acc."""
    if plan.pairwise is not None:
        c.add("acc += %s(%s, %s, %s);" % (plan.pairwise, base, count, stride))
        return
    if plan.lanes is not None and plan.is_arg:
        c.add("%s(%s, %s, %s, k, &acc, &idx);" % (plan.lanes, base, count, stride))
        c.add("k += %s;" % count)
        return
    if plan.lanes is not None:
        c.add("acc = %s(%s, %s, %s, acc);" % (plan.lanes, base, count, stride))
        return
    c.open("{")
    c.add("const int64_t n = %s, s = %s;" % (count, stride))
    c.add("int64_t i;")
    c.open("if (s == 1) {   /* contiguous: plain indexing the compiler can vectorise */")
    _element_loop(c, plan, "%s[i]" % base)
    c.close("} else {")
    c.level += 1
    _element_loop(c, plan, "%s[i * s]" % base)
    c.close("}")
    c.close("}")


def _element_loop(c, plan, src):
    c.open("for (i = 0; i < n; ++i) {")
    c.add("const %s v = %s;" % (plan.value_ctype, plan.load(src)))
    c.add(*plan.update)
    c.close("}")


# ------------------------------------------------------------------ the DelegatedCOp interface


def c_code(op, node, name, inputs, outputs, sub):
    return _generate(op, node, name, inputs[0], outputs[0], sub)


def c_code_cleanup(op, node, name, inputs, outputs, sub):
    plan = _Plan(op, node)
    lines = []
    if _uses_temporary(plan):
        lines.append("ffg_release(%s, %s_acc);   /* the accumulators (NULL when never allocated) */"
                     % (sub["allocator"], name))
    if _threaded(node):
        lines.append("ffg_release(%s, %s_part);   /* the chunks' accumulators (NULL when never allocated) */"
                     % (sub["allocator"], name))
        if plan.is_arg:
            lines.append("ffg_release(%s, %s_part_idx);" % (sub["allocator"], name))
    return "\n".join(lines)


def c_support_code_apply(op, node, name):
    plan = _Plan(op, node)
    parts = []
    if plan.pairwise is not None:
        parts.append(_pairwise_helper(plan.pairwise, plan.in_dtype, plan.acc_dtype))
    elif plan.is_arg:
        kind = plan.kind[3:]
        # each helper has an include guard: another node may paste the same max/min helper
        parts += [_lanes_helper("ffg_reduce_%s_%s" % (kind, plan.in_dtype), kind, plan.in_dtype),
                  _arg_helper(plan.lanes, plan.kind, plan.in_dtype, plan.init)]
    elif plan.lanes is not None:
        parts.append(_lanes_helper(plan.lanes, plan.kind, plan.in_dtype))
    if _threaded(node):
        chunk = _into_output_chunk_function if _into_output(plan) else _per_output_chunk_function
        parts.append(chunk(plan, name))
    return "\n\n".join(parts)


def c_support_code(op):
    return threads_c.pool_support_code()


def c_headers(op):
    return ["<math.h>"]


def c_compile_args(op):
    return threads_c.compile_args()


def c_code_cache_version(op):
    return VERSION
