"""One loop generator for every elementwise op: broadcast, allocate, loop, apply a table expression."""
from __future__ import annotations

import numpy as np

from ffigraph.graph.c_interface import MethodNotDefined
from ffigraph.scalar.basic import upcast
from ffigraph.scalar.c_table import HELPER_OPS, c_cast, c_expression, support_code
from ffigraph.tensor import threads_c
from ffigraph.tensor.ctype import c_element_type


def compute_dtype(scalar_op, in_dtypes, out_dtype):
    """The dtype the scalar expression is evaluated in (numpy's loop dtype)."""
    rule = scalar_op.rule
    if rule in ("float", "numpy", "same", "switch"):
        return out_dtype
    if rule == "bool":
        return upcast(*in_dtypes)
    if rule == "cast":
        return in_dtypes[0]
    raise MethodNotDefined("unknown dtype rule %r" % rule)


def _operand_dtypes(scalar_op, in_dtypes, cdt):
    # switch's condition keeps its own dtype (it is only tested against 0)
    if scalar_op.name == "switch":
        return [in_dtypes[0], cdt, cdt]
    if scalar_op.rule == "cast":
        return list(in_dtypes)
    return [cdt] * len(in_dtypes)


# the ops whose C expression calls helper functions (c_table.support_code), pasted in only then
_NEEDS_HELPERS = HELPER_OPS


def elemwise_support_code(op, node, name=None):
    """The helper functions the node's expression calls (none for most ops: less to compile); for a
    loop that may be split over threads, also the node's chunk function (threads_c)."""
    sop = op.scalar_op
    in_dtypes = [v.type.dtype for v in node.inputs]
    if any(np.dtype(d).kind == "c" for d in in_dtypes + [node.outputs[0].type.dtype]):
        return ""
    parts = []
    if sop.name in _NEEDS_HELPERS:
        parts.append(support_code(compute_dtype(sop, in_dtypes, node.outputs[0].type.dtype), [sop.name]))
    if name is not None and _threaded(node):
        parts.append(_chunk_function(op, node, name))   # (the pool is the op's c_support_code)
    return "\n\n".join(parts)


def _threaded(node):
    return threads_c.worth_threads(node.outputs[0].type.shape)


def _expression(op, node, locals_):
    """(C expression of the output dtype, check or None, operand dtypes) for the node's scalar op."""
    sop = op.scalar_op
    in_dtypes = [v.type.dtype for v in node.inputs]
    out_dtype = node.outputs[0].type.dtype
    cdt = compute_dtype(sop, in_dtypes, out_dtype)
    operand_dtypes = _operand_dtypes(sop, in_dtypes, cdt)
    if sop.rule == "cast":
        return c_cast(locals_[0], in_dtypes[0], out_dtype, c_element_type(out_dtype)), None, operand_dtypes
    expr, check = c_expression(sop.name, cdt, locals_)
    return (c_cast(expr, "bool" if sop.rule == "bool" else cdt, out_dtype, c_element_type(out_dtype)), check,
            operand_dtypes)


def _chunk_function(op, node, name):
    """``<name>_chunk``: the loop over one chunk [lo, hi) of the output (threads_c)."""
    nd = node.outputs[0].type.ndim
    n = len(node.inputs)
    in_dtypes = [v.type.dtype for v in node.inputs]
    out_dtype = node.outputs[0].type.dtype
    ctypes = [c_element_type(d) for d in in_dtypes]
    octype = c_element_type(out_dtype)
    locals_ = ["a%d" % i for i in range(n)]
    expr, check, operand_dtypes = _expression(op, node, locals_)
    ins = ["(*L->in[%d])" % i for i in range(n)]
    sub = dict(err="err", fail="return -1;")   # ffg_parallel keeps the first failing chunk's error
    lines = ["/* %s: %s -- its loop over one chunk (threads_c) */" % (name, str(op).replace("*/", "* /")),
             "typedef struct %s_loop {" % name,
             "    const ffg_array *in[%d];" % max(n, 1),
             "    ffg_array *out;",
             "    ffg_split split;        /* how the output's shape is cut */",
             "} %s_loop;" % name,
             "",
             "static int %s_chunk(void *ctx, int chunk, FfgError *err)" % name,
             "{",
             "    const %s_loop *L = (const %s_loop *)ctx;" % (name, name),
             "    const int64_t *shape = L->out->shape;"]
    body = threads_c.bounded(nd, "shape") + threads_c.chunk_bounds("L", "shape")
    for i, x in enumerate(ins):
        body.append("int64_t st%d[%d];" % (i, nd))
    for i, x in enumerate(ins):
        for d in range(nd):
            body.append("st%d[%d] = %s.shape[%d] == 1 ? 0 : %s.strides[%d];" % (i, d, x, d, x, d))
    body.append("%s *po_0 = (%s *)L->out->data;   /* C-contiguous: its last stride is 1 */" % (octype, octype))
    for i, x in enumerate(ins):
        body.append("const %s *p%d_0 = (const %s *)%s.data;" % (ctypes[i], i, ctypes[i], x))
    element = _element(ins, ctypes, operand_dtypes, locals_, expr, check, nd, sub, store="po_%d[i%d] = %%s;"
                       % (nd - 1, nd - 1))
    body.append("if (ffg_size(%d, shape) > 0) {" % nd)
    body += ["    " + ln for ln in _nest(ins, ctypes, nd, element, bounded=True, out_ctype=octype,
                                          invariant=_last_axis_broadcast(node))]
    body.append("}")
    body += ["(void)err;", "return 0;"]
    return "\n".join(lines + ["    " + ln for ln in body] + ["}"])


def elemwise_c_code(op, node, inputs, outputs, sub, name=None):
    in_dtypes = [v.type.dtype for v in node.inputs]
    out_type = node.outputs[0].type
    out_dtype = out_type.dtype
    if any(np.dtype(d).kind == "c" for d in in_dtypes + [out_dtype]):
        raise MethodNotDefined("%s: no C code for complex values yet" % op)
    locals_ = ["a%d" % i for i in range(len(inputs))]
    expr, check, operand_dtypes = _expression(op, node, locals_)
    nd = out_type.ndim
    out = outputs[0]
    lines = ["int64_t shape[%d];" % max(nd, 1), "int64_t k;"]
    lines += _broadcast(op, inputs, nd, sub)
    lines.append("if (ffg_alloc_array(&%s, %d, shape, sizeof(%s), %s, %s))\n    %s"
                 % (out, nd, c_element_type(out_dtype), sub["allocator"], sub["err"], sub["fail"]))
    if name is not None and _threaded(node):
        lines += ["{",
                  "    /* the loop, in chunks that the pool's threads share (%s_chunk above) */" % name,
                  "    %s_loop L;" % name]
        lines += ["    L.in[%d] = &%s;" % (i, x) for i, x in enumerate(inputs)]
        lines += ["    L.out = &%s;" % out,
                  "    ffg_split_loop(&L.split, %d, shape, 1, %s, 0, 0);" % (nd, threads_c.mask(range(nd)))]
        lines += ["    " + ln for ln in threads_c.run_chunks(name, "L", sub)]
        lines.append("}")
    else:
        lines += _loops(inputs, in_dtypes, operand_dtypes, locals_, expr, check, out, out_dtype, nd, sub,
                        _last_axis_broadcast(node))
    return "\n".join(lines)


def _broadcast(op, inputs, nd, sub):
    lines = []
    if nd == 0:
        return lines
    lines.append("for (k = 0; k < %d; ++k) {" % nd)
    lines.append("    shape[k] = 1;")
    for i, name in enumerate(inputs):
        lines.append("    if (ffg_broadcast_dim(&shape[k], %s.shape[k])) {" % name)
        lines.append("        char s0[160], s1[160];")
        lines.append("        ffg_format_shape(s0, sizeof s0, %d, %s.shape);" % (nd, inputs[0]))
        lines.append("        ffg_format_shape(s1, sizeof s1, %d, %s.shape);" % (nd, name))
        lines.append('        ffg_set_error(%s, FFG_ERR_VALUE, -1, "%s: input shapes cannot be broadcast '
                     'together: %%s and %%s (axis %%d)", s0, s1, (int)k);' % (sub["err"], op))
        lines.append("        %s" % sub["fail"])
        lines.append("    }")
    lines.append("}")
    # each input's size fits, but the broadcast shape's element count may not (e.g. (2**32, 1) with
    # (1, 2**32)): loops and reductions over it count elements in int64, so refuse it (numpy: "too large")
    lines.append("if (ffg_size_overflows(%d, shape, 1)) {" % nd)
    lines.append("    char s0[160];")
    lines.append("    ffg_format_shape(s0, sizeof s0, %d, shape);" % nd)
    lines.append('    ffg_set_error(%s, FFG_ERR_VALUE, -1, "%s: the broadcast shape %%s is too large '
                 '(its number of elements overflows int64)", s0);' % (sub["err"], op))
    lines.append("    %s" % sub["fail"])
    lines.append("}")
    return lines


def _loops(inputs, in_dtypes, operand_dtypes, locals_, expr, check, out, out_dtype, nd, sub, invariant=()):
    """Nested loops over the output; each input steps by 0 along its broadcast axes."""
    ctypes = [c_element_type(d) for d in in_dtypes]
    octype = c_element_type(out_dtype)
    lines = ["{"]
    body = []
    for i, name in enumerate(inputs):
        body.append("int64_t st%d[%d];" % (i, max(nd, 1)))
    for i, name in enumerate(inputs):
        for d in range(nd):
            body.append("st%d[%d] = %s.shape[%d] == 1 ? 0 : %s.strides[%d];" % (i, d, name, d, name, d))
    body.append("%s *po = (%s *)%s.data;" % (octype, octype, out))
    for i, name in enumerate(inputs):
        body.append("const %s *p%d_0 = (const %s *)%s.data;" % (ctypes[i], i, ctypes[i], name))
    element = _element(inputs, ctypes, operand_dtypes, locals_, expr, check, nd, sub)
    if nd == 0:
        body += element(lambda i: "0")
    else:
        body += _nest(inputs, ctypes, nd, element, invariant=invariant)
    lines += ["    " + ln for ln in body]
    lines.append("}")
    return lines


def _element(inputs, ctypes, operand_dtypes, locals_, expr, check, nd, sub, store="*po++ = %s;"):
    """render(index_of) -> the statements for one element; index_of(i) is input i's offset;
    ``store`` writes the value (a format of the expression)."""
    def render(index_of):
        code = []
        for i in range(len(inputs)):
            cty = c_element_type(operand_dtypes[i])
            src = "p%d_%d[%s]" % (i, max(nd - 1, 0), index_of(i))
            load = c_cast(src, np_name(ctypes[i]), operand_dtypes[i], cty)
            code.append("const %s %s = %s;" % (cty, locals_[i], load))
        if check is not None:
            cond, message = check
            code.append('if (%s) { ffg_set_error(%s, FFG_ERR_VALUE, -1, "%s"); %s }'
                        % (cond, sub["err"], message, sub["fail"]))
        code.append(store % expr)
        return code

    return render


def np_name(ctype):
    from ffigraph.tensor.ctype import C_ELEMENT_TYPES

    for name, c in C_ELEMENT_TYPES.items():
        if c == ctype:
            return name
    raise KeyError(ctype)


def _last_axis_broadcast(node):
    """Indices of the inputs broadcast along the last axis by their type (length 1 there: stride 0
    in every call), such as a constant scalar made a vector."""
    return {i for i, v in enumerate(node.inputs) if v.type.ndim and v.type.broadcastable[-1]}


def _nest(inputs, ctypes, nd, element, bounded=False, out_ctype=None, invariant=()):
    """Loops over axes 0..nd-2 advance each input's pointer; the last axis has two versions:
    every input contiguous there (plain indexing the compiler can vectorise; an input in
    ``invariant``, broadcast along that axis by its type, reads its one element), or strided.
    ``bounded``: each axis d runs over [lo[d], hi[d]) (a chunk of a threaded loop) and the output
    pointer ``po_<d>`` (C-contiguous) advances with the inputs'."""
    lines = []
    indent = ""
    start = "lo[%d]" if bounded else "0"
    for d in range(nd - 1):
        lines.append("%s{" % indent)
        lines.append("%s    int64_t i%d;" % (indent, d))
        lines.append("%s    for (i%d = %s; i%d < %s; ++i%d) {"
                     % (indent, d, start.replace("%d", str(d)), d, ("hi[%d]" if bounded else "shape[%d]") % d, d))
        indent += "        "
        for i in range(len(inputs)):
            lines.append("%sconst %s *p%d_%d = p%d_%d + i%d * st%d[%d];"
                         % (indent, ctypes[i], i, d + 1, i, d, d, i, d))
        if bounded:
            lines.append("%s%s *po_%d = po_%d + i%d * L->out->strides[%d];"
                         % (indent, out_ctype, d + 1, d, d, d))
    last = nd - 1
    contiguous = " && ".join("st%d[%d] == 1" % (i, last) for i in range(len(inputs)) if i not in invariant) or "1"
    lines.append("%s{" % indent)
    lines.append("%s    int64_t i%d;" % (indent, last))
    lines.append("%s    const int64_t n = %s;" % (indent, ("hi[%d]" if bounded else "shape[%d]") % last))
    lines.append("%s    if (%s) {" % (indent, contiguous))
    lines.append("%s        for (i%d = %s; i%d < n; ++i%d) {" % (indent, last, start.replace("%d", str(last)),
                                                                 last, last))
    for ln in element(lambda i: "0" if i in invariant else "i%d" % last):
        lines.append("%s            %s" % (indent, ln))
    lines.append("%s        }" % indent)
    lines.append("%s    } else {" % indent)
    lines.append("%s        for (i%d = %s; i%d < n; ++i%d) {" % (indent, last, start.replace("%d", str(last)),
                                                                 last, last))
    for ln in element(lambda i: "i%d * st%d[%d]" % (last, i, last)):
        lines.append("%s            %s" % (indent, ln))
    lines.append("%s        }" % indent)
    lines.append("%s    }" % indent)
    lines.append("%s}" % indent)
    for d in range(nd - 2, -1, -1):
        indent = indent[:-8]
        lines.append("%s    }" % indent)
        lines.append("%s}" % indent)
    return lines
