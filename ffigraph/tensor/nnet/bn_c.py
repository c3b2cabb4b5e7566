"""Plain-C code of the batch-normalization ops (``ffigraph.tensor.nnet.bn``).

The ops delegate here (``c_impl``); ``c_code`` picks the body by the op's ``c_kind``.

Every op works on *lanes*: the elements of ``x`` that share an index on the kept axes (those not
normalized), walked over the normalized axes. The parameters (``scale``, ``bias``, means,
variances, their gradients) have one value per lane: they are laid out like ``x`` with length 1
on the normalized axes, any strides. The lanes are visited in *units*:

* when the last axis of ``x`` is normalized (``'spatial'`` on NCHW), a unit is one lane, and its
  elements are walked with the last axis innermost (contiguous for a C-contiguous ``x``);
* when the last axis is kept (``'per-activation'``), a unit is a block of up to ``BLOCK`` lanes
  along it: the elements of the block's lanes are walked together, the block's lanes innermost,
  so memory is read in runs instead of one element per row.

Within a unit each op makes the passes its math needs, each a walk of the unit's elements with
per-lane accumulators in double (float32 values are widened when loaded, results rounded once):

* AbstractBatchNormTrain: (1) shifted sums ``s1 = sum(x - k)``, ``s2 = sum((x - k)^2)`` with ``k``
  the lane's first element (exact for a constant lane, and free of the cancellation of plain
  sums of squares when the mean is large against the spread); ``mean = k + s1 / m``,
  ``var = (s2 - s1^2 / m) / m`` (clamped at 0), ``invstd = 1 / sqrt(var + eps)``, the running
  averages; (2) ``out = (x - mean) * (scale * invstd) + bias``;
* AbstractBatchNormInference: one pass, ``out = (x - mean) * (scale / sqrt(var + eps)) + bias``;
* AbstractBatchNormTrainGrad: (1) ``sum(dy)``, ``sum(dy * xd)`` and ``sum(xd)`` with ``xd = x -
  mean``; (2) ``dx = scale * (c - mean(c))``, ``c = dy * invstd - xd * invstd^3 * mean(dy * xd)``,
  expanded to ``A * dy + B * xd + C`` per lane (plus ``dmean / m - dinvstd * invstd^3 * xd / m``
  when the node has those inputs);
* AbstractBatchNormInferenceGrad: one pass writing ``dx = dy * scale / sqrt(var + eps)`` and
  summing ``dy`` and ``dy * (x - mean)``.

An empty lane (a normalized axis of length 0) gives NaN means and variances (0 / 0), and sums
of 0. The parameters' shapes are checked before anything is read: each must be ``x``'s shape with
1 on the normalized axes (FFG_ERR_VALUE naming the input otherwise), and ``dy`` must have ``x``'s
shape. Outputs are allocated C-contiguous.

The walks are written for speed without giving up determinism: strides and lengths are copied to
locals (the library is built with -fno-strict-aliasing), the innermost loop has a unit-stride copy
that the compiler vectorizes (the lanes of a block are independent), and in a unit of one lane the
sums of the innermost loop go to ``SPLIT`` accumulators (element ``k`` into ``k % SPLIT``), added
in a fixed order afterwards, so that they are not one chain of dependent additions.

Nodes of the same kind, rank, axes, dtypes and optional inputs share one copy of their struct and
functions (``_shared_name``, behind an include guard): two batch-norm layers of a network cost one.

Threads (``threads_c``): when the loop may be large, the units are cut into chunks run by the
library's pool. A unit is computed whole by one thread, so every result is the same bits
whatever the thread count.
"""
from __future__ import annotations

import hashlib

import numpy as np

from ffigraph.graph.c_interface import MethodNotDefined, c_format_text as _message
from ffigraph.tensor import threads_c
from ffigraph.tensor.ctype import c_element_type, float_element_type as _float_type
from ffigraph.tensor.reduce_c import _Lines

VERSION = (1,)

#: lanes per unit when the last axis of x is kept (the per-lane arrays are this long)
BLOCK = 64




# ------------------------------------------------------------------ what each op reads and writes

# Per kind: the roles of the node's inputs and outputs, in order. A role is (name, kind): kind 'x'
# (x's shape), 'p' (a parameter: one value per lane) or 's' (a 0-d scalar). Optional trailing
# inputs and outputs are named in _OPTIONAL and present when the node has them.
_ROLES = {
    "train": ([("x", "x"), ("scale", "p"), ("bias", "p"), ("epsilon", "s"), ("factor", "s"),
               ("running_mean", "p"), ("running_var", "p")],
              [("out", "x"), ("mean", "p"), ("invstd", "p"), ("new_running_mean", "p"), ("new_running_var", "p")]),
    "inference": ([("x", "x"), ("scale", "p"), ("bias", "p"), ("estimated_mean", "p"),
                   ("estimated_variance", "p"), ("epsilon", "s")],
                  [("out", "x")]),
    "train_grad": ([("x", "x"), ("dy", "x"), ("scale", "p"), ("x_mean", "p"), ("x_invstd", "p"), ("epsilon", "s"),
                    ("dmean", "p"), ("dinvstd", "p")],
                   [("dx", "x"), ("dscale", "p"), ("dbias", "p")]),
    "inference_grad": ([("x", "x"), ("dy", "x"), ("scale", "p"), ("estimated_mean", "p"),
                        ("estimated_variance", "p"), ("epsilon", "s")],
                       [("dx", "x"), ("dscale", "p"), ("dbias", "p"), ("dmean", "p"), ("dvar", "p")]),
}


class _Plan:
    """The node's layout: its roles, the kept and normalized axes, and how lanes form units."""

    def __init__(self, op, node):
        self.op = op
        self.kind = op.c_kind
        self.nd = node.inputs[0].type.ndim
        self.axes = tuple(op.axes)
        self.kept = tuple(a for a in range(self.nd) if a not in self.axes)
        self.ctype = _float_type(op, node.outputs[0].type.dtype)
        for v in list(node.inputs) + list(node.outputs):
            if v.type.ndim:
                _float_type(op, v.type.dtype)
        self.scalar_types = {}
        in_roles, out_roles = _ROLES[self.kind]
        self.inputs = in_roles[:len(node.inputs)]
        self.outputs = out_roles[:len(node.outputs)]
        for (role, kind), v in zip(self.inputs, node.inputs):
            if kind == "s":
                self.scalar_types[role] = _float_type(op, v.type.dtype)
            elif v.type.dtype != node.outputs[0].type.dtype:
                raise MethodNotDefined("%s: the input %s is %s, not %s" % (op, role, v.type.dtype,
                                                                           node.outputs[0].type.dtype))
        self.roles = [r for r, _ in self.inputs] + [r for r, _ in self.outputs]
        # the last kept axis is the lanes' axis of a unit when it is the last axis of x
        self.vector = bool(self.kept) and self.kept[-1] == self.nd - 1
        self.lane_axis = self.kept[-1] if self.vector else None
        self.outer = self.kept[:-1] if self.vector else self.kept
        self.nb = BLOCK if self.vector else 1
        self.threaded = threads_c.worth_threads(node.inputs[0].type.shape)

    def has(self, role):
        return role in self.roles

    def kind_of(self, role):
        for r, k in self.inputs + self.outputs:
            if r == role:
                return k
        raise KeyError(role)

    def is_input(self, role):
        return role in [r for r, _ in self.inputs]

    def index(self, role):
        """(in or out, position) of ``role`` among the ctx's arrays."""
        ins = [r for r, k in self.inputs if k != "s"]
        if role in ins:
            return "in", ins.index(role)
        return "out", [r for r, _ in self.outputs].index(role)


# ------------------------------------------------------------------ the unit function


#: in a unit of one lane, the innermost loop sums into this many accumulators per sum (element k
#: into accumulator k % SPLIT, combined in a fixed order afterwards): one chain of dependent
#: additions would wait for each add's latency
SPLIT = 4


def _unit_function(plan, name, body, lane_arrays):
    """``<name>_units(K, u0, u1)``: units [u0, u1) of the node's loops. ``body`` is a list of
    sections: ``("lanes", lines)`` run for each lane of the unit (``j`` its index in the unit,
    ``%(role)s`` a parameter's value (inputs) or its element (outputs)), ``("elements", lines,
    sums)`` run for each element of the unit (``%(role)s`` the element of an x-shaped array,
    ``[%(q)s]`` the index of the accumulators of ``sums``, lane arrays that the lines add into).
    Per-lane arrays ``lane_arrays`` (doubles) hold what passes hand on.

    Every stride and length is copied to a local first (the library is built with
    -fno-strict-aliasing: a store through a float pointer could otherwise change them as far as the
    compiler knows). The innermost loop (the lanes of a block, or the last normalized axis) has a
    copy for unit strides, which the compiler vectorizes."""
    T = plan.ctype
    nd = plan.nd
    arrays = [r for r in plan.roles if plan.kind_of(r) != "s"]
    inner_axis = plan.lane_axis if plan.vector else nd - 1
    n_acc = plan.nb if plan.vector else SPLIT
    c = _Lines()
    c.add("/* %s: units [u0, u1) of its lanes (%s) */" % (plan.op, "blocks of up to %d lanes along axis %d"
                                                         % (BLOCK, plan.lane_axis) if plan.vector else "one lane each"))
    c.add("static void %s_units(const %s_ctx *K, int64_t u0, int64_t u1)" % (name, name))
    c.open("{")
    c.add("const double md = (double)K->m;   /* elements per lane */")
    c.add("const double eps = K->eps, factor = K->factor;")
    c.add("const int64_t %s;" % ", ".join("n%d = K->in[0]->shape[%d]" % (a, a) for a in range(nd)))
    for role in arrays:
        side, i = plan.index(role)
        const = "const " if side == "in" else ""
        c.add("%s%s *const d_%s = (%s%s *)K->%s[%d]->data;" % (const, T, role, const, T, side, i))
        c.add("const int64_t %s;" % ", ".join("s_%s%d = K->%s[%d]->strides[%d]" % (role, a, side, i, a)
                                               for a in range(nd)))
    c.add("int64_t u, j, q;")
    loops = ["r%d" % a for a in plan.axes]
    c.add("int64_t %s;" % ", ".join(loops))
    if lane_arrays:
        c.add("double %s;" % ", ".join("%s[%d]" % (a, n_acc) for a in lane_arrays))
    c.add("(void)eps; (void)factor; (void)md; (void)q;")
    for role in arrays:
        c.add("(void)%s;" % ", (void)".join("s_%s%d" % (role, a) for a in range(nd)))
    c.open("for (u = u0; u < u1; ++u) {")
    c.add("int64_t rest = u;")
    if plan.vector:
        kl = plan.lane_axis
        c.add("/* the block of lanes [j0, j0 + nb) along axis %d */" % kl)
        c.add("const int64_t nblocks = (n%d + %d - 1) / %d;" % (kl, BLOCK, BLOCK))
        c.add("const int64_t j0 = (rest %% nblocks) * %d;" % BLOCK)
        c.add("const int64_t nb = n%d - j0 < %d ? n%d - j0 : %d;" % (kl, BLOCK, kl, BLOCK))
        c.add("rest /= nblocks;")
    else:
        c.add("const int64_t nb = 1;   /* one lane */")
    for k in reversed(plan.outer):
        c.add("const int64_t i%d = rest %% n%d;" % (k, k))
        c.add("rest /= n%d;" % k)
    c.add("(void)rest;")
    for role in arrays:
        terms = ["i%d * s_%s%d" % (k, role, k) for k in plan.outer]
        if plan.vector:
            terms.append("j0 * s_%s%d" % (role, plan.lane_axis))
        const = "const " if plan.is_input(role) else ""
        c.add("%s%s *const b_%s = d_%s + %s;" % (const, T, role, role, " + ".join(terms) or "0"))

    def lane_value(role):
        if plan.vector:
            return "b_%s[j * s_%s%d]" % (role, role, plan.lane_axis)
        return "b_%s[0]" % role

    for section in body:
        kind, lines = section[0], section[1]
        text = "\n".join(lines)
        used = [r for r in arrays if "%%(%s)s" % r in text]
        if kind == "lanes":
            mapping = {}
            for r in used:
                mapping[r] = ("(double)%s" % lane_value(r)) if plan.is_input(r) else lane_value(r)
            c.open("for (j = 0; j < nb; ++j) {")
            c.add(*[ln % mapping for ln in lines])
            c.close()
            continue
        sums = section[2]
        _elements(c, plan, lines, sums, used, loops, inner_axis)
    c.close()
    c.close()
    return c.text()


def _elements(c, plan, lines, sums, used, loops, inner_axis):
    """One walk over the unit's elements: the normalized axes outside, the innermost loop (``t``: the
    block's lanes, or the last normalized axis) in a unit-stride copy and a general one."""
    outer = [(r, a) for r, a in zip(loops, plan.axes) if a != inner_axis]
    inner = "j" if plan.vector else "r%d" % inner_axis
    split = sums and not plan.vector
    c.open("{")
    if not plan.vector:
        c.add("j = 0;")
    if split:
        c.add("/* %d accumulators per sum, added up in a fixed order after the walk */" % SPLIT)
        c.open("for (q = 1; q < %d; ++q) {" % SPLIT)
        c.add(*["%s[q] = 0.0;" % a for a in sums])
        c.close()
    unit = " && ".join("s_%s%d == 1" % (r, inner_axis) for r in used) or "1"
    for r, a in outer:
        c.open("for (%s = 0; %s < n%d; ++%s) {" % (r, r, a, r))
    for r in used:
        c.add("const int64_t o_%s = %s;" % (r, " + ".join("%s * s_%s%d" % (i, r, a) for i, a in outer) or "0"))
    n_inner = "nb" if plan.vector else "n%d" % inner_axis

    def element(index, q, unit_stride):
        mapping = {"q": q}
        for r in used:
            at = "o_%s + %s" % (r, index) if unit_stride else "o_%s + (%s) * s_%s%d" % (r, index, r, inner_axis)
            mapping[r] = ("(double)b_%s[%s]" % (r, at)) if plan.is_input(r) else "b_%s[%s]" % (r, at)
        c.open("{")
        c.add(*[ln % mapping for ln in lines])
        c.close()

    for unit_stride in (True, False):
        c.open(("if (%s) {" % unit) if unit_stride else "else {")
        c.add("/* %s strides along axis %d */" % ("unit" if unit_stride else "any", inner_axis))
        if split and unit_stride:
            c.open("for (%s = 0; %s + %d <= %s; %s += %d) {" % (inner, inner, SPLIT, n_inner, inner, SPLIT))
            for k in range(SPLIT):
                element("%s + %d" % (inner, k), str(k), unit_stride)
            c.close()
            c.open("for (; %s < %s; ++%s) {" % (inner, n_inner, inner))
            element(inner, "0", unit_stride)
            c.close()
        else:
            c.open("for (%s = 0; %s < %s; ++%s) {" % (inner, inner, n_inner, inner))
            element(inner, "0" if split else "j", unit_stride)
            c.close()
        c.close()
    for _ in outer:
        c.close()
    if split:
        for a in sums:
            c.add("%s[0] = (%s[0] + %s[1]) + (%s[2] + %s[3]);" % (a, a, a, a, a))
    c.close()


def _store(plan, expr):
    return expr if plan.ctype == "double" else "(float)(%s)" % expr


def _train_body(plan):
    s = lambda e: _store(plan, e)  # noqa: E731
    running = plan.has("running_mean")
    lanes2 = [
        "const double d = s1[j] / md;",
        "const double mu = sh[j] + d;",
        "double var = (s2[j] - s1[j] * d) / md;",
        "if (var < 0.0)",
        "    var = 0.0;   /* rounding; a NaN stays NaN */",
        "const double is = 1.0 / sqrt(var + eps);",
        "%%(mean)s = %s;" % s("mu"),
        "%%(invstd)s = %s;" % s("is"),
    ]
    if running:
        lanes2 += [
            "/* the running averages; the variance's with the unbiased factor m / (m - 1) */",
            "%%(new_running_mean)s = %s;" % s("%(running_mean)s * (1.0 - factor) + mu * factor"),
            "%%(new_running_var)s = %s;" % s("%(running_var)s * (1.0 - factor) + (md / (md - 1.0)) * var "
                                             "* factor"),
        ]
    lanes2 += ["a[j] = %(scale)s * is;", "b[j] = %(bias)s;", "mm[j] = mu;"]
    body = [
        ("lanes", ["/* shift by the lane's first element */",
                   "sh[j] = K->m > 0 ? (double)b_x[j * %s] : 0.0;" % ("s_x%d" % plan.lane_axis if plan.vector
                                                                      else "0"),
                   "s1[j] = 0.0;", "s2[j] = 0.0;"]),
        ("elements", ["const double v = %(x)s - sh[j];", "s1[%(q)s] += v;", "s2[%(q)s] += v * v;"], ["s1", "s2"]),
        ("lanes", lanes2),
        ("elements", ["%%(out)s = %s;" % s("(%(x)s - mm[j]) * a[j] + b[j]")], []),
    ]
    return body, ["sh", "s1", "s2", "a", "b", "mm"]


def _inference_body(plan):
    s = lambda e: _store(plan, e)  # noqa: E731
    body = [
        ("lanes", ["a[j] = %(scale)s / sqrt(%(estimated_variance)s + eps);", "b[j] = %(bias)s;",
                   "mm[j] = %(estimated_mean)s;"]),
        ("elements", ["%%(out)s = %s;" % s("(%(x)s - mm[j]) * a[j] + b[j]")], []),
    ]
    return body, ["a", "b", "mm"]


def _train_grad_body(plan):
    s = lambda e: _store(plan, e)  # noqa: E731
    lanes2 = [
        "const double is = %(x_invstd)s, g = %(scale)s, is3 = is * is * is;",
        "const double mdx = sdx[j] / md;   /* mean(dy * xd) */",
        "%%(dscale)s = %s;" % s("K->m > 0 ? sdx[j] * is : 0.0"),
        "%%(dbias)s = %s;" % s("sdy[j]"),
        "/* dx = scale * (c - mean(c)), c = dy * invstd - xd * invstd^3 * mean(dy * xd) */",
        "ca[j] = g * is;",
        "cb[j] = -g * is3 * mdx;",
        "cc[j] = -g * (is * sdy[j] - is3 * mdx * sxd[j]) / md;",
    ]
    if plan.has("dmean"):
        lanes2 += ["/* the gradients reaching the mean and invstd outputs */",
                   "cb[j] -= %(dinvstd)s * is3 / md;", "cc[j] += %(dmean)s / md;"]
    body = [
        ("lanes", ["mm[j] = %(x_mean)s;", "sdy[j] = 0.0;", "sdx[j] = 0.0;", "sxd[j] = 0.0;"]),
        ("elements", ["const double g = %(dy)s, d = %(x)s - mm[j];", "sdy[%(q)s] += g;", "sdx[%(q)s] += g * d;",
                      "sxd[%(q)s] += d;"], ["sdy", "sdx", "sxd"]),
        ("lanes", lanes2),
        ("elements", ["%%(dx)s = %s;" % s("ca[j] * %(dy)s + cb[j] * (%(x)s - mm[j]) + cc[j]")], []),
    ]
    return body, ["mm", "sdy", "sdx", "sxd", "ca", "cb", "cc"]


def _inference_grad_body(plan):
    s = lambda e: _store(plan, e)  # noqa: E731
    body = [
        ("lanes", ["a[j] = %(scale)s / sqrt(%(estimated_variance)s + eps);", "mm[j] = %(estimated_mean)s;",
                   "sdy[j] = 0.0;", "sdx[j] = 0.0;"]),
        ("elements", ["const double g = %(dy)s;", "%%(dx)s = %s;" % s("g * a[j]"), "sdy[%(q)s] += g;",
                      "sdx[%(q)s] += g * (%(x)s - mm[j]);"], ["sdy", "sdx"]),
        ("lanes", ["const double ve = %(estimated_variance)s + eps, sd = sqrt(ve);",
                   "%%(dscale)s = %s;" % s("sdx[j] / sd"),
                   "%%(dbias)s = %s;" % s("sdy[j]"),
                   "%%(dmean)s = %s;" % s("-sdy[j] * a[j]"),
                   "%%(dvar)s = %s;" % s("-sdx[j] * %(scale)s / (2.0 * ve * sd)")]),
    ]
    return body, ["a", "mm", "sdy", "sdx"]


_BODIES = {"train": _train_body, "inference": _inference_body, "train_grad": _train_grad_body,
           "inference_grad": _inference_grad_body}


def _ctx_struct(plan, name):
    n_in = len([1 for _, k in plan.inputs if k != "s"])
    lines = ["/* %s: what its units read (threads_c runs them in chunks) */" % plan.op,
             "typedef struct %s_ctx {" % name,
             "    const ffg_array *in[%d];   /* %s */" % (n_in, ", ".join(r for r, k in plan.inputs if k != "s")),
             "    ffg_array *out[%d];        /* %s */" % (len(plan.outputs), ", ".join(r for r, _ in plan.outputs)),
             "    double eps, factor;",
             "    int64_t m;                 /* elements per lane */",
             "    int64_t units;",
             "    ffg_split split;" if plan.threaded else "    int unused_;",
             "} %s_ctx;" % name]
    return "\n".join(lines)


def _chunk_function(plan, name):
    return "\n".join([
        "/* %s: chunk `chunk` of its units, on one of the pool's threads (threads_c) */" % plan.op,
        "static int %s_chunk(void *ctx, int chunk, FfgError *err)" % name,
        "{",
        "    const %s_ctx *K = (const %s_ctx *)ctx;" % (name, name),
        "    int64_t lo = 0, hi = K->units;",
        "    (void)err;",
        "    if (K->split.n > 1)",
        "        ffg_split_range(&K->split, chunk, K->units, &lo, &hi);",
        "    %s_units(K, lo, hi);" % name,
        "    return 0;",
        "}",
    ])


def _shared_name(plan):
    """The C name of the node's struct and functions: the same for every node of the same kind,
    rank, axes, dtypes and optional inputs (their code is the same), so a library holds one copy."""
    key = repr((plan.kind, plan.nd, plan.axes, plan.ctype, sorted(plan.scalar_types.items()), plan.roles,
                plan.threaded, VERSION, BLOCK, SPLIT))
    return "ffg_bn_%s_%s" % (plan.kind, hashlib.sha1(key.encode()).hexdigest()[:12])


def c_support_code_apply(op, node, name):
    plan = _Plan(op, node)
    shared = _shared_name(plan)
    body, arrays = _BODIES[plan.kind](plan)
    parts = [_ctx_struct(plan, shared), _unit_function(plan, shared, body, arrays)]
    if plan.threaded:
        parts.append(_chunk_function(plan, shared))
    macro = shared.upper() + "_DEFINED"
    return "#ifndef %s\n#define %s\n%s\n#endif" % (macro, macro, "\n\n".join(parts))


# ------------------------------------------------------------------ the node's code


def c_code(op, node, name, inputs, outputs, sub):
    plan = _Plan(op, node)
    name = _shared_name(plan)
    T = plan.ctype
    nd = plan.nd
    err, fail, allocator = sub["err"], sub["fail"], sub["allocator"]
    label = _message(op)
    local = dict(zip([r for r, _ in plan.inputs], inputs))
    local.update(zip([r for r, _ in plan.outputs], outputs))
    x = local["x"]
    c = _Lines()
    c.add("/* %s: batch normalization over the axes (%s) */" % (op, ", ".join(map(str, plan.axes))))
    c.open("{")
    c.add("%s_ctx K;" % name)
    c.add("int64_t pshape[%d];   /* a parameter's shape: x's, 1 on the normalized axes */" % nd)
    c.add("int d;")
    c.add("char got_[160], want_[160];")
    c.add("K.m = 1;")
    c.add("K.units = 1;")
    for a in range(nd):
        if a in plan.axes:
            c.add("pshape[%d] = 1;" % a)
            c.add("K.m *= %s.shape[%d];" % (x, a))
        else:
            c.add("pshape[%d] = %s.shape[%d];" % (a, x, a))
    if plan.vector:
        c.add("K.units = (%s.shape[%d] + %d - 1) / %d;   /* blocks of lanes along the last axis */"
              % (x, plan.lane_axis, BLOCK, BLOCK))
    for k in plan.outer:
        c.add("K.units *= %s.shape[%d];" % (x, k))
    c.add("(void)d; (void)got_; (void)want_;")
    # checks
    for role, kind in plan.inputs:
        if kind == "s" or role == "x":
            continue
        v = local[role]
        want = "pshape" if kind == "p" else "%s.shape" % x
        what = ("x's shape with length 1 on the normalized axes" if kind == "p" else "the shape of x")
        c.add("/* %s: %s */" % (role, what))
        c.add("for (d = 0; d < %d && %s.shape[d] == %s[d]; ++d)" % (nd, v, want))
        c.add("    ;")
        c.open("if (d < %d) {" % nd)
        c.add("ffg_format_shape(got_, sizeof got_, %d, %s.shape);" % (nd, v))
        c.add("ffg_format_shape(want_, sizeof want_, %d, %s);" % (nd, want))
        c.add('ffg_set_error(%s, FFG_ERR_VALUE, -1, "%s: %s has shape %%s, but %%s is needed (%s)", got_, want_);'
              % (err, label, role, what))
        c.add(fail)
        c.close()
    # scalars
    c.add("K.eps = 0.0;")
    c.add("K.factor = 0.0;")
    for role, kind in plan.inputs:
        if kind == "s":
            field = "eps" if role == "epsilon" else "factor"
            st = plan.scalar_types[role]
            c.add("K.%s = (double)*(const %s *)%s.data;" % (field, st, local[role]))
    # outputs
    for role, kind in plan.outputs:
        shape = "%s.shape" % x if kind == "x" else "pshape"
        c.add("if (ffg_alloc_array(&%s, %d, %s, sizeof(%s), %s, %s))" % (local[role], nd, shape, T, allocator, err))
        c.add("    " + fail)
    n_in = 0
    for role, kind in plan.inputs:
        if kind != "s":
            c.add("K.in[%d] = &%s;" % (n_in, local[role]))
            n_in += 1
    for i, (role, _) in enumerate(plan.outputs):
        c.add("K.out[%d] = &%s;" % (i, local[role]))
    if plan.threaded:
        c.open("{")
        c.add("/* the units, in chunks that the pool's threads share (%s_chunk) */" % name)
        c.add("int64_t cut[2];")
        c.add("cut[0] = K.units;")
        c.add("cut[1] = K.units > 0 ? ffg_size(%d, %s.shape) / K.units : 0;   /* elements per unit */" % (nd, x))
        c.add("ffg_split_loop(&K.split, 2, cut, 1, 0x1ULL, 0, 0);")
        c.add(*threads_c.run_chunks(name, "K", sub))
        c.close()
    else:
        c.add("%s_units(&K, 0, K.units);" % name)
    c.close()
    return c.text()


def c_support_code(op):
    return threads_c.pool_support_code()


def c_headers(op):
    return ["<math.h>"]


def c_compile_args(op):
    return threads_c.compile_args()


def c_code_cache_version(op):
    return VERSION + (BLOCK,)
