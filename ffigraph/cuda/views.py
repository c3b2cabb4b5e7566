"""``GpuDimShuffle``: DimShuffle on a device array. A view: no kernel, no copy, only new shape and
strides (its C code is DimShuffle's, which never touches the data)."""
from __future__ import annotations

from ffigraph.cuda.type import GpuArrayType
from ffigraph.graph.basic import Apply
from ffigraph.tensor.elemwise import DimShuffle


class GpuDimShuffle(DimShuffle):
    def make_node(self, x):
        if not isinstance(getattr(x, "type", None), GpuArrayType):
            raise TypeError("%s takes a GPU tensor, got %s" % (self, getattr(x, "type", x)))
        if x.type.ndim != self.input_ndim:
            raise TypeError("%s expects a %d-d input, got %s with %d dimensions"
                            % (self, self.input_ndim, x, x.type.ndim))
        for a in self.drop:
            if x.type.shape[a] not in (1, None):
                raise ValueError("%s cannot drop axis %d of %s: its static length is %d, not 1"
                                 % (self, a, x, x.type.shape[a]))
        shape = tuple(1 if a == "x" else x.type.shape[a] for a in self.new_order)
        return Apply(self, [x], [GpuArrayType(x.type.dtype, shape)()])

    def perform(self, node, inputs, output_storage):
        from ffigraph.cuda.device_array import DeviceArray
        from ffigraph.cuda.marshal import device_view

        view = device_view(inputs[0], what=str(self))
        strides = view.element_strides()
        for a in self.drop:
            if view.shape[a] != 1:
                raise ValueError("%s: cannot drop axis %d of an input of shape %s (length is not 1)"
                                 % (self, a, view.shape))
        shape = tuple(1 if a == "x" else view.shape[a] for a in self.new_order)
        new_strides = tuple(0 if a == "x" else strides[a] for a in self.new_order)
        output_storage[0][0] = DeviceArray(view.address, shape, view.dtype, new_strides, inputs[0], view.device_id)

    def L_op(self, inputs, outputs, output_grads):
        raise NotImplementedError("GpuDimShuffle has no gradient: take gradients before the GPU rewrite "
                                  "(on host graphs, as Mode(device='cuda') does)")

    def __str__(self):
        return "Gpu" + super().__str__()
