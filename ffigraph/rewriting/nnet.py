"""Stabilizing rewrites of the softmax family (``ffigraph/tensor/special.py``, ``nnet.py``)::

  log(softmax(x, axis))                                  -> log_softmax(x, axis)
  crossentropy_categorical_1hot(softmax(x, -1), labels)  -> crossentropy_softmax_1hot_nll(x, labels)
                                                            (x a matrix, the softmax along its rows)

Both are in the ``stabilize`` group (tagged fast_run: the default mode, FAST_RUN, and
``Mode(optimizer='stabilize')``): where the softmax of a logit underflows to 0, ``log`` of it is
-inf, while ``log_softmax`` and the fused cross-entropy give the finite exact value. The
rewritten values can differ from the original ones in the last bits (they are closer to the exact
value). ``grad`` of the written forms is stable on its own (see ``Softmax.L_op``); these rewrites
make the forward values stable too, and compute the loss in one pass over the logits::

  log_softmax(x, -1)[arange(len(y)), y]                 -> -crossentropy_softmax_1hot_nll(x, y)
                                                            (the NLL idiom through advanced indexing;
                                                            log(softmax) became log_softmax first)

The last one fires only when nothing else reads the log-softmax matrix: in a training graph the
gradient reads it too, and the fused op would then add a pass instead of saving one. ``arange``
may count the labels or the logits' rows (``y.shape[0]`` or ``x.shape[0]``); when the two differ
the fused op raises ValueError, as PyTensor's does, where the indexing would have taken the first
rows.
"""
from __future__ import annotations

from ffigraph.graph.rewriting import node_rewriter
from ffigraph.rewriting.canonicalize import elemwise_name, same_type
from ffigraph.rewriting.groups import register_stabilize
from ffigraph.tensor.advanced_subtensor import AdvancedSubtensor
from ffigraph.tensor.basic import ARange
from ffigraph.tensor.elemwise import Elemwise
from ffigraph.tensor.generic_ops import Shape, Shape_i
from ffigraph.tensor.subtensor import Subtensor
from ffigraph.tensor.nnet import CrossentropyCategorical1Hot, crossentropy_softmax_1hot_nll
from ffigraph.tensor.special import LogSoftmax, Softmax


def _softmax_node(var):
    node = var.owner
    return node if node is not None and isinstance(node.op, Softmax) else None


@node_rewriter([Elemwise], name="local_log_softmax")
def local_log_softmax(fgraph, node):
    """log(softmax(x, axis)) -> log_softmax(x, axis)."""
    if elemwise_name(node) != "log":
        return None
    sm = _softmax_node(node.inputs[0])
    if sm is None:
        return None
    out = node.outputs[0]
    new = LogSoftmax(sm.op.axis)(sm.inputs[0])
    return [new] if same_type(out, new) else None


@node_rewriter([CrossentropyCategorical1Hot], name="local_crossentropy_softmax_1hot")
def local_crossentropy_softmax_1hot(fgraph, node):
    """crossentropy_categorical_1hot(softmax(x) along the rows of a matrix, labels) -> the fused op."""
    p, y = node.inputs
    sm = _softmax_node(p)
    if sm is None or sm.op.axis not in (1, -1) or sm.inputs[0].ndim != 2:
        return None
    out = node.outputs[0]
    new = crossentropy_softmax_1hot_nll(sm.inputs[0], y)
    return [new] if same_type(out, new) else None


def _constant_value(var):
    data = getattr(var, "data", None)
    if data is None or getattr(data, "size", 1) != 1:
        return None
    return data.item() if hasattr(data, "item") else data


def _length_of(var):
    """The variable whose first dimension ``var`` is (``v.shape[0]`` or ``Shape_i{0}(v)``), else None."""
    node = var.owner
    if node is None:
        return None
    if isinstance(node.op, Shape_i) and getattr(node.op, "i", None) == 0:
        return node.inputs[0]
    if isinstance(node.op, Subtensor) and node.op.idx_list == (("int", 0),):
        shape = node.inputs[0].owner
        if shape is not None and isinstance(shape.op, Shape):
            return shape.inputs[0]
    return None


@node_rewriter([AdvancedSubtensor], name="local_advanced_indexing_crossentropy")
def local_advanced_indexing_crossentropy(fgraph, node):
    """log_softmax(x along the rows)[arange(len(y)), y] -> -crossentropy_softmax_1hot_nll(x, y)."""
    if node.op.idx_list != (("array",), ("array",)):
        return None
    lsm_out, rows, labels = node.inputs
    lsm = lsm_out.owner
    if lsm is None or not isinstance(lsm.op, LogSoftmax) or lsm.op.axis not in (1, -1):
        return None
    logits = lsm.inputs[0]
    if logits.ndim != 2 or labels.ndim != 1 or not labels.dtype.startswith(("int", "uint")):
        return None
    if len(fgraph.clients.get(lsm_out, ())) != 1:
        return None     # the matrix is needed anyway (by the gradient): fusing would add a pass
    arange = rows.owner
    if arange is None or not isinstance(arange.op, ARange):
        return None
    start, stop, step = arange.inputs
    if _constant_value(start) != 0 or _constant_value(step) != 1:
        return None
    if _length_of(stop) not in (labels, logits, lsm_out):
        return None
    out = node.outputs[0]
    new = -crossentropy_softmax_1hot_nll(logits, labels)
    return [new] if same_type(out, new) else None


NNET_REWRITES = (local_log_softmax, local_crossentropy_softmax_1hot, local_advanced_indexing_crossentropy)

for _rw in NNET_REWRITES:
    register_stabilize(_rw)
del _rw
