"""``GpuPool`` and the pooling gradients on a CUDA device (Theano 1.0's ``signal.pool`` ops).

One GPU op per CPU op of ``ffigraph.tensor.signal.pool``, with its props, its inputs, its output
types (the CPU ``make_node`` run on host stand-ins) and its semantics (see that module):

* ``GpuPool(ignore_border, mode, ndim)(x, ws, stride, pad)``;
* ``GpuMaxPoolGrad(ignore_border, ndim)(x, maxout, gz, ws, stride, pad)``;
* ``GpuAveragePoolGrad(ignore_border, mode, ndim)(x, gz, ws, stride, pad)``;
* ``GpuDownsampleFactorMaxGradGrad(ignore_border, mode, ndim)(x, maxout, ggx, ws, stride, pad)``.

The arrays are GPU arrays (float32 or float64, one dtype, any element strides); ``ws``,
``stride`` and ``pad`` stay host int64 vectors, read by the launcher on the host and checked as
the CPU op checks them (FFG_ERR_VALUE: a window or stride below 1, a negative padding, a padding
with ignore_border=False or not smaller than the window; arrays whose shapes do not match).

Window ``o`` of a pooled axis of length ``n`` starts at ``o * stride - pad``; ``A`` is its part
inside the image, ``|T|`` its size clipped to ``[-pad, n + pad)``. Every kernel writes each of
its outputs once, in a fixed order, so results are deterministic without atomics:

* forward: one thread per output element: the max over ``A`` (a NaN wins; an empty ``A``, only
  possible on an empty axis with padding, is FFG_ERR_VALUE as numpy's max of nothing), or the sum over ``A``
  (in double) divided by ``|A|`` (average_exc_pad) or ``|T|`` (average_inc_pad);
* MaxPoolGrad: one thread per input element, gathering ``gz[w]`` over the windows ``w`` that
  contain it and whose max it equals (in the windows' C order, as the CPU op adds them);
* AveragePoolGrad: one thread per input element, gathering ``gz[w]`` (divided by ``|A|`` or
  ``|T|``) over the windows that contain it, in double;
* DownsampleFactorMaxGradGrad: one thread per window, summing (in double) ``ggx`` over the
  positions of ``A`` where ``x`` equals the window's max.
"""
from __future__ import annotations

from ffigraph.abi import c_element_type
from ffigraph.cuda.conv import CNN_COMMON, wrap_c, alloc_output, check_inputs, data_pointer, decompose, grid_loop, \
    launch, launcher_head
from ffigraph.cuda.elemwise import c_comment, indent
from ffigraph.cuda.op import GpuKernelOp
from ffigraph.cuda.type import GpuArrayType, gpu_type_of
from ffigraph.graph.basic import Apply
from ffigraph.tensor.signal import pool as cpu_pool

SUPPORTED_DTYPES = ("float32", "float64")


class _GpuPoolBase(GpuKernelOp):
    """The common part: the CPU op's props, types and checks; ``n_arrays`` device inputs first."""

    __props__ = ("ignore_border", "mode", "ndim")
    cpu_class = None
    n_arrays = 1
    array_names = ("x",)

    def __init__(self, ignore_border=False, mode="max", ndim=2):
        cpu = self._make_cpu(ignore_border, mode, ndim)
        self.ignore_border, self.mode, self.ndim = cpu.ignore_border, cpu.mode, cpu.ndim

    def _make_cpu(self, ignore_border, mode, ndim):
        return self.cpu_class(ignore_border, mode=mode, ndim=ndim)

    def cpu_op(self):
        return self._make_cpu(self.ignore_border, self.mode, self.ndim)

    @classmethod
    def from_cpu(cls, op):
        return cls(op.ignore_border, mode=op.mode, ndim=op.ndim)

    def __str__(self):
        return "Gpu%s{%s, ignore_border=%s, ndim=%d}" % (self.cpu_class.__name__, self.mode, self.ignore_border,
                                                        self.ndim)

    def make_node(self, *inputs):
        arrays, params = inputs[:self.n_arrays], inputs[self.n_arrays:]
        for v, name in zip(arrays, self.array_names):
            if not isinstance(getattr(v, "type", None), GpuArrayType):
                raise TypeError("%s: %s %s is not a GPU array (type %s); transfer it with gpu_from_host"
                                % (self, name, v, getattr(v, "type", type(v).__name__)))
            if v.type.dtype not in SUPPORTED_DTYPES:
                raise TypeError("%s: %s must be float32 or float64, got %s" % (self, name, v.type.dtype))
            if v.type.dtype != arrays[0].type.dtype:
                raise TypeError("%s: %s has dtype %s, x %s (one dtype for all the arrays)"
                                % (self, name, v.type.dtype, arrays[0].type.dtype))
        if len(arrays) != self.n_arrays:
            raise TypeError("%s takes %d arrays, then ws, stride and pad" % (self, self.n_arrays))
        host = self.cpu_op().make_node(*([v.type.host_type()() for v in arrays] + list(params)))
        return Apply(self, list(arrays) + list(host.inputs[self.n_arrays:]), [gpu_type_of(host.outputs[0].type)()])

    def infer_shape(self, fgraph, node, input_shapes):
        return self.cpu_op().infer_shape(fgraph, node, input_shapes)

    def c_code_cache_version(self):
        return (1,)

    def cuda_launcher(self, node, symbol):
        return CNN_COMMON + POOL_COMMON + "\n" + _launcher(self, node, symbol)


class GpuPool(_GpuPoolBase):
    """``Pool`` on the device."""

    cpu_class = cpu_pool.Pool
    kind = "pool"


class GpuMaxPoolGrad(_GpuPoolBase):
    """``MaxPoolGrad`` on the device: ``(x, maxout, gz, ws, stride, pad) -> gx``."""

    cpu_class = cpu_pool.MaxPoolGrad
    kind = "max_grad"
    n_arrays = 3
    array_names = ("x", "maxout", "gz")

    def __init__(self, ignore_border, ndim=2, mode="max"):
        super().__init__(ignore_border, mode, ndim)

    def _make_cpu(self, ignore_border, mode, ndim):
        return cpu_pool.MaxPoolGrad(ignore_border, ndim=ndim, mode=mode)


class GpuAveragePoolGrad(_GpuPoolBase):
    """``AveragePoolGrad`` on the device: ``(x, gz, ws, stride, pad) -> gx``."""

    cpu_class = cpu_pool.AveragePoolGrad
    kind = "average_grad"
    n_arrays = 2
    array_names = ("x", "gz")

    def __init__(self, ignore_border, mode="average_inc_pad", ndim=2):
        super().__init__(ignore_border, mode, ndim)


class GpuDownsampleFactorMaxGradGrad(_GpuPoolBase):
    """``DownsampleFactorMaxGradGrad`` on the device: ``(x, maxout, ggx, ws, stride, pad) -> ggz``."""

    cpu_class = cpu_pool.DownsampleFactorMaxGradGrad
    kind = "max_grad_grad"
    n_arrays = 3
    array_names = ("x", "maxout", "ggx")

    def __init__(self, ignore_border, mode="max", ndim=2):
        super().__init__(ignore_border, mode, ndim)


_GPU_CLASSES = {cpu_pool.Pool: GpuPool, cpu_pool.MaxPoolGrad: GpuMaxPoolGrad,
                cpu_pool.AveragePoolGrad: GpuAveragePoolGrad,
                cpu_pool.DownsampleFactorMaxGradGrad: GpuDownsampleFactorMaxGradGrad}


def gpu_pool_supported(node):
    """True when a CPU pooling node can become its GPU version."""
    cls = _GPU_CLASSES.get(type(node.op))
    if cls is None:
        return False
    arrays = node.inputs[:cls.n_arrays]
    return all(v.type.dtype in SUPPORTED_DTYPES and v.type.dtype == arrays[0].type.dtype for v in arrays)


def gpu_version(node, on_device):
    """The GPU outputs for a CPU pooling node (``on_device`` moves a host input), or None."""
    if not gpu_pool_supported(node):
        return None
    cls = _GPU_CLASSES[type(node.op)]
    ins = [on_device(v) for v in node.inputs[:cls.n_arrays]] + list(node.inputs[cls.n_arrays:])
    return [cls.from_cpu(node.op)(*ins)]


# ------------------------------------------------------------------ code generation

POOL_COMMON = r"""
#ifndef FFG_CU_POOL_COMMON
#define FFG_CU_POOL_COMMON
/* ---- shared by the pooling launchers ---- */

/* Check the window, stride and padding of every pooled axis (the CPU op's rules) and count the
   windows of each (Theano's formulas; an empty axis has none). FFG_OK or FFG_ERR_VALUE. */
static int32_t ffg_cu_pool_windows(FfgError *err, const char *who, int nd, int ignore_border, const int64_t *n,
                                   const int64_t *ws, const int64_t *st, const int64_t *pad, int64_t *P)
{
    int k;
    for (k = 0; k < nd; ++k) {
        int64_t v;
        if (ws[k] < 1) {
            ffg_cu_error(err, FFG_ERR_VALUE, -1, "%s: the pooling window ws must be positive, got ws[%d] = %lld",
                         who, k, (long long)ws[k]);
            return FFG_ERR_VALUE;
        }
        if (st[k] < 1) {
            ffg_cu_error(err, FFG_ERR_VALUE, -1, "%s: the stride must be positive, got stride[%d] = %lld", who, k,
                         (long long)st[k]);
            return FFG_ERR_VALUE;
        }
        if (pad[k] < 0) {
            ffg_cu_error(err, FFG_ERR_VALUE, -1, "%s: the padding pad must be non-negative, got pad[%d] = %lld",
                         who, k, (long long)pad[k]);
            return FFG_ERR_VALUE;
        }
        if (pad[k] != 0 && !ignore_border) {
            ffg_cu_error(err, FFG_ERR_VALUE, -1, "%s: padding works only with ignore_border=True", who);
            return FFG_ERR_VALUE;
        }
        if (pad[k] >= ws[k]) {
            ffg_cu_error(err, FFG_ERR_VALUE, -1, "%s: padding must be smaller than the window (pad[%d] = %lld, "
                         "ws[%d] = %lld)", who, k, (long long)pad[k], k, (long long)ws[k]);
            return FFG_ERR_VALUE;
        }
        if (ws[k] > (INT64_MAX - n[k]) / 4) {   /* n + 2 * pad and the window ends must not overflow */
            ffg_cu_error(err, FFG_ERR_VALUE, -1, "%s: the pooling window ws[%d] = %lld is too large", who, k,
                         (long long)ws[k]);
            return FFG_ERR_VALUE;
        }
        v = n[k] + 2 * pad[k];
        if (v == 0)
            P[k] = 0;
        else if (ignore_border)
            P[k] = v >= ws[k] ? (v - ws[k]) / st[k] + 1 : 0;
        else if (st[k] >= ws[k])
            P[k] = (v - 1) / st[k] + 1;
        else
            P[k] = (v - 1 >= ws[k] ? (v - 1 - ws[k]) / st[k] + 1 : 0) + 1;
    }
    return FFG_OK;
}

/* FFG_ERR_VALUE unless input a (index, called name) has the shape want[0 .. ndim). */
static int32_t ffg_cu_pool_check_shape(FfgError *err, const char *who, const FfgTensor *a, int32_t index,
                                       const char *name, int ndim, const int64_t *want)
{
    char got_s[200], want_s[200];
    int d;
    for (d = 0; d < ndim; ++d) {
        if (a->shape[d] != want[d]) {
            ffg_cu_cnn_shape(got_s, sizeof got_s, ndim, a->shape);
            ffg_cu_cnn_shape(want_s, sizeof want_s, ndim, want);
            ffg_cu_error(err, FFG_ERR_VALUE, index, "%s: %s has shape %s, expected %s", who, name, got_s, want_s);
            return FFG_ERR_VALUE;
        }
    }
    return FFG_OK;
}
#endif
"""


def _args_struct(symbol, T, N, nd):
    L = N - nd
    return ["struct %s_args {" % symbol,
            "    int64_t n;   /* items of the grid-stride loop */",
            "    int64_t lead[%d];   /* the leading (not pooled) axes */" % max(L, 1),
            "    /* per pooled axis: length, window, stride, padding, number of windows */",
            "    int64_t in[%d], ws[%d], st[%d], pad[%d], P[%d];" % (nd, nd, nd, nd, nd),
            "    int64_t xs[%d], ms[%d], gs[%d];   /* element strides of x, maxout, gz (or ggx) */" % (N, N, N),
            "    const %s *x;" % T,
            "    const %s *m;" % T,
            "    const %s *g;" % T,
            "    %s *out;" % T,
            "};", ""]


def _lead_offset(strides, L):
    return " + ".join(["l%d * a.%s[%d]" % (k, strides, k) for k in range(L)]) or "0"


def _pos_offset(strides, L, names):
    return " + ".join("%s * a.%s[%d]" % (v, strides, L + q) for q, v in enumerate(names))


def _nested(names, bounds, body, depth):
    """Nested for loops of ``names`` over [lo, hi) ``bounds`` around the ``body`` lines."""
    lines = []
    for q, (v, (lo, hi)) in enumerate(zip(names, bounds)):
        lines.append("    " * (depth + q) + "for (%s = %s; %s < %s; ++%s) {" % (v, lo, v, hi, v))
    lines += ["    " * (depth + len(names)) + ln for ln in body]
    for q in range(len(names) - 1, -1, -1):
        lines.append("    " * (depth + q) + "}")
    return lines


def _window_lines(nd):
    """Per pooled axis q of window o_q: start s_q, A = [a_q, b_q), |T| extent t_q."""
    lines = []
    for q in range(nd):
        lines += ["const int64_t s%d = o%d * a.st[%d] - a.pad[%d];" % (q, q, q, q),
                  "const int64_t a%d = s%d > 0 ? s%d : 0;" % (q, q, q),
                  "const int64_t b%d = s%d + a.ws[%d] < a.in[%d] ? s%d + a.ws[%d] : a.in[%d];" % ((q,) * 7),
                  "const int64_t t%d = (s%d + a.ws[%d] < a.in[%d] + a.pad[%d] ? s%d + a.ws[%d]"
                  " : a.in[%d] + a.pad[%d]) - s%d;" % ((q,) * 10)]
    return lines


def _forward_kernel(op, symbol, T, N, nd):
    L = N - nd
    lv, ov, yv = ["l%d" % k for k in range(L)], ["o%d" % q for q in range(nd)], ["y%d" % q for q in range(nd)]
    body = decompose(lv + ov, ["a.lead[%d]" % k for k in range(L)] + ["a.P[%d]" % q for q in range(nd)])
    body += ["const %s *xl = a.x + %s;" % (T, _lead_offset("xs", L))]
    body += _window_lines(nd)
    body += ["int64_t %s;" % ", ".join(yv)]
    bounds = [("a%d" % q, "b%d" % q) for q in range(nd)]
    load = "xl[%s]" % _pos_offset("xs", L, yv)
    if op.mode == "max":
        body += ["%s m = xl[%s];   /* A is never empty: pad < ws */" % (T, _pos_offset("xs", L, ["a%d" % q
                                                                                                  for q in range(nd)]))]
        body += _nested(yv, bounds, ["const %s v = %s;" % (T, load),
                                     "if (v > m || v != v)   /* a NaN wins, as numpy.max */",
                                     "    m = v;"], 0)
        body += ["a.out[idx] = m;"]
    else:
        body += ["double acc = 0;"]
        body += _nested(yv, bounds, ["acc += (double)%s;" % load], 0)
        if op.mode == "average_exc_pad":
            body += ["acc /= (double)(%s);   /* |A| */" % " * ".join("(b%d - a%d)" % (q, q) for q in range(nd))]
        elif op.mode == "average_inc_pad":
            body += ["acc /= (double)(%s);   /* |T| */" % " * ".join("t%d" % q for q in range(nd))]
        body += ["a.out[idx] = (%s)acc;" % T]
    return _kernel(symbol, "%s: one thread per output element (leading index, window)" % op, body)


def _gather_ranges(nd):
    """Per pooled axis q of input position y_q: the windows [lo_q, hi_q) whose A contains it."""
    lines = []
    for q in range(nd):
        lines += ["const int64_t e%d = y%d + a.pad[%d];   /* in the padded image */" % (q, q, q),
                  "const int64_t lo%d = e%d >= a.ws[%d] ? (e%d - a.ws[%d]) / a.st[%d] + 1 : 0;" % ((q,) * 6),
                  "const int64_t hi%d = e%d / a.st[%d] + 1 < a.P[%d] ? e%d / a.st[%d] + 1 : a.P[%d];" % ((q,) * 7)]
    return lines


def _grad_kernel(op, symbol, T, N, nd):
    L = N - nd
    lv, ov, yv = ["l%d" % k for k in range(L)], ["o%d" % q for q in range(nd)], ["y%d" % q for q in range(nd)]
    body = decompose(lv + yv, ["a.lead[%d]" % k for k in range(L)] + ["a.in[%d]" % q for q in range(nd)])
    body += _gather_ranges(nd)
    body += ["const %s *gl = a.g + %s;" % (T, _lead_offset("gs", L))]
    body += ["int64_t %s;" % ", ".join(ov)]
    bounds = [("lo%d" % q, "hi%d" % q) for q in range(nd)]
    gz = "gl[%s]" % _pos_offset("gs", L, ov)
    if op.kind == "max_grad":
        body += ["const %s *ml = a.m + %s;" % (T, _lead_offset("ms", L)),
                 "const %s v = a.x[%s + %s];" % (T, _lead_offset("xs", L), _pos_offset("xs", L, yv)),
                 "%s acc = 0;" % T]
        body += _nested(ov, bounds, ["if (v == ml[%s])   /* the max of window o */" % _pos_offset("ms", L, ov),
                                     "    acc += %s;" % gz], 0)
        body += ["a.out[idx] = acc;"]
        what = "MaxPoolGrad: one thread per input element, gathering gz over the windows whose max it is"
    else:
        body += ["double acc = 0;"]
        inner = []
        if op.mode == "sum":
            inner.append("acc += (double)%s;" % gz)
        else:
            inner += _window_lines(nd)
            size = " * ".join(("(b%d - a%d)" % (q, q)) if op.mode == "average_exc_pad" else "t%d" % q
                              for q in range(nd))
            inner.append("acc += (double)%s / (double)(%s);   /* |%s| */"
                         % (gz, size, "A" if op.mode == "average_exc_pad" else "T"))
        body += _nested(ov, bounds, inner, 0)
        body += ["a.out[idx] = (%s)acc;" % T]
        what = "AveragePoolGrad: one thread per input element, gathering gz over the windows that contain it"
    return _kernel(symbol, what, body)


def _grad_grad_kernel(op, symbol, T, N, nd):
    L = N - nd
    lv, ov, yv = ["l%d" % k for k in range(L)], ["o%d" % q for q in range(nd)], ["y%d" % q for q in range(nd)]
    body = decompose(lv + ov, ["a.lead[%d]" % k for k in range(L)] + ["a.P[%d]" % q for q in range(nd)])
    body += ["const %s *xl = a.x + %s;" % (T, _lead_offset("xs", L)),
             "const %s *gl = a.g + %s;" % (T, _lead_offset("gs", L)),
             "const %s m = a.m[%s + %s];" % (T, _lead_offset("ms", L), _pos_offset("ms", L, ov)),
             "double acc = 0;"]
    body += _window_lines(nd)
    body += ["int64_t %s;" % ", ".join(yv)]
    bounds = [("a%d" % q, "b%d" % q) for q in range(nd)]
    body += _nested(yv, bounds, ["if (xl[%s] == m)" % _pos_offset("xs", L, yv),
                                 "    acc += (double)gl[%s];" % _pos_offset("gs", L, yv)], 0)
    body += ["a.out[idx] = (%s)acc;" % T]
    return _kernel(symbol, "DownsampleFactorMaxGradGrad: one thread per window, summing ggx where x is its max",
                   body)


def _kernel(symbol, comment, body):
    # the per-axis quantities of unused windows are dropped by the compiler
    lines = [c_comment(comment[:comment.index(": ") + 1]), c_comment(comment[comment.index(": ") + 2:]),
             "static __global__ void %s_kernel(const struct %s_args a)" % (symbol, symbol), "{"]
    lines += indent(grid_loop("a.n"))
    lines += indent(body, 2) + ["    }", "}", ""]
    return lines


def _launcher(op, node, symbol):
    x = node.inputs[0]
    dtype = x.type.dtype
    T = c_element_type(dtype)
    N, nd = x.type.ndim, op.ndim
    L = N - nd
    who = "%s_who" % symbol
    na = op.n_arrays
    text = _args_struct(symbol, T, N, nd)
    text += {"pool": _forward_kernel, "max_grad": _grad_kernel, "average_grad": _grad_kernel,
             "max_grad_grad": _grad_grad_kernel}[op.kind](op, symbol, T, N, nd)
    specs = [(k, "cuda", dtype, N) for k in range(na)]
    body = ["struct %s_args a;" % symbol,
            "int64_t oshape[%d], pshape[%d];   /* the output, and the pooled shape */" % (N, N),
            "int32_t rc;",
            "int d;", "",
            "(void)host_alloc;   /* the result is on the device */"]
    body += check_inputs(symbol, na + 3, 1, specs)
    body += ["memset(&a, 0, sizeof a);"]
    for k, name in enumerate(("ws", "st", "pad")):
        label = ("the pooling window ws", "the stride", "the padding pad")[k]
        body += ["rc = ffg_cu_cnn_ints(err, %s, &inputs[%d], %d, \"%s\", %d, a.%s);"
                 % (who, na + k, na + k, label, nd, name),
                 "if (rc != FFG_OK)", "    return rc;"]
    body += ["for (d = 0; d < %d; ++d)" % nd,
             "    a.in[d] = inputs[0].shape[%d + d];" % L,
             "rc = ffg_cu_pool_windows(err, %s, %d, %d, a.in, a.ws, a.st, a.pad, a.P);"
             % (who, nd, 1 if op.ignore_border else 0),
             "if (rc != FFG_OK)",
             "    return rc;",
             "for (d = 0; d < %d; ++d) {" % N,
             "    pshape[d] = d < %d ? inputs[0].shape[d] : a.P[d - %d];" % (L, L),
             "    if (d < %d)" % L,
             "        a.lead[d] = inputs[0].shape[d];",
             "}"]
    # the shapes of the other arrays
    shaped = {"pool": [], "max_grad": [(1, "maxout", "pshape"), (2, "gz", "pshape")],
              "average_grad": [(1, "gz", "pshape")],
              "max_grad_grad": [(1, "maxout", "pshape"), (2, "gz", "inputs[0].shape")]}[op.kind]
    for index, name, want in shaped:
        body += ["rc = ffg_cu_pool_check_shape(err, %s, &inputs[%d], %d, \"%s\", %d, %s);"
                 % (who, index, index, name, N, want),
                 "if (rc != FFG_OK)", "    return rc;"]
    # strides and data: x, maxout, gz / ggx
    slots = {"pool": [(0, "xs", "x")], "max_grad": [(0, "xs", "x"), (1, "ms", "m"), (2, "gs", "g")],
             "average_grad": [(1, "gs", "g")],
             "max_grad_grad": [(0, "xs", "x"), (1, "ms", "m"), (2, "gs", "g")]}[op.kind]
    for index, st, ptr in slots:
        body += ["ffg_cu_strides(&inputs[%d], a.%s);" % (index, st),
                 "a.%s = %s;" % (ptr, data_pointer(T, index))]
    if op.kind == "pool" and op.mode == "max":
        # with padding an empty axis still has windows, each with nothing of the image in it
        body += ["for (d = 0; d < %d; ++d) {" % nd,
                 "    if (a.in[d] == 0 && ffg_cu_size(%d, pshape) > 0) {" % N,
                 "        ffg_cu_error(err, FFG_ERR_VALUE, 0, \"%%s: the maximum of an empty window: pooled axis "
                 "%%d of the input is empty, yet the padding gives it %%lld windows\", %s, d, (long long)a.P[d]);"
                 % who,
                 "        return FFG_ERR_VALUE;",
                 "    }",
                 "}"]
    out = "pshape" if op.kind in ("pool", "max_grad_grad") else "inputs[0].shape"
    body += ["for (d = 0; d < %d; ++d)" % N,
             "    oshape[d] = %s[d];" % out]
    body += alloc_output(symbol, 0, dtype, N, "oshape", 0)
    body += ["a.out = (%s *)owned[0];" % T,
             "a.n = ffg_cu_size(%d, oshape);" % N]
    body += launch(symbol, "%s_kernel" % symbol, "a.n", "a", 1, "%s: launching the kernel" % op)
    body += ["return FFG_OK;"]
    head = launcher_head(symbol, str(op), "%s: %d-d %s, pooling the last %d axes" % (op, N, dtype, nd))
    return wrap_c("\n".join(text + head + indent(body) + ["}", ""]))


__all__ = ["GpuPool", "GpuMaxPoolGrad", "GpuAveragePoolGrad", "GpuDownsampleFactorMaxGradGrad",
           "gpu_pool_supported", "gpu_version", "SUPPORTED_DTYPES"]
