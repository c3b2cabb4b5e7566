"""The GPU rewrite: move supported nodes to the device, with transfers only at the edges.

Enabled by ``Mode(device='cuda')`` or ``config.device = 'cuda'`` (the mode then
includes the ``gpu`` tag). It runs after fusion, so a fused elementwise loop
becomes one kernel, and a fused reduction becomes a kernel for its elementwise
part and one for the reduction. A node moves when the GPU has code for it
(elementwise ops and fused loops, reductions, dot, and a CNN's convolutions,
pooling, batch normalization and neighbours); every other node stays on the CPU. Each
moved node reads ``gpu_from_host(x)``, or the device value directly when ``x``
came back from the GPU, so chains of moved nodes keep their values on the
device and a transfer appears only where the graph crosses between CPU and GPU.
"""
from __future__ import annotations

from ffigraph.cuda.transfer import HostFromGpu, gpu_from_host, host_from_gpu
from ffigraph.graph.rewriting import replace_all_validate
from ffigraph.rewriting.merge import merge_rewrite
from ffigraph.tensor.type import TensorType


def _on_device(var):
    """The device value for host variable ``var`` (reusing one that a transfer brought back)."""
    if var.owner is not None and isinstance(var.owner.op, HostFromGpu):
        return var.owner.inputs[0]
    return gpu_from_host(var)


def _gpu_version(node):
    """The device outputs computing ``node``'s outputs, or None when the node stays on the CPU."""
    from ffigraph.cuda import bn, conv, dot, elemwise, neighbours, pool, reduce
    from ffigraph.tensor.elemwise import Elemwise
    from ffigraph.tensor.fused import FusedElemwise, FusedReduce
    from ffigraph.tensor.math import Dot, Reduce

    if not all(isinstance(v.type, TensorType) for v in node.inputs + node.outputs):
        return None
    op = node.op
    ins = node.inputs
    if isinstance(op, (Elemwise, FusedElemwise)) and elemwise.gpu_elemwise_supported(node):
        out = elemwise.GpuElemwise(op.scalar_op)(*[_on_device(v) for v in ins])
        return out if isinstance(out, (list, tuple)) else [out]
    if isinstance(op, FusedReduce) and op.kind in reduce.KINDS \
            and elemwise.has_gpu_code(op.composite, [v.type.dtype for v in ins]):
        mapped = elemwise.GpuElemwise(op.composite)(*[_on_device(v) for v in ins])
        return [reduce.GpuReduce(op.kind, op.axis, None, op.acc_dtype)(mapped)]
    if isinstance(op, Reduce) and reduce.gpu_reduce_supported(node):
        return [reduce.GpuReduce.from_cpu(op)(_on_device(ins[0]))]
    if isinstance(op, Dot) and dot.gpu_dot_supported(node):
        return [dot.GpuDot()(_on_device(ins[0]), _on_device(ins[1]))]
    for cnn in (conv, pool, bn, neighbours):   # each says which of its CPU ops it takes (None: not this one)
        outs = cnn.gpu_version(node, _on_device)
        if outs is not None:
            return outs
    return None


def gpu_rewrite(fgraph):
    """Move every supported node to the GPU (in execution order, so producers move first), then move
    views that only feed the GPU there too."""
    for node in fgraph.toposort():
        if node not in fgraph.apply_nodes:
            continue
        device_outputs = _gpu_version(node)
        if device_outputs is None:
            continue
        pairs = [(old, host_from_gpu(new)) for old, new in zip(node.outputs, device_outputs)]
        replace_all_validate(fgraph, pairs, reason="gpu")
    _shuffle_on_device(fgraph)
    merge_rewrite(fgraph)   # one transfer per host value, however many GPU nodes read it
    return fgraph


def _shuffle_on_device(fgraph):
    """gpu_from_host(DimShuffle(v)) -> GpuDimShuffle(v on the device): the same bytes cross, and a
    transpose or broadcast between two GPU nodes no longer makes a round trip through the host."""
    from ffigraph.cuda.transfer import GpuFromHost
    from ffigraph.cuda.views import GpuDimShuffle
    from ffigraph.tensor.elemwise import DimShuffle

    changed = True
    while changed:
        changed = False
        for node in fgraph.toposort():
            if node not in fgraph.apply_nodes or not isinstance(node.op, GpuFromHost):
                continue
            inner = node.inputs[0].owner
            if inner is None or type(inner.op) is not DimShuffle:
                continue
            new = GpuDimShuffle(inner.op.input_ndim, inner.op.new_order)(_on_device(inner.inputs[0]))
            changed |= replace_all_validate(fgraph, [(node.outputs[0], new)], reason="gpu")
