"""Identity ops that only change how ``grad`` goes through them (PyTensor's ``ZeroGrad``,
``DisconnectedGrad``, ``GradClip``, ...); the functions users call (``zero_grad``,
``disconnected_grad``, ``grad_clip``, ...) are in ``ffigraph.tensor.gradient``.

Each is a ``ViewOp``: its output is its input's memory (no copy), computed by ``ViewOp``'s
``perform`` and by the C code registered for ``ViewOp`` (ffigraph/tensor/registrations_c.py),
which the subclasses inherit, since the registry is looked up on the op's class attribute. So
they compile under every linker and cost nothing at run time; only their ``L_op`` differs.
"""
from __future__ import annotations

from ffigraph.tensor.generic_ops import ViewOp

__all__ = ["ZeroGrad", "DisconnectedGrad", "UndefinedGrad", "ConsiderConstant", "GradClip", "GradScale",
           "zero_grad_", "disconnected_grad_", "undefined_grad_", "consider_constant_"]


class _GradViewOp(ViewOp):
    """A view whose R-operator is the identity's: the tangent goes through unchanged (the
    forward value is the input's), unless a subclass says otherwise."""

    def R_op(self, inputs, eval_points):
        return [eval_points[0]]


class ZeroGrad(_GradViewOp):
    """The gradient through it is zeros (the path stays connected: ``grad`` does not raise)."""

    __props__ = ()

    def L_op(self, inputs, outputs, output_grads):
        from ffigraph.tensor.basic import zeros_like

        return [zeros_like(output_grads[0])]

    def R_op(self, inputs, eval_points):
        from ffigraph.tensor.basic import zeros_like

        return [None if eval_points[0] is None else zeros_like(eval_points[0])]


class ConsiderConstant(ZeroGrad):
    """Theano's deprecated ``consider_constant``: zero gradients, like ``ZeroGrad`` (Theano's
    op gave ``zeros_like`` of the output gradient); a class of its own so graphs print its name."""

    __props__ = ()


class DisconnectedGrad(_GradViewOp):
    """No gradient goes through: ``grad`` sees the input as disconnected (``connection_pattern``)."""

    __props__ = ()

    def connection_pattern(self, node):
        return [[False]]

    def L_op(self, inputs, outputs, output_grads):
        from ffigraph.tensor.gradient import disconnected_type

        return [disconnected_type()]

    def R_op(self, inputs, eval_points):
        return [None]


class UndefinedGrad(_GradViewOp):
    """The gradient through it is undefined: ``grad`` raises (or returns a NullType variable)."""

    __props__ = ()

    def connection_pattern(self, node):
        return [[True]]

    def L_op(self, inputs, outputs, output_grads):
        from ffigraph.tensor.gradient import grad_undefined

        return [grad_undefined(self, 0, inputs[0])]

    def R_op(self, inputs, eval_points):
        return [None]


class GradClip(_GradViewOp):
    """The gradient through it is clipped elementwise to ``[clip_lower_bound, clip_upper_bound]``."""

    # the bounds are props (PyTensor leaves them out): two clips with other bounds must not merge
    __props__ = ("clip_lower_bound", "clip_upper_bound")

    def __init__(self, clip_lower_bound, clip_upper_bound):
        self.clip_lower_bound, self.clip_upper_bound = clip_lower_bound, clip_upper_bound
        if not clip_upper_bound >= clip_lower_bound:
            raise ValueError("grad_clip: the upper bound %r is below the lower bound %r"
                             % (clip_upper_bound, clip_lower_bound))

    def L_op(self, inputs, outputs, output_grads):
        from ffigraph.tensor.math import clip

        return [clip(output_grads[0], self.clip_lower_bound, self.clip_upper_bound)]


class GradScale(_GradViewOp):
    """The gradient through it is multiplied by ``multiplier``."""

    __props__ = ("multiplier",)

    def __init__(self, multiplier):
        self.multiplier = multiplier

    def L_op(self, inputs, outputs, output_grads):
        return [self.multiplier * output_grads[0]]


zero_grad_ = ZeroGrad()
disconnected_grad_ = DisconnectedGrad()
undefined_grad_ = UndefinedGrad()
consider_constant_ = ConsiderConstant()
