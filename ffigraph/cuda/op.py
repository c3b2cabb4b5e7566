"""``GpuKernelOp``: the base of every generated GPU op.

A subclass writes one CUDA launcher (see ``ffigraph.cuda.prelude`` for the
contract) with ``cuda_launcher(node, symbol)``; this base gives it the rest:
the C code that calls the launcher from the graph's plain-C library, the
prototype, and ``perform`` (the node compiled alone and called), so a GPU op
runs under every linker.
"""
from __future__ import annotations

import threading

from ffigraph.abi import dtype_code
from ffigraph.cuda.prelude import launcher_prototype
from ffigraph.graph.op import Op
from ffigraph.graph.c_interface import COp


def launcher_symbol(name):
    return "ffg_cu_" + name


def tensor_device(var):
    return "FFG_DEVICE_CUDA" if getattr(var.type, "device", "cpu") == "cuda" else "FFG_DEVICE_CPU"


class GpuKernelOp(COp, Op):
    """An op computed by one nvcc-compiled launcher over the ABI's tensors."""

    def cuda_launcher(self, node, symbol):
        """The .cu text defining ``FFG_CU_LAUNCHER int32_t <symbol>(...)`` and its kernels (static)."""
        raise NotImplementedError

    # ---- the graph's C side

    def c_cuda_source_apply(self, node, name):
        return "/* ---- node %s: %s ---- */\n%s" % (name, node, self.cuda_launcher(node, launcher_symbol(name)))

    def c_support_code_apply(self, node, name):
        return launcher_prototype(launcher_symbol(name))

    def c_code(self, node, name, inputs, outputs, sub):
        lines = ["FfgTensor ins[%d];" % max(len(inputs), 1), "FfgTensor outs[%d];" % len(outputs),
                 "void *owned[%d];" % len(outputs)]
        for i, (var, v) in enumerate(zip(node.inputs, inputs)):
            code, bits = dtype_code(var.type.numpy_dtype)
            lines.append("ins[%d].data = %s.data; ins[%d].byte_offset = 0; ins[%d].ndim = %d;"
                         % (i, v, i, i, var.type.ndim))
            lines.append("ins[%d].device.device_type = %s; ins[%d].device.device_id = 0;"
                         % (i, tensor_device(var), i))
            lines.append("ins[%d].dtype.code = %d; ins[%d].dtype.bits = %d; ins[%d].dtype.lanes = 1;"
                         % (i, code, i, bits, i))
            lines.append("ins[%d].shape = %s.shape; ins[%d].strides = %s.strides;" % (i, v, i, v))
        for k, v in enumerate(outputs):
            lines.append("outs[%d].shape = %s.shape; outs[%d].strides = %s.strides;" % (k, v, k, v))
        lines.append("if (%s(ins, %d, outs, owned, %d, %s, %s, %s))\n    %s"
                     % (launcher_symbol(name), len(inputs), len(outputs), sub["allocator"],
                        sub["device_allocator"], sub["err"], sub["fail"]))
        for k, v in enumerate(outputs):
            lines.append("%s.data = (char *)outs[%d].data + outs[%d].byte_offset; %s.owned = owned[%d];"
                         % (v, k, k, v, k))
        return "\n".join(lines)

    def c_code_cache_version(self):
        return (1,)

    # ---- Python: the node compiled on its own

    def perform(self, node, inputs, output_storage):
        distinct = []   # the one-node library takes each distinct input variable once
        for k, v in enumerate(node.inputs):
            if v not in node.inputs[:k]:
                distinct.append(inputs[k])
        results = _compiled_node(node)(distinct)
        for cell, value in zip(output_storage, results):
            cell[0] = value


_compiled = {}
_compiled_lock = threading.Lock()


def _compiled_node(node):
    """The call of a one-node library for this node's op and types (built once per process)."""
    from ffigraph.linkers.c.linker import CompiledGraph, _node_graph

    key = (node.op, tuple(v.type for v in node.inputs), tuple(v.type for v in node.outputs))
    with _compiled_lock:
        found = _compiled.get(key)
    if found is None:
        small, _ = _node_graph(node)
        found = _one_at_a_time(CompiledGraph(small, annotate=False).call)
        with _compiled_lock:
            _compiled[key] = found
    return found


def _one_at_a_time(call):
    """The cached library serves every function holding this op, from any thread: its state and
    call block take one call at a time."""
    lock = threading.Lock()

    def locked(values):
        with lock:
            return call(values)

    return locked
