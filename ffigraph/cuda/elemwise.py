"""``GpuElemwise``: a scalar op or a Composite over broadcast arrays on a CUDA device.

The launcher broadcasts the inputs' shapes (a length 1 stretches, even to 0),
allocates each output C-contiguous, merges axes that every operand walks as one
run of memory, and launches one kernel: a grid-stride loop over the output
elements (int64 index) that finds each operand's element from the multi-index
and its own strides (0 on broadcast axes; negative and zero strides work).

The scalar expressions are the CPU backend's (``ffigraph.scalar.c_table`` through
``ffigraph.tensor.fused_c.step_expression``), so the semantics are numpy's as there:
NaN-propagating maximum/minimum, floor division and modulo with the divisor's
sign, integer division by zero giving 0, rint for round, bool arithmetic as logic.
The helper functions some expressions call are the CPU ones made ``__device__``.
An integer power with a negative exponent sets a flag the launcher reads back,
failing with the CPU's message (FFG_ERR_VALUE).

Not on the GPU: complex values (MethodNotDefined; ``gpu_elemwise_supported`` is False).
Out-of-range float to int casts give what the GPU gives (it saturates; x86 does not).
"""
from __future__ import annotations

import re

import numpy as np

from ffigraph.abi import dtype_code
from ffigraph.cuda.op import GpuKernelOp
from ffigraph.cuda.prelude import LAUNCHER_PARAMS
from ffigraph.cuda.type import GpuArrayType
from ffigraph.graph.basic import Apply
from ffigraph.graph.c_interface import MethodNotDefined
from ffigraph.scalar.basic import SCALAR_TABLE
from ffigraph.scalar import special_c
from ffigraph.scalar.c_table import HELPER_OPS, support_code
from ffigraph.scalar.composite import Composite, const_value
from ffigraph.abi import c_element_type
from ffigraph.tensor.elemwise import _broadcast_static_shapes, broadcast_shape
from ffigraph.tensor.elemwise_c import compute_dtype
from ffigraph.tensor.fused_c import _literal, step_expression

GPU_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float32", "float64")
MAX_NDIM = 32            # FFG_MAX_NDIM
MAX_PARAM_BYTES = 4096   # CUDA's classic kernel parameter limit (kept under it for every toolkit)

SUPPORTED = {
    "scalar_ops": tuple(sorted(SCALAR_TABLE)) + ("cast_<dtype>",),
    "dtypes": GPU_DTYPES,
    "composite": "every step must be one of scalar_ops on these dtypes; several outputs allowed",
    "not_supported": "complex dtypes (MethodNotDefined: complex is not supported on the GPU)",
}


# ------------------------------------------------------------------ C text helpers (reduce.py uses them too)


def c_string(text):
    """``text`` as the body of a C string literal (passed to printf through %s, never as a format)."""
    return str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")


def c_comment(text):
    return "/* %s */" % str(text).replace("*/", "* /").replace("\n", " ")


def indent(lines, level=1):
    return [("    " * level + ln) if ln else "" for ln in lines]


def dtype_args(dtype):
    """'code, bits' of a dtype for ffg_cu_check_tensor / ffg_cu_set_output."""
    code, bits = dtype_code(dtype)
    return "%d, %d" % (code, bits)


def check_gpu_dtypes(op, dtypes):
    for d in dtypes:
        name = np.dtype(d).name
        if np.dtype(d).kind == "c":
            raise MethodNotDefined("%s: complex is not supported on the GPU (dtype %s)" % (op, name))
        if name not in GPU_DTYPES:
            raise MethodNotDefined("%s: dtype %s is not supported on the GPU" % (op, name))


# ------------------------------------------------------------------ device versions of the scalar helpers

_HELPER_NAME = re.compile(r"\bffg_(%s)_" % "|".join(
    ("divmod", "floordiv", "mod", "ipow", "sigmoid", "softplus", "psi", "trigamma", "erfinv")
    + special_c.HELPER_BASES))


def device_expression(text):
    """A CPU table expression calling the ``__device__`` twins of its helpers."""
    return _HELPER_NAME.sub(r"ffg_dev_\1_", text)


def device_support_code(dtype):
    """c_table's helpers for ``dtype`` as ``static __device__`` functions (own names and guard)."""
    text = device_expression(support_code(dtype)).replace("FFG_SCALAR_HELPERS_", "FFG_DEV_SCALAR_HELPERS_")
    text = text.replace("copysign(0, ", "copysign(0.0, ")   # (int, double) would pick a host-only template
    return re.sub(r"(?m)^static ", "static __device__ __forceinline__ ", text)


# ------------------------------------------------------------------ what can run on the GPU


def as_composite(scalar_op, in_dtypes):
    """``scalar_op`` as a Composite over inputs of ``in_dtypes`` (a Composite is returned as is)."""
    if isinstance(scalar_op, Composite):
        return scalar_op
    out = scalar_op.output_dtype(list(in_dtypes))
    return Composite(in_dtypes, [(scalar_op, [("in", i) for i in range(len(in_dtypes))], out)], [0])


def has_gpu_code(scalar_op, dtypes):
    """True when the GPU can compute ``scalar_op`` on inputs of ``dtypes`` (False: complex, unknown op)."""
    try:
        comp = as_composite(scalar_op, [np.dtype(d).name for d in dtypes])
        _program(comp, "check")
        return True
    except (MethodNotDefined, KeyError, TypeError, ValueError, AttributeError):
        return False


def gpu_elemwise_supported(node):
    """True when a CPU Elemwise / FusedElemwise node can become a GpuElemwise."""
    from ffigraph.tensor.elemwise import Elemwise
    from ffigraph.tensor.fused import FusedElemwise

    if not isinstance(node.op, (Elemwise, FusedElemwise)):
        return False
    try:
        check_gpu_dtypes(node.op, [v.type.dtype for v in node.inputs + node.outputs])
        if len({v.type.ndim for v in node.inputs}) > 1 or node.outputs[0].type.ndim > MAX_NDIM:
            return False
        comp = as_composite(node.op.scalar_op, [v.type.dtype for v in node.inputs])
        _param_bytes(node.op, comp, node.outputs[0].type.ndim)
        _program(comp, "check")
        return True
    except (MethodNotDefined, KeyError, TypeError, ValueError):
        return False


# ------------------------------------------------------------------ the op


class GpuElemwise(GpuKernelOp):
    """``scalar_op`` (a scalar op or a Composite with one or more outputs) elementwise on the GPU."""

    __props__ = ("scalar_op",)

    def __init__(self, scalar_op):
        self.scalar_op = scalar_op

    @property
    def nout(self):
        return getattr(self.scalar_op, "nout", 1)

    def make_node(self, *inputs):
        sop = self.scalar_op
        if len(inputs) != sop.nin:
            raise TypeError("%s takes %d inputs, got %d" % (self, sop.nin, len(inputs)))
        for k, v in enumerate(inputs):
            if not isinstance(getattr(v, "type", None), GpuArrayType):
                raise TypeError("%s: input %d (%s) is not a GPU array (type %s); transfer it with "
                                "gpu_from_host" % (self, k, v, getattr(v, "type", type(v).__name__)))
            if v.type.ndim != inputs[0].type.ndim:
                raise TypeError("%s: input %d (%s) has %d dimensions, input 0 has %d (GPU inputs share one "
                                "ndim)" % (self, k, v, v.type.ndim, inputs[0].type.ndim))
        dtypes = [v.type.dtype for v in inputs]
        if isinstance(sop, Composite):
            for k, (v, dt) in enumerate(zip(inputs, sop.in_dtypes)):
                if v.type.dtype != dt:
                    raise TypeError("%s: input %d (%s) has dtype %s, expected %s" % (self, k, v, v.type.dtype, dt))
        comp = as_composite(sop, dtypes)   # raises TypeError for dtypes the op refuses
        outputs = []
        for dt, deps in zip(comp.out_dtypes(), comp.input_dependencies()):
            used = [inputs[k] for k in deps]
            shape = _broadcast_static_shapes(self, used) if used else (1,) * (inputs[0].type.ndim if inputs else 0)
            outputs.append(GpuArrayType(dt, shape)())
        return Apply(self, list(inputs), outputs)

    def infer_shape(self, fgraph, node, input_shapes):
        from ffigraph.tensor.basic import constant

        out = []
        comp = self.composite(node)
        for var, deps in zip(node.outputs, comp.input_dependencies()):
            if not deps:
                out.append(tuple(constant(1, dtype="int64") for _ in range(var.type.ndim)))
            else:
                out.append(broadcast_shape(var.type.shape, [node.inputs[k] for k in deps],
                                           [input_shapes[k] for k in deps]))
        return out

    def composite(self, node):
        return as_composite(self.scalar_op, [v.type.dtype for v in node.inputs])

    def __str__(self):
        return "GpuElemwise{%s}" % self.scalar_op

    def c_code_cache_version(self):
        return (1, 1)

    def cuda_launcher(self, node, symbol):
        return launcher_text(self, node, symbol)


# ------------------------------------------------------------------ code generation


def _param_bytes(op, comp, nd):
    nvec = comp.nin + comp.nout
    size = 16 + 8 * max(nd, 1) * (1 + nvec) + 8 * (nvec + 1)
    if size > MAX_PARAM_BYTES:
        raise MethodNotDefined("%s: %d inputs and outputs over %d axes need a %d-byte kernel parameter block, "
                               "over the %d bytes a CUDA kernel takes; split the node or use fewer axes"
                               % (op, nvec, nd, size, MAX_PARAM_BYTES))
    return size


def _operand(ref):
    if ref[0] == "in":
        return "i%d" % ref[1]
    if ref[0] == "step":
        return "t%d" % ref[1]
    return _literal(ref)


def _describe(sop, args):
    names = ["i%d" % r[1] if r[0] == "in" else "t%d" % r[1] if r[0] == "step" else repr(const_value(r).item())
             for r in args]
    return "%s(%s)" % (sop.name, ", ".join(names))


def _program(comp, who):
    """(lines computing every step into locals t<j>, [check messages]); inputs are locals i<k>."""
    check_gpu_dtypes(who, list(comp.in_dtypes) + [dt for _, _, dt in comp.steps])
    lines, messages = [], []
    for j, (sop, args, dt) in enumerate(comp.steps):
        in_dtypes = [comp.ref_dtype(r) for r in args]
        expr, check = step_expression(sop, in_dtypes, dt, [_operand(r) for r in args])
        lines.append("%s t%d = %s;   %s" % (c_element_type(dt), j, device_expression(expr),
                                            c_comment("%s, %s" % (_describe(sop, args), dt))))
        if check is not None:
            messages.append(check[1])
            lines.append("if (%s)" % device_expression(check[0]))
            lines.append("    *a.flag = 1;   %s" % c_comment(check[1]))
    return lines, messages


def _helpers(comps):
    """The __device__ helper functions the Composites' steps call, once per dtype."""
    dtypes = []
    for comp in comps:
        for sop, args, dt in comp.steps:
            if sop.name in HELPER_OPS:
                cdt = compute_dtype(sop, [comp.ref_dtype(r) for r in args], dt)
                if cdt not in dtypes:
                    dtypes.append(cdt)
    return "".join(device_support_code(d) for d in dtypes)




HOST_HELPERS = r"""#ifndef FFG_CU_ELEMWISE_HELPERS
#define FFG_CU_ELEMWISE_HELPERS
/* Broadcast the inputs' shapes into shape (a length 1 stretches, even to 0; other lengths must
   agree) and give each input's strides in elements over it (0 where its length is 1). */
static int32_t ffg_cu_broadcast(FfgError *err, const char *who, const FfgTensor *inputs, int nin, int nd,
                                int64_t *shape, int64_t *ist, int ld)
{
    int d, k;
    for (d = 0; d < nd; ++d) {
        int from = 0;
        shape[d] = 1;
        for (k = 0; k < nin; ++k) {
            const int64_t len = inputs[k].shape[d];
            if (len == 1)
                continue;
            if (shape[d] == 1) {
                shape[d] = len;
                from = k;
            } else if (len != shape[d]) {
                ffg_cu_error(err, FFG_ERR_VALUE, k, "%s: input shapes cannot be broadcast together: axis %d "
                             "has length %lld in input %d but %lld in input %d", who, d, (long long)shape[d],
                             from, (long long)len, k);
                return FFG_ERR_VALUE;
            }
        }
    }
    for (k = 0; k < nin; ++k) {
        ffg_cu_strides(&inputs[k], ist + k * ld);
        for (d = 0; d < nd; ++d)
            if (inputs[k].shape[d] == 1)
                ist[k * ld + d] = 0;
    }
    return FFG_OK;
}

/* One output's shape, the inputs it reads (reads[k] != 0) broadcast together, and its strides
   over the loop: C order, 0 where its length is 1 (it is then written once per loop element). */
static void ffg_cu_output_shape(const FfgTensor *inputs, int nin, const signed char *reads, int nd,
                                int64_t *oshape, int64_t *ost)
{
    int64_t s = 1;
    int d, k;
    for (d = 0; d < nd; ++d) {
        oshape[d] = 1;
        for (k = 0; k < nin; ++k)
            if (reads[k] && inputs[k].shape[d] != 1)
                oshape[d] = inputs[k].shape[d];
    }
    for (d = nd - 1; d >= 0; --d) {
        ost[d] = oshape[d] == 1 ? 0 : s;
        s *= oshape[d];
    }
}

/* A kernel's loop: copy shape and the nvec stride vectors into its argument block (st: ld entries
   a vector), dropping length-1 axes and merging neighbours that every operand walks as one run of
   memory (outer stride = inner stride * inner length). Returns the element count; *nd_out is the
   number of axes left (fewer axes, less index arithmetic in the kernel). */
static int64_t ffg_cu_loop(int nd, const int64_t *shape, int nvec, const int64_t *const *vec,
                           int64_t *shape_out, int64_t *st, int ld, int32_t *nd_out)
{
    int d, v, m = 0;
    for (d = 0; d < nd; ++d) {
        int merge = m > 0;
        if (shape[d] == 1)
            continue;
        for (v = 0; v < nvec && merge; ++v)
            merge = st[v * ld + m - 1] == vec[v][d] * shape[d];
        if (merge) {
            shape_out[m - 1] *= shape[d];
        } else {
            shape_out[m] = shape[d];
            ++m;
        }
        for (v = 0; v < nvec; ++v)
            st[v * ld + m - 1] = vec[v][d];
    }
    *nd_out = m;
    return ffg_cu_size(nd, shape);
}
#endif
"""


class _Kernel:
    """One grid-stride kernel over a loop shape computing ``comp``; its stride vectors are the
    Composite's inputs (0..nin-1), then its outputs."""

    def __init__(self, name, comp, nd, who, op):
        self.name, self.comp, self.nd, self.who = name, comp, nd, who
        self.nd1 = max(nd, 1)
        self.nvec = comp.nin + comp.nout
        self.program, self.messages = _program(comp, op)

    def source(self):
        comp, nd1 = self.comp, self.nd1
        lines = ["struct %s_args {" % self.name,
                 "    int64_t n;            /* elements in the loop */",
                 "    int32_t nd;           /* axes left after merging */",
                 "    int64_t shape[%d];    /* the loop's lengths */" % nd1,
                 "    int64_t st[%d][%d];   /* strides in elements: inputs, then outputs (0 if broadcast) */"
                 % (self.nvec, nd1)]
        lines += ["    const %s *in%d;" % (c_element_type(dt), i) for i, dt in enumerate(comp.in_dtypes)]
        lines += ["    %s *out%d;" % (c_element_type(dt), k) for k, dt in enumerate(comp.out_dtypes())]
        lines += ["    int32_t *flag;        /* set to 1 when an element fails a check */", "};", ""]
        text = "\n".join(self.program)
        used = [i for i in range(comp.nin) if re.search(r"\bi%d\b" % i, text)]   # isnan(int) reads nothing
        offsets = [("o%d" % i, i) for i in used] + [("w%d" % k, comp.nin + k) for k in range(comp.nout)]
        lines += ["static __global__ void %s_kernel(const struct %s_args a)" % (self.name, self.name),
                  "{",
                  "    int64_t i;",
                  "    for (i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.n;",
                  "         i += (int64_t)blockDim.x * gridDim.x) {",
                  "        /* the element's offset in each operand, from its multi-index */",
                  "        int64_t rest = i, %s;" % ", ".join("%s = 0" % o for o, _ in offsets),
                  "        int d;",
                  "        for (d = a.nd - 1; d >= 0; --d) {",
                  "            const int64_t c = rest % a.shape[d];",
                  "            rest /= a.shape[d];"]
        lines += ["            %s += c * a.st[%d][d];" % (o, v) for o, v in offsets]
        lines += ["        }", "        {"]
        body = ["const %s i%d = a.in%d[o%d];" % (c_element_type(comp.in_dtypes[i]), i, i, i) for i in used]
        body += self.program
        body += ["a.out%d[w%d] = t%d;" % (k, k, j) for k, j in enumerate(comp.output_steps)]
        lines += indent(body, 3) + ["        }", "    }", "}", ""]
        return "\n".join(lines)

    def launch(self, shape, vectors, pointers):
        """Host lines filling the arguments (loop ``shape``, stride ``vectors``, operand ``pointers``)
        and launching when the loop is not empty."""
        body = ["const int64_t *vec[%d] = {%s};" % (self.nvec, ", ".join(vectors)),
                "struct %s_args a;" % self.name,
                "memset(&a, 0, sizeof a);",
                "a.n = ffg_cu_loop(%d, %s, %d, vec, a.shape, &a.st[0][0], %d, &a.nd);"
                % (self.nd, shape, self.nvec, self.nd1)]
        body += ["a.%s = %s;" % (field, value) for field, value in pointers]
        body += ["a.flag = flag;",
                 "if (a.n > 0) {   /* an empty loop needs no launch */",
                 "    %s_kernel<<<ffg_cu_blocks(a.n), FFG_CU_THREADS>>>(a);" % self.name,
                 "    if (ffg_cu_launched(err, %s))" % self.who,
                 "        goto fail;",
                 "}"]
        return ["{"] + indent(body) + ["}"]


def launcher_text(op, node, symbol):
    """The .cu text of one GpuElemwise node: helpers, kernels and the launcher ``symbol``."""
    comp = op.composite(node)
    nd = node.inputs[0].type.ndim if node.inputs else node.outputs[0].type.ndim
    if nd > MAX_NDIM:
        raise MethodNotDefined("%s: %d dimensions, more than FFG_MAX_NDIM (%d)" % (op, nd, MAX_NDIM))
    _param_bytes(op, comp, nd)
    deps = comp.input_dependencies()
    who = "%s_who" % symbol
    main = _Kernel(symbol, comp, nd, who, op)
    partial = []   # (output, kernel, input indices) for outputs that do not read every input
    for k in range(comp.nout):
        if len(deps[k]) < comp.nin:
            sub, ins = comp.restricted(k)
            partial.append((k, _Kernel("%s_out%d" % (symbol, k), sub, nd, who, op), list(ins)))
    kernels = [main] + [kern for _, kern, _ in partial]
    messages = sorted({m for kern in kernels for m in kern.messages})
    head = ["static const char %s[] = \"%s\";" % (who, c_string(op)), "",
            _helpers([kern.comp for kern in kernels]), HOST_HELPERS]
    head += [kern.source() for kern in kernels]
    lines = [c_comment("%s: %s -> %s" % (op, ", ".join(v.type.dtype for v in node.inputs),
                                          ", ".join(v.type.dtype for v in node.outputs))),
             "FFG_CU_LAUNCHER int32_t %s(%s)" % (symbol, LAUNCHER_PARAMS), "{"]
    body = _prepare(node, comp, nd, who, deps)
    body += _allocate(node, nd, messages)
    body += ["/* one pass over the loop computes every output */"]
    body += main.launch("shape", ["ist[%d]" % i for i in range(comp.nin)] +
                        ["ost[%d]" % k for k in range(comp.nout)], _pointers(node, range(comp.nin), range(comp.nout)))
    for k, kern, ins in partial:
        body += ["if (ffg_cu_size(%d, shape) == 0 && ffg_cu_size(%d, oshape[%d]) > 0) {" % (nd, nd, k),
                 "    /* another input makes the loop empty; output %d does not read it: compute it alone */" % k]
        body += indent(kern.launch("oshape[%d]" % k, ["ist[%d]" % i for i in ins] + ["ost[%d]" % k],
                                   _pointers(node, ins, [k], renumber=True)))
        body.append("}")
    body += _read_flag(who, messages)
    body += ["return FFG_OK;", "", "\bfail:   /* release what was allocated; no output is returned */",
             "for (k = 0; k < %d; ++k) {" % comp.nout,
             "    ffg_cu_free(device_alloc, owned[k]);",
             "    owned[k] = NULL;",
             "}",
             "ffg_cu_free(device_alloc, flag);",
             "return err->code != FFG_OK ? err->code : FFG_ERR_RUNTIME;"]
    lines += [ln.replace("    \b", "") for ln in indent(body)] + ["}", ""]
    return "\n".join(head + lines)


def _prepare(node, comp, nd, who, deps):
    """Declarations, input checks, the broadcast shape and every output's shape and strides."""
    nin, nout, nd1 = comp.nin, comp.nout, max(nd, 1)
    in_dtypes = ", ".join("{%s}" % dtype_args(v.type.dtype) for v in node.inputs) or "{0, 0}"
    reads = ", ".join("{%s}" % ", ".join("1" if i in used else "0" for i in range(nin)) for used in deps) if nin \
        else ", ".join("{0}" for _ in deps)
    return ["static const int dtypes[%d][2] = {%s};   /* each input's dtype code and bits */" % (max(nin, 1), in_dtypes),
            "static const signed char reads[%d][%d] = {%s};   /* the inputs each output reads */"
            % (nout, max(nin, 1), reads),
            "int64_t shape[%d];        /* the inputs broadcast together: the loop's shape */" % nd1,
            "int64_t ist[%d][%d];      /* input strides in elements, 0 where an input's length is 1 */"
            % (max(nin, 1), nd1),
            "int64_t oshape[%d][%d];   /* each output: the broadcast shape of the inputs it reads */" % (nout, nd1),
            "int64_t ost[%d][%d];      /* each output's strides over the loop (C order, 0 if broadcast) */"
            % (nout, nd1),
            "int32_t *flag = NULL;     /* device flag of the per-element checks */",
            "int32_t rc;",
            "int k;",
            "",
            "(void)host_alloc;   /* every output is on the device */",
            "rc = ffg_cu_check_call(err, %s, inputs, n_inputs, %d, outputs, owned, n_outputs, %d);" % (who, nin, nout),
            "/* every input: a CUDA tensor of the node's dtype and ndim (NULL data only when empty) */",
            "for (k = 0; k < %d && rc == FFG_OK; ++k)" % nin,
            "    rc = ffg_cu_check_tensor(err, %s, &inputs[k], k, FFG_DEVICE_CUDA, dtypes[k][0], dtypes[k][1], %d);"
            % (who, nd),
            "if (rc == FFG_OK)",
            "    rc = ffg_cu_broadcast(err, %s, inputs, %d, %d, shape, &ist[0][0], %d);" % (who, nin, nd, nd1),
            "if (rc != FFG_OK)",
            "    return rc;",
            "for (k = 0; k < %d; ++k)" % nout,
            "    ffg_cu_output_shape(inputs, %d, reads[k], %d, oshape[k], ost[k]);" % (nin, nd),
            ""]


def _allocate(node, nd, messages):
    lines = []
    if messages:
        lines += ["flag = (int32_t *)ffg_cu_alloc(device_alloc, sizeof(int32_t), err);",
                  "if (flag == NULL || ffg_cu_check(err, cudaMemset(flag, 0, sizeof(int32_t)), \"cudaMemset\"))",
                  "    goto fail;"]
    lines.append("/* the outputs: fresh C-contiguous device arrays */")
    for k, v in enumerate(node.outputs):
        lines += ["owned[%d] = ffg_cu_alloc_array(device_alloc, %d, oshape[%d], sizeof(%s), err);"
                  % (k, nd, k, c_element_type(v.type.dtype)),
                  "if (owned[%d] == NULL)" % k,
                  "    goto fail;",
                  "ffg_cu_set_output(&outputs[%d], owned[%d], FFG_DEVICE_CUDA, %s, %d, oshape[%d]);"
                  % (k, k, dtype_args(v.type.dtype), nd, k)]
    return lines + [""]


def _pointers(node, ins, outs, renumber=False):
    out = []
    for n, i in enumerate(ins):
        ct = c_element_type(node.inputs[i].type.dtype)
        out.append(("in%d" % (n if renumber else i),
                    "(const %s *)((const char *)inputs[%d].data + inputs[%d].byte_offset)" % (ct, i, i)))
    for n, k in enumerate(outs):
        out.append(("out%d" % (n if renumber else k), "(%s *)owned[%d]" % (c_element_type(node.outputs[k].type.dtype), k)))
    return out


def _read_flag(who, messages):
    if not messages:
        return []
    return ["{   /* the per-element checks: one read back (it waits for the kernel) */",
            "    int32_t bad = 0;",
            "    if (ffg_cu_check(err, cudaMemcpy(&bad, flag, sizeof bad, cudaMemcpyDeviceToHost), %s))" % who,
            "        goto fail;",
            "    if (bad) {",
            "        ffg_cu_error(err, FFG_ERR_VALUE, -1, \"%%s: %%s\", %s, \"%s\");" % (who, c_string("; ".join(messages))),
            "        goto fail;",
            "    }",
            "    ffg_cu_free(device_alloc, flag);",
            "    flag = NULL;",
            "}"]
