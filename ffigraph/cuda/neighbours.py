"""``GpuImages2Neibs`` and ``GpuNeibs2Images``: Theano's neighbours ops on a CUDA device.

The GPU versions of ``ffigraph.tensor.nnet.neighbours``' ops, with their ``mode`` prop, their
inputs, their output types (the CPU ``make_node`` run on host stand-ins) and their semantics
(see that module: the patch grid of each mode, the row-major layout of the patch matrix):

* ``GpuImages2Neibs(mode)(ten4, neib_shape, neib_step)``: one thread per element of the patch
  matrix copies the pixel it holds (zero in the padding; wrapping round in 'wrap_centered');
  every dtype the GPU tier has;
* ``GpuNeibs2Images(mode)(neibs, neib_shape, neib_step, original_shape)``, the adjoint: one thread
  per pixel GATHERS the patch values read from it (no atomics: deterministic), in patch order
  (row of patches, then column, as the CPU op adds them); float32 and float64.

The arrays are GPU arrays (any strides); the int vectors stay on the host and are checked by the
launcher with the CPU op's rules and messages (FFG_ERR_VALUE for sizes and steps below 1 or
vectors of the wrong length, FFG_ERR_TYPE where Theano raised TypeError: a patch larger than the
image, a step that does not tile it, even patch sizes in 'wrap_centered').
"""
from __future__ import annotations

from ffigraph.abi import c_element_type
from ffigraph.cuda.conv import CNN_COMMON, alloc_output, check_inputs, data_pointer, decompose, grid_loop, \
    launch, launcher_head, wrap_c
from ffigraph.cuda.elemwise import GPU_DTYPES, c_comment, indent
from ffigraph.cuda.op import GpuKernelOp
from ffigraph.cuda.type import GpuArrayType, gpu_type_of
from ffigraph.graph.basic import Apply
from ffigraph.tensor.nnet import neighbours as cpu_neighbours

_MODE_CODES = {"valid": 0, "ignore_borders": 1, "wrap_centered": 2, "half": 3, "full": 4}
#: dtypes each op computes on the device (the scatter's adjoint adds: floats only)
SUPPORTED_DTYPES = {"images2neibs": GPU_DTYPES, "neibs2images": ("float32", "float64")}


class _GpuNeibsBase(GpuKernelOp):
    __props__ = ("mode",)
    cpu_class = None
    kind = None

    def __init__(self, mode="valid"):
        self.mode = self.cpu_class(mode).mode

    def cpu_op(self):
        return self.cpu_class(self.mode)

    @classmethod
    def from_cpu(cls, op):
        return cls(op.mode)

    def __str__(self):
        return "Gpu%s{%s}" % (self.cpu_class.__name__, self.mode)

    def make_node(self, x, *params):
        if not isinstance(getattr(x, "type", None), GpuArrayType):
            raise TypeError("%s: %s is not a GPU array (type %s); transfer it with gpu_from_host"
                            % (self, x, getattr(x, "type", type(x).__name__)))
        if x.type.dtype not in SUPPORTED_DTYPES[self.kind]:
            raise TypeError("%s: dtype %s is not supported on the GPU (%s)"
                            % (self, x.type.dtype, ", ".join(SUPPORTED_DTYPES[self.kind])))
        host = self.cpu_op().make_node(x.type.host_type()(), *params)
        return Apply(self, [x] + list(host.inputs[1:]), [gpu_type_of(host.outputs[0].type)()])

    def infer_shape(self, fgraph, node, input_shapes):
        return self.cpu_op().infer_shape(fgraph, node, input_shapes)

    def c_code_cache_version(self):
        return (1,)

    def cuda_launcher(self, node, symbol):
        return CNN_COMMON + NEIBS_COMMON + "\n" + _launcher(self, node, symbol)


class GpuImages2Neibs(_GpuNeibsBase):
    """``Images2Neibs`` on the device."""

    cpu_class = cpu_neighbours.Images2Neibs
    kind = "images2neibs"


class GpuNeibs2Images(_GpuNeibsBase):
    """``Neibs2Images`` on the device."""

    cpu_class = cpu_neighbours.Neibs2Images
    kind = "neibs2images"


_GPU_CLASSES = {cpu_neighbours.Images2Neibs: GpuImages2Neibs, cpu_neighbours.Neibs2Images: GpuNeibs2Images}


def gpu_version(node, on_device):
    """The GPU outputs for a CPU neighbours node (``on_device`` moves a host input), or None."""
    cls = _GPU_CLASSES.get(type(node.op))
    if cls is None or node.inputs[0].type.dtype not in SUPPORTED_DTYPES[cls.kind]:
        return None
    return [cls.from_cpu(node.op)(on_device(node.inputs[0]), *node.inputs[1:])]


# ------------------------------------------------------------------ code generation

NEIBS_COMMON = r"""
#ifndef FFG_CU_NEIBS_COMMON
#define FFG_CU_NEIBS_COMMON
/* ---- shared by the neighbours launchers: the patch grid (neighbours.patch_grid's rules) ----
   Modes: 0 valid, 1 ignore_borders, 2 wrap_centered, 3 half, 4 full. Along the image's rows and
   columns (len), for the patch (size) and the step: the patch count and the offset of the first
   patch before the image (the padding of half and full, the centring of wrap_centered). */
static int32_t ffg_cu_neibs_grid(FfgError *err, const char *who, int mode, const char *mode_name,
                                 const char *img, const int64_t *len, const int64_t *size, const int64_t *step,
                                 int64_t *count, int64_t *offset)
{
    int k;
    if (size[0] <= 0 || size[1] <= 0) {
        ffg_cu_error(err, FFG_ERR_VALUE, -1, "%s: neib_shape must be positive, got (%lld, %lld)", who,
                     (long long)size[0], (long long)size[1]);
        return FFG_ERR_VALUE;
    }
    if (step[0] <= 0 || step[1] <= 0) {
        ffg_cu_error(err, FFG_ERR_VALUE, -1, "%s: neib_step must be positive, got (%lld, %lld)", who,
                     (long long)step[0], (long long)step[1]);
        return FFG_ERR_VALUE;
    }
    if (mode == 2 && (size[0] % 2 != 1 || size[1] % 2 != 1)) {
        ffg_cu_error(err, FFG_ERR_TYPE, -1, "%s: mode 'wrap_centered' needs odd patch sizes, got "
                     "neib_shape=(%lld, %lld)", who, (long long)size[0], (long long)size[1]);
        return FFG_ERR_TYPE;
    }
    for (k = 0; k < 2; ++k) {
        const long long n = (long long)len[k], c = (long long)size[k], s = (long long)step[k];
        long long span;
        if (n < c) {
            ffg_cu_error(err, FFG_ERR_TYPE, -1, "%s: neib_shape[%d]=%lld is larger than %s[%d]=%lld: mode '%s' "
                         "needs patches no larger than the image", who, k, c, img, k + 2, n, mode_name);
            return FFG_ERR_TYPE;
        }
        if (mode == 2) {   /* a patch centred every step, wrapping round: ceil(n / s) of them */
            count[k] = (int64_t)(n / s + (n % s != 0));
            offset[k] = (int64_t)(c / 2);
            continue;
        }
        span = mode <= 1 ? n - c : mode == 3 ? n - c % 2 : n + c - 2;
        offset[k] = (int64_t)(mode <= 1 ? 0 : mode == 3 ? c / 2 : c - 1);
        if (mode != 1 && span % s != 0) {
            ffg_cu_error(err, FFG_ERR_TYPE, -1, "%s: neib_shape[%d]=%lld, neib_step[%d]=%lld and %s[%d]=%lld "
                         "not consistent: mode '%s' needs %s %% %lld == 0", who, k, c, k, s, img, k + 2, n,
                         mode_name, mode == 0 ? "(n - c)" : mode == 3 ? "(n - c % 2)" : "(n + c - 2)", s);
            return FFG_ERR_TYPE;
        }
        count[k] = (int64_t)(1 + span / s);
    }
    return FFG_OK;
}
#endif
"""


def _args_struct(symbol, T):
    return ["struct %s_args {" % symbol,
            "    int64_t n;               /* items of the grid-stride loop */",
            "    int64_t B, C, H, W;      /* the images */",
            "    int64_t size[2], step[2], count[2], offset[2];   /* the patch grid (rows, columns) */",
            "    int64_t is[4], ps[2];    /* element strides of the images and of the patch matrix */",
            "    const %s *in;" % T,
            "    %s *out;" % T,
            "};", ""]


def _images2neibs_kernel(op, symbol, T):
    wrap = op.mode == "wrap_centered"
    body = decompose(["b", "ch", "pa", "pb", "i", "j"],
                     ["a.B", "a.C", "a.count[0]", "a.count[1]", "a.size[0]", "a.size[1]"])
    body += ["int64_t y = pa * a.step[0] + i - a.offset[0];   /* the pixel patch (pa, pb) holds at (i, j) */",
             "int64_t x = pb * a.step[1] + j - a.offset[1];"]
    if wrap:
        body += ["y = ((y % a.H) + a.H) % a.H;   /* round the torus */",
                 "x = ((x % a.W) + a.W) % a.W;",
                 "a.out[idx] = a.in[b * a.is[0] + ch * a.is[1] + y * a.is[2] + x * a.is[3]];"]
    else:
        body += ["a.out[idx] = y >= 0 && y < a.H && x >= 0 && x < a.W",
                 "    ? a.in[b * a.is[0] + ch * a.is[1] + y * a.is[2] + x * a.is[3]] : (%s)0;   /* padding */" % T]
    return _kernel(symbol, "%s: one thread per element of the patch matrix (C order)" % op, body)


def _neibs2images_kernel(op, symbol, T):
    wrap = op.mode == "wrap_centered"
    body = decompose(["b", "ch", "y", "x"], ["a.B", "a.C", "a.H", "a.W"])
    # along an axis, the patches p (with element e = pixel + offset + k * len - p * step in [0, size))
    # that read the pixel: p from ceil((t - size + 1) / step) to floor(t / step), t = pixel + offset + k * len;
    # k = 0, or -1, 0, 1 round the torus (size <= len: the ranges are disjoint and ascending in p)
    ks = "-1; k0 <= 1" if wrap else "0; k0 <= 0"
    kc = "-1; k1 <= 1" if wrap else "0; k1 <= 0"
    body += ["const %s *img = a.in + (b * a.C + ch) * a.count[0] * a.count[1] * a.ps[0];" % T,
             "double acc = 0;",
             "int64_t k0, k1, pa, pb;",
             "for (k0 = %s; ++k0) {" % ks,
             "    const int64_t t0 = y + a.offset[0] + k0 * a.H;",
             "    const int64_t lo0 = t0 >= a.size[0] ? (t0 - a.size[0]) / a.step[0] + 1 : 0;",
             "    const int64_t hi0 = t0 >= 0 ? t0 / a.step[0] : -1;",
             "    for (pa = lo0; pa <= hi0 && pa < a.count[0]; ++pa) {",
             "        const int64_t i = t0 - pa * a.step[0];",
             "        for (k1 = %s; ++k1) {" % kc,
             "            const int64_t t1 = x + a.offset[1] + k1 * a.W;",
             "            const int64_t lo1 = t1 >= a.size[1] ? (t1 - a.size[1]) / a.step[1] + 1 : 0;",
             "            const int64_t hi1 = t1 >= 0 ? t1 / a.step[1] : -1;",
             "            for (pb = lo1; pb <= hi1 && pb < a.count[1]; ++pb) {",
             "                const int64_t j = t1 - pb * a.step[1];",
             "                acc += (double)img[(pa * a.count[1] + pb) * a.ps[0] + (i * a.size[1] + j) * a.ps[1]];",
             "            }",
             "        }",
             "    }",
             "}",
             "a.out[idx] = (%s)acc;" % T]
    if not wrap:   # the loops over k are a single pass: say so to the reader
        body.insert(0, "/* no wrapping in mode '%s': k0 = k1 = 0 */" % op.mode)
    return _kernel(symbol, "%s: one thread per pixel, gathering the patch values read from it" % op, body)


def _kernel(symbol, comment, body):
    lines = [c_comment(comment),
             "static __global__ void %s_kernel(const struct %s_args a)" % (symbol, symbol), "{"]
    lines += indent(grid_loop("a.n"))
    lines += indent(body, 2) + ["    }", "}", ""]
    return lines


def _launcher(op, node, symbol):
    x = node.inputs[0]
    dtype = x.type.dtype
    T = c_element_type(dtype)
    who = "%s_who" % symbol
    i2n = op.kind == "images2neibs"
    text = _args_struct(symbol, T)
    text += (_images2neibs_kernel if i2n else _neibs2images_kernel)(op, symbol, T)
    n_in = 3 if i2n else 4
    body = ["struct %s_args a;" % symbol,
            "int64_t oshape[4];",
            "int32_t rc;", "",
            "(void)host_alloc;   /* the result is on the device */"]
    body += check_inputs(symbol, n_in, 1, [(0, "cuda", dtype, 4 if i2n else 2)])
    body += ["memset(&a, 0, sizeof a);"]
    for k, (name, field) in enumerate((("neib_shape", "size"), ("neib_step", "step"))):
        body += ["rc = ffg_cu_cnn_ints(err, %s, &inputs[%d], %d, \"%s\", 2, a.%s);" % (who, k + 1, k + 1, name, field),
                 "if (rc != FFG_OK)", "    return rc;"]
    if i2n:
        body += ["a.B = inputs[0].shape[0];", "a.C = inputs[0].shape[1];",
                 "a.H = inputs[0].shape[2];", "a.W = inputs[0].shape[3];"]
        img = "ten4.shape"
    else:
        body += ["rc = ffg_cu_cnn_ints(err, %s, &inputs[3], 3, \"original_shape\", 4, oshape);" % who,
                 "if (rc != FFG_OK)", "    return rc;",
                 "if (oshape[0] < 0 || oshape[1] < 0 || oshape[2] < 0 || oshape[3] < 0) {",
                 "    ffg_cu_error(err, FFG_ERR_VALUE, 3, \"%%s: original_shape must not be negative, got (%%lld, "
                 "%%lld, %%lld, %%lld)\", %s, (long long)oshape[0], (long long)oshape[1], (long long)oshape[2], "
                 "(long long)oshape[3]);" % who,
                 "    return FFG_ERR_VALUE;",
                 "}",
                 "a.B = oshape[0];", "a.C = oshape[1];", "a.H = oshape[2];", "a.W = oshape[3];"]
        img = "original_shape"
    body += ["{",
             "    const int64_t len[2] = {a.H, a.W};",
             "    rc = ffg_cu_neibs_grid(err, %s, %d, \"%s\", \"%s\", len, a.size, a.step, a.count, a.offset);"
             % (who, _MODE_CODES[op.mode], op.mode, img),
             "    if (rc != FFG_OK)",
             "        return rc;",
             "}"]
    if i2n:
        body += ["oshape[0] = a.B * a.C * a.count[0] * a.count[1];   /* one row per patch */",
                 "oshape[1] = a.size[0] * a.size[1];",
                 "ffg_cu_strides(&inputs[0], a.is);"]
    else:
        body += ["if (inputs[0].shape[0] != a.B * a.C * a.count[0] * a.count[1] ||",
                 "        inputs[0].shape[1] != a.size[0] * a.size[1]) {",
                 "    ffg_cu_error(err, FFG_ERR_VALUE, 0, \"%%s: neibs has shape (%%lld, %%lld), but images of shape "
                 "(%%lld, %%lld, %%lld, %%lld) have (%%lld, %%lld) patches of neib_shape=(%%lld, %%lld), "
                 "neib_step=(%%lld, %%lld)\", %s, (long long)inputs[0].shape[0], (long long)inputs[0].shape[1], "
                 "(long long)a.B, (long long)a.C, (long long)a.H, (long long)a.W, "
                 "(long long)(a.B * a.C * a.count[0] * a.count[1]), (long long)(a.size[0] * a.size[1]), "
                 "(long long)a.size[0], (long long)a.size[1], (long long)a.step[0], (long long)a.step[1]);" % who,
                 "    return FFG_ERR_VALUE;",
                 "}",
                 "ffg_cu_strides(&inputs[0], a.ps);"]
    body += ["a.in = %s;" % data_pointer(T, 0)]
    nd = 2 if i2n else 4
    body += alloc_output(symbol, 0, dtype, nd, "oshape", 0)
    body += ["a.out = (%s *)owned[0];" % T,
             "a.n = ffg_cu_size(%d, oshape);" % nd]
    body += launch(symbol, "%s_kernel" % symbol, "a.n", "a", 1, "%s: launching the kernel" % op)
    body += ["return FFG_OK;"]
    head = launcher_head(symbol, str(op), "%s: %s" % (op, dtype))
    return wrap_c("\n".join(text + head + indent(body) + ["}", ""]))


__all__ = ["GpuImages2Neibs", "GpuNeibs2Images", "gpu_version", "SUPPORTED_DTYPES"]
