"""``MakeVector``: PyTensor's vector of scalars (``make_vector(a, b, c)``), with C code.

The inputs are 0-d tensors converted to the op's dtype (a conversion that would lose values is a
TypeError, as PyTensor's); the output is a vector of that many entries, of static length.
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.basic import Apply
from ffigraph.graph.op import Op
from ffigraph.scalar.basic import upcast
from ffigraph.tensor.basic import as_tensor_variable, cast, constant, weak_in_dtype
from ffigraph.tensor.ctype import c_element_type
from ffigraph.tensor.type import TensorType, normalize_dtype


class MakeVector(Op):
    """A vector of ``dtype`` from scalars (``MakeVector("int64")(a, b)``)."""

    __props__ = ("dtype",)

    def __init__(self, dtype="int64"):
        self.dtype = normalize_dtype(dtype)

    def make_node(self, *inputs):
        inputs = [as_tensor_variable(x) for x in inputs]
        for k, x in enumerate(inputs):
            if x.ndim != 0:
                raise ValueError("MakeVector: all inputs must be scalars; input %d (%s) has %d dimensions"
                                 % (k, x, x.ndim))
            if getattr(x, "weak", False):   # a Python number: its value must be kept in the dtype
                kept = weak_in_dtype(x, self.dtype)
                if kept is None:
                    raise TypeError("MakeVector(%s): %r does not fit" % (self.dtype, x.data.item()))
                inputs[k] = kept
            elif upcast(self.dtype, x.dtype) != self.dtype:
                raise TypeError("MakeVector(%s): input %d (%s) has dtype %s, which it would not hold without "
                                "losing values" % (self.dtype, k, x, x.dtype))
            else:
                inputs[k] = cast(inputs[k], self.dtype)
        return Apply(self, inputs, [TensorType(self.dtype, (len(inputs),))()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = np.array(inputs, dtype=self.dtype).reshape(len(inputs))

    def infer_shape(self, fgraph, node, input_shapes):
        return [(constant(len(node.inputs), dtype="int64"),)]

    def L_op(self, inputs, outputs, output_grads):
        (g,) = output_grads
        return [g[k] for k in range(len(inputs))]

    def R_op(self, inputs, eval_points):
        if any(p is None for p in eval_points):
            return [None]
        return self.make_node(*eval_points).outputs

    def c_code(self, node, name, inputs, outputs, sub):
        (z,) = outputs
        ctype = c_element_type(self.dtype)
        n = len(inputs)
        lines = ["/* %s: a vector of %d scalars */" % (self, n), "{",
                 "    const int64_t n = %d;" % n,
                 "    if (ffg_alloc_array(&%s, 1, &n, sizeof(%s), %s, %s))" % (z, ctype, sub["allocator"], sub["err"]),
                 "        %s" % sub["fail"]]
        lines += ["    ((%s *)%s.data)[%d] = *(const %s *)%s.data;" % (ctype, z, k, ctype, x) for k, x in enumerate(inputs)]
        return "\n".join(lines + ["}"])

    def c_code_cache_version(self):
        return (1,)

    def __str__(self):
        return "MakeVector{dtype=%s}" % self.dtype


make_vector = MakeVector()

__all__ = ["MakeVector", "make_vector"]
