"""``GpuReduce``: sum, prod, max, min, all, any or mean over some axes of a CUDA array.

One thread per output element (a grid-stride loop over the output, C order)
walks the reduced axes in nested loops, through any strides. The semantics are
``Reduce``'s (see ``ffigraph.tensor.reduce_c``, whose per-kind plan this reuses):
sum/prod/mean accumulate in ``Reduce``'s accumulator dtype (``acc_dtype``: float32 in float64,
ints in int64, which wrap) and convert the result to the output dtype once, max/min
propagate NaN, all/any test ``!= 0`` and give bool, mean is sum / count (0/0
gives NaN), max/min over an empty reduced axis fail with FFG_ERR_VALUE (checked
on the host, before any launch), and ``axis=()`` copies/converts each element.
Float sums are a plain loop (not numpy's pairwise summation): float32 results
may differ from numpy's in the last bits.

Not on the GPU: complex values (MethodNotDefined; ``gpu_reduce_supported`` is False). (A mean
is always float: its ``dtype`` is the dtype of the sum it divides, as in PyTensor.)
"""
from __future__ import annotations

import numpy as np

from ffigraph.cuda.elemwise import c_comment, c_string, check_gpu_dtypes, dtype_args, indent
from ffigraph.cuda.op import GpuKernelOp
from ffigraph.cuda.prelude import LAUNCHER_PARAMS
from ffigraph.cuda.type import GpuArrayType
from ffigraph.graph.basic import Apply
from ffigraph.graph.c_interface import MethodNotDefined
from ffigraph.abi import c_element_type
from ffigraph.tensor.math import reduce_acc_dtype, reduce_output_dtype

KINDS = ("sum", "prod", "max", "min", "all", "any", "mean")

SUPPORTED = {
    "kinds": KINDS,
    "not_supported": "complex dtypes (MethodNotDefined)",
}


def gpu_reduce_supported(node):
    """True when a CPU Reduce node can become a GpuReduce."""
    from ffigraph.tensor.math import Reduce

    if type(node.op) is not Reduce or node.op.kind not in KINDS:
        return False
    try:
        _plan(GpuReduce.from_cpu(node.op), node)
        return True
    except (MethodNotDefined, KeyError, TypeError, ValueError):
        return False


class GpuReduce(GpuKernelOp):
    """``kind`` over ``axis`` (sorted axes) of one GPU array; ``dtype`` and ``acc_dtype`` as for ``Reduce``."""

    __props__ = ("kind", "axis", "dtype", "acc_dtype")

    def __init__(self, kind, axis, dtype=None, acc_dtype=None):
        if kind not in KINDS:
            raise ValueError("GpuReduce: unknown reduction %r (one of %s)" % (kind, ", ".join(KINDS)))
        axes = tuple(sorted(int(a) for a in axis))
        if len(set(axes)) != len(axes):
            raise ValueError("GpuReduce: repeated axis in %s" % (axis,))
        self.kind = kind
        self.axis = axes
        self.dtype = None if dtype is None else np.dtype(dtype).name
        self.acc_dtype = None if acc_dtype is None else np.dtype(acc_dtype).name

    @classmethod
    def from_cpu(cls, reduce_op):
        """The GpuReduce computing what a CPU ``Reduce`` op computes."""
        return cls(reduce_op.kind, reduce_op.axis, reduce_op.dtype, getattr(reduce_op, "acc_dtype", None))

    def make_node(self, x):
        if not isinstance(getattr(x, "type", None), GpuArrayType):
            raise TypeError("%s: input %s is not a GPU array (type %s); transfer it with gpu_from_host"
                            % (self, x, getattr(x, "type", type(x).__name__)))
        for a in self.axis:
            if not 0 <= a < x.type.ndim:
                raise ValueError("%s: axis %d is out of range for input %s with %d dimensions"
                                 % (self, a, x, x.type.ndim))
        if self.kind in ("max", "min") and x.type.dtype.startswith("complex"):
            raise TypeError("%s: complex values have no order (input %s)" % (self, x))
        if self.kind in ("sum", "prod", "mean"):
            reduce_acc_dtype(self, x.type.dtype, self.acc_dtype)   # a precision-losing acc_dtype: TypeError
        out_dtype = reduce_output_dtype(self.kind, x.type.dtype, self.dtype)
        shape = tuple(s for a, s in enumerate(x.type.shape) if a not in self.axis)
        return Apply(self, [x], [GpuArrayType(out_dtype, shape)()])

    def infer_shape(self, fgraph, node, input_shapes):
        (shp,) = input_shapes
        return [tuple(s for a, s in enumerate(shp) if a not in self.axis)]

    def __str__(self):
        return "Gpu%s{axis=%s}" % (self.kind.capitalize(), ",".join(map(str, self.axis)))

    def c_code_cache_version(self):
        return (1, 1)

    def cuda_launcher(self, node, symbol):
        return launcher_text(self, node, symbol)


# ------------------------------------------------------------------ code generation


def _plan(op, node):
    """The CPU generator's plan for this kind and these dtypes (accumulator, load, update, finish)."""
    from ffigraph.tensor.reduce_c import _Plan

    check_gpu_dtypes(op, [node.inputs[0].type.dtype, node.outputs[0].type.dtype])
    if op.kind == "mean" and np.dtype(node.outputs[0].type.dtype).kind != "f":
        raise MethodNotDefined("%s: a mean into %s is not supported on the GPU" % (op, node.outputs[0].type.dtype))
    return _Plan(op, node)


def _kernel(name, plan, kept, reduced, in_ct, out_ct):
    K, R = len(kept), len(reduced)
    lines = ["struct %s_args {" % name,
             "    int64_t nout;          /* output elements */",
             "    int64_t nred;          /* reduced elements per output element */",
             "    int64_t kshape[%d];    /* kept axes: lengths, input strides (elements) */" % max(K, 1),
             "    int64_t kst[%d];" % max(K, 1),
             "    int64_t rshape[%d];    /* reduced axes: lengths, input strides (elements) */" % max(R, 1),
             "    int64_t rst[%d];" % max(R, 1),
             "    const %s *in;" % in_ct,
             "    %s *out;" % out_ct,
             "};", "",
             "static __global__ void %s_kernel(const struct %s_args a)" % (name, name),
             "{",
             "    int64_t i;",
             "    for (i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.nout;",
             "         i += (int64_t)blockDim.x * gridDim.x) {"]
    body = ["int64_t base = 0;   /* the input offset of output element i's first reduced element */"]
    if K:
        body += ["int64_t rest = i;", "int d;",
                 "for (d = %d; d >= 0; --d) {" % (K - 1),
                 "    base += (rest % a.kshape[d]) * a.kst[d];",
                 "    rest /= a.kshape[d];",
                 "}"]
    body += ["{", "    %s" % c_comment(plan.note.replace(" with pairwise summation", ""))]   # a plain loop here
    inner = []
    if plan.kind == "mean":
        inner.append("const int64_t count = a.nred;")
    if R == 0:
        inner.append("%s acc = %s;   /* no reduced axis: convert the element */" % (plan.acc_ctype, plan.load("a.in[base]")))
    else:
        inner.append("%s acc = %s;" % (plan.acc_ctype, plan.init))
        inner.append("int64_t %s;" % ", ".join("r%d" % r for r in range(R)))
        offset = "base + " + " + ".join("r%d * a.rst[%d]" % (r, r) for r in range(R))
        loop = []
        for r in range(R):
            loop.append("    " * r + "for (r%d = 0; r%d < a.rshape[%d]; ++r%d)%s" % (r, r, r, r, " {" if r == R - 1 else ""))
        loop.append("    " * R + "const %s v = %s;" % (plan.value_ctype, plan.load("a.in[%s]" % offset)))
        loop += ["    " * R + ln for ln in plan.update]
        loop.append("    " * (R - 1) + "}")
        inner += loop
    inner.append("a.out[i] = %s;" % plan.finish)
    body += indent(inner) + ["}"]
    lines += indent(body, 2) + ["    }", "}", ""]
    return "\n".join(lines)


def launcher_text(op, node, symbol):
    """The .cu text of one GpuReduce node: its kernel and the launcher ``symbol``."""
    plan = _plan(op, node)
    x, out = node.inputs[0], node.outputs[0]
    nd = x.type.ndim
    kept = [a for a in range(nd) if a not in op.axis]
    reduced = list(op.axis)
    who = "%s_who" % symbol
    in_ct, out_ct = c_element_type(x.type.dtype), c_element_type(out.type.dtype)
    head = ["static const char %s[] = \"%s\";" % (who, c_string(op)), "",
            _kernel(symbol, plan, kept, reduced, in_ct, out_ct)]
    body = ["int64_t st[%d];      /* input strides in elements */" % max(nd, 1),
            "int64_t oshape[%d];  /* the output: the kept axes */" % max(len(kept), 1),
            "struct %s_args a;" % symbol,
            "int32_t rc;", "",
            "(void)host_alloc;   /* the output is on the device */",
            "rc = ffg_cu_check_call(err, %s, inputs, n_inputs, 1, outputs, owned, n_outputs, 1);" % who,
            "if (rc == FFG_OK)",
            "    rc = ffg_cu_check_tensor(err, %s, &inputs[0], 0, FFG_DEVICE_CUDA, %s, %d);"
            % (who, dtype_args(x.type.dtype), nd),
            "if (rc != FFG_OK)",
            "    return rc;",
            "ffg_cu_strides(&inputs[0], st);",
            "memset(&a, 0, sizeof a);"]
    for j, d in enumerate(kept):
        body.append("oshape[%d] = a.kshape[%d] = inputs[0].shape[%d];   a.kst[%d] = st[%d];" % (j, j, d, j, d))
    for j, d in enumerate(reduced):
        body.append("a.rshape[%d] = inputs[0].shape[%d];   a.rst[%d] = st[%d];" % (j, d, j, d))
    body += ["a.nout = ffg_cu_size(%d, a.kshape);" % len(kept),
             "a.nred = ffg_cu_size(%d, a.rshape);" % len(reduced)]
    if op.kind in ("max", "min") and reduced:
        body += ["if (a.nred == 0) {",
                 "    ffg_cu_error(err, FFG_ERR_VALUE, 0, \"%%s: cannot take the %s over an empty axis (the "
                 "reduced axes %s have %%lld elements)\", %s, (long long)a.nred);"
                 % (op.kind, ",".join(map(str, reduced)), who),
                 "    return FFG_ERR_VALUE;",
                 "}"]
    body += ["a.in = (const %s *)((const char *)inputs[0].data + inputs[0].byte_offset);" % in_ct,
             "owned[0] = ffg_cu_alloc(device_alloc, (size_t)a.nout * sizeof(%s), err);" % out_ct,
             "if (owned[0] == NULL)",
             "    return err->code;",
             "a.out = (%s *)owned[0];" % out_ct,
             "ffg_cu_set_output(&outputs[0], owned[0], FFG_DEVICE_CUDA, %s, %d, oshape);"
             % (dtype_args(out.type.dtype), len(kept)),
             "if (a.nout > 0) {   /* an empty output needs no launch */",
             "    %s_kernel<<<ffg_cu_blocks(a.nout), FFG_CU_THREADS>>>(a);" % symbol,
             "    if (ffg_cu_launched(err, %s)) {" % who,
             "        ffg_cu_free(device_alloc, owned[0]);",
             "        owned[0] = NULL;",
             "        return err->code;",
             "    }",
             "}",
             "return FFG_OK;"]
    lines = [c_comment("%s: %s -> %s" % (op, x.type.dtype, out.type.dtype)),
             "FFG_CU_LAUNCHER int32_t %s(%s)" % (symbol, LAUNCHER_PARAMS), "{"] + indent(body) + ["}", ""]
    return "\n".join(head + lines)
