"""Symbolic GPU tensors: the few attributes graphs and users read (arithmetic stays on host tensors,
which the GPU rewrite moves to the device)."""
from __future__ import annotations

from ffigraph.graph.basic import Variable


class GpuArrayVariable(Variable):
    @property
    def ndim(self):
        return self.type.ndim

    @property
    def dtype(self):
        return self.type.dtype

    @property
    def broadcastable(self):
        return self.type.broadcastable
