"""Reverse-mode differentiation: ``grad``, ``Lop``, ``Rop``, ``jacobian``, ``hessian``, the
gradient-changing identities (``zero_grad``, ``disconnected_grad``, ``grad_clip``, ...) and
``verify_grad``.

``grad`` walks the graph from the cost back to the variables asked for,
calling each op's ``L_op(inputs, outputs, output_grads)``; it lives in
``ffigraph.tensor.gradient`` (the tensor layer, so ``T.grad`` needs nothing
above it) and is re-exported here, PyTensor's path. ``verify_grad`` compiles
functions, so it sits here, above the compile layer.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Sequence, Tuple, Union

import numpy as np

from ffigraph.compile.function import function
from ffigraph.tensor.basic import tensor
from ffigraph.tensor.gradient import (DisconnectedInputError, DisconnectedType, Lop, NullType,  # noqa: F401
                                      NullTypeGradError, Rop, consider_constant, disconnected_grad,
                                      disconnected_type, grad, grad_clip, grad_not_implemented, grad_scale,
                                      grad_undefined, hessian, hessian_vector_product, jacobian, pullback,
                                      pushforward, undefined_grad, zero_grad)
from ffigraph.tensor.grad_ops import (ConsiderConstant, DisconnectedGrad, GradClip, GradScale,  # noqa: F401
                                      UndefinedGrad, ZeroGrad)
from ffigraph.tensor.math import sum as tsum

if TYPE_CHECKING:
    from ffigraph.compile.mode import Mode

__all__ = ["grad", "Lop", "Rop", "pushforward", "pullback", "hessian_vector_product", "jacobian", "hessian",
           "verify_grad", "zero_grad", "disconnected_grad",
           "undefined_grad", "consider_constant", "grad_clip", "grad_scale", "ZeroGrad", "DisconnectedGrad",
           "UndefinedGrad", "ConsiderConstant", "GradClip", "GradScale", "disconnected_type", "grad_undefined",
           "grad_not_implemented", "DisconnectedType", "NullType", "DisconnectedInputError",
           "NullTypeGradError", "GradientError"]


class GradientError(AssertionError):
    """``verify_grad`` found an analytic gradient that disagrees with finite differences."""

    def __init__(self, arg: int, err_pos: int, shape: Tuple[int, ...], val1: Any, val2: Any, abs_err: float,
                 rel_err: float, abs_tol: float, rel_tol: float) -> None:
        super().__init__(arg, err_pos, shape, val1, val2, abs_err, rel_err, abs_tol, rel_tol)
        self.arg, self.err_pos, self.shape = arg, err_pos, shape
        self.val1, self.val2 = val1, val2
        self.abs_err, self.rel_err, self.abs_tol, self.rel_tol = abs_err, rel_err, abs_tol, rel_tol

    def __str__(self) -> str:
        return ("gradient of input %d (shape %s) disagrees with finite differences at flat position "
                "%d: analytic %r, numeric %r (abs. error %.3g > %.3g and rel. error %.3g > %.3g)"
                % (self.arg, self.shape, self.err_pos, self.val1, self.val2, self.abs_err,
                   self.abs_tol, self.rel_err, self.rel_tol))



_DEFAULT_EPS: Dict[str, float] = {"float64": 1e-6, "float32": 1e-3}
_DEFAULT_TOL: Dict[str, float] = {"float64": 1e-6, "float32": 1e-2}


def verify_grad(fun: Callable[..., Any], pt: Sequence[np.ndarray], n_tests: int = 2,
                rng: Union[np.random.Generator, np.random.RandomState, None] = None, eps: Optional[float] = None,
                out_type: Optional[str] = None, abs_tol: Optional[float] = None, rel_tol: Optional[float] = None,
                mode: Union[Mode, str, None] = None, cast_to_output_type: bool = False) -> None:
    """Check ``grad`` of ``fun`` at the point ``pt`` (a list of float arrays) by finite differences.

    ``fun`` takes symbolic tensors like ``pt`` and returns one tensor. Its
    output is projected on a random tensor to make a scalar cost; the
    analytic gradient of that cost w.r.t. each input is compared with a
    central difference. Raises ``GradientError`` on the first element whose
    absolute and relative errors both exceed their tolerances.
    """
    rng = np.random.default_rng(0) if rng is None else rng
    pt = [np.array(p, copy=True) for p in pt]
    for i, p in enumerate(pt):
        if p.dtype.kind != "f":
            raise TypeError("verify_grad: point %d has dtype %s; only float inputs can be checked"
                            % (i, p.dtype))
    syms = [tensor(p.dtype, (None,) * p.ndim, name="input%d" % i) for i, p in enumerate(pt)]
    out = fun(*syms)
    if isinstance(out, (list, tuple)):
        raise TypeError("verify_grad: fun must return one variable, got %d" % len(out))
    dtype = out_type or out.type.dtype
    projection = tensor(out.type.dtype, (None,) * out.type.ndim, name="projection")
    cost = tsum(out * projection)
    # one function gives the cost and (for the first call's projection shape) the output
    cost_and_out = function(syms + [projection], [cost, out], mode=mode, on_unused_input="ignore")
    grad_fn = function(syms + [projection], grad(cost, syms, disconnected_inputs="ignore"), mode=mode,
                       on_unused_input="ignore")
    out_shape = np.shape(cost_and_out(*pt, np.ones((1,) * out.type.ndim, dtype=out.type.dtype))[1])

    def cost_fn(*args: Any) -> Any:
        return cost_and_out(*args)[0]

    eps = eps or _DEFAULT_EPS.get(str(dtype), 1e-6)
    abs_tol = _DEFAULT_TOL.get(str(dtype), 1e-6) if abs_tol is None else abs_tol
    rel_tol = _DEFAULT_TOL.get(str(dtype), 1e-6) if rel_tol is None else rel_tol
    for _ in range(n_tests):
        proj = np.asarray(rng.uniform(0.5, 1.5, size=out_shape), dtype=out.type.dtype)
        analytic = grad_fn(*pt, proj)
        for k, p in enumerate(pt):
            numeric = _central_difference(cost_fn, pt, k, proj, eps)
            _compare(k, np.asarray(analytic[k], dtype=np.float64), numeric, p.shape, abs_tol, rel_tol)


def _central_difference(cost_fn: Callable[..., Any], pt: Sequence[np.ndarray], k: int, proj: np.ndarray,
                        eps: float) -> np.ndarray:
    base = pt[k]
    flat = base.reshape(-1).copy()
    result = np.empty(flat.size, dtype=np.float64)
    for j in range(flat.size):
        values = []
        for sign in (1, -1):
            moved = flat.copy()
            moved[j] = flat[j] + sign * eps
            args = list(pt)
            args[k] = moved.reshape(base.shape)
            values.append(float(cost_fn(*args, proj)))
        # the step actually taken, after rounding to the input's dtype
        step = float(flat.dtype.type(flat[j] + eps)) - float(flat.dtype.type(flat[j] - eps))
        result[j] = (values[0] - values[1]) / step
    return result.reshape(base.shape)


def _compare(k: int, analytic: np.ndarray, numeric: np.ndarray, shape: Tuple[int, ...], abs_tol: float,
             rel_tol: float) -> None:
    if analytic.shape != numeric.shape:
        raise GradientError(k, -1, shape, analytic.shape, numeric.shape, np.inf, np.inf, abs_tol, rel_tol)
    a, n = analytic.reshape(-1), numeric.reshape(-1)
    with np.errstate(all="ignore"):
        abs_err = np.abs(a - n)
        rel_err = abs_err / np.maximum(np.abs(a) + np.abs(n), 1e-300)
    bad = ~((abs_err <= abs_tol) | (rel_err <= rel_tol))
    bad |= np.isnan(a) != np.isnan(n)
    if bad.any():
        j = int(np.argmax(bad))
        raise GradientError(k, j, shape, a[j], n[j], abs_err[j], rel_err[j], abs_tol, rel_tol)
