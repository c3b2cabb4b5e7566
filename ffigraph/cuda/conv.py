"""``GpuConv``: Theano's abstract convolutions (2d and 3d, the three kinds) on a CUDA device.

One GPU op per kind of ``ffigraph.tensor.nnet.abstract_conv``, with the CPU op's props and
inputs, its output types (its ``make_node`` run on host stand-ins) and its semantics, so the GPU
rewrite can swap one for the other:

* ``GpuConv`` (kind "forward"): ``img`` ``(B, C, *S)``, ``kern`` ``(O, C/G, *K)`` -> ``(B, O, *P)``;
* ``GpuConv_gradWeights``: ``img``, ``topgrad`` ``(B, O, *P)``, ``shape`` (K) -> ``(O, C/G, *K)``;
* ``GpuConv_gradInputs``: ``kern``, ``topgrad``, ``shape`` (S) -> ``(B, C, *S)``.

The data inputs are GPU arrays (float32 or float64, the same dtype, any element strides, negative
and zero included); ``shape`` stays a host int64 vector, read by the launcher on the host. With
``dk = (K - 1) * d + 1``, the pads (pl, pr) of the border mode and ``P = (S + pl + pr - dk) // s + 1``
per axis, ``xpad`` the zero-padded image and ``Wf`` the kernel flipped on every spatial axis when
``filter_flip``::

    forward       out[b, o, p] = sum_{c < C/G, i < K} xpad[b, g*C/G + c, p*s + i*d] * Wf[o, c, i]
    grad_weights  dWf[o, c, i] = sum_{b, p} top[b, o, p] * xpad[b, g*C/G + c, p*s + i*d]
                  (flipped back when filter_flip)
    grad_inputs   dxpad[b, g*C/G + c, p*s + i*d] += top[b, o, p] * Wf[o, c, i], cropped to the image

(g = o // (O/G)). Every kernel is a direct loop, one thread per output element, and writes its
element once, so results are deterministic and need no atomics: forward sums over (C/G, K);
grad_weights has one thread per weight summing over the batch and the output positions;
grad_inputs gathers, each input element summing over the output positions whose window reads it.
Sums accumulate in the dtype, in a fixed order (they may differ from the CPU's BLAS in the last
bits). Results are fresh C-contiguous device blocks.

Run-time checks are the CPU op's (FFG_ERR_VALUE through the error record, messages naming the op
and the numbers): channels not divisible by the groups, the kernel's channels not C/G, a dilated
kernel larger than the padded input, a gradient op's ``shape`` with entries < 1 or a ``topgrad``
that does not match it ("invalid filter_shape for gradWeights" / "invalid input_shape for
gradInputs"), batch or channel counts that differ.

This module also holds the C helpers the CNN launchers share (``CNN_COMMON``; ``ffigraph.cuda.pool``
and ``ffigraph.cuda.bn`` use them).
"""
from __future__ import annotations

import re

from ffigraph.abi import c_element_type, dtype_code
from ffigraph.cuda.elemwise import c_comment, c_string, dtype_args, indent
from ffigraph.cuda.op import GpuKernelOp
from ffigraph.cuda.prelude import LAUNCHER_PARAMS
from ffigraph.cuda.type import GpuArrayType, gpu_type_of
from ffigraph.graph.basic import Apply
from ffigraph.tensor.nnet import abstract_conv as ac

#: dtypes with GPU convolution code
SUPPORTED_DTYPES = ("float32", "float64")

_CPU_CLASSES = {("forward", 2): ac.AbstractConv2d, ("forward", 3): ac.AbstractConv3d,
                ("grad_weights", 2): ac.AbstractConv2d_gradWeights, ("grad_weights", 3): ac.AbstractConv3d_gradWeights,
                ("grad_inputs", 2): ac.AbstractConv2d_gradInputs, ("grad_inputs", 3): ac.AbstractConv3d_gradInputs}

_CPU_TYPES = frozenset(_CPU_CLASSES.values()) | {ac.AbstractConv, ac.AbstractConv_gradWeights,
                                                 ac.AbstractConv_gradInputs}

# ------------------------------------------------------------------ C shared by the CNN launchers

_I64 = dtype_code("int64")

CNN_COMMON = r"""
#ifndef FFG_CU_CNN_COMMON
#define FFG_CU_CNN_COMMON
/* ---- shared by the CNN launchers (convolution, pooling, batch norm) ---- */

/* The n entries of host int64 vector t (input index, any stride) into v; FFG_OK when t is one. */
static int32_t ffg_cu_cnn_ints(FfgError *err, const char *who, const FfgTensor *t, int32_t index,
                               const char *what, int n, int64_t *v)
{
    const int64_t *p;
    int64_t step;
    int k;
    int32_t rc = ffg_cu_check_tensor(err, who, t, index, FFG_DEVICE_CPU, %(code)d, %(bits)d, 1);
    if (rc != FFG_OK)
        return rc;
    if (t->shape[0] != n) {
        ffg_cu_error(err, FFG_ERR_VALUE, index, "%%s: %%s must have %%d entries, got %%lld", who, what, n,
                     (long long)t->shape[0]);
        return FFG_ERR_VALUE;
    }
    step = t->strides != NULL ? t->strides[0] : 1;
    p = (const int64_t *)((const char *)t->data + t->byte_offset);
    for (k = 0; k < n; ++k)
        v[k] = p[k * step];
    return FFG_OK;
}

/* shape[0 .. ndim) written as numpy writes a shape tuple: "(2, 3)", "(4,)", "()". */
static void ffg_cu_cnn_shape(char *buf, size_t size, int ndim, const int64_t *shape)
{
    size_t used = 0;
    int d;
    buf[0] = '\0';
    used += (size_t)snprintf(buf, size, "(");
    for (d = 0; d < ndim && used + 24 < size; ++d)
        used += (size_t)snprintf(buf + used, size - used, "%%s%%lld", d ? ", " : "", (long long)shape[d]);
    if (used + 3 < size)
        snprintf(buf + used, size - used, "%%s", ndim == 1 ? ",)" : ")");
}

/* Release the first n outputs of a failed call (the caller releases nothing of it). */
static int32_t ffg_cu_cnn_fail(const FfgAllocator *device_alloc, FfgTensor *outputs, void **owned, int n,
                               FfgError *err)
{
    int k;
    for (k = 0; k < n; ++k) {
        ffg_cu_free(device_alloc, owned[k]);
        owned[k] = NULL;
        outputs[k].data = NULL;
    }
    return err->code != FFG_OK ? err->code : FFG_ERR_RUNTIME;
}
#endif
""" % dict(code=_I64[0], bits=_I64[1])


def launcher_head(symbol, who_text, comment):
    """The start of a launcher: its ``who`` string and signature (lines)."""
    return ["static const char %s_who[] = \"%s\";" % (symbol, c_string(who_text)), ""] + \
        [c_comment(part.strip()) for part in comment.split("\n")] + [
            "FFG_CU_LAUNCHER int32_t %s(%s)" % (symbol, LAUNCHER_PARAMS), "{"]


def check_inputs(symbol, n_inputs, n_outputs, specs):
    """Lines checking the call and each input; ``specs`` are (index, 'cuda'|'cpu', dtype, ndim)."""
    who = "%s_who" % symbol
    lines = ["rc = ffg_cu_check_call(err, %s, inputs, n_inputs, %d, outputs, owned, n_outputs, %d);"
             % (who, n_inputs, n_outputs)]
    for index, where, dtype, ndim in specs:
        lines += ["if (rc == FFG_OK)",
                  "    rc = ffg_cu_check_tensor(err, %s, &inputs[%d], %d, %s, %s, %d);"
                  % (who, index, index, "FFG_DEVICE_CUDA" if where == "cuda" else "FFG_DEVICE_CPU",
                     dtype_args(dtype), ndim)]
    lines += ["if (rc != FFG_OK)", "    return rc;"]
    return lines


def value_error(symbol, condition, fmt, args, index=-1):
    """Lines failing with FFG_ERR_VALUE and ``fmt`` (after '%s: ', the op's name) when ``condition``."""
    extra = "".join(", " + a for a in args)
    return ["if (%s) {" % condition,
            "    ffg_cu_error(err, FFG_ERR_VALUE, %d, \"%%s: %s\", %s_who%s);" % (index, fmt, symbol, extra),
            "    return FFG_ERR_VALUE;",
            "}"]


def alloc_output(symbol, k, dtype, ndim, shape_name, n_allocated):
    """Lines allocating output ``k`` (C-contiguous, shape in ``shape_name``) and describing it."""
    T = c_element_type(dtype)
    return ["owned[%d] = ffg_cu_alloc_array(device_alloc, %d, %s, sizeof(%s), err);" % (k, ndim, shape_name, T),
            "if (owned[%d] == NULL)" % k,
            "    return ffg_cu_cnn_fail(device_alloc, outputs, owned, %d, err);" % n_allocated,
            "ffg_cu_set_output(&outputs[%d], owned[%d], FFG_DEVICE_CUDA, %s, %d, %s);"
            % (k, k, dtype_args(dtype), ndim, shape_name)]


def launch(symbol, kernel, n_name, args, n_outputs, what):
    """Lines launching ``kernel`` over ``n_name`` items (none when 0), releasing the outputs on failure."""
    return ["if (%s > 0) {" % n_name,
            "    %s<<<ffg_cu_blocks(%s), FFG_CU_THREADS>>>(%s);" % (kernel, n_name, args),
            "    if (ffg_cu_launched(err, \"%s\"))" % c_string(what),
            "        return ffg_cu_cnn_fail(device_alloc, outputs, owned, %d, err);" % n_outputs,
            "}"]


def data_pointer(T, index):
    return "(const %s *)((const char *)inputs[%d].data + inputs[%d].byte_offset)" % (T, index, index)


def grid_loop(n_name):
    """The grid-stride loop header over ``n_name`` items (index ``idx``), as lines (closed by the caller)."""
    return ["int64_t idx;",
            "for (idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < %s;" % n_name,
            "     idx += (int64_t)blockDim.x * gridDim.x) {"]


def decompose(names, sizes):
    """Lines splitting ``idx`` (C order over ``sizes``) into the int64 ``names``."""
    lines = ["int64_t rest = idx;"]
    for k in range(len(names) - 1, 0, -1):
        lines.append("const int64_t %s = rest %% %s;" % (names[k], sizes[k]))
        lines.append("rest /= %s;" % sizes[k])
    lines.append("const int64_t %s = rest;" % names[0])
    return lines


def _split_top(text, sep):
    """``text`` split at each ``sep`` outside string literals and brackets."""
    parts, depth, quote, start, k = [], 0, False, 0, 0
    while k < len(text):
        ch = text[k]
        if quote:
            if ch == "\\":
                k += 1
            elif ch == '"':
                quote = False
        elif ch == '"':
            quote = True
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and text.startswith(sep, k):
            parts.append(text[start:k])
            start = k + len(sep)
            k = start
            continue
        k += 1
    parts.append(text[start:])
    return parts


def _call_paren(line):
    """The index of the first function call's "(" in ``line`` (outside strings), or None."""
    quote = False
    for k, ch in enumerate(line):
        if quote:
            if ch == '"' and line[k - 1] != "\\":
                quote = False
        elif ch == '"':
            quote = True
        elif ch == "(":
            word = re.match(r"[A-Za-z_0-9]*", line[:k][::-1]).group(0)[::-1]
            if word and not word[0].isdigit() and word not in ("if", "for", "while", "return", "sizeof"):
                return k
    return None


def _split_literal(arg, room):
    """A long C string literal as adjacent literals of at most ``room`` characters (cut at spaces)."""
    if not (arg.startswith('"') and arg.endswith('"')) or len(arg) <= room:
        return [arg]
    body, pieces = arg[1:-1], []
    while len(body) + 2 > room:
        cut = body.rfind(" ", 0, room - 2)
        if cut <= 0:
            break
        pieces.append('"%s"' % body[:cut + 1])
        body = body[cut + 1:]
    return pieces + ['"%s"' % body]


def wrap_c(text, width=110):
    """Generated C with its long calls and conditions broken over lines, as one writes them by hand
    (arguments aligned after the call's parenthesis, long string literals split)."""
    out = []
    for line in text.split("\n"):
        if len(line) <= width or line.lstrip().startswith(("/*", "//", "#")):
            out.append(line)
            continue
        lead = len(line) - len(line.lstrip())
        stripped = line.strip()
        if stripped.startswith("if (") and stripped.endswith(("{", ")")) and " || " in stripped:
            inner_end = stripped.rfind(")")
            clauses = _split_top(stripped[4:inner_end], " || ")
            pad = " " * (lead + 4)
            rows = [" " * lead + "if (" + clauses[0]]
            for c in clauses[1:]:
                if len(rows[-1]) + len(c) + 4 <= width:
                    rows[-1] += " || " + c
                else:
                    rows[-1] += " ||"
                    rows.append(pad + c)
            rows[-1] += stripped[inner_end:]
            out += rows
            continue
        open_at = _call_paren(line)
        if open_at is None or not line.rstrip().endswith((";", "{", ")")):
            out.append(line)
            continue
        # the call's arguments: from the first top-level "(" to its matching ")"
        depth, close = 0, None
        quote = False
        for k in range(open_at, len(line)):
            ch = line[k]
            if quote:
                if ch == '"' and line[k - 1] != "\\":
                    quote = False
            elif ch == '"':
                quote = True
            elif ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth == 0:
                    close = k
                    break
        if close is None:
            out.append(line)
            continue
        args = _split_top(line[open_at + 1:close], ", ")
        indent_to = open_at + 1
        room = width - indent_to
        pieces = []
        for a in args:
            split = _split_literal(a, room)
            pieces += [(p, k == len(split) - 1) for k, p in enumerate(split)]
        rows, cur, prev_end = [], line[:open_at + 1], None
        for piece, ends_arg in pieces:
            if prev_end is None:
                cur += piece
            else:
                tail, sep = ("," if prev_end else ""), (", " if prev_end else " ")
                if len(cur) + len(sep) + len(piece) + 1 > width:
                    rows.append(cur + tail)
                    cur = " " * indent_to + piece
                else:
                    cur += sep + piece
            prev_end = ends_arg
        rows.append(cur + line[close:])
        out += rows
    return "\n".join(out)


# ------------------------------------------------------------------ the ops


def gpu_conv_supported(node):
    """True when a CPU convolution node (one of the three kinds) can become its GPU version."""
    # the plain ops only: a subclass (a fused epilogue, say) computes something else
    if type(node.op) not in _CPU_TYPES:
        return False
    return all(v.type.dtype in SUPPORTED_DTYPES for v in (node.inputs[0], node.inputs[1], node.outputs[0])) \
        and node.inputs[0].type.dtype == node.inputs[1].type.dtype


def gpu_version(node, on_device):
    """The GPU outputs for a CPU convolution node (``on_device`` moves a host input), or None."""
    if not gpu_conv_supported(node):
        return None
    gop = _GPU_CLASSES[node.op.kind].from_cpu(node.op)
    ins = [on_device(node.inputs[0]), on_device(node.inputs[1])] + list(node.inputs[2:])
    return [gop(*ins)]


class BaseGpuConv(GpuKernelOp):
    """The common part of the GPU convolutions: the CPU op's props, types and checks."""

    __props__ = ac.BaseAbstractConv.__props__
    kind = None
    _names = ("img", "kern")

    def __init__(self, convdim, imshp=None, kshp=None, border_mode="valid", subsample=None, filter_flip=True,
                 filter_dilation=None, num_groups=1, unshared=False):
        cpu = _CPU_CLASSES[(self.kind, convdim)](imshp=imshp, kshp=kshp, border_mode=border_mode,
                                                 subsample=subsample, filter_flip=filter_flip,
                                                 filter_dilation=filter_dilation, num_groups=num_groups,
                                                 unshared=unshared)
        for p in self.__props__:
            setattr(self, p, getattr(cpu, p))

    @classmethod
    def from_cpu(cls, op):
        """The GPU op computing what CPU convolution ``op`` computes."""
        return cls(**{p: getattr(op, p) for p in ac.BaseAbstractConv.__props__})

    def cpu_op(self):
        return _CPU_CLASSES[(self.kind, self.convdim)](**{p: getattr(self, p) for p in self.__props__
                                                          if p != "convdim"})

    def __str__(self):
        suffix = {"forward": "", "grad_weights": "_gradWeights", "grad_inputs": "_gradInputs"}[self.kind]
        return "GpuConv%dd%s" % (self.convdim, suffix)

    def make_node(self, a, b, *shape):
        names = self._names
        for v, n in ((a, names[0]), (b, names[1])):
            if not isinstance(getattr(v, "type", None), GpuArrayType):
                raise TypeError("%s: %s %s is not a GPU array (type %s); transfer it with gpu_from_host"
                                % (self, n, v, getattr(v, "type", type(v).__name__)))
            if v.type.dtype not in SUPPORTED_DTYPES:
                raise TypeError("%s: %s must be float32 or float64, got %s" % (self, n, v.type.dtype))
        if a.type.dtype != b.type.dtype:
            raise TypeError("%s: %s and %s must have the same dtype, got %s and %s"
                            % (self, names[0], names[1], a.type.dtype, b.type.dtype))
        if len(shape) != (0 if self.kind == "forward" else 1):
            raise TypeError("%s takes %d inputs, got %d" % (self, 2 if self.kind == "forward" else 3, 2 + len(shape)))
        # the CPU op on host stand-ins: its checks, its normalized shape input and its output type
        host = self.cpu_op().make_node(a.type.host_type()(), b.type.host_type()(), *shape)
        return Apply(self, [a, b] + list(host.inputs[2:]), [gpu_type_of(host.outputs[0].type)()])

    def infer_shape(self, fgraph, node, input_shapes):
        return self.cpu_op().infer_shape(fgraph, node, input_shapes)

    def c_code_cache_version(self):
        return (1,)

    def cuda_launcher(self, node, symbol):
        return CNN_COMMON + "\n" + _launcher(self, node, symbol)


class GpuConv(BaseGpuConv):
    """The forward convolution on the device (``AbstractConv``'s semantics)."""

    kind = "forward"


class GpuConv_gradWeights(BaseGpuConv):
    """The convolution's kernel gradient on the device (``AbstractConv_gradWeights``)."""

    kind = "grad_weights"
    _names = ("img", "topgrad")


class GpuConv_gradInputs(BaseGpuConv):
    """The convolution's image gradient on the device (``AbstractConv_gradInputs``)."""

    kind = "grad_inputs"
    _names = ("kern", "topgrad")


_GPU_CLASSES = {"forward": GpuConv, "grad_weights": GpuConv_gradWeights, "grad_inputs": GpuConv_gradInputs}


# ------------------------------------------------------------------ code generation

_AX = "xyz"


def _pads_code(op, a):
    """C expressions (pl, pr) of spatial axis ``a`` from the dilated kernel size dk[a]."""
    mode = op.border_mode
    if mode == "valid":
        return "0", "0"
    if mode == "full":
        return "dk[%d] - 1" % a, "dk[%d] - 1" % a
    if mode == "half":
        return "dk[%d] / 2" % a, "dk[%d] / 2" % a
    return str(mode[a][0]), str(mode[a][1])


def _args_struct(symbol, T, D):
    return ["struct %s_args {" % symbol,
            "    int64_t n;                  /* output elements */",
            "    int64_t B, C, O, Cg, Og;    /* batch, channels in and out, per group */",
            "    int64_t S[%d], K[%d], P[%d];   /* image, kernel and output spatial sizes */" % (D, D, D),
            "    int64_t st[%d], dl[%d], pl[%d]; /* strides, dilations, low pads */" % (D, D, D),
            "    int64_t xs[%d], ks[%d], ts[%d]; /* element strides of img, kern, topgrad */" % (D + 2, D + 2, D + 2),
            "    const %s *x;" % T,
            "    const %s *k;" % T,
            "    const %s *t;" % T,
            "    %s *out;" % T,
            "};", ""]


def _flip(op, D, src, dst):
    """Lines for the kernel index ``dst`` (of Wf) from ``src``, per axis."""
    if op.filter_flip:
        return ["const int64_t %s%d = a.K[%d] - 1 - %s%d;" % (dst, q, q, src, q) for q in range(D)]
    return ["const int64_t %s%d = %s%d;" % (dst, q, src, q) for q in range(D)]


def _offset(base, strides, idx):
    return base + "".join(" + %s * a.%s[%d]" % (v, strides, k) for k, v in enumerate(idx))


def _forward_kernel(op, symbol, T, D):
    p = ["p%d" % q for q in range(D)]
    body = decompose(["b", "o"] + p, ["a.B", "a.O"] + ["a.P[%d]" % q for q in range(D)])
    body += ["const int64_t g = o / a.Og;",
             "%s acc = 0;" % T,
             "int64_t c;",
             "for (c = 0; c < a.Cg; ++c) {",
             "    const %s *xc = a.x + b * a.xs[0] + (g * a.Cg + c) * a.xs[1];" % T,
             "    const %s *kc = a.k + o * a.ks[0] + c * a.ks[1];" % T]
    loops, depth = [], 1
    for q in range(D):
        pad = "    " * depth
        loops += [pad + "int64_t i%d;" % q,
                  pad + "for (i%d = 0; i%d < a.K[%d]; ++i%d) {" % (q, q, q, q),
                  pad + "    const int64_t y%d = p%d * a.st[%d] + i%d * a.dl[%d] - a.pl[%d];   "
                  "/* in the image */" % (q, q, q, q, q, q),
                  pad + "    if (y%d < 0 || y%d >= a.S[%d])" % (q, q, q),
                  pad + "        continue;   /* a zero of the padding */"]
        depth += 1
    pad = "    " * depth
    loops += [pad + ln for ln in _tap_offsets(op, D, "xs", "y", "ks")]
    loops.append(pad + "acc += xc[xo] * kc[ko];")
    for q in range(D, 0, -1):
        loops.append("    " * q + "}")
    body += loops + ["}", "a.out[idx] = acc;"]
    return _kernel(symbol, "forward: one thread per output element (b, o, p), summing over (c, i)", body)


def _tap_offsets(op, D, xs, pos, ks):
    """Lines: ``xo``, the offset of position ``pos`` in the image (or topgrad), and ``ko``, that of
    kernel tap i in W (flipped when filter_flip: Wf[i] = W[K - 1 - i])."""
    lines = ["const int64_t xo = %s;" % " + ".join("%s%d * a.%s[%d]" % (pos, q, xs, q + 2) for q in range(D))]
    if op.filter_flip:
        lines += ["/* the flipped kernel: Wf[i] = W[K - 1 - i] */",
                  "const int64_t %s;" % ", ".join("w%d = a.K[%d] - 1 - i%d" % (q, q, q) for q in range(D))]
    taps = ["w%d" % q if op.filter_flip else "i%d" % q for q in range(D)]
    return lines + ["const int64_t ko = %s;" % " + ".join("%s * a.%s[%d]" % (taps[q], ks, q + 2) for q in range(D))]


def _grad_weights_kernel(op, symbol, T, D):
    j = ["j%d" % q for q in range(D)]
    body = decompose(["o", "c"] + j, ["a.O", "a.Cg"] + ["a.K[%d]" % q for q in range(D)])
    body += ["/* the Wf index of output weight j (the result is flipped back when filter_flip) */"]
    body += _flip(op, D, "j", "i")
    body += ["const int64_t g = o / a.Og;",
             "%s acc = 0;" % T,
             "int64_t b;",
             "for (b = 0; b < a.B; ++b) {",
             "    const %s *xb = a.x + b * a.xs[0] + (g * a.Cg + c) * a.xs[1];" % T,
             "    const %s *tb = a.t + b * a.ts[0] + o * a.ts[1];" % T]
    loops, depth = [], 1
    for q in range(D):
        pad = "    " * depth
        loops += [pad + "int64_t p%d;" % q,
                  pad + "for (p%d = 0; p%d < a.P[%d]; ++p%d) {" % (q, q, q, q),
                  pad + "    const int64_t y%d = p%d * a.st[%d] + i%d * a.dl[%d] - a.pl[%d];" % (q, q, q, q, q, q),
                  pad + "    if (y%d < 0 || y%d >= a.S[%d])" % (q, q, q),
                  pad + "        continue;   /* a zero of the padding */"]
        depth += 1
    pad = "    " * depth
    loops += [pad + "const int64_t to = %s;" % " + ".join("p%d * a.ts[%d]" % (q, q + 2) for q in range(D)),
              pad + "const int64_t xo = %s;" % " + ".join("y%d * a.xs[%d]" % (q, q + 2) for q in range(D)),
              pad + "acc += tb[to] * xb[xo];"]
    for q in range(D, 0, -1):
        loops.append("    " * q + "}")
    body += loops + ["}", "a.out[idx] = acc;"]
    return _kernel(symbol, "grad_weights: one thread per weight (o, c, j), summing over (b, p)", body)


def _grad_inputs_kernel(op, symbol, T, D):
    y = ["y%d" % q for q in range(D)]
    body = decompose(["b", "ch"] + y, ["a.B", "a.C"] + ["a.S[%d]" % q for q in range(D)])
    body += ["const int64_t g = ch / a.Cg, c = ch % a.Cg;",
             "%s acc = 0;" % T,
             "int64_t o;",
             "for (o = g * a.Og; o < (g + 1) * a.Og; ++o) {",
             "    const %s *kc = a.k + o * a.ks[0] + c * a.ks[1];" % T,
             "    const %s *tb = a.t + b * a.ts[0] + o * a.ts[1];" % T]
    loops, depth = [], 1
    for q in range(D):
        pad = "    " * depth
        loops += [pad + "int64_t i%d;" % q,
                  pad + "for (i%d = 0; i%d < a.K[%d]; ++i%d) {" % (q, q, q, q),
                  pad + "    /* the output position p whose window reads y through kernel index i */",
                  pad + "    const int64_t q%d = y%d + a.pl[%d] - i%d * a.dl[%d];" % (q, q, q, q, q),
                  pad + "    int64_t p%d;" % q,
                  pad + "    if (q%d < 0 || q%d %% a.st[%d] != 0)" % (q, q, q),
                  pad + "        continue;",
                  pad + "    p%d = q%d / a.st[%d];" % (q, q, q),
                  pad + "    if (p%d >= a.P[%d])" % (q, q),
                  pad + "        continue;"]
        depth += 1
    pad = "    " * depth
    loops += [pad + ln for ln in _tap_offsets(op, D, "ts", "p", "ks")]
    loops.append(pad + "acc += tb[xo] * kc[ko];")
    for q in range(D, 0, -1):
        loops.append("    " * q + "}")
    body += loops + ["}", "a.out[idx] = acc;"]
    return _kernel(symbol, "grad_inputs: one thread per image element (b, c, y), gathering over the "
                   "windows that read it", body)


def _kernel(symbol, comment, body):
    lines = [c_comment(comment),
             "static __global__ void %s_kernel(const struct %s_args a)" % (symbol, symbol), "{"]
    lines += indent(grid_loop("a.n"))
    lines += indent(body, 2) + ["    }", "}", ""]
    return lines


def _launcher(op, node, symbol):
    D = op.convdim
    dtype = node.outputs[0].type.dtype
    T = c_element_type(dtype)
    nd = D + 2
    kind = op.kind
    who = "%s_who" % symbol
    text = _args_struct(symbol, T, D)
    text += {"forward": _forward_kernel, "grad_weights": _grad_weights_kernel,
             "grad_inputs": _grad_inputs_kernel}[kind](op, symbol, T, D)
    n_in = 2 if kind == "forward" else 3
    specs = [(0, "cuda", dtype, nd), (1, "cuda", dtype, nd)]
    body = ["struct %s_args a;" % symbol,
            "int64_t dk[%d], pr[%d], oshape[%d];" % (D, D, nd),
            "int64_t G = %d;" % op.num_groups,
            "int32_t rc;",
            "int q;", "",
            "(void)host_alloc;   /* the result is on the device */"]
    body += check_inputs(symbol, n_in, 1, specs)
    body += ["memset(&a, 0, sizeof a);"]
    x, k, t = {"forward": (0, 1, None), "grad_weights": (0, None, 1), "grad_inputs": (None, 0, 1)}[kind]
    sp = " x ".join(["%lld"] * D)
    if kind == "forward":
        body += ["a.B = inputs[0].shape[0];",
                 "a.C = inputs[0].shape[1];",
                 "a.O = inputs[1].shape[0];",
                 "a.Cg = inputs[1].shape[1];",
                 "for (q = 0; q < %d; ++q) {" % D,
                 "    a.S[q] = inputs[0].shape[2 + q];",
                 "    a.K[q] = inputs[1].shape[2 + q];",
                 "}"]
    elif kind == "grad_weights":
        body += ["rc = ffg_cu_cnn_ints(err, %s, &inputs[2], 2, \"the filter shape\", %d, a.K);" % (who, D),
                 "if (rc != FFG_OK)", "    return rc;"]
        body += value_error(symbol, " || ".join("a.K[%d] < 1" % q for q in range(D)),
                            "invalid filter_shape for gradWeights: (%s)" % ", ".join(["%lld"] * D),
                            ["(long long)a.K[%d]" % q for q in range(D)], 2)
        body += ["a.B = inputs[0].shape[0];",
                 "a.C = inputs[0].shape[1];",
                 "a.O = inputs[1].shape[1];"]
        body += value_error(symbol, "inputs[1].shape[0] != a.B", "topgrad has %lld images, the input %lld",
                            ["(long long)inputs[1].shape[0]", "(long long)a.B"], 1)
        body += ["a.Cg = a.C / G;",
                 "for (q = 0; q < %d; ++q)" % D,
                 "    a.S[q] = inputs[0].shape[2 + q];"]
    else:
        body += ["rc = ffg_cu_cnn_ints(err, %s, &inputs[2], 2, \"the input shape\", %d, a.S);" % (who, D),
                 "if (rc != FFG_OK)", "    return rc;"]
        body += value_error(symbol, " || ".join("a.S[%d] < 1" % q for q in range(D)),
                            "invalid input_shape for gradInputs: (%s)" % ", ".join(["%lld"] * D),
                            ["(long long)a.S[%d]" % q for q in range(D)], 2)
        body += ["a.O = inputs[0].shape[0];",
                 "a.Cg = inputs[0].shape[1];",
                 "a.B = inputs[1].shape[0];",
                 "a.C = a.Cg * G;"]
        body += value_error(symbol, "inputs[1].shape[1] != a.O", "topgrad has %lld channels, the filters %lld",
                            ["(long long)inputs[1].shape[1]", "(long long)a.O"], 1)
        body += ["for (q = 0; q < %d; ++q)" % D,
                 "    a.K[q] = inputs[0].shape[2 + q];"]
    # the groups (the CPU op's checks, in its order)
    body += value_error(symbol, "a.C % G != 0", "%lld input channels cannot be split into %lld groups",
                        ["(long long)a.C", "(long long)G"])
    body += value_error(symbol, "a.O % G != 0", "%lld output channels (filters) cannot be split into %lld groups",
                        ["(long long)a.O", "(long long)G"])
    body += value_error(symbol, "a.Cg != a.C / G", "the filters have %lld input channels per group, the image %lld "
                        "(%lld channels in %lld groups)",
                        ["(long long)a.Cg", "(long long)(a.C / G)", "(long long)a.C", "(long long)G"])
    body += ["a.Og = a.O / G;"]
    # the geometry of every spatial axis
    for q in range(D):
        pl, prr = _pads_code(op, q)
        body += ["a.st[%d] = %d;" % (q, op.subsample[q]),
                 "a.dl[%d] = %d;" % (q, op.filter_dilation[q]),
                 "dk[%d] = (a.K[%d] - 1) * a.dl[%d] + 1;   /* the dilated kernel */" % (q, q, q),
                 "a.pl[%d] = %s;" % (q, pl),
                 "pr[%d] = %s;" % (q, prr)]
    body += value_error(symbol, " || ".join("a.S[%d] + a.pl[%d] + pr[%d] < dk[%d]" % (q, q, q, q) for q in range(D)),
                        "the filter (%s, dilated) is larger than the padded input (%s)" % (sp, sp),
                        ["(long long)dk[%d]" % q for q in range(D)]
                        + ["(long long)(a.S[%d] + a.pl[%d] + pr[%d])" % (q, q, q) for q in range(D)])
    body += ["for (q = 0; q < %d; ++q)" % D,
             "    a.P[q] = (a.S[q] + a.pl[q] + pr[q] - dk[q]) / a.st[q] + 1;"]
    if kind != "forward":
        what = "invalid filter_shape for gradWeights" if kind == "grad_weights" else \
            "invalid input_shape for gradInputs"
        body += value_error(symbol, " || ".join("inputs[1].shape[%d] != a.P[%d]" % (q + 2, q) for q in range(D)),
                            "%s: the input (%s) with the filter (%s) gives an output of (%s), topgrad is (%s)"
                            % (what, sp, sp, sp, sp),
                            ["(long long)a.S[%d]" % q for q in range(D)] + ["(long long)a.K[%d]" % q for q in range(D)]
                            + ["(long long)a.P[%d]" % q for q in range(D)]
                            + ["(long long)inputs[1].shape[%d]" % (q + 2) for q in range(D)], 1)
    # strides and data
    for name, index in (("xs", x), ("ks", k), ("ts", t)):
        if index is not None:
            body.append("ffg_cu_strides(&inputs[%d], a.%s);" % (index, name))
    for name, index in (("x", x), ("k", k), ("t", t)):
        if index is not None:
            body.append("a.%s = %s;" % (name, data_pointer(T, index)))
    out_dims = {"forward": ["a.B", "a.O"] + ["a.P[%d]" % q for q in range(D)],
                "grad_weights": ["a.O", "a.Cg"] + ["a.K[%d]" % q for q in range(D)],
                "grad_inputs": ["a.B", "a.C"] + ["a.S[%d]" % q for q in range(D)]}[kind]
    body += ["oshape[%d] = %s;" % (i, v) for i, v in enumerate(out_dims)]
    body += alloc_output(symbol, 0, dtype, nd, "oshape", 0)
    body += ["a.out = (%s *)owned[0];" % T,
             "a.n = ffg_cu_size(%d, oshape);" % nd]
    body += launch(symbol, "%s_kernel" % symbol, "a.n", "a", 1, "%s: launching the kernel" % op)
    body += ["return FFG_OK;"]
    head = launcher_head(symbol, str(op), "%s (%s, %s): %s" % (op, dtype, kind, _mode_text(op)))
    return wrap_c("\n".join(text + head + indent(body) + ["}", ""]))


def _mode_text(op):
    return "border_mode=%s, subsample=%s,\n   filter_dilation=%s, filter_flip=%s, num_groups=%d" % (
        op.border_mode, op.subsample, op.filter_dilation, op.filter_flip, op.num_groups)


__all__ = ["GpuConv", "GpuConv_gradWeights", "GpuConv_gradInputs", "BaseGpuConv", "gpu_conv_supported",
           "gpu_version", "SUPPORTED_DTYPES", "CNN_COMMON"]
