"""Fusing the per-channel epilogue of a convolution into the convolution's output loop.

The forward convolution (``AbstractConv2d``/``AbstractConv3d``, im2col + one gemm per image and
group) writes each (image, group) block of its output once; a following bias, batch norm or relu is
otherwise one more pass over the whole output, after it has left the cache. These rewrites make
``ffigraph.tensor.nnet.conv_fused.AbstractConvEpilogue`` of such chains, which applies
``act(out * scale[o] + shift[o])`` or ``act(out + bias[o])`` to each block right after its gemm::

  conv(x, W) + b.dimshuffle('x', 0, 'x', 'x')         -> Epilogue{bias}(x, W, b)
  conv - c, conv * c, conv / c, and each such step
  on an Epilogue without activation (c per-channel)   -> Epilogue{bias | scale_shift} (vectors composed)
  batch_normalization_test(conv, g, beta, m, v,
                           'spatial', eps)           -> Epilogue{scale_shift}(x, W, s, beta - m * s),
                                                         s = g / sqrt(v + eps)
  relu(conv or Epilogue without activation)           -> the same with activation relu

"Per-channel" means broadcastable on every axis but the channels (axis 1): a vector dimshuffled
``('x', 0, 'x', ...)``, a (1, O, 1, 1) parameter, or a size-1 constant. The old elementwise
``batch_normalization`` (``(x - mean) / std * gamma + beta`` or ``(x - mean) * (gamma / std) + beta``)
is such a chain of steps. The composed vectors (``s``, the shifts) are ordinary graph nodes on
O-vectors: computed once per call, constant-folded here when the parameters are constants.
``relu`` is ``nnet.relu``'s ``switch(t <= 0, 0, t)`` or ``maximum(t, 0)`` (either order).

Every step fires only when each intermediate it swallows (the convolution's output, the
pre-activation ``t`` and ``t <= 0``) is read by nothing else, so nothing is computed twice. In a
training step relu's gradient reads ``t <= 0`` too, so relu stays an elementwise op there; the
bias (or batch norm) alone would still move into the convolution when the convolution's output
feeds only it, but in the training graphs tried the gradient also reads that output's shape, and
nothing fuses (the graph and its gradient are the unfused ones).

Where it pays: everywhere it was measured (``bench/bench_conv_kernels.py --fused``: LeNet's two
convolutions and a 3x3 64->64 layer at batch 64, float32), so no shape is excluded. The epilogue
costs next to nothing on a block still in cache, while the unfused elementwise pass re-reads and
re-writes the whole output.

The convolutional family loads on first use: a program that never convolves never imports it, and
neither does this module, which every compile imports. A graph can hold the family's ops only once
their module is loaded, so the rewriters look the classes up in ``sys.modules`` (a module that is
not there means there is no node to match) and load the fused op's module on the first fusion.

The rewriters are in the ``specialize`` group (as the BLAS ones: a cheaper form of the same value,
once the graph is canonical), which runs before the elementwise fusion (optdb position 4) that would
otherwise swallow the add/switch into a loop of its own. They are tagged ``conv_fusion`` (so
``Mode().excluding('conv_fusion')`` leaves them out) and ``gemm``: ``Mode(device='cuda')`` excludes
``gemm`` (CPU products would stay off the device), and the fused op has no GPU version either, so on
the GPU the convolution and its epilogue move as they are.
"""
from __future__ import annotations

import importlib
import sys

import numpy as np

from ffigraph.graph.basic import Constant
from ffigraph.graph.c_interface import DelegatedCOp
from ffigraph.graph.rewriting import node_rewriter
from ffigraph.rewriting.canonicalize import elemwise_name, is_constant_equal, same_type
from ffigraph.rewriting.constant_folding import MAX_FOLDED_BYTES
from ffigraph.rewriting.groups import register_specialize
from ffigraph.tensor.basic import alloc, cast, constant, zeros_like
from ffigraph.tensor.elemwise import DimShuffle, Elemwise
from ffigraph.tensor.math import sqrt

__all__ = ["local_conv_affine", "local_conv_batch_norm", "local_conv_relu", "CONV_FUSION_REWRITES"]

_NNET = "ffigraph.tensor.nnet."


def _loaded(module):
    """``ffigraph.tensor.nnet.<module>`` if a program has imported it, else None."""
    return sys.modules.get(_NNET + module)


def _epilogue_class():
    """The fused op's class: its module is loaded on the first fusion (a convolution is in the
    graph, so the family is in use)."""
    return importlib.import_module(_NNET + "conv_fused").AbstractConvEpilogue


# ------------------------------------------------------------------ what the chain is


class _Chain:
    """A convolution with an affine epilogue so far: ``conv(img, kern) * a + b`` (``a``, ``b``
    O-vectors or None for 1 and 0)."""

    def __init__(self, node, conv_op, img, kern, a, b):
        self.node, self.conv_op, self.img, self.kern, self.a, self.b = node, conv_op, img, kern, a, b

    def fused(self, activation="identity"):
        """The fused op's output for this chain."""
        a, b = self.a, self.b
        if a is None and b is None:   # relu of a bare convolution: bias 0
            b = alloc(constant(np.zeros((), self.img.dtype)), self.kern.shape[0])
        if a is None:
            return _epilogue_class().of(self.conv_op, "bias", activation)(self.img, self.kern, b)
        if b is None:
            b = zeros_like(a)
        return _epilogue_class().of(self.conv_op, "scale_shift", activation)(self.img, self.kern, a, b)


def _chain(var):
    """The _Chain computing ``var`` (a plain forward convolution, or an Epilogue without activation), else None."""
    node = var.owner
    if node is None:
        return None
    op = node.op
    conv = _loaded("abstract_conv")
    if conv is None:
        return None
    if type(op) in (conv.AbstractConv, conv.AbstractConv2d, conv.AbstractConv3d) and op.kind == "forward":
        return _Chain(node, op, node.inputs[0], node.inputs[1], None, None)
    fused = _loaded("conv_fused")
    if fused is not None and type(op) is fused.AbstractConvEpilogue and op.activation == "identity":
        a, b = (node.inputs[2], node.inputs[3]) if op.epilogue == "scale_shift" else (None, node.inputs[2])
        return _Chain(node, op.conv_op(), node.inputs[0], node.inputs[1], a, b)
    return None


def _clients(fgraph, var):
    return fgraph.clients.get(var, ())


def _only_client(fgraph, var, node):
    clients = _clients(fgraph, var)
    return len(clients) == 1 and clients[0][0] is node


def _channel_vector(c, like, chain):
    """``c`` as an O-vector of ``like``'s dtype when it is per-channel for ``like`` (broadcastable on
    every axis but 1), else None."""
    if c.ndim != like.ndim or c.type.dtype != like.type.dtype:
        return None
    bc = c.type.broadcastable
    if not all(bc[a] for a in range(c.ndim) if a != 1):
        return None
    if bc[1]:   # one value for every channel
        return alloc(c.dimshuffle(), chain.kern.shape[0])
    owner = c.owner
    if owner is not None and isinstance(owner.op, DimShuffle) and owner.op.input_ndim == 1 \
            and owner.op.new_order.index(0) == 1:
        return owner.inputs[0]   # v.dimshuffle('x', 0, 'x', ...): v itself
    return c.dimshuffle(1)


def _folded(fgraph, var):
    """``var`` with every node this rewrite made whose inputs are (then) all constants computed now, by
    its ``perform``: specialize runs after constant folding, and the composed vectors of constant
    parameters should still be constants. (The graph's own nodes were offered to constant folding
    already.)"""
    node = var.owner
    if node is None or node in fgraph.apply_nodes:
        return var
    inputs = [_folded(fgraph, i) for i in node.inputs]
    if all(isinstance(i, Constant) for i in inputs) and node.op.do_constant_folding(None, node) \
            and not node.op.destroy_map:
        new = node.op.make_node(*inputs)
        storage = [[None] for _ in new.outputs]
        try:
            new.op.perform(new, [i.data for i in inputs], storage)
        except Exception:  # noqa: BLE001 - an error shows up at run time, where it belongs
            return var
        value = storage[node.outputs.index(var)][0]
        if value is not None and np.asarray(value).nbytes <= MAX_FOLDED_BYTES:
            return var.type.make_constant(value)
        return var
    if any(a is not b for a, b in zip(inputs, node.inputs)):
        return node.op.make_node(*inputs).outputs[node.outputs.index(var)]
    return var


def _replacement(fgraph, node, chain, activation="identity"):
    out = node.outputs[0]
    chain.a = None if chain.a is None else _folded(fgraph, chain.a)
    chain.b = None if chain.b is None else _folded(fgraph, chain.b)
    new = chain.fused(activation)
    return [new] if same_type(out, new) else None


# ------------------------------------------------------------------ the rewriters


@node_rewriter([Elemwise], name="local_conv_affine")
def local_conv_affine(fgraph, node):
    """conv (or an Epilogue without activation) +, -, *, / a per-channel tensor -> an Epilogue."""
    name = elemwise_name(node)
    if name not in ("add", "sub", "mul", "true_div") or len(node.inputs) != 2:
        return None
    orders = ((0, 1), (1, 0)) if name in ("add", "mul") else ((0, 1),)
    for i, j in orders:
        y, c = node.inputs[i], node.inputs[j]
        chain = _chain(y)
        if chain is None or not _only_client(fgraph, y, node):
            continue
        v = _channel_vector(c, y, chain)
        if v is None:
            continue
        a, b = chain.a, chain.b
        if name == "add":
            b = v if b is None else b + v
        elif name == "sub":
            b = -v if b is None else b - v
        elif name == "mul":
            a = v if a is None else a * v
            b = None if b is None else b * v
        else:
            a = 1 / v if a is None else a / v
            b = None if b is None else b / v
        dtype = y.type.dtype
        chain.a = None if a is None else cast(a, dtype)
        chain.b = None if b is None else cast(b, dtype)
        return _replacement(fgraph, node, chain)
    return None


@node_rewriter([DelegatedCOp], name="local_conv_batch_norm")
def local_conv_batch_norm(fgraph, node):
    """batch_normalization_test(conv, gamma, beta, mean, var, 'spatial', eps) -> Epilogue{scale_shift}."""
    bn = _loaded("bn")
    if bn is None or type(node.op) is not bn.AbstractBatchNormInference:
        return None
    x, gamma, beta, mean, var, eps = node.inputs
    if node.op.axes != (0,) + tuple(range(2, x.ndim)):
        return None
    chain = _chain(x)
    if chain is None or not _only_client(fgraph, x, node):
        return None
    vs = [_channel_vector(p, x, chain) for p in (gamma, beta, mean, var)]
    if any(v is None for v in vs):
        return None
    g, be, m, va = vs
    dtype = x.type.dtype
    # the op's (x - mean) * (gamma / sqrt(var + eps)) + beta, as x * s + (beta - mean * s)
    s = cast(g / sqrt(va + eps), dtype)
    if chain.b is None:
        shift = be - m * s
    else:
        shift = (chain.b - m) * s + be
    chain.a = s if chain.a is None else chain.a * s
    chain.b = cast(shift, dtype)
    return _replacement(fgraph, node, chain)


@node_rewriter([Elemwise], name="local_conv_relu")
def local_conv_relu(fgraph, node):
    """switch(t <= 0, 0, t) (``nnet.relu``) or maximum(t, 0) with t a conv (or an Epilogue without
    activation) -> the same with relu (maximum keeps NaN too, so the two agree everywhere)."""
    name = elemwise_name(node)
    if name == "switch":
        cond, zero, t = node.inputs
        le_node = cond.owner
        if elemwise_name(le_node) != "le" or le_node.inputs[0] is not t \
                or not is_constant_equal(le_node.inputs[1], 0) or not is_constant_equal(zero, 0):
            return None
        if not _only_client(fgraph, cond, node):
            return None
        swallowed = {id(le_node), id(node)}
    elif name == "maximum" and len(node.inputs) == 2:
        t, zero = node.inputs if is_constant_equal(node.inputs[1], 0) else node.inputs[::-1]
        if not is_constant_equal(zero, 0):
            return None
        swallowed = {id(node)}
    else:
        return None
    chain = _chain(t)
    if chain is None:
        return None
    # t is read by this relu only (its comparison and its switch, or its maximum)
    readers = [n for n, _ in _clients(fgraph, t)]
    if len(readers) != len(swallowed) or {id(n) for n in readers} != swallowed:
        return None
    return _replacement(fgraph, node, chain, "relu")


CONV_FUSION_REWRITES = (local_conv_affine, local_conv_batch_norm, local_conv_relu)

for _rw in CONV_FUSION_REWRITES:
    register_specialize(_rw, "conv_fusion", "gemm")
del _rw
