"""Fused ops made by the fusion rewrite.

``FusedElemwise``  a Composite evaluated in one loop over the broadcast inputs,
                   with one output per Composite output (``[x+y, x-y]`` is one node);
``FusedReduce``    a sum/prod/max/min/mean of a one-output Composite, accumulated
                   as the elements are computed, so the elementwise result is never stored.

Both keep each output's shape as the unfused graph had it: an output
depending only on some inputs has those inputs' broadcast shape.
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.basic import Apply
from ffigraph.graph.op import Op
from ffigraph.tensor.basic import as_tensor_variable, constant, weak_in_dtype
from ffigraph.tensor.elemwise import (COMPOSITE_RUNNER, _broadcast_static_shapes, _left_pad, broadcast_errors_named,
                                      broadcast_shape)
from ffigraph.tensor.type import TensorType


def _check_inputs(op, composite, inputs):
    inputs = [as_tensor_variable(i) for i in inputs]
    if len(inputs) != composite.nin:
        raise TypeError("%s takes %d inputs, got %d" % (op, composite.nin, len(inputs)))
    for k, (v, dt) in enumerate(zip(inputs, composite.in_dtypes)):
        if v.dtype != dt:
            raise TypeError("%s: input %d (%s) has dtype %s, expected %s" % (op, k, v, v.dtype, dt))
    if len({v.ndim for v in inputs}) > 1:
        raise TypeError("%s: inputs must share one ndim, got %s" % (op, [v.ndim for v in inputs]))
    return inputs


def _run(op, node, composite, inputs):
    with broadcast_errors_named(op, node, inputs):
        return composite.compute(inputs)


class _FusedC:
    """The C hooks both fused ops share: helpers and libraries follow the Composite's steps."""

    def c_support_code_apply(self, node, name):
        from ffigraph.tensor.fused_c import fused_apply_support_code

        return fused_apply_support_code(self, node, name)

    def c_headers(self, **kwargs):
        return ["<math.h>"]

    def c_libraries(self, **kwargs):
        from ffigraph.tensor.fused_c import fused_libraries

        return fused_libraries(self.composite)

    def c_support_code(self, **kwargs):
        from ffigraph.tensor.threads_c import pool_support_code

        return pool_support_code()

    def c_compile_args(self, **kwargs):
        from ffigraph.tensor.threads_c import compile_args

        return compile_args()

    def c_code_cache_version(self):
        return (1,)


class FusedElemwise(_FusedC, Op):
    """One loop computing every output of ``composite``.

    ``inplace`` lists (output, input) pairs: the output may reuse that input's
    memory when, at run time, the input has the output's shape and dtype (the
    inplace rewrite sets it only where the graph allows it).
    """

    __props__ = ("composite", "inplace")

    def __init__(self, composite, inplace=()):
        self.composite = composite
        self.inplace = tuple(sorted((int(o), int(i)) for o, i in inplace))
        self.destroy_map = {o: [i] for o, i in self.inplace}

    @property
    def scalar_op(self):
        return self.composite

    def make_node(self, *inputs):
        inputs = _check_inputs(self, self.composite, inputs)
        outputs = []
        for dt, deps in zip(self.composite.out_dtypes(), self.composite.input_dependencies()):
            used = [inputs[k] for k in deps]
            shape = _broadcast_static_shapes(self, used) if used else (1,) * (inputs[0].ndim if inputs else 0)
            outputs.append(TensorType(dt, shape)())
        return Apply(self, inputs, outputs)

    def perform(self, node, inputs, output_storage):
        results = _run(self, node, self.composite, inputs)
        for k, (cell, value) in enumerate(zip(output_storage, results)):
            value = np.asarray(value, dtype=node.outputs[k].type.numpy_dtype)
            target = dict(self.inplace).get(k)
            if target is not None:
                x = inputs[target]
                if x.shape == value.shape and x.dtype == value.dtype and x.flags.writeable:
                    x[...] = value
                    value = x
            cell[0] = value

    def infer_shape(self, fgraph, node, input_shapes):
        out = []
        for var, deps in zip(node.outputs, self.composite.input_dependencies()):
            if not deps:
                out.append(tuple(constant(1, dtype="int64") for _ in range(var.ndim)))
                continue
            out.append(broadcast_shape(var.type.shape, [node.inputs[k] for k in deps],
                                       [input_shapes[k] for k in deps]))
        return out

    def __str__(self):
        text = str(self.composite)
        if self.inplace:
            text += "{inplace %s}" % ",".join("%d<-%d" % p for p in self.inplace)
        return text

    def inner_debugprint_lines(self):
        return self.composite.inner_debugprint_lines()

    # ---- C

    def c_code(self, node, name, inputs, outputs, sub):
        from ffigraph.tensor.fused_c import fused_elemwise_c_code

        return fused_elemwise_c_code(self, node, inputs, outputs, sub, name)



REDUCIBLE = ("sum", "prod", "max", "min", "mean")


class FusedReduce(_FusedC, Op):
    """``kind`` over ``axis`` of the single output of ``composite``, without storing it.

    The output has the composite's dtype; sums, products and means accumulate in ``acc_dtype``
    (None: ``Reduce``'s default, float64 for float32 values), as the ``Reduce`` it replaces.
    """

    __props__ = ("composite", "kind", "axis", "acc_dtype")

    def __init__(self, composite, kind, axis, acc_dtype=None):
        if composite.nout != 1:
            raise ValueError("FusedReduce needs a one-output Composite, got %d outputs" % composite.nout)
        if kind not in REDUCIBLE:
            raise ValueError("FusedReduce cannot fuse a %r reduction" % (kind,))
        self.composite = composite
        self.kind = kind
        self.axis = tuple(sorted(int(a) for a in axis))
        self.acc_dtype = None if acc_dtype is None else np.dtype(acc_dtype).name

    @property
    def scalar_op(self):
        return self.composite

    def accumulator_dtype(self):
        """The dtype the reduction accumulates in (the value's own for max and min)."""
        return self._reduce_op().accumulator_dtype(self.composite.out_dtypes()[0])

    def make_node(self, *inputs):
        inputs = _check_inputs(self, self.composite, inputs)
        self.accumulator_dtype()   # a precision-losing acc_dtype is a TypeError here
        loop = _broadcast_static_shapes(self, inputs)
        shape = tuple(s for a, s in enumerate(loop) if a not in self.axis)
        return Apply(self, inputs, [TensorType(self.composite.out_dtypes()[0], shape)()])

    def _reduce_op(self):
        from ffigraph.tensor.math import Reduce

        return Reduce(self.kind, self.axis, self.composite.out_dtypes()[0], self.acc_dtype)

    def perform(self, node, inputs, output_storage):
        (value,) = _run(self, node, self.composite, inputs)
        full = np.broadcast_shapes(*[np.shape(x) for x in inputs])
        value = np.broadcast_to(value, full)  # a constant-only expression is a scalar
        self._reduce_op().perform(node, [value], output_storage)

    def infer_shape(self, fgraph, node, input_shapes):
        loop_type = _broadcast_static_shapes(self, node.inputs)
        loop = broadcast_shape(loop_type, node.inputs, input_shapes)
        return [tuple(s for a, s in enumerate(loop) if a not in self.axis)]

    def __str__(self):
        return "Fused%s{axis=%s}(%s)" % (self.kind.capitalize(), ",".join(map(str, self.axis)),
                                         ", ".join(self.composite.expressions()))

    def inner_debugprint_lines(self):
        return self.composite.inner_debugprint_lines() + ["%s over axes %s" % (self.kind, self.axis)]

    # ---- C

    def c_code(self, node, name, inputs, outputs, sub):
        from ffigraph.tensor.fused_c import fused_reduce_c_code

        return fused_reduce_c_code(self, node, name, inputs, outputs, sub)

    def c_code_cleanup(self, node, name, inputs, outputs, sub):
        from ffigraph.tensor.fused_c import fused_reduce_c_cleanup

        return fused_reduce_c_cleanup(self, node, name, sub)


def composite_node(composite, inputs):
    """The FusedElemwise node of ``composite`` over ``inputs`` (PyTensor's Elemwise(composite)):
    Python numbers in the program's input dtypes, ranks left-padded to the largest."""
    inputs = [as_tensor_variable(x) for x in inputs]
    kept = [weak_in_dtype(x, dt) for x, dt in zip(inputs, composite.in_dtypes)]
    inputs = [x if k is None else k for x, k in zip(inputs, kept)]
    ndim = max((x.ndim for x in inputs), default=0)
    return FusedElemwise(composite).make_node(*[_left_pad(x, ndim) for x in inputs])


COMPOSITE_RUNNER[:] = [composite_node]
