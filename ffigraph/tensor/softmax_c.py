"""Plain-C code of the softmax family (``special.py``) and of the cross-entropies (``nnet.py``).

The ops delegate here (``c_impl``); ``c_code`` picks the generator by the op's ``c_kind``.

Softmax, LogSoftmax and LogSumExp work on *lanes*: the elements that share an index on the kept
axes, walked over the reduced axes (one axis, or every axis for ``axis=None``). Nested loops walk
the kept axes, and for each lane nested loops over the reduced axes run three passes: the lane's
maximum, the sum of ``exp(x - shift)``, then the output. Arithmetic is in double (float32 values
are widened as they are loaded, the results rounded once). Strides are read from the array locals
(in elements, negative ones included); the output is allocated C-contiguous. The special values
follow ``scipy.special`` (which PyTensor's ``perform`` calls):

* softmax shifts by the lane's maximum, whatever it is: a NaN, a +inf or an all -inf lane gives
  NaN everywhere in the lane (``exp(inf - inf)``);
* log_softmax and logsumexp shift by the maximum only where it is finite (by 0 otherwise): an
  all -inf lane gives log_softmax NaN and logsumexp -inf, a +inf gives logsumexp +inf, a NaN
  gives NaN; an empty lane gives logsumexp -inf (the log of an empty sum) and nothing else to
  write.

The cross-entropies take a matrix (rows of class scores) and an integer vector of labels, one per
row. Every label is checked before anything is computed: one outside ``[0, classes)`` is
FFG_ERR_INDEX (an IndexError in Python) naming the label, its row and the number of classes, as
``perform`` does; the labels' and the rows' counts must agree (FFG_ERR_VALUE).

* CrossentropySoftmax1Hot: per row, in ONE pass over the logits, a running maximum ``m`` and the
  sum ``s`` of ``exp(x - m)`` (rescaled by ``exp(m_old - m_new)`` when the maximum grows); the
  loss is ``m + log(s) - x[label]`` (with logsumexp's special values above).
* CrossentropySoftmax1HotDx: ``g[i] * (softmax(x)[i, j] - (j == label[i]))``, from the row's
  maximum, ``exp(x - max)`` stored in the output and their sum: finite for any finite logits.
* CrossentropyCategorical1Hot: ``-log(p[i, label[i]])``; its gradient op writes
  ``-g[i] / p[i, label[i]]`` at the label and zeros elsewhere.

Values other than float32 and float64 raise MethodNotDefined (the ops cast integer inputs to a
float dtype when their nodes are made, so that only concerns float16).
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.c_interface import MethodNotDefined, c_format_text as _message
from ffigraph.tensor.ctype import c_element_type, float_element_type as _float_type
from ffigraph.tensor.reduce_c import _Lines

VERSION = (1,)


# ------------------------------------------------------------------ helpers




def _int_type(op, dtype):
    if np.dtype(dtype).kind not in "iu":
        raise MethodNotDefined("%s: labels must be integers, not %s" % (op, dtype))
    return c_element_type(dtype)


def _offset(index_names, array, axes):
    """C for the element offset ``i * array.strides[a] + ...`` (``0`` with no axes)."""
    terms = ["%s * %s.strides[%d]" % (i, array, a) for i, a in zip(index_names, axes)]
    return " + ".join(terms) or "0"


# ------------------------------------------------------------------ softmax, log_softmax, logsumexp


_KIND_NOTES = {
    "softmax": "exp(x - max) / sum(exp(x - max)) along each lane",
    "log_softmax": "(x - max) - log(sum(exp(x - max))) along each lane (max: the lane's maximum where finite, else 0)",
    "logsumexp": "max + log(sum(exp(x - max))) of each lane (max: the lane's maximum where finite, else 0)",
}


def _lanes_code(op, node, x, z, sub):
    kind = op.kind
    xtype = node.inputs[0].type
    ctype = _float_type(op, xtype.dtype)
    nd = xtype.ndim
    axes = op.reduced_axes(nd)
    kept = tuple(a for a in range(nd) if a not in axes)
    err, fail, allocator = sub["err"], sub["fail"], sub["allocator"]
    ivars = ["i%d" % a for a in kept]     # the kept axes' indices
    jvars = ["j%d" % a for a in axes]     # the lane's indices
    c = _Lines()
    c.add("/* %s: %s, over axes (%s) */" % (op, _KIND_NOTES[kind], ", ".join(map(str, axes))))
    c.open()
    c.add("const %s *xp = (const %s *)%s.data;" % (ctype, ctype, x))
    c.add("%s *zp;" % ctype)
    if kind == "logsumexp":
        # the output has the kept axes of x
        c.add("int64_t zshape[%d];" % max(len(kept), 1))
        for k, a in enumerate(kept):
            c.add("zshape[%d] = %s.shape[%d];" % (k, x, a))
        c.add("if (ffg_alloc_array(&%s, %d, zshape, sizeof(%s), %s, %s))" % (z, len(kept), ctype, allocator, err))
        zaxes_kept, zaxes_lane = tuple(range(len(kept))), ()
    else:
        c.add("if (ffg_alloc_array(&%s, %d, %s.shape, sizeof(%s), %s, %s))" % (z, nd, x, ctype, allocator, err))
        zaxes_kept, zaxes_lane = kept, axes
    c.add("    " + fail)
    c.add("zp = (%s *)%s.data;" % (ctype, z))
    if ivars or jvars:
        c.add("int64_t %s;" % ", ".join(ivars + jvars))
    c.add("/* one lane per index of the kept axes */")
    for i, a in zip(ivars, kept):
        c.open("for (%s = 0; %s < %s.shape[%d]; ++%s) {" % (i, i, x, a, i))
    c.add("const %s *xl = xp + %s;" % (ctype, _offset(ivars, x, kept)))
    c.add("%s *zl = zp + %s;" % (ctype, _offset(ivars, z, zaxes_kept)))
    c.add("double m = -INFINITY, s = 0.0;")

    load = "xl[xo]" if ctype == "double" else "(double)xl[xo]"

    def store(expr):
        return expr if ctype == "double" else "(float)(%s)" % expr

    def lane_pass(comment, body, writes=False, reads=True):
        """``body`` (lines using xo, and zo when ``writes``: the element's offsets) for every
        element of the lane, after ``comment``."""
        c.add(comment)
        if not jvars:
            c.open()   # a 0-d lane: one element, at offset 0
        for j, a in zip(jvars, axes):
            c.open("for (%s = 0; %s < %s.shape[%d]; ++%s) {" % (j, j, x, a, j))
        if reads:
            c.add("const int64_t xo = %s;" % _offset(jvars, x, axes))
        if writes:
            c.add("const int64_t zo = %s;" % _offset(jvars, z, zaxes_lane))
        c.add(*body)
        for _ in range(max(len(jvars), 1)):
            c.close()

    lane_pass("/* the lane's maximum (a NaN wins) */",
              ["const double v = %s;" % load, "if (v > m || v != v)", "    m = v;"])
    if kind == "softmax":
        lane_pass("/* e = exp(x - max), stored in the output, and the sum of the e */",
                  ["const double e = exp(%s - m);" % load, "zl[zo] = %s;" % store("e"), "s += e;"], writes=True)
        lane_pass("/* divide by the sum */", ["zl[zo] = %s;" % store("(double)zl[zo] / s" if ctype != "double"
                                                                      else "zl[zo] / s")], writes=True, reads=False)
    else:
        c.add("/* shift by the maximum only where it is finite, as scipy does */")
        c.add("if (!(m > -INFINITY && m < INFINITY))")
        c.add("    m = 0.0;")
        lane_pass("/* the sum of exp(x - shift) */", ["s += exp(%s - m);" % load])
        if kind == "log_softmax":
            c.add("s = log(s);")
            lane_pass("/* x - shift - log(sum) */", ["zl[zo] = %s;" % store("(%s - m) - s" % load)], writes=True)
        else:
            c.add("/* shift + log(sum): -inf for an empty or all -inf lane, +inf with a +inf */")
            c.add("*zl = %s;" % store("log(s) + m"))
    for _ in ivars:
        c.close()
    c.close()
    return c.text()


# ------------------------------------------------------------------ the cross-entropies


def _check_labels(c, op, x, y, ytype, sub):
    """C that checks the label count against x's rows and every label against x's columns."""
    err, fail = sub["err"], sub["fail"]
    label = _message(op)
    c.add("/* the labels: one per row, each in [0, classes) */")
    c.add("if (%s.shape[0] != %s.shape[0]) {" % (y, x))
    c.add('    ffg_set_error(%s, FFG_ERR_VALUE, -1, "%s: %%lld labels for %%lld rows", (long long)%s.shape[0], '
          '(long long)%s.shape[0]);' % (err, label, y, x))
    c.add("    " + fail)
    c.add("}")
    c.open("for (i = 0; i < %s.shape[0]; ++i) {" % x)
    c.add("const %s yi = ((const %s *)%s.data)[i * %s.strides[0]];" % (ytype, ytype, y, y))
    signed = ytype.startswith("int")
    test = ("yi < 0 || (uint64_t)yi >= (uint64_t)%s.shape[1]" % x) if signed else \
        "(uint64_t)yi >= (uint64_t)%s.shape[1]" % x
    fmt = "%lld" if signed else "%llu"
    cast = "(long long)" if signed else "(unsigned long long)"
    c.open("if (%s) {" % test)
    c.add('ffg_set_error(%s, FFG_ERR_INDEX, -1, "%s: label %s (row %%lld) is out of range for %%lld classes", '
          '%syi, (long long)i, (long long)%s.shape[1]);' % (err, label, fmt, cast, x))
    c.add(fail)
    c.close()
    c.close()


def _label(ytype, y, row="i"):
    return "(int64_t)((const %s *)%s.data)[%s * %s.strides[0]]" % (ytype, y, row, y)


def _rows_begin(op, node, inputs, z, sub, what, counters):
    """The start of a cross-entropy's C: a block opened after a comment (``what`` the op computes),
    the loop counters declared, the inputs checked (for a gradient op, whose first input is the
    output gradient ``g``, its length against the rows of ``x`` too; then the labels, see
    ``_check_labels``) and the output ``z`` allocated, C-contiguous, with the leading axes of ``x``
    (one per axis of the op's output). Returns the lines, x's and the labels' C element types."""
    x, y = inputs[-2:]
    ctype = _float_type(op, node.inputs[-2].type.dtype)
    ytype = _int_type(op, node.inputs[-1].type.dtype)
    err, fail = sub["err"], sub["fail"]
    c = _Lines()
    c.add("/* %s: %s */" % (op, what))
    c.open()
    c.add("int64_t %s;" % counters)
    if len(inputs) == 3:
        g = inputs[0]
        c.add("if (%s.shape[0] != %s.shape[0]) {" % (g, x))
        c.add('    ffg_set_error(%s, FFG_ERR_VALUE, -1, "%s: %%lld gradients for %%lld rows", (long long)%s.shape[0], '
              '(long long)%s.shape[0]);' % (err, _message(op), g, x))
        c.add("    " + fail)
        c.add("}")
    _check_labels(c, op, x, y, ytype, sub)
    c.add("if (ffg_alloc_array(&%s, %d, %s.shape, sizeof(%s), %s, %s))"
          % (z, node.outputs[0].type.ndim, x, ctype, sub["allocator"], err))
    c.add("    " + fail)
    return c, ctype, ytype


def _softmax_nll_code(op, node, inputs, outputs, sub):
    """CrossentropySoftmax1Hot(x, labels) -> per-row logsumexp(x) - x[label], one pass."""
    x, y = inputs
    (z,) = outputs
    c, ctype, ytype = _rows_begin(op, node, inputs, z, sub, "per row, -log_softmax(x)[label] = logsumexp(x) - "
                                  "x[label], in one pass over x", "i, j")
    c.open("for (i = 0; i < %s.shape[0]; ++i) {" % x)
    c.add("const %s *xr = (const %s *)%s.data + i * %s.strides[0];" % (ctype, ctype, x, x))
    c.add("const int64_t xs = %s.strides[1];" % x)
    c.add("double m = -INFINITY, s = 0.0, lse;")
    c.add("int nan_seen = 0;")
    c.add("/* a running maximum m and the sum s of exp(x - m), rescaled when m grows */")
    c.open("for (j = 0; j < %s.shape[1]; ++j) {" % x)
    c.add("const double v = (double)xr[j * xs];")
    c.add("if (v > m) {")
    c.add("    s = s * exp(m - v) + 1.0;   /* (0 * 0 + 1 for the first finite value) */")
    c.add("    m = v;")
    c.add("} else if (v != v) {")
    c.add("    nan_seen = 1;")
    c.add("} else if (v > -INFINITY && m < INFINITY) {")
    c.add("    s += exp(v - m);")
    c.add("}")
    c.close()
    c.add("/* logsumexp: NaN with a NaN in the row, the maximum itself when it is infinite */")
    c.add("if (nan_seen)")
    c.add("    lse = NAN;")
    c.add("else if (m == INFINITY || m == -INFINITY)")
    c.add("    lse = m;")
    c.add("else")
    c.add("    lse = m + log(s);")
    c.add("((%s *)%s.data)[i * %s.strides[0]] = (%s)(lse - (double)xr[%s * xs]);"
          % (ctype, z, z, ctype, _label(ytype, y)))
    c.close()
    c.close()
    return c.text()


def _softmax_nll_dx_code(op, node, inputs, outputs, sub):
    """CrossentropySoftmax1HotDx(g, x, labels) -> g[i] * (softmax(x)[i] - onehot(label[i]))."""
    g, x, y = inputs
    (dx,) = outputs
    gtype = _float_type(op, node.inputs[0].type.dtype)
    c, ctype, ytype = _rows_begin(op, node, inputs, dx, sub, "g[i] * (softmax(x)[i, j] - (j == label[i])), each "
                                  "row shifted by its maximum", "i, j")
    c.open("for (i = 0; i < %s.shape[0]; ++i) {" % x)
    c.add("const %s *xr = (const %s *)%s.data + i * %s.strides[0];" % (ctype, ctype, x, x))
    c.add("%s *dr = (%s *)%s.data + i * %s.strides[0];" % (ctype, ctype, dx, dx))
    c.add("const int64_t xs = %s.strides[1], ds = %s.strides[1];" % (x, dx))
    c.add("const double gi = (double)((const %s *)%s.data)[i * %s.strides[0]];" % (gtype, g, g))
    c.add("const int64_t label = %s;" % _label(ytype, y))
    c.add("double m = -INFINITY, s = 0.0;")
    c.add("/* the row's maximum (a NaN wins) */")
    c.open("for (j = 0; j < %s.shape[1]; ++j) {" % x)
    c.add("const double v = (double)xr[j * xs];")
    c.add("if (v > m || v != v)")
    c.add("    m = v;")
    c.close()
    c.add("/* e = exp(x - max), stored in the output, and their sum */")
    c.open("for (j = 0; j < %s.shape[1]; ++j) {" % x)
    c.add("const double e = exp((double)xr[j * xs] - m);")
    c.add("dr[j * ds] = (%s)e;" % ctype)
    c.add("s += e;")
    c.close()
    c.add("/* g * (e / sum - onehot) */")
    c.open("for (j = 0; j < %s.shape[1]; ++j) {" % x)
    c.add("const double p = (double)dr[j * ds] / s;")
    c.add("dr[j * ds] = (%s)(gi * (j == label ? p - 1.0 : p));" % ctype)
    c.close()
    c.close()
    c.close()
    return c.text()


def _categorical_code(op, node, inputs, outputs, sub):
    """CrossentropyCategorical1Hot(p, labels) -> -log(p[i, label[i]])."""
    p, y = inputs
    (z,) = outputs
    c, ctype, ytype = _rows_begin(op, node, inputs, z, sub, "-log(p[i, label[i]]) per row", "i")
    log = "logf" if np.dtype(node.inputs[0].type.dtype).itemsize == 4 else "log"
    c.open("for (i = 0; i < %s.shape[0]; ++i) {" % p)
    c.add("const %s pi = ((const %s *)%s.data)[i * %s.strides[0] + %s * %s.strides[1]];"
          % (ctype, ctype, p, p, _label(ytype, y), p))
    c.add("((%s *)%s.data)[i * %s.strides[0]] = -%s(pi);" % (ctype, z, z, log))
    c.close()
    c.close()
    return c.text()


def _categorical_grad_code(op, node, inputs, outputs, sub):
    """CrossentropyCategorical1HotGrad(g, p, labels) -> -g[i] / p[i, label[i]] at the label, 0 elsewhere."""
    g, p, y = inputs
    (dx,) = outputs
    gtype = _float_type(op, node.inputs[0].type.dtype)
    c, ctype, ytype = _rows_begin(op, node, inputs, dx, sub, "-g[i] / p[i, label[i]] at each row's label, zeros "
                                  "elsewhere", "i")
    c.add("memset(%s.data, 0, (size_t)ffg_size(2, %s.shape) * sizeof(%s));" % (dx, p, ctype))
    c.open("for (i = 0; i < %s.shape[0]; ++i) {" % p)
    c.add("const int64_t label = %s;" % _label(ytype, y))
    c.add("const %s pi = ((const %s *)%s.data)[i * %s.strides[0] + label * %s.strides[1]];" % (ctype, ctype, p, p, p))
    c.add("const %s gi = (%s)((const %s *)%s.data)[i * %s.strides[0]];" % (ctype, ctype, gtype, g, g))
    c.add("((%s *)%s.data)[i * %s.strides[0] + label * %s.strides[1]] = -gi / pi;" % (ctype, dx, dx, dx))
    c.close()
    c.close()
    return c.text()


_GENERATORS = {
    "softmax_nll": _softmax_nll_code,
    "softmax_nll_dx": _softmax_nll_dx_code,
    "categorical": _categorical_code,
    "categorical_grad": _categorical_grad_code,
}


# ------------------------------------------------------------------ the DelegatedCOp interface


def c_code(op, node, name, inputs, outputs, sub):
    kind = op.c_kind
    if kind == "lanes":
        return _lanes_code(op, node, inputs[0], outputs[0], sub)
    return _GENERATORS[kind](op, node, inputs, outputs, sub)


def c_headers(op):
    return ["<math.h>"]


def c_code_cache_version(op):
    return VERSION
