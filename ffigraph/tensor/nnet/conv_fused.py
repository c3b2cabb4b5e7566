"""The forward convolution with a fused per-channel output epilogue: ``AbstractConvEpilogue``.

``AbstractConvEpilogue(convdim, <AbstractConv's arguments>, epilogue=..., activation=...)`` computes,
with ``conv`` the ``AbstractConv`` of the same props (``abstract_conv``'s semantics, Theano's)::

    epilogue='bias':         (img, kern, bias)         -> act(conv(img, kern) + bias[o])
    epilogue='scale_shift':  (img, kern, scale, shift) -> act(conv(img, kern) * scale[o] + shift[o])

``o`` is the output channel (axis 1); the vectors have O entries (a wrong length is a ValueError from
``perform``, FFG_ERR_VALUE from C); ``act`` is ``'identity'`` or ``'relu'``, the rectifier of
``nnet.relu``: ``switch(v <= 0, 0, v)`` (NaN stays NaN). The vectors take the convolution's dtype
(float32 or float64).

Nobody needs to build it by hand: the rewrite ``ffigraph.rewriting.conv`` makes it from
``relu(conv + b)``, ``relu(batch_normalization_test(conv, ...))`` and the like in inference
graphs (the output of the convolution and every intermediate read only by the chain), so that the
epilogue runs over each (image, group) block of the output right after its gemm wrote it, while
the block is in cache, instead of as one more pass over the whole output. Its C is ``conv_c``'s
forward code (im2col + gemm) with that epilogue.

Gradient: ``L_op`` differentiates the unfused graph (``unfused``: the plain convolution, the
elementwise epilogue and ``relu``), so the gradient is the one of the graph the rewrite replaced;
training graphs differentiate before rewriting and so never meet this op.
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.basic import Apply
from ffigraph.tensor.basic import as_tensor_variable, cast, switch
from ffigraph.tensor.gradient import Lop
from ffigraph.tensor.math import le
from ffigraph.tensor.nnet.abstract_conv import AbstractConv
from ffigraph.tensor.type import TensorType

__all__ = ["AbstractConvEpilogue", "EPILOGUES", "ACTIVATIONS"]

#: the epilogue kinds and the number of per-channel vectors each takes
EPILOGUES = {"bias": 1, "scale_shift": 2}
#: the activations applied last
ACTIVATIONS = ("identity", "relu")


class AbstractConvEpilogue(AbstractConv):
    """The forward convolution followed, in its output loop, by a per-channel affine map and an
    activation (see the module docstring). Props: ``AbstractConv``'s, ``epilogue`` ('bias' or
    'scale_shift') and ``activation`` ('identity' or 'relu')."""

    __props__ = AbstractConv.__props__ + ("epilogue", "activation")

    def __init__(self, convdim, imshp=None, kshp=None, border_mode="valid", subsample=None, filter_flip=True,
                 filter_dilation=None, num_groups=1, unshared=False, epilogue="bias", activation="identity"):
        super().__init__(convdim, imshp, kshp, border_mode, subsample, filter_flip, filter_dilation, num_groups,
                         unshared)
        if epilogue not in EPILOGUES:
            raise ValueError("AbstractConvEpilogue: epilogue must be one of %s, got %r" % (sorted(EPILOGUES), epilogue))
        if activation not in ACTIVATIONS:
            raise ValueError("AbstractConvEpilogue: activation must be one of %s, got %r" % (ACTIVATIONS, activation))
        self.epilogue = epilogue
        self.activation = activation

    @classmethod
    def of(cls, conv_op, epilogue, activation="identity"):
        """The fused op of the plain forward convolution ``conv_op`` (its props kept)."""
        return cls(conv_op.convdim, imshp=conv_op.imshp, kshp=conv_op.kshp, border_mode=conv_op.border_mode,
                   subsample=conv_op.subsample, filter_flip=conv_op.filter_flip,
                   filter_dilation=conv_op.filter_dilation, num_groups=conv_op.num_groups,
                   epilogue=epilogue, activation=activation)

    def conv_op(self):
        """The plain forward convolution of the same props (``AbstractConv2d``/``AbstractConv3d``)."""
        return self._sibling("forward")

    def __str__(self):
        return "%s{%s%s}" % (type(self).__name__, self.epilogue, ",relu" if self.activation == "relu" else "")

    def _vector_names(self):
        return ("scale", "shift") if self.epilogue == "scale_shift" else ("bias",)

    def make_node(self, img, kern, *vectors):
        names = self._vector_names()
        if len(vectors) != len(names):
            raise TypeError("%s takes img, kern and %s (%d inputs), got %d" % (self, ", ".join(names), 2 + len(names),
                                                                             2 + len(vectors)))
        conv = AbstractConv.make_node(self, img, kern)
        img, kern = conv.inputs
        out = conv.outputs[0]
        vs = []
        for v, n in zip(vectors, names):
            v = as_tensor_variable(v)
            if v.ndim != 1:
                raise TypeError("%s: %s must be a vector (one entry per output channel), got %d dimensions"
                                % (self, n, v.ndim))
            if v.dtype[0] not in "fiub":
                raise TypeError("%s: %s must be real, got %s" % (self, n, v.dtype))
            if v.type.shape[0] is not None and out.type.shape[1] is not None and v.type.shape[0] != out.type.shape[1]:
                raise ValueError("%s: %s has %d entries, the convolution %d output channels"
                                 % (self, n, v.type.shape[0], out.type.shape[1]))
            vs.append(cast(v, out.dtype))
        return Apply(self, [img, kern] + vs, [TensorType(out.dtype, out.type.shape)()])

    def perform(self, node, inputs, output_storage):
        img, kern = inputs[:2]
        vectors = inputs[2:]
        dtype = node.outputs[0].type.numpy_dtype
        out = self._np_forward(img, kern).astype(dtype, copy=False)
        O = out.shape[1]
        for v, n in zip(vectors, self._vector_names()):
            if v.shape != (O,):
                raise ValueError("%s: %s has %d entries, the convolution %d output channels" % (self, n, v.shape[0], O))
        shape = (1, O) + (1,) * self.convdim
        # the same operations, in the same dtype and order, as the unfused elementwise graph
        if self.epilogue == "scale_shift":
            out = out * vectors[0].reshape(shape) + vectors[1].reshape(shape)
        else:
            out = out + vectors[0].reshape(shape)
        if self.activation == "relu":
            with np.errstate(invalid="ignore"):
                out = np.where(out <= 0, np.zeros((), dtype), out)
        output_storage[0][0] = np.asarray(out, dtype=dtype)

    def infer_shape(self, fgraph, node, input_shapes):
        return AbstractConv.infer_shape(self, fgraph, node, input_shapes[:2])

    def connection_pattern(self, node):
        return [[True] for _ in node.inputs]

    def unfused(self, img, kern, *vectors):
        """The graph this op stands for: the plain convolution, the elementwise epilogue, the activation."""
        out = self.conv_op()(img, kern)
        pattern = ("x", 0) + ("x",) * self.convdim
        vs = [v.dimshuffle(*pattern) for v in vectors]
        out = out * vs[0] + vs[1] if self.epilogue == "scale_shift" else out + vs[0]
        if self.activation == "relu":
            out = switch(le(out, 0), 0, out)
        return out

    def L_op(self, inputs, outputs, output_grads):
        # the gradient of the unfused graph (two conv gradient ops, the epilogue's and relu's elementwise
        # gradients): the one of the graph the rewrite replaced
        return Lop(self.unfused(*inputs), list(inputs), list(output_grads))

