"""The C code of the ``Scan`` op: the loop runs in the library, with no Python per step.

The C code generator compiles the inner graph into the same translation unit (``c_inner_graphs``,
see ffigraph/linkers/c/codegen.py): static ``<prefix>_run``/``_create``/``_destroy`` functions with
the shapes of the exported ones, and a state the outer state owns. The node's C calls that run
once per step, as a host would: inputs are ``FfgTensor`` views of the outer arrays, set up once
before the loop (only their data pointers move from step to step), and each output slot is
offered the row of the output buffer its value goes to, so most values are computed in place.

Per step t, as ``Scan.perform`` (op.py), which this code must match, errors included::

  sequence s, tap k      row t + k - min(taps) of the sequence (any strides, negative included);
  recurrent j, tap k     row t + k of output j's trace, or of its initial rows while t + k < 0
                         (row t + k - min(taps)); a final-value output (rec_last) reads the
                         value of the step before from one of two row buffers, used in turn;
  non-sequences          the outer arrays, unchanged.

After the run each output's value is taken to its row: already there when the run wrote into
the offered block (its shape checked), else copied from wherever the run left it (a block it
allocated, released at once, or the memory of an input). A nit-sot output's buffer is allocated
after step 0, when its row shape is known.
"""
from __future__ import annotations

import numpy as np

from ffigraph.abi import dtype_code
from ffigraph.linkers.c.codegen import c_string
from ffigraph.linkers.c.interface import MethodNotDefined
from ffigraph.scan.utils import info_counts

VERSION = (1,)

SUPPORT_C = r"""/* ---- scan loops (ffigraph/scan/scan_c.py): helpers of every Scan node ---- */

/* Point t at an array on the CPU whose element 0 is at data. */
static void ffg_scan_view(FfgTensor *t, char *data, int32_t ndim, int code, int bits, int64_t *shape,
                          int64_t *strides)
{
    t->data = data;
    t->device.device_type = FFG_DEVICE_CPU;
    t->device.device_id = 0;
    t->ndim = ndim;
    t->dtype.code = (uint8_t)code;
    t->dtype.bits = (uint8_t)bits;
    t->dtype.lanes = 1;
    t->shape = shape;
    t->strides = strides;
    t->byte_offset = 0;
}

static int ffg_scan_has_shape(const FfgTensor *t, int ndim, const int64_t *shape)
{
    int d;
    if (t->ndim != ndim)
        return 0;
    for (d = 0; d < ndim; ++d)
        if (t->shape[d] != shape[d])
            return 0;
    return 1;
}

/* Copy the elements of src (any strides, negative ones included) to dst, C-contiguous. */
static void ffg_scan_copy(char *dst, const FfgTensor *src, int64_t itemsize)
{
    const char *base = (const char *)src->data + src->byte_offset;
    int64_t n = ffg_size(src->ndim, src->shape), expected = 1, idx[FFG_MAX_NDIM], inner, step, k, i;
    int d, last = src->ndim - 1, contiguous = 1;
    if (n == 0)
        return;
    for (d = last; d >= 0 && src->strides != NULL; --d) {
        if (src->shape[d] != 1 && src->strides[d] != expected)
            contiguous = 0;
        expected *= src->shape[d];
    }
    if (contiguous) {
        if (dst != base)
            memcpy(dst, base, (size_t)(n * itemsize));
        return;
    }
    /* an odometer over the outer axes, a loop along the last one */
    inner = src->shape[last];
    step = src->strides[last] * itemsize;
    for (d = 0; d < last; ++d)
        idx[d] = 0;
    for (k = 0; k < n; k += inner) {
        const char *p = base;
        for (d = 0; d < last; ++d)
            p += idx[d] * src->strides[d] * itemsize;
        for (i = 0; i < inner; ++i, p += step, dst += itemsize)
            memcpy(dst, p, (size_t)itemsize);
        for (d = last - 1; d >= 0; --d) {
            if (++idx[d] < src->shape[d])
                break;
            idx[d] = 0;
        }
    }
}

/* Take the value an inner run left in slot o to dst, a C-contiguous block of this shape: it is
   there already when the run wrote into the block offered (dst), else it is copied; a block the
   run allocated is released. -1 when the value has another shape (o is released all the same). */
static int ffg_scan_take(FfgOutput *o, char *dst, int ndim, const int64_t *shape, int64_t itemsize,
                         const FfgAllocator *al)
{
    int ok = ffg_scan_has_shape(&o->tensor, ndim, shape);
    if (ok && o->alias_of != FFG_OUT_HOST_BUFFER)
        ffg_scan_copy(dst, &o->tensor, itemsize);
    ffg_release(al, o->base);
    o->base = NULL;
    return ok ? 0 : -1;
}

/* Release what inner runs left in output slots (after a failure, the values no step took). */
static void ffg_scan_release_slots(FfgOutput *o, int32_t n, const FfgAllocator *al)
{
    int32_t k;
    for (k = 0; k < n; ++k) {
        ffg_release(al, o[k].base);
        o[k].base = NULL;
    }
}

/* A nit-sot output's trace: n_steps rows shaped like the value in slot o (step 0's). */
static int ffg_scan_start_trace(ffg_array *a, const FfgOutput *o, int64_t n_steps, int ndim, int64_t itemsize,
                                const FfgAllocator *al, FfgError *err)
{
    int64_t shape[FFG_MAX_NDIM];
    int d;
    if (o->tensor.ndim != ndim - 1) {
        ffg_set_error(err, FFG_ERR_TYPE, -1, "the step function's value has %d dimensions, expected %d",
                      (int)o->tensor.ndim, ndim - 1);
        return -1;
    }
    shape[0] = n_steps;
    for (d = 1; d < ndim; ++d)
        shape[d] = o->tensor.shape[d - 1];
    return ffg_alloc_array(a, ndim, shape, (size_t)itemsize, al, err);
}

/* The truth of a 0-d value of any dtype, as Python's bool() has it (NaN is true, -0.0 false). */
static int ffg_scan_truth(const FfgTensor *t)
{
    const unsigned char *p = (const unsigned char *)t->data + t->byte_offset;
    int64_t nbytes = t->dtype.bits / 8, k;
    if (t->dtype.code == FFG_DTYPE_FLOAT || t->dtype.code == FFG_DTYPE_COMPLEX) {
        int64_t part = t->dtype.code == FFG_DTYPE_COMPLEX ? nbytes / 2 : nbytes, q;
        for (q = 0; q < nbytes; q += part) {
            if (part == 4) {
                uint32_t v;
                memcpy(&v, p + q, 4);
                if (v & 0x7fffffffu)
                    return 1;
            } else if (part == 8) {
                uint64_t v;
                memcpy(&v, p + q, 8);
                if (v & 0x7fffffffffffffffull)
                    return 1;
            } else {
                for (k = 0; k < part; ++k)
                    if (p[q + k])
                        return 1;
            }
        }
        return 0;
    }
    for (k = 0; k < nbytes; ++k)
        if (p[k])
            return 1;
    return 0;
}

/* The message of a value whose shape changed: "... has shape (a, b), but ... (c, d) ...". */
static void ffg_scan_shape_error(FfgError *err, const char *fmt, const char *label, int64_t step, int output,
                                 const FfgTensor *got, int ndim, const int64_t *expected)
{
    char have[160], want[160];
    ffg_format_shape(have, sizeof have, got->ndim, got->shape);
    ffg_format_shape(want, sizeof want, ndim, expected);
    ffg_set_error(err, FFG_ERR_VALUE, -1, fmt, label, (long long)step, output, have, want);
}
/* ---- end of scan helpers ---- */"""


def _tensor_type(var, what):
    """(code, bits, itemsize, ndim) of a CPU tensor variable; MethodNotDefined for anything else."""
    t = var.type
    dtype = getattr(t, "numpy_dtype", None)
    if dtype is None or getattr(t, "device", "cpu") != "cpu" or not hasattr(t, "ndim"):
        raise MethodNotDefined("scan's C code handles CPU tensors only; %s is %s" % (what, t))
    code, bits = dtype_code(dtype)
    return code, bits, np.dtype(dtype).itemsize, t.ndim


def scan_c_code(op, node, name, inputs, outputs, sub):
    """The loop of one Scan node (see the module docstring)."""
    info = op.info
    graphs = sub.get("inner_graphs")
    if not graphs:
        raise MethodNotDefined("scan's C code needs its inner graph compiled into the unit (sub['inner_graphs'])")
    run = "%s_run(%s, sc_in, %%d, sc_out, %%d, &sc_err)" % (graphs[0]["prefix"], graphs[0]["state"])
    inner_in = op.inner_inputs
    n_seqs, n_rec = len(info.seq_taps), len(info.rec_taps)
    n_seq_in, n_rec_in = info_counts(info)
    n_in = len(inner_in)
    n_out = n_rec + info.n_nit_sot + (1 if info.as_while else 0)
    steps_name = inputs[0]
    seqs = inputs[1:1 + n_seqs]
    inits = inputs[1 + n_seqs:1 + n_seqs + n_rec]
    non_seqs = inputs[1 + n_seqs + n_rec:]
    for k, var in enumerate(node.inputs):
        _tensor_type(var, "input %d" % k)
    for k, var in enumerate(node.outputs):
        _tensor_type(var, "output %d" % k)
    for k, var in enumerate(op.inner_outputs):
        _tensor_type(var, "inner output %d" % k)
    label = c_string(op._label())
    fail = sub["fail"]
    alloc = sub["allocator"]
    err = sub["err"]

    decl = [
        "/* %s: %d sequence(s), %d recurrent output(s) (%d final value only), %d nit-sot output(s), "
        "%d non-sequence(s)%s */" % (op, n_seqs, n_rec, sum(info.rec_last), info.n_nit_sot, info.n_non_seqs,
                                     ", until" if info.as_while else ""),
        "FfgTensor sc_in[%d];     /* the inner graph's inputs: views of the outer arrays */" % max(n_in, 1),
        "FfgOutput sc_out[%d];    /* its outputs: offered the rows they go to */" % max(n_out, 1),
        "FfgError sc_err;",
        "int64_t sc_n_steps = *(const int64_t *)%s.data, sc_t, sc_done;" % steps_name,
    ]
    if info.as_while:
        decl.append("int64_t sc_cond_block[2];   /* where the until condition is offered to go */")
    for j in range(n_rec):
        if info.rec_last[j]:
            decl.append("char *sc_cur%d, *sc_next%d;   /* output %d: last value, next value */" % (j, j, j))
            decl.append("void *sc_spare%d = NULL;      /* output %d: the second row buffer */" % (j, j))
        decl.append("int64_t sc_row_bytes%d = 0;" % j)
    for k in range(info.n_nit_sot):
        decl.append("int64_t sc_row_bytes%d = 0;" % (n_rec + k))
    decl.append("memset(sc_out, 0, sizeof sc_out);")
    code = ["\n".join(decl)]

    # ---- the checks perform makes, in its order
    code.append("""/* the number of steps, and the rows the sequences and initial states need */
if (sc_n_steps < 0) {
    ffg_set_error(%(err)s, FFG_ERR_VALUE, -1, "scan%%s: n_steps is %%lld; the number of steps must be 0 or more",
                  %(label)s, (long long)sc_n_steps);
    %(fail)s
}""" % dict(err=err, label=label, fail=fail))
    for s, (seq, taps) in enumerate(zip(seqs, info.seq_taps)):
        span = taps[-1] - taps[0]
        fmt = "scan%%s: sequence %d has %%lld rows; %%lld steps with taps %s need %%lld" % (s, list(taps))
        code.append("""if (%(rows)s < sc_n_steps) {   /* sequence %(s)d */
    ffg_set_error(%(err)s, FFG_ERR_VALUE, -1, %(fmt)s, %(label)s, (long long)%(seq)s.shape[0],
                  (long long)sc_n_steps, (long long)%(need)s);
    %(fail)s
}""" % dict(seq=seq, rows=_plus("%s.shape[0]" % seq, -span), need=_plus("sc_n_steps", span), s=s, err=err,
            fmt=c_string(fmt), label=label, fail=fail))
    for j, (init, taps) in enumerate(zip(inits, info.rec_taps)):
        fmt = "scan%%s: the initial state of output %d has %%lld rows; taps %s need %d" % (j, list(taps), -taps[0])
        code.append("""if (%(init)s.shape[0] < %(need)d) {   /* initial state of output %(j)d */
    ffg_set_error(%(err)s, FFG_ERR_VALUE, -1, %(fmt)s, %(label)s, (long long)%(init)s.shape[0]);
    %(fail)s
}""" % dict(init=init, need=-taps[0], j=j, err=err, fmt=c_string(fmt), label=label, fail=fail))

    # ---- the outputs' buffers (a nit-sot output's after step 0)
    for j, (init, out) in enumerate(zip(inits, outputs[:n_rec])):
        _, _, itemsize, ndim = _tensor_type(node.outputs[j], "")
        if info.rec_last[j]:
            row_ndim = ndim
            code.append("""/* output %(j)d keeps its final value: two row buffers, used in turn, starting from initial row 0 */
if (ffg_alloc_array(&%(out)s, %(ndim)d, %(init)s.shape + 1, %(itemsize)d, %(alloc)s, %(err)s))
    %(fail)s
sc_row_bytes%(j)d = ffg_size(%(ndim)d, %(out)s.shape) * %(itemsize)d;
sc_spare%(j)d = ffg_malloc(%(alloc)s, (size_t)sc_row_bytes%(j)d);
if (sc_spare%(j)d == NULL) {
    ffg_set_error(%(err)s, FFG_ERR_NOMEM, -1, "scan%%s: could not allocate %%lld bytes for output %(j)d",
                  %(label)s, (long long)sc_row_bytes%(j)d);
    %(fail)s
}
sc_cur%(j)d = %(out)s.data;
sc_next%(j)d = (char *)sc_spare%(j)d;""" % dict(j=j, out=out, ndim=row_ndim, init=init, itemsize=itemsize,
                                                alloc=alloc, err=err, fail=fail, label=label))
            # the initial row, copied through a view (any strides)
            code.append("""{
    FfgTensor sc_first;
    ffg_scan_view(&sc_first, %(init)s.data, %(ndim)d, 0, 0, %(init)s.shape + 1, %(init)s.strides + 1);
    ffg_scan_copy(sc_cur%(j)d, &sc_first, %(itemsize)d);
}""" % dict(init=init, ndim=row_ndim, j=j, itemsize=itemsize))
        else:
            code.append("""{   /* output %(j)d: its trace, n_steps rows shaped like the initial state's */
    int64_t sc_shape[FFG_MAX_NDIM];
    int sc_d;
    sc_shape[0] = sc_n_steps;
    for (sc_d = 1; sc_d < %(ndim)d; ++sc_d)
        sc_shape[sc_d] = %(init)s.shape[sc_d];
    if (ffg_alloc_array(&%(out)s, %(ndim)d, sc_shape, %(itemsize)d, %(alloc)s, %(err)s))
        %(fail)s
    sc_row_bytes%(j)d = ffg_size(%(row_ndim)d, %(init)s.shape + 1) * %(itemsize)d;
}""" % dict(j=j, out=out, ndim=ndim, row_ndim=ndim - 1, init=init, itemsize=itemsize, alloc=alloc, err=err,
            fail=fail))

    # ---- the inner inputs, set up once
    views, moves = [], []
    c = 0
    for s, (seq, taps) in enumerate(zip(seqs, info.seq_taps)):
        for tap in taps:
            code_, bits, itemsize, ndim = _tensor_type(inner_in[c], "inner input %d" % c)
            views.append("ffg_scan_view(&sc_in[%d], %s.data, %d, %d, %d, %s.shape + 1, %s.strides + 1);"
                         "   /* sequence %d, tap %d */" % (c, seq, ndim, code_, bits, seq, seq, s, tap))
            moves.append("sc_in[%d].data = %s.data + %s * %s.strides[0] * %d;   /* sequence %d, tap %d */"
                         % (c, seq, _plus("sc_t", tap - taps[0], paren=True), seq, itemsize, s, tap))
            c += 1
    for j, (init, out, taps) in enumerate(zip(inits, outputs[:n_rec], info.rec_taps)):
        for tap in taps:
            code_, bits, itemsize, ndim = _tensor_type(inner_in[c], "inner input %d" % c)
            if info.rec_last[j]:
                views.append("ffg_scan_view(&sc_in[%d], sc_cur%d, %d, %d, %d, %s.shape + 1, %s.strides);"
                             "   /* output %d, its value before */" % (c, j, ndim, code_, bits, init, out, j))
                moves.append("sc_in[%d].data = sc_cur%d;   /* output %d, its value before */" % (c, j, j))
            else:
                views.append("ffg_scan_view(&sc_in[%d], NULL, %d, %d, %d, %s.shape + 1, NULL);"
                             "   /* output %d, tap %d */" % (c, ndim, code_, bits, init, j, tap))
                moves.append("""if (sc_t >= %(minus_tap)d) {   /* output %(j)d, tap %(tap)d: a row of its trace */
    sc_in[%(c)d].data = %(out)s.data + %(t_tap)s * sc_row_bytes%(j)d;
    sc_in[%(c)d].strides = %(out)s.strides + 1;
} else {   /* ... or of its initial state */
    sc_in[%(c)d].data = %(init)s.data + %(t_row)s * %(init)s.strides[0] * %(itemsize)d;
    sc_in[%(c)d].strides = %(init)s.strides + 1;
}""" % dict(tap=tap, minus_tap=-tap, j=j, c=c, out=out, init=init, t_tap=_plus("sc_t", tap, paren=True),
            t_row=_plus("sc_t", tap - taps[0], paren=True), itemsize=itemsize))
            c += 1
    for m, value in enumerate(non_seqs):
        code_, bits, itemsize, ndim = _tensor_type(inner_in[c], "inner input %d" % c)
        views.append("ffg_scan_view(&sc_in[%d], %s.data, %d, %d, %d, %s.shape, %s.strides);   /* non-sequence %d */"
                     % (c, value, ndim, code_, bits, value, value, m))
        c += 1
    assert c == n_in
    if views:
        code.append("/* the inner inputs: views set up once, their data pointers moved at each step */\n"
                    + "\n".join(views))

    # ---- the loop
    offers, takes = [], []
    for j, (init, out) in enumerate(zip(inits, outputs[:n_rec])):
        _, _, itemsize, ndim = _tensor_type(node.outputs[j], "")
        if info.rec_last[j]:
            offers.append("sc_out[%d].host_buffer = sc_next%d;   /* output %d: its new value */" % (j, j, j))
            offers.append("sc_out[%d].host_capacity = sc_row_bytes%d;" % (j, j))
            row_ndim, dest = ndim, "sc_next%d" % j
            swap = "\n{   /* output %d: the new value is the last one now */\n    char *sc_tmp = sc_cur%d;\n" \
                   "    sc_cur%d = sc_next%d;\n    sc_next%d = sc_tmp;\n}" % (j, j, j, j, j)
        else:
            offers.append("sc_out[%d].host_buffer = %s.data + sc_t * sc_row_bytes%d;   /* output %d: row t */"
                          % (j, out, j, j))
            offers.append("sc_out[%d].host_capacity = sc_row_bytes%d;" % (j, j))
            row_ndim, dest, swap = ndim - 1, "%s.data + sc_t * sc_row_bytes%d" % (out, j), ""
        fmt = ("scan%s: at step %lld the step function's output %d has shape %s, but its initial state gives "
               "rows of shape %s; a recurrent output keeps one shape")
        takes.append("""if (ffg_scan_take(&sc_out[%(j)d], %(dest)s, %(ndim)d, %(init)s.shape + 1, %(itemsize)d, %(alloc)s)) {
    ffg_scan_shape_error(%(err)s, %(fmt)s, %(label)s, sc_t, %(j)d, &sc_out[%(j)d].tensor, %(ndim)d, %(init)s.shape + 1);
    %(fail)s
}%(swap)s""" % dict(j=j, dest=dest, ndim=row_ndim, init=init, itemsize=itemsize, alloc=alloc, err=err,
                    fmt=c_string(fmt), label=label, fail=fail, swap=swap))
    for k in range(info.n_nit_sot):
        j = n_rec + k
        out = outputs[j]
        _, _, itemsize, ndim = _tensor_type(node.outputs[j], "")
        offers.append("sc_out[%(j)d].host_buffer = sc_t ? %(out)s.data + sc_t * sc_row_bytes%(j)d : NULL;"
                      "   /* output %(j)d: row t (from step 1) */" % dict(j=j, out=out))
        offers.append("sc_out[%d].host_capacity = sc_t ? sc_row_bytes%d : 0;" % (j, j))
        fmt = ("scan%s: at step %lld the step function's output %d has shape %s, but had shape %s at step 0; "
               "an output traced over the steps keeps one shape")
        takes.append("""if (sc_t == 0) {   /* output %(j)d: its trace, n_steps rows shaped like step 0's value */
    if (ffg_scan_start_trace(&%(out)s, &sc_out[%(j)d], sc_n_steps, %(ndim)d, %(itemsize)d, %(alloc)s, %(err)s))
        %(fail)s
    sc_row_bytes%(j)d = ffg_size(%(row_ndim)d, %(out)s.shape + 1) * %(itemsize)d;
}
if (ffg_scan_take(&sc_out[%(j)d], %(out)s.data + sc_t * sc_row_bytes%(j)d, %(row_ndim)d, %(out)s.shape + 1,
                  %(itemsize)d, %(alloc)s)) {
    ffg_scan_shape_error(%(err)s, %(fmt)s, %(label)s, sc_t, %(j)d, &sc_out[%(j)d].tensor, %(row_ndim)d,
                         %(out)s.shape + 1);
    %(fail)s
}""" % dict(j=j, out=out, ndim=ndim, row_ndim=ndim - 1, itemsize=itemsize, alloc=alloc, err=err,
            fmt=c_string(fmt), label=label, fail=fail))
    if info.as_while:
        j = n_out - 1
        offers.append("sc_out[%d].host_buffer = sc_cond_block;   /* the until condition */" % j)
        offers.append("sc_out[%d].host_capacity = (int64_t)sizeof sc_cond_block;" % j)
        takes.append("""if (ffg_scan_truth(&sc_out[%(j)d].tensor)) {   /* until: this step is the last */
    ffg_release(%(alloc)s, sc_out[%(j)d].base);
    sc_out[%(j)d].base = NULL;
    sc_done = sc_t + 1;
    break;
}
ffg_release(%(alloc)s, sc_out[%(j)d].base);
sc_out[%(j)d].base = NULL;""" % dict(j=j, alloc=alloc))
    step_fmt = "step %lld of scan%s: %s"
    loop = """sc_done = sc_n_steps;
for (sc_t = 0; sc_t < sc_n_steps; ++sc_t) {
%(moves)s
%(offers)s
    if (%(run)s != FFG_OK) {   /* the inner graph failed: say at which step, keep its error code */
        ffg_set_error(%(err)s, sc_err.code, -1, %(step_fmt)s, (long long)sc_t, %(label)s, sc_err.message);
        %(fail)s
    }
%(takes)s
}""" % dict(moves=_indent("\n".join(moves)), offers=_indent("\n".join(offers)), run=run % (n_in, n_out),
            err=err, step_fmt=c_string(step_fmt), label=label, fail=fail, takes=_indent("\n".join(takes)))
    code.append("/* the loop */\n" + loop)

    # ---- after the loop: the rows run, the final values
    ends = []
    for j, out in enumerate(outputs[:n_rec]):
        if info.rec_last[j]:
            ends.append("if (sc_cur%(j)d != %(out)s.data && sc_row_bytes%(j)d > 0)   /* output %(j)d: its final value */\n"
                        "    memcpy(%(out)s.data, sc_cur%(j)d, (size_t)sc_row_bytes%(j)d);" % dict(j=j, out=out))
        else:
            ends.append("%s.shape[0] = sc_done;   /* output %d: the rows of the steps run */" % (out, j))
    for k in range(info.n_nit_sot):
        j = n_rec + k
        out = outputs[j]
        _, _, itemsize, ndim = _tensor_type(node.outputs[j], "")
        static = [0 if s is None else s for s in op.inner_outputs[j].type.shape]
        ends.append("""if (sc_n_steps == 0) {   /* output %(j)d: no step ran; unknown row lengths are 0 */
    static const int64_t sc_empty%(j)d[] = {%(shape)s};
    if (ffg_alloc_array(&%(out)s, %(ndim)d, sc_empty%(j)d, %(itemsize)d, %(alloc)s, %(err)s))
        %(fail)s
} else {
    %(out)s.shape[0] = sc_done;   /* the rows of the steps run */
}""" % dict(j=j, out=out, ndim=ndim, shape=", ".join(str(s) for s in [0] + static), itemsize=itemsize,
            alloc=alloc, err=err, fail=fail))
    if ends:
        code.append("/* the outputs: the rows of the steps run, the final values */\n" + "\n".join(ends))
    return "\n".join(code)


def scan_c_code_cleanup(op, node, name, inputs, outputs, sub):
    """Release the second row buffers and what a failed step left in the output slots."""
    info = op.info
    n_out = len(info.rec_taps) + info.n_nit_sot + (1 if info.as_while else 0)
    lines = ["ffg_scan_release_slots(sc_out, %d, %s);" % (n_out, sub["allocator"])] if n_out else []
    for j, last in enumerate(info.rec_last):
        if last:
            lines.append("ffg_release(%s, sc_spare%d);" % (sub["allocator"], j))
    return "\n".join(lines)


def _plus(expr, k, paren=False):
    """``expr + k`` written as a person would (``sc_t``, ``sc_t - 1``), parenthesised on request."""
    if k == 0:
        return expr
    text = "%s %s %d" % (expr, "-" if k < 0 else "+", abs(k))
    return "(%s)" % text if paren else text


def _indent(text):
    return "\n".join(("    " + line) if line.strip() else line for line in text.split("\n"))
