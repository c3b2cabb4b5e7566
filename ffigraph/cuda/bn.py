"""Batch normalization on a CUDA device: the ops of ``ffigraph.tensor.nnet.bn`` as GPU ops.

One GPU op per CPU op, with its ``axes`` prop, its inputs, its output types (the CPU
``make_node`` run on host stand-ins) and its semantics (see that module; Theano's):

* ``GpuBatchNormTrain(axes)(x, scale, bias, epsilon, running_average_factor[, running_mean,
  running_var])`` -> ``out, mean, invstd[, new_running_mean, new_running_var]``;
* ``GpuBatchNormInference(axes)(x, scale, bias, estimated_mean, estimated_variance, epsilon)`` ->
  ``out``;
* ``GpuBatchNormTrainGrad(axes)(x, dy, scale, x_mean, x_invstd, epsilon[, dmean, dinvstd])`` ->
  ``dx, dscale, dbias``;
* ``GpuBatchNormInferenceGrad(axes)(x, dy, scale, estimated_mean, estimated_variance, epsilon)``
  -> ``dx, dscale, dbias, dmean, dvar``.

The arrays are GPU arrays of one dtype (float32 or float64, any element strides); the scalars
``epsilon`` and ``running_average_factor`` stay on the host and are read by the launcher. The
parameters have x's rank with length 1 on the normalized axes and x's lengths elsewhere (checked
at run time, FFG_ERR_VALUE with the CPU op's message); ``dy`` has x's shape.

A *lane* is one index of the kept axes (the axes not normalized): a channel for 'spatial', an
activation for 'per-activation'. One block per lane (a grid-stride loop over the lanes) sums its
lane's elements in double, each thread a strided part, then adds the threads' sums with a
shared-memory tree reduction (deterministic: the same order every run); the train op makes two
such passes (the mean, then the squared deviations: numpy's two-pass variance). The block then
computes the lane's statistics and writes its elementwise results (computed in double and
rounded once, as the CPU op does in float64). Results are fresh C-contiguous device blocks.
"""
from __future__ import annotations

from ffigraph.abi import c_element_type
from ffigraph.cuda.conv import CNN_COMMON, wrap_c, alloc_output, check_inputs, data_pointer, launcher_head
from ffigraph.cuda.elemwise import c_comment, c_string, indent
from ffigraph.cuda.op import GpuKernelOp
from ffigraph.cuda.type import GpuArrayType, gpu_type_of
from ffigraph.graph.basic import Apply
from ffigraph.tensor.nnet import bn as cpu_bn

SUPPORTED_DTYPES = ("float32", "float64")

# per kind: the names of the inputs (None: a host scalar), and the names of the outputs
_INPUTS = {
    "train": ("x", "scale", "bias", None, None, "running_mean", "running_var"),
    "inference": ("x", "scale", "bias", "estimated_mean", "estimated_variance", None),
    "train_grad": ("x", "dy", "scale", "x_mean", "x_invstd", None, "dmean", "dinvstd"),
    "inference_grad": ("x", "dy", "scale", "estimated_mean", "estimated_variance", None),
}
_SCALARS = {"train": ("epsilon", "running_average_factor"), "inference": ("epsilon",),
            "train_grad": ("epsilon",), "inference_grad": ("epsilon",)}


class _GpuBatchNormBase(GpuKernelOp):
    """The common part: the CPU op's ``axes``, types and checks."""

    __props__ = ("axes",)
    cpu_class = None
    kind = None

    def __init__(self, axes=(0,)):
        self.axes = self.cpu_class(axes).axes

    def cpu_op(self):
        return self.cpu_class(self.axes)

    @classmethod
    def from_cpu(cls, op):
        return cls(op.axes)

    def __str__(self):
        return "Gpu%s{axes=%s}" % (self.cpu_class.__name__[len("Abstract"):], ",".join(map(str, self.axes)))

    def make_node(self, *inputs):
        names = _INPUTS[self.kind]
        stand_ins, dtype = [], None
        for k, v in enumerate(inputs):
            name = names[k] if k < len(names) else None
            if name is None:
                stand_ins.append(v)   # a host scalar, or a surplus input the CPU op refuses
                continue
            if not isinstance(getattr(v, "type", None), GpuArrayType):
                raise TypeError("%s: %s %s is not a GPU array (type %s); transfer it with gpu_from_host"
                                % (self, name, v, getattr(v, "type", type(v).__name__)))
            if v.type.dtype not in SUPPORTED_DTYPES or (dtype is not None and v.type.dtype != dtype):
                raise TypeError("%s: %s has dtype %s; the arrays must all be float32 or all float64"
                                % (self, name, v.type.dtype))
            dtype = v.type.dtype
            stand_ins.append(v.type.host_type()())
        host = self.cpu_op().make_node(*stand_ins)
        ins = [v if names[k] is not None else host.inputs[k] for k, v in enumerate(inputs)]
        return Apply(self, ins, [gpu_type_of(o.type)() for o in host.outputs])

    def infer_shape(self, fgraph, node, input_shapes):
        return self.cpu_op().infer_shape(fgraph, node, input_shapes)

    def c_code_cache_version(self):
        return (1,)

    def cuda_launcher(self, node, symbol):
        return CNN_COMMON + BN_COMMON + "\n" + _launcher(self, node, symbol)


class GpuBatchNormTrain(_GpuBatchNormBase):
    """``AbstractBatchNormTrain`` on the device."""

    cpu_class = cpu_bn.AbstractBatchNormTrain
    kind = "train"


class GpuBatchNormInference(_GpuBatchNormBase):
    """``AbstractBatchNormInference`` on the device."""

    cpu_class = cpu_bn.AbstractBatchNormInference
    kind = "inference"


class GpuBatchNormTrainGrad(_GpuBatchNormBase):
    """``AbstractBatchNormTrainGrad`` on the device."""

    cpu_class = cpu_bn.AbstractBatchNormTrainGrad
    kind = "train_grad"


class GpuBatchNormInferenceGrad(_GpuBatchNormBase):
    """``AbstractBatchNormInferenceGrad`` on the device."""

    cpu_class = cpu_bn.AbstractBatchNormInferenceGrad
    kind = "inference_grad"


_GPU_CLASSES = {c.cpu_class: c for c in (GpuBatchNormTrain, GpuBatchNormInference, GpuBatchNormTrainGrad,
                                         GpuBatchNormInferenceGrad)}


def gpu_bn_supported(node):
    """True when a CPU batch-norm node can become its GPU version."""
    cls = _GPU_CLASSES.get(type(node.op))
    if cls is None:
        return False
    names = _INPUTS[cls.kind]
    arrays = [v for k, v in enumerate(node.inputs) if names[k] is not None]
    scalars = [v for k, v in enumerate(node.inputs) if names[k] is None]
    return all(v.type.dtype == arrays[0].type.dtype for v in arrays) \
        and arrays[0].type.dtype in SUPPORTED_DTYPES \
        and all(v.type.ndim == 0 and v.type.dtype[0] in "fiu" for v in scalars)


def gpu_version(node, on_device):
    """The GPU outputs for a CPU batch-norm node (``on_device`` moves a host input), or None."""
    if not gpu_bn_supported(node):
        return None
    cls = _GPU_CLASSES[type(node.op)]
    names = _INPUTS[cls.kind]
    ins = [on_device(v) if names[k] is not None else v for k, v in enumerate(node.inputs)]
    out = cls.from_cpu(node.op)(*ins)
    return list(out) if isinstance(out, (list, tuple)) else [out]


# ------------------------------------------------------------------ code generation

BN_COMMON = r"""
#ifndef FFG_CU_BN_COMMON
#define FFG_CU_BN_COMMON
/* ---- shared by the batch-norm launchers ---- */

/* The sum of every thread's v over the block (blockDim.x a power of two, at most FFG_CU_THREADS):
   a tree in shared memory, the same additions in the same order every run. Every thread of the
   block calls it and gets the total. */
static __device__ double ffg_cu_bn_block_sum(double v, double *sh)
{
    unsigned int s;
    sh[threadIdx.x] = v;
    __syncthreads();
    for (s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    v = sh[0];
    __syncthreads();   /* sh is reused by the next sum */
    return v;
}

/* FFG_ERR_VALUE unless input t (index, called name) has the shape want[0 .. ndim); what says
   which shape that is. */
static int32_t ffg_cu_bn_check_shape(FfgError *err, const char *who, const FfgTensor *t, int32_t index,
                                     const char *name, int ndim, const int64_t *want, const char *what)
{
    char got_s[200], want_s[200];
    int d;
    for (d = 0; d < ndim; ++d) {
        if (t->shape[d] != want[d]) {
            ffg_cu_cnn_shape(got_s, sizeof got_s, ndim, t->shape);
            ffg_cu_cnn_shape(want_s, sizeof want_s, ndim, want);
            ffg_cu_error(err, FFG_ERR_VALUE, index, "%s: %s has shape %s, but %s is needed (%s)", who, name, got_s,
                         want_s, what);
            return FFG_ERR_VALUE;
        }
    }
    return FFG_OK;
}
#endif
"""


def _plan(op, node):
    """(array input indices, x-shaped array indices, scalar indices, x-shaped output indices)."""
    names = _INPUTS[op.kind]
    arrays = [k for k in range(len(node.inputs)) if names[k] is not None]
    full = [k for k in arrays if names[k] in ("x", "dy")]
    scalars = [k for k in range(len(node.inputs)) if names[k] is None]
    return arrays, full, scalars


def _body(op, node, T):
    """The per-lane work of the kernel (lines), given the offsets set up around it: ``xk[j]``, the
    kept offset of input j, ``pk[j]`` the same for a parameter, ``ok`` the lane's offset in an
    x-shaped output, ``lane`` its index in a parameter-shaped one. ``FOR_ELEMENTS`` stands for the
    loop over the lane's elements (``ELEM(j)`` input j's element there, ``OUT`` the output offset)."""
    kind = op.kind
    P = lambda j: "(double)a.in%d[pk%d]" % (j, j)   # noqa: E731  (a parameter of the lane)
    if kind == "train":
        running = len(node.inputs) > 5
        lines = ["double s = 0, mean, var, invstd, scale, bias;",
                 ("FOR_ELEMENTS", ["s += ELEM(0);"]),
                 "mean = ffg_cu_bn_block_sum(s, sh) / (double)a.m;",
                 "s = 0;",
                 ("FOR_ELEMENTS", ["const double d = ELEM(0) - mean;", "s += d * d;"]),
                 "var = ffg_cu_bn_block_sum(s, sh) / (double)a.m;   /* the biased variance */",
                 "invstd = 1.0 / sqrt(var + a.eps);",
                 "scale = %s;" % P(1),
                 "bias = %s;" % P(2),
                 "if (threadIdx.x == 0) {",
                 "    a.out1[lane] = (%s)mean;" % T,
                 "    a.out2[lane] = (%s)invstd;" % T]
        if running:
            lines += ["    /* Theano's running averages, the variance unbiased by m / (m - 1) */",
                      "    const double f = a.factor, unbiased = (double)a.m / ((double)a.m - 1.0) * var;",
                      "    a.out3[lane] = (%s)(%s * (1.0 - f) + mean * f);" % (T, P(5)),
                      "    a.out4[lane] = (%s)(%s * (1.0 - f) + unbiased * f);" % (T, P(6))]
        lines += ["}",
                  ("FOR_ELEMENTS", ["a.out0[OUT] = (%s)((ELEM(0) - mean) * (scale * invstd) + bias);" % T])]
        return lines
    if kind == "inference":
        return ["const double mean = %s;" % P(3),
                "const double k = %s / sqrt(%s + a.eps);   /* scale / std */" % (P(1), P(4)),
                "const double bias = %s;" % P(2),
                ("FOR_ELEMENTS", ["a.out0[OUT] = (%s)((ELEM(0) - mean) * k + bias);" % T])]
    if kind == "train_grad":
        extra = len(node.inputs) > 6
        lines = ["const double mean = %s, s = %s, scale = %s;" % (P(3), P(4), P(2)),
                 "const double m = (double)a.m;",
                 "double sdy = 0, sdyxd = 0, sxd = 0, mdx, mc;",
                 ("FOR_ELEMENTS", ["const double dy = ELEM(1), xd = ELEM(0) - mean;",
                                   "sdy += dy;", "sdyxd += dy * xd;", "sxd += xd;"]),
                 "sdy = ffg_cu_bn_block_sum(sdy, sh);",
                 "sdyxd = ffg_cu_bn_block_sum(sdyxd, sh);",
                 "sxd = ffg_cu_bn_block_sum(sxd, sh);",
                 "mdx = sdyxd / m;   /* mean(dy * (x - mean)) */",
                 "mc = (s * sdy - s * s * s * mdx * sxd) / m;   /* mean(c) */",
                 "if (threadIdx.x == 0) {",
                 "    a.out1[lane] = (%s)(s * sdyxd);   /* dscale = sum(dy * invstd * (x - mean)) */" % T,
                 "    a.out2[lane] = (%s)sdy;           /* dbias = sum(dy) */" % T,
                 "}"]
        tail = ["const double dy = ELEM(1), xd = ELEM(0) - mean;",
                "const double c = dy * s - xd * mdx * s * s * s;"]
        if extra:   # the gradients reaching the mean and invstd outputs
            lines += ["const double dmean = %s, dinvstd = %s;" % (P(6), P(7))]
            tail += ["a.out0[OUT] = (%s)(scale * (c - mc) + dmean / m - dinvstd * s * s * s * xd / m);" % T]
        else:
            tail += ["a.out0[OUT] = (%s)(scale * (c - mc));" % T]
        return lines + [("FOR_ELEMENTS", tail)]
    # inference_grad
    return ["const double mean = %s, scale = %s;" % (P(3), P(2)),
            "const double ve = %s + a.eps, sd = sqrt(ve);" % P(4),
            "double sdx = 0, sdy = 0;",
            ("FOR_ELEMENTS", ["const double dy = ELEM(1);", "sdx += dy * (ELEM(0) - mean);", "sdy += dy;"]),
            "sdx = ffg_cu_bn_block_sum(sdx, sh);",
            "sdy = ffg_cu_bn_block_sum(sdy, sh);",
            "if (threadIdx.x == 0) {",
            "    a.out1[lane] = (%s)(sdx / sd);" % T,
            "    a.out2[lane] = (%s)sdy;" % T,
            "    a.out3[lane] = (%s)(-sdy * (scale / sd));" % T,
            "    a.out4[lane] = (%s)(-sdx * (scale / (2.0 * ve * sd)));" % T,
            "}",
            ("FOR_ELEMENTS", ["a.out0[OUT] = (%s)(ELEM(1) * (scale / sd));" % T])]


def _kernel(op, node, symbol, T):
    N = node.inputs[0].type.ndim
    kept = [d for d in range(N) if d not in op.axes]
    red = list(op.axes)
    K, R = len(kept), len(red)
    arrays, full, scalars = _plan(op, node)
    n_out = len(node.outputs)
    struct = ["struct %s_args {" % symbol,
              "    int64_t lanes, m;   /* kept elements (lanes), elements per lane */",
              "    int64_t kshape[%d], rshape[%d];   /* lengths of the kept and the normalized axes */"
              % (max(K, 1), max(R, 1))]
    for j in arrays:
        struct.append("    int64_t st%d[%d];   /* element strides of %s */" % (j, N, _INPUTS[op.kind][j]))
        struct.append("    const %s *in%d;" % (T, j))
    struct.append("    int64_t ost[%d];   /* strides of an x-shaped output (C order) */" % N)
    for k in range(n_out):
        struct.append("    %s *out%d;" % (T, k))
    struct += ["    double eps, factor;", "};", ""]
    # the lane's offsets
    pre = ["const int64_t lane = blk;",
           "int64_t rest = lane, ok = 0;"]
    pre += ["int64_t pk%d = 0;" % j for j in arrays]
    pre.append("int d;")
    for i, d in reversed(list(enumerate(kept))):
        pre += ["{",
                "    const int64_t i = rest %% a.kshape[%d];" % i,
                "    rest /= a.kshape[%d];" % i,
                "    ok += i * a.ost[%d];" % d]
        pre += ["    pk%d += i * a.st%d[%d];" % (j, j, d) for j in arrays]
        pre.append("}")
    pre.append("(void)d;")

    def elements(body):
        loop = ["{",
                "    int64_t r;",
                "    for (r = threadIdx.x; r < a.m; r += blockDim.x) {",
                "        int64_t rr = r, eo = ok;   /* eo: the offset in an x-shaped output */"]
        loop += ["        int64_t e%d = pk%d;" % (j, j) for j in full]
        for i, d in reversed(list(enumerate(red))):
            loop += ["        {",
                     "            const int64_t i = rr %% a.rshape[%d];" % i,
                     "            rr /= a.rshape[%d];" % i,
                     "            eo += i * a.ost[%d];" % d]
            loop += ["            e%d += i * a.st%d[%d];" % (j, j, d) for j in full]
            loop.append("        }")
        for ln in body:
            for j in full:
                ln = ln.replace("ELEM(%d)" % j, "(double)a.in%d[e%d]" % (j, j))
            ln = ln.replace("[OUT]", "[eo]")
            loop.append("        " + ln)
        loop += ["    }", "}"]
        return loop

    inner = []
    for item in _body(op, node, T):
        inner += elements(item[1]) if isinstance(item, tuple) else [item]
    lines = [c_comment(str(op)),
             c_comment("one block per lane (the kept axes %s): tree sums in shared memory, then the lane's elements"
                       % (tuple(kept),)),
             "static __global__ void __launch_bounds__(FFG_CU_THREADS)",
             "%s_kernel(const struct %s_args a)" % (symbol, symbol), "{",
             "    __shared__ double sh[FFG_CU_THREADS];",
             "    int64_t blk;",
             "    (void)sh;",
             "    for (blk = blockIdx.x; blk < a.lanes; blk += gridDim.x) {"]
    lines += indent(pre + inner, 2)
    lines += ["    }", "}", ""]
    return struct + lines


def _launcher(op, node, symbol):
    x = node.inputs[0]
    dtype = x.type.dtype
    T = c_element_type(dtype)
    N = x.type.ndim
    names = _INPUTS[op.kind]
    arrays, full, scalars = _plan(op, node)
    n_out = len(node.outputs)
    who = "%s_who" % symbol
    text = _kernel(op, node, symbol, T)
    specs = [(k, "cuda", dtype, N) for k in arrays] + \
        [(k, "cpu", node.inputs[k].type.dtype, 0) for k in scalars]
    body = ["struct %s_args a;" % symbol,
            "int64_t pshape[%d];   /* x's shape with length 1 on the normalized axes */" % N,
            "int64_t n;",
            "int32_t rc;",
            "int d;", "",
            "(void)host_alloc;   /* the results are on the device */"]
    body += check_inputs(symbol, len(node.inputs), n_out, specs)
    body += ["memset(&a, 0, sizeof a);",
             "for (d = 0; d < %d; ++d)" % N,
             "    pshape[d] = %s ? 1 : inputs[0].shape[d];" % (" || ".join("d == %d" % a for a in op.axes))]
    for k in arrays[1:]:
        if names[k] == "dy":
            want, what = "inputs[0].shape", "the shape of x"
        else:
            want, what = "pshape", "x's shape with length 1 on the normalized axes"
        body += ["rc = ffg_cu_bn_check_shape(err, %s, &inputs[%d], %d, \"%s\", %d, %s, \"%s\");"
                 % (who, k, k, names[k], N, want, what),
                 "if (rc != FFG_OK)", "    return rc;"]
    for k, sname in zip(scalars, _SCALARS[op.kind]):
        ct = c_element_type(node.inputs[k].type.dtype)
        field = "eps" if sname == "epsilon" else "factor"
        body += ["/* %s, a host scalar */" % sname,
                 "a.%s = (double)*(const %s *)((const char *)inputs[%d].data + inputs[%d].byte_offset);"
                 % (field, ct, k, k)]
    kept = [d for d in range(N) if d not in op.axes]
    body += ["a.kshape[%d] = inputs[0].shape[%d];" % (i, d) for i, d in enumerate(kept)]
    body += ["a.rshape[%d] = inputs[0].shape[%d];" % (i, d) for i, d in enumerate(op.axes)]
    body += ["a.lanes = ffg_cu_size(%d, a.kshape);" % len(kept),
             "a.m = ffg_cu_size(%d, a.rshape);" % len(op.axes)]
    for k in arrays:
        body += ["ffg_cu_strides(&inputs[%d], a.st%d);" % (k, k),
                 "a.in%d = %s;" % (k, data_pointer(T, k))]
    body += ["{   /* an x-shaped output is C-contiguous */",
             "    int64_t s = 1;",
             "    for (d = %d; d >= 0; --d) {" % (N - 1),
             "        a.ost[d] = s;",
             "        s *= inputs[0].shape[d] > 0 ? inputs[0].shape[d] : 1;",
             "    }",
             "}"]
    for k, out in enumerate(node.outputs):
        shape = "inputs[0].shape" if out.type.ndim == N and k == 0 else "pshape"
        body += alloc_output(symbol, k, dtype, N, shape, k)
        body.append("a.out%d = (%s *)owned[%d];" % (k, T, k))
    what = "%s: launching the kernel" % op
    body += ["n = a.lanes;",
             "if (n > 0) {   /* one block per lane (a grid-stride loop past 65535) */",
             "    %s_kernel<<<(unsigned int)(n < 65535 ? n : 65535), FFG_CU_THREADS>>>(a);" % symbol,
             "    if (ffg_cu_launched(err, \"%s\"))" % c_string(what),
             "        return ffg_cu_cnn_fail(device_alloc, outputs, owned, %d, err);" % n_out,
             "}",
             "return FFG_OK;"]
    head = launcher_head(symbol, str(op), "%s: %d-d %s" % (op, N, dtype))
    return wrap_c("\n".join(text + head + indent(body) + ["}", ""]))


__all__ = ["GpuBatchNormTrain", "GpuBatchNormInference", "GpuBatchNormTrainGrad", "GpuBatchNormInferenceGrad",
           "gpu_bn_supported", "gpu_version", "SUPPORTED_DTYPES"]
