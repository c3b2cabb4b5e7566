"""C for the fused ops: one loop over the broadcast inputs, evaluated block by block.

The innermost axis is cut into blocks of BLOCK elements. For each block every
Composite step runs as its own short loop over small buffers that stay in L1
cache: plain arithmetic loops the compiler vectorises, and transcendental
functions call vector routines (``ffigraph.scalar.vmath_c``, glibc's libmvec).
Inputs are read in place when contiguous along that axis and gathered into a
buffer otherwise (negative, zero and odd strides all take that path). An
output step writes straight into its output when the output is contiguous
there. ``FusedReduce`` folds each block into its output instead of storing it.
"""
from __future__ import annotations

import math

import numpy as np

from ffigraph.graph.c_interface import MethodNotDefined
from ffigraph.scalar.c_table import c_cast, c_expression, support_code
from ffigraph.scalar.composite import const_value
from ffigraph.tensor import threads_c
from ffigraph.tensor.ctype import c_element_type
from ffigraph.tensor.elemwise_c import _NEEDS_HELPERS, _broadcast, _operand_dtypes, compute_dtype

try:
    from ffigraph.scalar import vmath_c as _vmath
except ImportError:  # pragma: no cover - the vector helpers are part of the package
    _vmath = None

BLOCK = 256
SMALL_BLOCK = 64   # for programs with many buffers, to keep them in cache and off a deep stack


# ------------------------------------------------------------------ one scalar step


def _literal(ref):
    value = const_value(ref)
    dt = value.dtype
    if dt.kind == "f":
        v = float(value)
        if math.isnan(v):
            text = "NAN"
        elif math.isinf(v):
            text = "INFINITY" if v > 0 else "(-INFINITY)"
        else:
            text = repr(v)
        return "((%s)%s)" % (c_element_type(dt), text)
    if dt.kind == "b":
        return "1" if bool(value) else "0"
    if dt.kind == "u":
        return "((%s)%dULL)" % (c_element_type(dt), int(value))
    if dt.kind == "i":
        v = int(value)
        if v == -2 ** 63:
            return "((int64_t)(-9223372036854775807LL - 1))"
        return "((%s)%dLL)" % (c_element_type(dt), v)
    raise MethodNotDefined("no C literal for a %s constant" % dt)


def step_expression(sop, in_dtypes, out_dtype, operands):
    """(C expression of ``out_dtype``, check or None) for one scalar op on C operand expressions."""
    if any(np.dtype(d).kind == "c" for d in list(in_dtypes) + [out_dtype]):
        raise MethodNotDefined("%s: no C code for complex values yet" % sop)
    cdt = compute_dtype(sop, in_dtypes, out_dtype)
    op_dtypes = _operand_dtypes(sop, in_dtypes, cdt)
    loaded = [c_cast(o, d, od, c_element_type(od)) for o, d, od in zip(operands, in_dtypes, op_dtypes)]
    if sop.rule == "cast":
        return c_cast(loaded[0], in_dtypes[0], out_dtype, c_element_type(out_dtype)), None
    expr, check = c_expression(sop.name, cdt, loaded)
    return c_cast(expr, "bool" if sop.rule == "bool" else cdt, out_dtype, c_element_type(out_dtype)), check


def _vector_function(sop, in_dtypes, out_dtype):
    """The vector routine computing this step on whole buffers, or None."""
    if _vmath is None or sop.nin != 1 or sop.rule != "float":
        return None
    if np.dtype(out_dtype).name not in ("float32", "float64"):
        return None
    if sop.name not in _vmath.VECTOR_FUNCTIONS:
        return None
    return _vmath.vector_function_name(sop.name, out_dtype)


def fusable_step(sop, in_dtypes, out_dtype):
    """True when the step has C code (fusion only builds loops it can compile)."""
    try:
        step_expression(sop, in_dtypes, out_dtype, ["a%d" % i for i in range(len(in_dtypes))])
        return True
    except (MethodNotDefined, KeyError):
        return False


# ------------------------------------------------------------------ support code and libraries


def _vector_steps(composite):
    out = []
    for sop, args, dt in composite.steps:
        fn = _vector_function(sop, [composite.ref_dtype(r) for r in args], dt)
        if fn is not None:
            out.append((sop.name, dt))
    return out


def fused_support_code(composite):
    parts = []
    helper_names = {}   # compute dtype -> the ops that call helpers in it
    for sop, args, dt in composite.steps:
        if sop.name in _NEEDS_HELPERS:
            cdt = compute_dtype(sop, [composite.ref_dtype(r) for r in args], dt)
            helper_names.setdefault(cdt, []).append(sop.name)
    parts += [support_code(d, names) for d, names in helper_names.items()]
    vector = _vector_steps(composite)
    if vector:
        parts.append(_vmath.vmath_support_code(sorted(set(vector))))
    return "\n".join(p for p in parts if p)


def fused_libraries(composite):
    return list(_vmath.VMATH_LIBRARIES) if _vector_steps(composite) else []


def fused_apply_support_code(op, node, name):
    """The Composite's helpers; for a loop that may be split over threads, also the node's chunk
    function (see threads_c; the pool itself is the op's c_support_code)."""
    parts = [fused_support_code(op.composite)]
    if _threaded(node):
        chunk = _reduce_chunk_function if hasattr(op, "kind") else _elemwise_chunk_function
        parts.append(chunk(op, node, name))
    return "\n\n".join(p for p in parts if p)


def _threaded(node):
    """Whether the node's loop may be split over threads: threads are on and the loop's static
    shape (the inputs' broadcast) does not make it small."""
    if not node.inputs:
        return False
    shapes = [v.type.shape for v in node.inputs]
    loop = tuple(None if any(s[d] is None for s in shapes) else max(s[d] for s in shapes)
                 for d in range(node.inputs[0].ndim))
    return threads_c.worth_threads(loop)


# ------------------------------------------------------------------ the loop


class _Loop:
    """Text of the blocked loop shared by FusedElemwise and FusedReduce.

    ``ins``: C names of the input arrays; ``destroyed``: input indices whose
    memory an output may take (always gathered, so a write never feeds a later read).
    """

    def __init__(self, op, node, ins, sub, destroyed=()):
        self.op, self.node, self.ins, self.sub = op, node, ins, sub
        self.comp = op.composite
        self.nd = node.inputs[0].ndim if node.inputs else 0
        self.destroyed = set(destroyed)
        nbuf = self.comp.nin + len(self.comp.steps)
        self.block = BLOCK if nbuf <= 24 else SMALL_BLOCK
        self.in_ctypes = [c_element_type(d) for d in self.comp.in_dtypes]
        self.step_ctypes = [c_element_type(dt) for _, _, dt in self.comp.steps]

    def dims(self):
        return max(self.nd, 1)

    def input_strides(self):
        lines = []
        for i, name in enumerate(self.ins):
            lines.append("int64_t st%d[%d];" % (i, self.dims()))
        for i, name in enumerate(self.ins):
            for d in range(self.nd):
                lines.append("st%d[%d] = %s.shape[%d] == 1 ? 0 : %s.strides[%d];" % (i, d, name, d, name, d))
            if self.nd == 0:
                lines.append("st%d[0] = 1;" % i)
        return lines

    def last_stride(self, prefix, i):
        return "%s%d[%d]" % (prefix, i, self.nd - 1) if self.nd else "1"

    def nest(self, pointers, inner, shape="shape", bounded=False):
        """Loops over axes 0..nd-2 advancing each (ctype, base, stride array) pointer; ``inner`` is
        the innermost block loop's text, which reads pointer ``<base>_<nd-1>``. ``bounded``: each
        axis d runs over [lo[d], hi[d]) (one chunk of a threaded loop) instead of [0, shape[d])."""
        lines = []
        for ctype, base, stride in pointers:
            lines.append("%s *%s_0 = (%s *)%s;" % (ctype, base, ctype, stride[1]))
        indent = ""
        for d in range(self.nd - 1):
            start, stop = ("lo[%d]" % d, "hi[%d]" % d) if bounded else ("0", "%s[%d]" % (shape, d))
            lines.append("%s{" % indent)
            lines.append("%s    int64_t i%d;" % (indent, d))
            lines.append("%s    for (i%d = %s; i%d < %s; ++i%d) {" % (indent, d, start, d, stop, d))
            indent += "        "
            for ctype, base, stride in pointers:
                lines.append("%s%s *%s_%d = %s_%d + i%d * %s[%d];"
                             % (indent, ctype, base, d + 1, base, d, d, stride[0], d))
        last = max(self.nd - 1, 0)
        lines += [indent + ln for ln in inner(last)]
        for d in range(self.nd - 2, -1, -1):
            indent = indent[:-8]
            lines.append("%s    }" % indent)
            lines.append("%s}" % indent)
        return lines

    def block_body(self, last, out_targets, n_steps=None):
        """Statements for one block (``j0``, ``m``): load inputs, run every step (the first
        ``n_steps`` when given).

        out_targets: {step index: (output pointer base, output stride expr)} for steps written
        straight into an output when that output is contiguous along the loop's last axis.
        """
        comp = self.comp
        body = ["int64_t j;"]
        for i in range(comp.nin):
            ct = self.in_ctypes[i]
            p = "p%d_%d" % (i, last)
            s = self.last_stride("st", i)
            if i in self.destroyed:
                body.append("const %s *b%d = g%d;" % (ct, i, i))
                body.append("for (j = 0; j < m; ++j) g%d[j] = %s[(j0 + j) * %s];" % (i, p, s))
            else:
                body.append("const %s *b%d;" % (ct, i))
                body.append("if (%s == 1) {" % s)
                body.append("    b%d = %s + j0;" % (i, p))
                body.append("} else {")
                body.append("    for (j = 0; j < m; ++j) g%d[j] = %s[(j0 + j) * %s];" % (i, p, s))
                body.append("    b%d = g%d;" % (i, i))
                body.append("}")
        for j, (sop, args, dt) in enumerate(comp.steps[:n_steps]):
            ct = self.step_ctypes[j]
            body.append("/* t%d = %s */" % (j, self._describe(sop, args)))
            if j in out_targets:
                base, stride = out_targets[j]
                body.append("%s *t%d = %s == 1 ? %s + j0 : u%d;" % (ct, j, stride, base, j))
            else:
                body.append("%s *t%d = u%d;" % (ct, j, j))
            body += self._step_loop(j, sop, args, dt)
        return body

    def inline_step(self, j):
        """The C expression of step ``j`` (element ``j`` of its operands' buffers), to be used in place
        of a buffer, or None when the step has its own loop (a vector routine or a checked step)."""
        sop, args, dt = self.comp.steps[j]
        in_dtypes = [self.comp.ref_dtype(r) for r in args]
        if _vector_function(sop, in_dtypes, dt) is not None:
            return None
        expr, check = step_expression(sop, in_dtypes, dt, [self._operand(r) for r in args])
        return expr if check is None else None

    def _describe(self, sop, args):
        names = ["i%d" % r[1] if r[0] == "in" else "t%d" % r[1] if r[0] == "step"
                 else repr(const_value(r).item()) for r in args]
        return "%s(%s)" % (sop.name, ", ".join(names))

    def _operand(self, ref):
        if ref[0] == "in":
            return "b%d[j]" % ref[1]
        if ref[0] == "step":
            return "t%d[j]" % ref[1]
        return _literal(ref)

    def _buffer(self, ref):
        return ("b%d" if ref[0] == "in" else "t%d") % ref[1]

    def _step_loop(self, j, sop, args, dt):
        in_dtypes = [self.comp.ref_dtype(r) for r in args]
        vfn = _vector_function(sop, in_dtypes, dt)
        if vfn is not None and args[0][0] != "const":
            if np.dtype(in_dtypes[0]) == np.dtype(dt):
                return ["%s(m, %s, t%d);" % (vfn, self._buffer(args[0]), j)]
            cast = c_cast(self._operand(args[0]), in_dtypes[0], dt, c_element_type(dt))
            return ["for (j = 0; j < m; ++j) t%d[j] = %s;" % (j, cast), "%s(m, t%d, t%d);" % (vfn, j, j)]
        expr, check = step_expression(sop, in_dtypes, dt, [self._operand(r) for r in args])
        if check is None:
            return ["for (j = 0; j < m; ++j) t%d[j] = %s;" % (j, expr)]
        cond, message = check
        return ["for (j = 0; j < m; ++j) {",
                '    if (%s) { ffg_set_error(%s, FFG_ERR_VALUE, -1, "%s: %s"); %s }'
                % (cond, self.sub["err"], self.op, message, self.sub["fail"]),
                "    t%d[j] = %s;" % (j, expr),
                "}"]

    def buffers(self):
        # aligned to a cache line: the vector routines' 256- and 512-bit loads and stores would
        # otherwise straddle lines wherever the frame happens to put them (~8% of a loop measured)
        B = self.block
        lines = ["%s g%d[%d] __attribute__((aligned(64)));" % (ct, i, B) for i, ct in enumerate(self.in_ctypes)]
        lines += ["%s u%d[%d] __attribute__((aligned(64)));" % (ct, j, B) for j, ct in enumerate(self.step_ctypes)]
        return lines

    def blocks(self, last, body, shape="shape", bounded=False):
        """The block loop along the last axis (``bounded``: over [lo[last], hi[last]), whose start is
        a multiple of the block, so the blocks are the ones a whole loop has)."""
        n = "%s[%d]" % (shape, last) if self.nd else "1"
        if bounded and self.nd:
            n = "hi[%d]" % last
        lines = ["{",
                 "    const int64_t n = %s;" % n,
                 "    int64_t j0;",
                 "    for (j0 = %s; j0 < n; j0 += %d) {" % ("lo[%d]" % last if bounded and self.nd else "0",
                                                         self.block),
                 "        const int64_t m = n - j0 < %d ? n - j0 : %d;" % (self.block, self.block)]
        lines += ["        " + ln for ln in body]
        lines += ["    }", "}"]
        return lines

    def loop_shape(self):
        lines = ["int64_t shape[%d];" % self.dims(), "int64_t k;"]
        if self.nd == 0:
            lines.append("shape[0] = 1;")
        lines += _broadcast(self.op, self.ins, self.nd, self.sub)
        return lines


def _alloc(out, nd, shape, ctype, sub):
    return ["if (ffg_alloc_array(&%s, %d, %s, sizeof(%s), %s, %s))" % (out, nd, shape, ctype, sub["allocator"], sub["err"]),
            "    %s" % sub["fail"]]


def _take_over(out, x, nd):
    """The output takes the destroyed input's memory (same shape, dtype; checked by the caller)."""
    lines = ["%s.data = %s.data;" % (out, x), "%s.owned = %s.owned;" % (out, x), "%s.owned = NULL;" % x,
             "%s.in_offered = %s.in_offered;" % (out, x), "%s.in_offered = 0;" % x]
    for d in range(nd):
        lines.append("%s.shape[%d] = %s.shape[%d]; %s.strides[%d] = %s.strides[%d];" % (out, d, x, d, out, d, x, d))
    return lines


def fused_elemwise_c_code(op, node, ins, outs, sub, name=None):
    comp = op.composite
    inplace = dict(op.inplace)
    loop = _Loop(op, node, ins, sub, destroyed=inplace.values())
    nd = loop.nd
    deps = comp.input_dependencies()
    lines = ["/* %s */" % str(comp).replace("*/", "* /")]
    lines += loop.loop_shape()
    for k, out in enumerate(outs):
        ct = c_element_type(node.outputs[k].type.dtype)
        lines.append("/* output %d: the broadcast shape of the inputs it reads */" % k)
        lines.append("int64_t oshape%d[%d];" % (k, loop.dims()))
        for d in range(nd):
            lines.append("oshape%d[%d] = 1;" % (k, d))
            for i in deps[k]:
                lines.append("ffg_broadcast_dim(&oshape%d[%d], %s.shape[%d]);" % (k, d, ins[i], d))
        shape = "oshape%d" % k
        if k in inplace:
            x = ins[inplace[k]]
            # the input's memory is its own, or the host's block it was offered (see the C
            # linker's _offers): then the result lands in the host's array
            same = " && ".join(["(%s.owned != NULL || %s.in_offered)" % (x, x)]
                               + ["%s.shape[%d] == oshape%d[%d]" % (x, d, k, d) for d in range(nd)]
                               + _contiguous_checks(x, nd))
            lines.append("if (%s) {" % same)
            lines += ["    " + ln for ln in _take_over(out, x, nd)]
            lines.append("} else {")
            lines.append("    if (%s.in_offered) %s.offered = NULL;   /* never write the block it is read from */"
                         % (x, out))
            lines += ["    " + ln for ln in _alloc(out, nd, shape, ct, sub)]
            lines.append("}")
        else:
            lines += _alloc(out, nd, shape, ct, sub)
    out_ctypes = [c_element_type(v.type.dtype) for v in node.outputs]
    if nd == 0:
        lines += _scalar_steps(loop, outs, out_ctypes)
    elif name is not None and _threaded(node):
        lines.append("{")
        lines.append("    /* the loop, in chunks that the pool's threads share (%s_chunk above) */" % name)
        lines.append("    %s_loop L;" % name)
        lines += ["    L.in[%d] = &%s;" % (i, x) for i, x in enumerate(ins)]
        lines += ["    L.out[%d] = &%s;" % (k, o) for k, o in enumerate(outs)]
        lines.append("    L.shape = shape;")
        lines.append("    ffg_split_loop(&L.split, %d, shape, %d, %s, 0, 0);"
                     % (nd, loop.block, threads_c.mask(range(nd))))
        lines += ["    " + ln for ln in threads_c.run_chunks(name, "L", sub)]
        lines.append("}")
    else:
        lines += _elemwise_loop(loop, outs, out_ctypes, "shape")
    # When another input makes the loop empty, an output that does not read that input
    # still has elements (a length-1 axis it did not stretch): compute those on their own, one
    # loop for all the outputs that read the same inputs (they have the same shape), so the C
    # stays linear in the Composite. A 0-d loop has its one element: never empty.
    partial = {}
    for k in range(len(outs)):
        if nd and len(deps[k]) < comp.nin:
            partial.setdefault(deps[k], []).append(k)
    for ks in partial.values():
        sub_comp, sub_inputs = comp.restricted_to(ks)
        sub_loop = _Loop(_Restricted(sub_comp, op), node, [ins[i] for i in sub_inputs], sub)
        lines.append("if (ffg_size(%d, shape) == 0 && ffg_size(%d, oshape%d) > 0) {" % (nd, nd, ks[0]))
        lines += ["    " + ln for ln in _elemwise_loop(sub_loop, [outs[k] for k in ks], [out_ctypes[k] for k in ks],
                                                       "oshape%d" % ks[0])]
        lines.append("}")
    return "\n".join(lines)


def _chunk_header(name, comment, members):
    """The context struct of node ``name``'s chunk function and the function's first lines."""
    lines = ["/* %s: %s -- its loop over one chunk (threads_c) */" % (name, comment.replace("*/", "* /")),
             "typedef struct %s_loop {" % name]
    lines += ["    %s" % m for m in members]
    lines += ["    const int64_t *shape;   /* the loop's shape */",
              "    ffg_split split;        /* how it is cut */",
              "} %s_loop;" % name,
              "",
              "static int %s_chunk(void *ctx, int chunk, FfgError *err)" % name,
              "{",
              "    const %s_loop *L = (const %s_loop *)ctx;" % (name, name),
              "    const int64_t *shape = L->shape;"]
    return lines


def _elemwise_chunk_function(op, node, name):
    comp = op.composite
    nd = node.inputs[0].ndim
    nout = len(node.outputs)
    ins = ["(*L->in[%d])" % i for i in range(comp.nin)]
    outs = ["(*L->out[%d])" % k for k in range(nout)]
    # a failing element returns from the chunk; ffg_parallel keeps the first chunk's error
    loop = _Loop(op, node, ins, dict(err="err", fail="return -1;"), destroyed=dict(op.inplace).values())
    out_ctypes = [c_element_type(v.type.dtype) for v in node.outputs]
    lines = _chunk_header(name, str(op), ["const ffg_array *in[%d];" % comp.nin, "ffg_array *out[%d];" % nout])
    body = threads_c.bounded(nd, "shape") + threads_c.chunk_bounds("L", "shape")
    body += _elemwise_loop(loop, outs, out_ctypes, "shape", bounded=True)
    body += ["(void)err;", "return 0;"]
    return "\n".join(lines + ["    " + ln for ln in body] + ["}"])


class _Restricted:
    """The op seen by a loop that computes some outputs of ``op`` from a restricted Composite."""

    def __init__(self, composite, op):
        self.composite = composite
        self._op = op

    def __str__(self):
        return str(self._op)


def _elemwise_loop(loop, outs, out_ctypes, shape, bounded=False):
    """The loop over ``shape`` writing the Composite's outputs into ``outs`` (already allocated);
    ``bounded``: only over the chunk [lo, hi) of a threaded loop."""
    comp, nd = loop.comp, loop.nd
    inner = loop.input_strides()
    for k, out in enumerate(outs):
        inner.append("int64_t ost%d[%d];" % (k, loop.dims()))
        for d in range(nd):
            inner.append("ost%d[%d] = %s.shape[%d] == 1 ? 0 : %s.strides[%d];" % (k, d, out, d, out, d))
        if nd == 0:
            inner.append("ost%d[0] = 1;" % k)
    inner += loop.buffers()
    inner.append("if (ffg_size(%d, %s) > 0) {" % (nd, shape))
    pointers = [("const " + loop.in_ctypes[i], "p%d" % i, ("st%d" % i, "%s.data" % loop.ins[i]))
                for i in range(comp.nin)]
    pointers += [(out_ctypes[k], "q%d" % k, ("ost%d" % k, "%s.data" % outs[k])) for k in range(len(outs))]
    step_of_output = {j: k for k, j in enumerate(comp.output_steps)}

    def inner_loop(last):
        targets = {j: ("q%d_%d" % (k, last), loop.last_stride("ost", k)) for j, k in step_of_output.items()}
        block = loop.block_body(last, targets)
        for j, k in step_of_output.items():
            s = loop.last_stride("ost", k)
            block.append("if (%s != 1)" % s)
            block.append("    for (j = 0; j < m; ++j) q%d_%d[(j0 + j) * %s] = t%d[j];" % (k, last, s, j))
        return loop.blocks(last, block, shape, bounded)

    inner += ["    " + ln for ln in loop.nest(pointers, inner_loop, shape, bounded)]
    inner.append("}")
    return ["{"] + ["    " + ln for ln in inner] + ["}"]


def _scalar_steps(loop, outs, out_ctypes):
    """A 0-d Composite (shape arithmetic, mostly) run once on one-element buffers: no strides,
    blocks or block-sized buffers, which the loop form spends on each input and step."""
    comp = loop.comp
    lines = ["const int64_t m = 1;", "int64_t j = 0;"]
    for i, ct in enumerate(loop.in_ctypes):
        # read before any write: an output may have taken over this input's memory
        lines.append("const %s b%d[1] = {*(const %s *)%s.data};" % (ct, i, ct, loop.ins[i]))
    for j, (sop, args, dt) in enumerate(comp.steps):
        lines.append("%s t%d[1];   /* t%d = %s */" % (loop.step_ctypes[j], j, j, loop._describe(sop, args)))
        lines += loop._step_loop(j, sop, args, dt)
    lines += ["*(%s *)%s.data = t%d[0];" % (ct, out, j) for out, ct, j in zip(outs, out_ctypes, comp.output_steps)]
    lines.append("(void)m; (void)j;")
    return ["{"] + ["    " + ln for ln in lines] + ["}"]


def _contiguous_checks(x, nd):
    # the taken-over memory is written in C order through the output's own strides;
    # requiring C contiguity keeps every element written exactly once
    checks, expected = [], "1"
    for d in range(nd - 1, -1, -1):
        checks.append("(%s.shape[%d] <= 1 || %s.strides[%d] == %s)" % (x, d, x, d, expected))
        expected = "%s * %s.shape[%d]" % (expected, x, d)
    return checks


# ------------------------------------------------------------------ fused reductions

_IDENTITY = {"sum": "0", "mean": "0", "prod": "1", "max": "(-INFINITY)", "min": "INFINITY"}


def _combine(kind, acc, v):
    if kind in ("sum", "mean"):
        return "%s + %s" % (acc, v)
    if kind == "prod":
        return "%s * %s" % (acc, v)
    cmp = ">" if kind == "max" else "<"
    return "((%s %s %s || %s != %s) ? %s : %s)" % (v, cmp, acc, v, v, v, acc)  # NaN wins, as in numpy


def _block_fold(kind, at, src, dst):
    """Fold t[0..m) into *dst (of the accumulator's C type ``at``); sums and products use eight
    independent lanes (vectorisable)."""
    if kind in ("max", "min"):
        return ["{",
                "    %s acc = *%s;" % (at, dst),
                "    for (j = 0; j < m; ++j) acc = %s;" % _combine(kind, "acc", "%s[j]" % src),
                "    *%s = acc;" % dst,
                "}"]
    ident = _IDENTITY[kind]
    op = "+" if kind in ("sum", "mean") else "*"
    lanes = " ".join("l[%d] %s= %s[j + %d];" % (q, op, src, q) for q in range(8))
    total = "((l[0] {o} l[1]) {o} (l[2] {o} l[3])) {o} ((l[4] {o} l[5]) {o} (l[6] {o} l[7]))".format(o=op)
    return ["{",
            "    %s l[8] = {%s};" % (at, ", ".join([ident] * 8)),
            "    %s acc;" % at,
            "    for (j = 0; j + 8 <= m; j += 8) { %s }" % lanes,
            "    acc = %s;" % total,
            "    for (; j < m; ++j) acc %s= %s[j];" % (op, src),
            "    *%s %s= acc;" % (dst, op),
            "}"]


def _uses_temporary(op, node):
    """The accumulator's dtype is not the output's (a float32 sum accumulates in float64): the
    running values live in a temporary laid out like the output."""
    return np.dtype(op.accumulator_dtype()).name != np.dtype(node.outputs[0].type.dtype).name


def _reduce_loop(op, loop, ins, out, at, bounded=False):
    """The loop folding the Composite's values into ``acc_data`` (laid out like ``out``: C order,
    0 strides along the reduced axes); ``bounded``: one chunk [lo, hi) of a threaded loop."""
    comp, nd, axes = loop.comp, loop.nd, op.axis
    kept = [d for d in range(nd) if d not in axes]
    inner = loop.input_strides()
    inner.append("int64_t ost[%d];" % loop.dims())
    for d in range(nd):
        if d in axes:
            inner.append("ost[%d] = 0;" % d)
        else:
            inner.append("ost[%d] = %s.strides[%d];" % (d, out, kept.index(d)))
    if nd == 0:
        inner.append("ost[0] = 0;")
    inner += loop.buffers()
    inner.append("if (ffg_size(%d, shape) > 0) {" % nd)
    pointers = [("const " + loop.in_ctypes[i], "p%d" % i, ("st%d" % i, "%s.data" % ins[i])) for i in range(comp.nin)]
    pointers.append((at, "q", ("ost", "acc_data")))
    result = comp.output_steps[0]

    def inner_loop(last):
        reduced_last = nd == 0 or (nd - 1) in axes
        if reduced_last:
            block = loop.block_body(last, {})
            block += _block_fold(op.kind, at, "t%d" % result, "q_%d" % last)
            return loop.blocks(last, block, "shape", bounded)
        # The accumulators are contiguous along a kept last axis: a plain loop the compiler vectorises.
        # A sum's or product's last step, when plain arithmetic, is computed in that loop rather than
        # stored to its buffer first (one pass less over the block: ~25% of a 1000x10000 sum(exp(x)*y,
        # axis=0), measured).
        inline = None
        if op.kind in ("sum", "mean", "prod") and result == len(comp.steps) - 1:
            inline = loop.inline_step(result)
        if inline is None:
            block = loop.block_body(last, {})
            value = "t%d[j]" % result
        else:
            block = loop.block_body(last, {}, n_steps=result)
            block.append("/* t%d = %s, folded as it is computed */" % (result, loop._describe(*comp.steps[result][:2])))
            value = inline
        block.append("{")
        block.append("    %s *r = q_%d + j0 * ost[%d];" % (at, last, last))
        block.append("    if (ost[%d] == 1)" % last)
        block.append("        for (j = 0; j < m; ++j) r[j] = %s;" % _combine(op.kind, "r[j]", value))
        block.append("    else")
        block.append("        for (j = 0; j < m; ++j) r[j * ost[%d]] = %s;"
                     % (last, _combine(op.kind, "r[j * ost[%d]]" % last, value)))
        block.append("}")
        return loop.blocks(last, block, "shape", bounded)

    inner += ["    " + ln for ln in loop.nest(pointers, inner_loop, "shape", bounded)]
    inner.append("}")
    return inner


def _reduce_threaded_call(op, name, ins, out, loop, at, n_kept, sub):
    """At the node: the loop run in chunks by the pool; when the cut axis is reduced, each chunk
    accumulates apart (in ``<name>_part``), folded into ``acc_data`` in chunk order afterwards."""
    nd = loop.nd
    what = str(op).split("(")[0]
    lines = ["/* the loop, in chunks that the pool's threads share (%s_chunk above) */" % name,
             "%s_loop L;" % name]
    lines += ["L.in[%d] = &%s;" % (i, x) for i, x in enumerate(ins)]
    lines += ["L.out = &%s;" % out, "L.shape = shape;", "L.acc = acc_data;", "L.part = NULL;",
              "L.count = ffg_size(%d, oshape);" % n_kept,
              "L.stride = L.count + FFG_PART_GAP;",
              "ffg_split_loop(&L.split, %d, shape, %d, %s, %s, L.count);"
              % (nd, loop.block, threads_c.mask(range(nd)), threads_c.mask(op.axis)),
              "if (L.split.partial && L.split.n > 1) {",
              "    if ((uint64_t)L.stride > (uint64_t)(SIZE_MAX / sizeof(%s) / (size_t)L.split.n)" % at,
              "        || (%s_part = ffg_malloc(%s, (size_t)L.stride * (size_t)L.split.n * sizeof(%s))) == NULL) {"
              % (name, sub["allocator"], at),
              '        ffg_set_error(%s, FFG_ERR_NOMEM, -1, "%s: could not allocate %%lld accumulators per thread", '
              '(long long)L.count);' % (sub["err"], what),
              "        %s" % sub["fail"],
              "    }",
              "    L.part = (%s *)%s_part;" % (at, name),
              "}"]
    lines += threads_c.run_chunks(name, "L", sub)
    lines += ["if (L.split.partial && L.split.n > 1) {",
              "    /* the chunks' accumulators, folded in chunk order (the same order whichever threads ran them) */",
              "    int c;",
              "    int64_t e;",
              "    for (c = 0; c < L.split.n; ++c) {",
              "        const %s *pc = L.part + c * L.stride;" % at,
              "        for (e = 0; e < L.count; ++e)",
              "            acc_data[e] = %s;" % _combine(op.kind, "acc_data[e]", "pc[e]"),
              "    }",
              "}"]
    return lines


def _reduce_chunk_function(op, node, name):
    comp = op.composite
    nd = node.inputs[0].ndim
    at = c_element_type(op.accumulator_dtype())
    ins = ["(*L->in[%d])" % i for i in range(comp.nin)]
    loop = _Loop(op, node, ins, dict(err="err", fail="return -1;"))
    lines = _chunk_header(name, str(op), ["const ffg_array *in[%d];" % comp.nin,
                                          "ffg_array *out;",
                                          "%s *acc;       /* the accumulators, laid out like out */" % at,
                                          "%s *part;      /* when the cut axis is reduced: each chunk's, "
                                          "count of them every stride */" % at,
                                          "int64_t count, stride;"])
    body = ["%s *acc_data = L->acc;   /* when the cut axis is kept: chunks write apart */" % at]
    body += threads_c.bounded(nd, "shape") + threads_c.chunk_bounds("L", "shape")
    body += ["if (L->split.partial && L->split.n > 1) {",
             "    int64_t e;",
             "    acc_data = L->part + chunk * L->stride;",
             "    for (e = 0; e < L->count; ++e)",
             "        acc_data[e] = %s;" % _IDENTITY[op.kind],
             "}"]
    body += _reduce_loop(op, loop, ins, "(*L->out)", at, bounded=True)
    body += ["(void)err;", "return 0;"]
    return "\n".join(lines + ["    " + ln for ln in body] + ["}"])


def fused_reduce_c_code(op, node, name, ins, outs, sub):
    from ffigraph.tensor.reduce_c import finish_value

    (out,) = outs
    loop = _Loop(op, node, ins, sub)
    nd, axes = loop.nd, op.axis
    kept = [d for d in range(nd) if d not in axes]
    out_dtype = node.outputs[0].type.dtype
    acc_dtype = op.accumulator_dtype()
    ct = c_element_type(out_dtype)
    at = c_element_type(acc_dtype)   # MethodNotDefined for a complex accumulator
    temporary = _uses_temporary(op, node)
    lines = []
    if temporary:
        # first, so that every fail path (and the cleanup after it) sees it initialised
        lines.append("void *%s_acc = NULL;   /* the running %s values, released by the cleanup */"
                     % (name, acc_dtype))
    lines.append("/* %s, accumulated in %s */" % (str(op).replace("*/", "* /"), acc_dtype))
    lines += loop.loop_shape()
    if op.kind in ("max", "min"):
        for d in axes:
            lines.append("if (shape[%d] == 0) {" % d)
            lines.append('    ffg_set_error(%s, FFG_ERR_VALUE, -1, "%s: cannot take the %s over an empty axis '
                         '(axis %d)"); %s' % (sub["err"], str(op).split("(")[0], op.kind, d, sub["fail"]))
            lines.append("}")
    lines.append("int64_t oshape[%d];" % max(len(kept), 1))
    for p, d in enumerate(kept):
        lines.append("oshape[%d] = shape[%d];" % (p, d))
    lines += _alloc(out, len(kept), "oshape", ct, sub)
    lines.append("%s *acc_data;   /* the accumulators: %s */" % (at, "a temporary C-contiguous like the output, "
                                                               "so with its strides" if temporary else "the output"))
    lines.append("{")
    lines.append("    int64_t e, count = ffg_size(%d, oshape);" % len(kept))
    if temporary:
        lines.append("    if ((uint64_t)count > (uint64_t)(SIZE_MAX / sizeof(%s))" % at)
        lines.append("        || (%s_acc = ffg_malloc(%s, (size_t)count * sizeof(%s))) == NULL) {"
                     % (name, sub["allocator"], at))
        lines.append('        ffg_set_error(%s, FFG_ERR_NOMEM, -1, "%s: could not allocate %%lld %s accumulators", '
                     '(long long)count);' % (sub["err"], str(op).split("(")[0], acc_dtype))
        lines.append("        %s" % sub["fail"])
        lines.append("    }")
        lines.append("    acc_data = (%s *)%s_acc;" % (at, name))
    else:
        lines.append("    acc_data = (%s *)%s.data;" % (at, out))
    lines.append("    for (e = 0; e < count; ++e) acc_data[e] = %s;" % _IDENTITY[op.kind])
    lines.append("}")
    if _threaded(node):
        lines.insert(0, "void *%s_part = NULL;   /* the chunks' accumulators when the cut axis is reduced "
                        "(threads_c); released by the cleanup */" % name)
        inner = _reduce_threaded_call(op, name, ins, out, loop, at, len(kept), sub)
    else:
        inner = _reduce_loop(op, loop, ins, out, at)
    if op.kind == "mean" or temporary:
        inner.append("{")
        inner.append("    /* the output values: %s */" % ("each sum over the count" if op.kind == "mean"
                                                         else "the accumulators converted to %s" % out_dtype))
        inner.append("    int64_t e, count = ffg_size(%d, oshape);" % len(kept))
        # (0 when one length is 0: the product of the others may not fit)
        inner.append("    const int64_t n = %s%s;   /* how many values each output is over */"
                     % ("".join("shape[%d] == 0 ? 0 : " % d for d in axes),
                        " * ".join("shape[%d]" % d for d in axes) or "1"))
        inner.append("    %s *o = (%s *)%s.data;" % (ct, ct, out))
        inner.append("    for (e = 0; e < count; ++e) o[e] = %s;"
                     % finish_value(op.kind, "acc_data[e]", acc_dtype, out_dtype, out_dtype, "n"))
        inner.append("}")
    return "\n".join(lines + ["{"] + ["    " + ln for ln in inner] + ["}"])


def fused_reduce_c_cleanup(op, node, name, sub):
    lines = []
    if _uses_temporary(op, node):
        lines.append("ffg_release(%s, %s_acc);   /* the accumulators (NULL when never allocated) */"
                     % (sub["allocator"], name))
    if _threaded(node):
        lines.append("ffg_release(%s, %s_part);   /* the chunks' accumulators (NULL when never allocated) */"
                     % (sub["allocator"], name))
    return "\n".join(lines)
