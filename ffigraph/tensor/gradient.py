"""Reverse-mode differentiation: ``grad``, ``Lop``, ``Rop``, ``jacobian``, ``hessian`` and the
gradient-changing identities (``zero_grad``, ``disconnected_grad``, ``grad_clip``, ...); their public
home is ``ffigraph.gradient``.

They live in the tensor layer, because they build tensor graphs and ``T.grad``
is part of the tensor namespace; ``verify_grad``, which compiles functions, is
in ``ffigraph.gradient`` above the compile layer.

``grad`` walks the graph from the cost back to the variables asked for,
calling each op's ``L_op(inputs, outputs, output_grads)``. An op answers,
per input, a gradient variable, ``disconnected_type()`` (the output does not
depend on that input, e.g. a shape or an index) or ``grad_undefined(...)``
(the derivative does not exist).

Integers and bools follow PyTensor's op contract: gradients are always float,
but an integer variable has one like any other (the gradient w.r.t. an int
input equals the one w.r.t. a float input of the same values, and the
gradient of a cost w.r.t. itself is 1 in floatX even for an int cost). An op
that is piecewise constant (a cast to an int, a comparison, floor, argmax,
integer arithmetic, ...) gives zero gradients through its own ``L_op``.
"""
from __future__ import annotations

import warnings
from typing import (TYPE_CHECKING, Any, Iterable, List, Literal, Mapping, Optional, Sequence, Tuple, TypeVar, Union,
                    overload)

import numpy as np

from ffigraph.graph.basic import Variable
from ffigraph.graph.type import Type
from ffigraph.graph.basic import ancestors, clone_replace, io_toposort
from ffigraph.scalar.type import ScalarType
from ffigraph.tensor.type import TensorType
from ffigraph.tensor.grad_ops import (GradClip, GradScale, consider_constant_, disconnected_grad_, undefined_grad_,
                                      zero_grad_)

if TYPE_CHECKING:
    from ffigraph.tensor.basic import TensorLike
    from ffigraph.tensor.variable import TensorVariable

    _V = TypeVar("_V", bound=Variable)

__all__ = ["grad", "Lop", "Rop", "pushforward", "pullback", "hessian_vector_product", "jacobian", "hessian",
           "zero_grad", "disconnected_grad", "undefined_grad", "consider_constant", "grad_clip", "grad_scale", "disconnected_type", "grad_undefined",
           "grad_not_implemented", "DisconnectedType", "NullType", "DisconnectedInputError", "NullTypeGradError"]


# ------------------------------------------------------------------ marker types


class DisconnectedType(Type):
    """The type of a gradient that does not exist because the output ignores the input."""

    def filter(self, data, strict=False, allow_downcast=None):
        raise TypeError("a disconnected gradient has no value")

    def __str__(self):
        return "DisconnectedType"


class NullType(Type):
    """The type of an undefined gradient; ``why_null`` says why."""

    __props__ = ("why_null",)

    def __init__(self, why_null="(no reason given)"):
        self.why_null = why_null

    def filter(self, data, strict=False, allow_downcast=None):
        raise TypeError("an undefined gradient has no value: %s" % self.why_null)

    def __str__(self):
        return "NullType"


def disconnected_type():
    return DisconnectedType()()


def grad_undefined(op, x_pos, x, comment=""):
    """The gradient of ``op`` w.r.t. its input ``x_pos`` does not exist (mathematically)."""
    return NullType("the gradient of %s with respect to its input %d (%s) is undefined. %s"
                    % (op, x_pos, x, comment))()


def grad_not_implemented(op, x_pos, x, comment=""):
    """The gradient exists but ffigraph cannot compute it yet."""
    return NullType("the gradient of %s with respect to its input %d (%s) is not implemented. %s"
                    % (op, x_pos, x, comment))()


class DisconnectedInputError(ValueError):
    """``grad`` was asked for a variable the cost does not depend on."""


class NullTypeGradError(TypeError):
    """``grad`` met an undefined gradient on its way to a requested variable."""


def _is_disconnected(v):
    return isinstance(getattr(v, "type", None), DisconnectedType)


def _is_null(v):
    return isinstance(getattr(v, "type", None), NullType)


def _carries_gradient(v):
    """A float (or complex) tensor: its gradients take its dtype. An integer or bool variable has
    float gradients (floatX where grad makes one up)."""
    dtype = getattr(v.type, "dtype", None)
    return dtype is not None and np.dtype(dtype).kind in "fc"


def _is_discrete(v):
    dtype = getattr(getattr(v, "type", None), "dtype", None)
    return dtype is not None and np.dtype(dtype).kind in "biu"


# ------------------------------------------------------------------ grad


# One gradient per variable of ``wrt`` (a list for a list): a tensor variable, unless
# ``return_disconnected`` or ``null_gradients`` ask for None or a DisconnectedType/NullType variable.
@overload
def grad(cost: Optional[Variable], wrt: Variable, consider_constant: Optional[Iterable[Variable]] = None,
         disconnected_inputs: Literal["raise", "warn", "ignore"] = "raise", add_names: bool = True,
         known_grads: Optional[Mapping[_V, Any]] = None, return_disconnected: Literal["zero"] = "zero",
         null_gradients: Literal["raise"] = "raise") -> TensorVariable: ...
@overload
def grad(cost: Optional[Variable], wrt: Sequence[Variable], consider_constant: Optional[Iterable[Variable]] = None,
         disconnected_inputs: Literal["raise", "warn", "ignore"] = "raise", add_names: bool = True,
         known_grads: Optional[Mapping[_V, Any]] = None, return_disconnected: Literal["zero"] = "zero",
         null_gradients: Literal["raise"] = "raise") -> List[TensorVariable]: ...
@overload
def grad(cost: Optional[Variable], wrt: Variable, consider_constant: Optional[Iterable[Variable]] = None,
         disconnected_inputs: Literal["raise", "warn", "ignore"] = "raise", add_names: bool = True,
         known_grads: Optional[Mapping[_V, Any]] = None,
         return_disconnected: Literal["zero", "none", "disconnected"] = "zero",
         null_gradients: Literal["raise", "return"] = "raise") -> Optional[Variable]: ...
@overload
def grad(cost: Optional[Variable], wrt: Sequence[Variable], consider_constant: Optional[Iterable[Variable]] = None,
         disconnected_inputs: Literal["raise", "warn", "ignore"] = "raise", add_names: bool = True,
         known_grads: Optional[Mapping[_V, Any]] = None,
         return_disconnected: Literal["zero", "none", "disconnected"] = "zero",
         null_gradients: Literal["raise", "return"] = "raise") -> List[Optional[Variable]]: ...


def grad(cost: Optional[Variable], wrt: Any, consider_constant: Optional[Iterable[Variable]] = None,
         disconnected_inputs: str = "raise", add_names: bool = True, known_grads: Optional[Mapping[Any, Any]] = None,
         return_disconnected: str = "zero", null_gradients: str = "raise") -> Any:
    """Symbolic gradient of the scalar ``cost`` with respect to ``wrt`` (a variable or a list).

    Parameters
    ----------
    consider_constant
        Variables whose gradient is not propagated through (treated as constants).
    disconnected_inputs
        'raise', 'warn' or 'ignore' when an element of ``wrt`` does not influence the cost.
    add_names
        Name each gradient ``(d<cost.name>/d<wrt.name>)`` when the cost and that variable have
        names and the gradient has none yet (PyTensor's).
    known_grads
        ``{variable: gradient}`` to start from, besides (or instead of, with ``cost=None``) the
        cost.
    return_disconnected
        'zero' (zeros like the variable), 'none' or 'disconnected' (a DisconnectedType
        variable) for disconnected inputs.
    null_gradients
        'raise' or 'return' an undefined (NullType) gradient.
    """
    from ffigraph.tensor.basic import as_tensor_variable, scalar_from_tensor

    _check_choice("disconnected_inputs", disconnected_inputs, ("raise", "warn", "ignore"))
    _check_choice("return_disconnected", return_disconnected, ("zero", "none", "disconnected"))
    _check_choice("null_gradients", null_gradients, ("raise", "return"))
    single = not isinstance(wrt, (list, tuple))
    wrt_list = [wrt] if single else list(wrt)
    for i, w in enumerate(wrt_list):
        if not isinstance(w, Variable):
            raise TypeError("grad: wrt[%d] must be a symbolic Variable, got %r" % (i, w))
    cost = _stabilized_cost(cost, wrt_list, known_grads, consider_constant)
    seeds = _seed_gradients(cost, known_grads, as_tensor_variable)
    blocked = set(consider_constant or ())
    grads, reached = _backpropagate(seeds, wrt_list, blocked)
    results = [_final_gradient(w, grads, reached, disconnected_inputs, return_disconnected,
                               null_gradients) for w in wrt_list]
    # a scalar variable's gradient is a scalar (the terms are 0-d tensors: scalar ops differentiate
    # through their Elemwise, ffigraph/tensor/scalar_graph.py)
    results = [scalar_from_tensor(g) if isinstance(w.type, ScalarType) and isinstance(getattr(g, "type", None),
                                                                                       TensorType) else g
               for w, g in zip(wrt_list, results)]
    if add_names and getattr(cost, "name", None):
        for w, g in zip(wrt_list, results):
            if w.name and g is not None and g.name is None and g.owner is not None:
                g.name = "(d%s/d%s)" % (cost.name, w.name)
    return results[0] if single else results


def _stabilized_cost(cost, wrt_list, known_grads, consider_constant):
    """The cost rebuilt with sigmoid and softplus, however written, in their stable forms.

    ``log(1 / (1 + exp(-z)))`` and the like differentiate to 0 * inf = NaN once the sigmoid
    rounds to 0 or 1; their stable forms (``-softplus(-z)``, ``ffigraph/tensor/stable_forms.py``)
    have finite gradients everywhere. The rebuild is a new graph (the caller's is unchanged), and
    the variables the caller named (``wrt``, the keys of ``known_grads``, ``consider_constant``)
    keep their identity: they are neither replaced nor looked through.
    """
    if not isinstance(cost, Variable):
        return cost   # _seed_gradients says what is wrong with it
    from ffigraph.tensor.stable_forms import stabilize_graph

    named = list(wrt_list) + list(known_grads or ()) + list(consider_constant or ())
    return stabilize_graph([cost], keep=[v for v in named if isinstance(v, Variable)])[0]


def _check_choice(name, value, choices):
    if value not in choices:
        raise ValueError("grad: %s must be one of %s, got %r" % (name, ", ".join(map(repr, choices)), value))


def _seed_gradients(cost, known_grads, as_tensor_variable):
    """{variable: its starting gradient}: d cost/d cost = 1 plus ``known_grads``."""
    seeds = {}
    if cost is not None:
        if not isinstance(cost, Variable):
            raise TypeError("grad: cost must be a symbolic scalar, got %r" % (cost,))
        if getattr(cost.type, "ndim", None) != 0:
            raise TypeError("grad: cost must be a scalar (0-d), but %s has %s dimensions"
                            % (cost, getattr(cost.type, "ndim", "no")))
        # d cost / d cost = 1, in the cost's dtype, or floatX for an int or bool cost (PyTensor's
        # _float_ones_like): whether the gradient goes on through the op that made an int cost is
        # that op's business (its L_op gives zeros when it is piecewise constant)
        from ffigraph.config import config

        seeds[cost] = as_tensor_variable(np.ones((), dtype=cost.type.dtype if _carries_gradient(cost)
                                                  else config.floatX))
    for var, g in (known_grads or {}).items():
        if not isinstance(var, Variable):
            raise TypeError("grad: known_grads keys must be Variables, got %r" % (var,))
        if _is_null(g):
            seeds[var] = g   # "not differentiable here": undefined for everything it depends on
            continue
        g = as_tensor_variable(g)
        if _is_discrete(g):
            raise TypeError("grad: the known gradient %s of %s has dtype %s; gradients are always float "
                            "(an int variable's too)" % (g, var, g.type.dtype))
        if g.ndim != var.type.ndim:
            raise ValueError("grad: known gradient %s of %s has %d dimensions, the variable %d"
                             % (g, var, g.ndim, var.type.ndim))
        seeds[var] = g if seeds.get(var) is None else seeds[var] + g  # the cost itself: add up
    if not seeds:
        raise TypeError("grad: give a cost or known_grads")
    return seeds


def _backpropagate(seeds, wrt_list, blocked):
    """Gradient terms per variable and the set of variables the cost reaches backwards."""
    roots = [v for v in seeds]
    # wrt variables are not stopping points: grad(cost, [h, x]) with h = f(x) gives x the
    # gradient through h too
    nodes = io_toposort(list(blocked), roots)
    depends = _forward_dependents(nodes, wrt_list, blocked)
    terms = {v: [] for v in depends}
    reached = set()
    for var, g in seeds.items():
        if var in depends:
            reached.add(var)
            if g is not None:
                terms[var].append(g)
    for node in reversed(nodes):
        if not any(o in reached for o in node.outputs):
            continue
        inputs_wanted = [i in depends and i not in blocked for i in node.inputs]
        if not any(inputs_wanted):
            continue
        connected = _connected_inputs(node, [o in reached for o in node.outputs])
        for i, var in enumerate(node.inputs):
            if inputs_wanted[i] and connected[i]:
                reached.add(var)
        output_grads = [_summed(terms.get(o, ())) for o in node.outputs]
        if all(g is None for g in output_grads):
            continue  # only zero gradients reach this node
        nulls = [g for g in output_grads if _is_null(g)]
        # an undefined output gradient makes every connected input's undefined (the op is not asked)
        input_grads = [nulls[0]] * len(node.inputs) if nulls else _call_l_op(node, output_grads)
        for i, var in enumerate(node.inputs):
            if not (inputs_wanted[i] and connected[i]):
                continue
            g = input_grads[i]
            if _is_disconnected(g):
                continue
            if _is_null(g):
                terms[var].append(g)
                continue
            terms[var].append(_fit_to(g, var, node, i))
    return terms, reached


def _forward_dependents(nodes, wrt_list, blocked):
    """Variables computed from some element of ``wrt_list`` (stopping at ``blocked``)."""
    depends = set(wrt_list)
    for node in nodes:
        if any(i in depends and i not in blocked for i in node.inputs):
            depends.update(node.outputs)
    return depends


def _connected_inputs(node, outputs_reached):
    """Per input, whether some reached output depends on it (``connection_pattern``)."""
    pattern_fn = getattr(node.op, "connection_pattern", None)
    if pattern_fn is None:
        return [True] * len(node.inputs)
    pattern = pattern_fn(node)
    return [any(p and r for p, r in zip(row, outputs_reached)) for row in pattern]


def _summed(terms):
    """The sum of the gradient terms (None when there are none); undefined terms win."""
    terms = list(terms)
    if not terms:
        return None
    for t in terms:
        if _is_null(t):
            return t
    total = terms[0]
    for t in terms[1:]:
        total = total + t
    return total


def _call_l_op(node, output_grads):
    from ffigraph.tensor.basic import zeros_like

    filled = []
    for out, g in zip(node.outputs, output_grads):
        if g is None:
            g = zeros_like(out) if _carries_gradient(out) else disconnected_type()
        elif _carries_gradient(out) and not _is_null(g) and getattr(g.type, "dtype", out.type.dtype) != out.type.dtype:
            # a float output's gradient has the output's dtype (PyTensor casts it so); an int
            # output's is left as it is (a float)
            g = _fit_to(g, out, node, None)
        filled.append(g)
    try:
        result = node.op.L_op(list(node.inputs), list(node.outputs), filled)
    except NotImplementedError as err:
        raise NotImplementedError("grad: %s has no gradient (%s); needed for the node %s"
                                  % (node.op, err, node)) from None
    result = list(result)
    if len(result) != len(node.inputs):
        raise ValueError("grad: %s.L_op returned %d gradients for %d inputs"
                         % (node.op, len(result), len(node.inputs)))
    return result


def _fit_to(g, var, node, position):
    """Check a gradient term against its variable and give it the variable's dtype (a float
    variable's), or check it is float (an integer variable's: gradients are never integers)."""
    from ffigraph.tensor.basic import as_tensor_variable, cast

    if getattr(getattr(g, "type", None), "device", "cpu") != "cpu":
        # a device gradient (through a transfer) must already match: there is no implicit cast on the GPU
        if (g.type.dtype, g.type.ndim) != (var.type.dtype, var.type.ndim):
            raise TypeError("grad: %s returned a %s gradient for its input %s of type %s"
                            % (node.op, g.type, var, var.type))
        return g
    g = as_tensor_variable(g)
    if g.ndim != var.type.ndim:
        raise ValueError("grad: %s returned a gradient with %d dimensions for its input %s, which has %d"
                         % (node.op, g.ndim, var, var.type.ndim))
    if not _carries_gradient(var):
        if _is_discrete(g):
            raise TypeError("grad: %s returned an integer-valued gradient (dtype %s) for its input %s %s; "
                            "gradients are always float (zeros in floatX where the op is piecewise constant)"
                            % (node.op, g.dtype, position, var))
        return g
    return cast(g, var.type.dtype) if g.dtype != var.type.dtype else g


def _final_gradient(w, terms, reached, disconnected_inputs, return_disconnected, null_gradients):
    from ffigraph.tensor.basic import zeros_like
    from ffigraph.config import config

    if w not in reached:
        message = ("grad: the cost does not depend on %s (it is disconnected from the graph, "
                   "or only reached through shapes or indices)" % (w,))
        if disconnected_inputs == "raise":
            raise DisconnectedInputError(message + "; pass disconnected_inputs='ignore' or 'warn' to "
                                         "get zeros instead")
        if disconnected_inputs == "warn":
            warnings.warn(message, stacklevel=3)
        if return_disconnected == "none":
            return None
        if return_disconnected == "disconnected":
            return disconnected_type()
        return _zeros_for(w, zeros_like, config)
    total = _summed(terms.get(w, ()))
    if total is None:
        return _zeros_for(w, zeros_like, config)
    if _is_null(total) and null_gradients == "raise":
        raise NullTypeGradError("grad: %s" % total.type.why_null)
    return total


def _zeros_for(w, zeros_like, config):
    # an integer variable's gradient is zero, in floatX (as Theano does)
    dtype = None if _carries_gradient(w) else config.floatX
    return zeros_like(w, dtype=dtype)


# ------------------------------------------------------------------ Lop and Rop


def _variables(name, values):
    """``values`` (a variable or a list/tuple of them) as a list of tensor variables."""
    from ffigraph.tensor.basic import as_tensor_variable

    items = list(values) if isinstance(values, (list, tuple)) else [values]
    for i, v in enumerate(items):
        if v is None:
            raise TypeError("%s[%d] is None; give a symbolic variable" % (name, i))
    return [v if isinstance(v, Variable) else as_tensor_variable(v) for v in items]


def _like(template, results):
    """``results`` in the container ``template`` came in (PyTensor's ``as_list_or_tuple``)."""
    if isinstance(template, list):
        return list(results)
    if isinstance(template, tuple):
        return tuple(results)
    return results[0]


def _known(variables, gradients):
    """{variable: gradient}, adding up the gradients of a variable named twice."""
    known = {}
    for v, g in zip(variables, gradients):
        known[v] = g if v not in known else known[v] + g
    return known


# Like ``wrt``: a variable, or a list or tuple of them (Any when return_disconnected may give None).
@overload
def Lop(f: Union[Variable, Sequence[Variable]], wrt: Variable, eval_points: Union[TensorLike, Sequence[TensorLike]],
        consider_constant: Optional[Iterable[Variable]] = None,
        disconnected_inputs: Literal["raise", "warn", "ignore"] = "raise",
        return_disconnected: Literal["zero"] = "zero") -> TensorVariable: ...
@overload
def Lop(  # type: ignore[overload-overlap]  # (a tuple is a Sequence: the first that matches applies)
        f: Union[Variable, Sequence[Variable]], wrt: Tuple[Variable, ...],
        eval_points: Union[TensorLike, Sequence[TensorLike]], consider_constant: Optional[Iterable[Variable]] = None,
        disconnected_inputs: Literal["raise", "warn", "ignore"] = "raise",
        return_disconnected: Literal["zero"] = "zero") -> Tuple[TensorVariable, ...]: ...
@overload
def Lop(f: Union[Variable, Sequence[Variable]], wrt: Sequence[Variable],
        eval_points: Union[TensorLike, Sequence[TensorLike]], consider_constant: Optional[Iterable[Variable]] = None,
        disconnected_inputs: Literal["raise", "warn", "ignore"] = "raise",
        return_disconnected: Literal["zero"] = "zero") -> List[TensorVariable]: ...
@overload
def Lop(f: Union[Variable, Sequence[Variable]], wrt: Union[Variable, Sequence[Variable]],
        eval_points: Union[TensorLike, Sequence[TensorLike]], consider_constant: Optional[Iterable[Variable]] = None,
        disconnected_inputs: Literal["raise", "warn", "ignore"] = "raise",
        return_disconnected: Literal["zero", "none", "disconnected"] = "zero") -> Any: ...


def Lop(f: Union[Variable, Sequence[Variable]], wrt: Any, eval_points: Union[TensorLike, Sequence[TensorLike]],
        consider_constant: Optional[Iterable[Variable]] = None, disconnected_inputs: Any = "raise",
        return_disconnected: Any = "zero") -> Any:
    """The L-operator: ``eval_points`` (one per element of ``f``) times the Jacobian of ``f``
    w.r.t. ``wrt``, i.e. ``L[j] = sum_i eval_points[i] . d f[i] / d wrt[j]`` (a vector-Jacobian
    product), computed by ``grad`` started from the given output gradients.

    ``consider_constant``, ``disconnected_inputs`` and ``return_disconnected`` (a keyword of
    recent PyTensor versions) are ``grad``'s. The result is a variable, or a list/tuple like ``wrt``.
    """
    f_list, points = _variables("f", f), _variables("eval_points", eval_points)
    if len(f_list) != len(points):
        raise ValueError("Lop: f has %d variables but eval_points %d" % (len(f_list), len(points)))
    result = grad(None, _variables("wrt", wrt), consider_constant=consider_constant,
                  disconnected_inputs=disconnected_inputs, known_grads=_known(f_list, points),
                  return_disconnected=return_disconnected)
    return _like(wrt, result)


# Like ``f``: a variable, or a list or tuple of them (Any when return_disconnected may give None).
@overload
def Rop(f: Variable, wrt: Union[Variable, Sequence[Variable]], eval_points: Union[TensorLike, Sequence[TensorLike]],
        disconnected_outputs: Literal["raise", "warn", "ignore"] = "raise",
        return_disconnected: Literal["zero"] = "zero", use_op_rop_implementation: bool = False) -> TensorVariable: ...
@overload
def Rop(  # type: ignore[overload-overlap]  # (a tuple is a Sequence: the first that matches applies)
        f: Tuple[Variable, ...], wrt: Union[Variable, Sequence[Variable]],
        eval_points: Union[TensorLike, Sequence[TensorLike]],
        disconnected_outputs: Literal["raise", "warn", "ignore"] = "raise",
        return_disconnected: Literal["zero"] = "zero",
        use_op_rop_implementation: bool = False) -> Tuple[TensorVariable, ...]: ...
@overload
def Rop(f: Sequence[Variable], wrt: Union[Variable, Sequence[Variable]],
        eval_points: Union[TensorLike, Sequence[TensorLike]],
        disconnected_outputs: Literal["raise", "warn", "ignore"] = "raise",
        return_disconnected: Literal["zero"] = "zero",
        use_op_rop_implementation: bool = False) -> List[TensorVariable]: ...
@overload
def Rop(f: Union[Variable, Sequence[Variable]], wrt: Union[Variable, Sequence[Variable]],
        eval_points: Union[TensorLike, Sequence[TensorLike]],
        disconnected_outputs: Literal["raise", "warn", "ignore"] = "raise",
        return_disconnected: Literal["zero", "none", "disconnected"] = "zero",
        use_op_rop_implementation: bool = False) -> Any: ...


def Rop(f: Any, wrt: Union[Variable, Sequence[Variable]], eval_points: Union[TensorLike, Sequence[TensorLike]],
        disconnected_outputs: str = "raise", return_disconnected: str = "zero",
        use_op_rop_implementation: bool = False) -> Any:
    """The R-operator: the Jacobian of ``f`` w.r.t. ``wrt`` times ``eval_points`` (one per element
    of ``wrt``, of its shape), i.e. ``R[i] = sum_j d f[i] / d wrt[j] . eval_points[j]`` (a
    Jacobian-vector product, forward mode).

    By default it is computed as PyTensor does, with two L-operators: ``g = Lop(f, wrt, u)`` is
    linear in placeholder output gradients ``u``, and ``Lop(g, u, eval_points)`` is the R-operator;
    so every op with a gradient supports it. ``use_op_rop_implementation=True`` walks the graph
    forward calling each op's ``R_op`` instead; a node whose op has none falls back to the two
    L-operators for that node alone.

    Parameters
    ----------
    disconnected_outputs
        'raise' (``DisconnectedInputError``), 'warn' or 'ignore' when an element of ``f`` does
        not depend on ``wrt``.
    return_disconnected
        What such an element gets: 'zero' (zeros like it), 'none' or 'disconnected' (a
        DisconnectedType variable).

    Returns
    -------
    A variable, or a list/tuple like ``f``.
    """
    _check_choice("disconnected_outputs", disconnected_outputs, ("raise", "warn", "ignore"))
    _check_choice("return_disconnected", return_disconnected, ("zero", "none", "disconnected"))
    f_list, wrt_list = _variables("f", f), _variables("wrt", wrt)
    points = _variables("eval_points", eval_points)
    if len(wrt_list) != len(points):
        raise ValueError("Rop: wrt has %d variables but eval_points %d" % (len(wrt_list), len(points)))
    for i, (w, p) in enumerate(zip(wrt_list, points)):
        if getattr(w.type, "ndim", None) != getattr(p.type, "ndim", None):
            raise ValueError("Rop: wrt[%d] (%s) has %s dimensions but its eval point %s has %s"
                             % (i, w, getattr(w.type, "ndim", "no"), p, getattr(p.type, "ndim", "no")))
    if use_op_rop_implementation:
        tangents = _rop_by_r_op(f_list, wrt_list, points)
    else:
        tangents = _rop_by_double_lop(f_list, wrt_list, points)
    results = [_rop_result(out, t, disconnected_outputs, return_disconnected) for out, t in zip(f_list, tangents)]
    return _like(f, results)


def _rop_result(out, tangent, disconnected_outputs, return_disconnected):
    from ffigraph.tensor.basic import zeros_like

    if tangent is not None:
        return tangent
    message = ("Rop: the output %s does not depend on any variable of wrt (or only through shapes, "
               "indices or non-differentiable ops)" % (out,))
    if disconnected_outputs == "raise":
        raise DisconnectedInputError(message + "; pass disconnected_outputs='ignore' or 'warn' to get "
                                     "zeros instead")
    if disconnected_outputs == "warn":
        warnings.warn(message, stacklevel=3)
    if return_disconnected == "none":
        return None
    if return_disconnected == "disconnected":
        return disconnected_type()
    return zeros_like(out)


def _rop_by_double_lop(f_list, wrt_list, points):
    """Per element of ``f_list``, J . points (None where it does not depend on ``wrt_list``)."""
    from ffigraph.config import config
    from ffigraph.tensor.basic import tensor, zeros_like

    # placeholder output gradients; gradients are float even for an int output
    u = [tensor(out.type.dtype if _carries_gradient(out) else config.floatX, out.type.shape,
                name="rop_cotangent") for out in f_list]
    firsts = grad(None, wrt_list, known_grads=_known(f_list, u), disconnected_inputs="ignore",
                  return_disconnected="disconnected")
    pairs = [(g, p) for g, p in zip(firsts, points) if not _is_disconnected(g)]
    if not pairs:
        return [None] * len(f_list)
    seconds = grad(None, u, known_grads=_known(*zip(*pairs)), disconnected_inputs="ignore",
                   return_disconnected="disconnected")
    tangents = [None if _is_disconnected(t) else t for t in seconds]
    # the result is linear in ``u``, so its values never depend on it, but its graph still may (a
    # ``zeros_like(u)`` made by some L_op reads u's shape): give u the shape it stands for
    kept = [t for t in tangents if t is not None]
    used = set(ancestors(kept)) & set(u)
    if used:
        replaced = iter(clone_replace(kept, {v: zeros_like(out, dtype=v.type.dtype)
                                             for v, out in zip(u, f_list) if v in used}))
        tangents = [None if t is None else next(replaced) for t in tangents]
    return tangents


def _rop_by_r_op(f_list, wrt_list, points):
    """The R-operator walking the graph forward with each op's ``R_op`` (PyTensor's legacy way)."""
    from ffigraph.tensor.basic import zeros_like

    tangent = {}
    for w, p in zip(wrt_list, points):
        tangent[w] = p if tangent.get(w) is None else tangent[w] + p
    for node in io_toposort(list(wrt_list), f_list):
        if not any(i in tangent for i in node.inputs):
            continue  # independent of wrt: its outputs' tangents are zero
        # inputs that do not depend on wrt get zero tangents (None for non-float ones, as in PyTensor)
        node_points = [tangent[i] if i in tangent else (zeros_like(i) if _carries_gradient(i) else None)
                       for i in node.inputs]
        try:
            out_points = list(node.op.R_op(list(node.inputs), node_points))
        except NotImplementedError:
            differentiable = [k for k, i in enumerate(node.inputs) if i in tangent]
            out_points = _rop_by_double_lop(list(node.outputs), [node.inputs[k] for k in differentiable],
                                            [node_points[k] for k in differentiable])
        if len(out_points) != len(node.outputs):
            raise ValueError("Rop: %s.R_op returned %d tangents for %d outputs"
                             % (node.op, len(out_points), len(node.outputs)))
        for out, t in zip(node.outputs, out_points):
            if t is not None and not _is_disconnected(t):
                tangent[out] = t
    return [tangent.get(out) for out in f_list]


# ------------------------------------------------------------------ gradient-changing identities


def _tensor(x):
    from ffigraph.tensor.basic import as_tensor_variable

    return x if isinstance(x, Variable) else as_tensor_variable(x)


def zero_grad(x: TensorLike) -> TensorVariable:
    """``x`` (a view, no copy) whose gradient is zeros: ``grad`` still sees the path (no
    disconnected-input error), but nothing flows back through it."""
    return zero_grad_(_tensor(x))


def disconnected_grad(x: TensorLike) -> TensorVariable:
    """``x`` (a view, no copy) that ``grad`` treats as disconnected: no gradient flows back, and a
    variable reached only through it is a disconnected input (``disconnected_inputs`` says what
    happens). Cheaper than ``zero_grad``: the graph behind it is not differentiated at all."""
    return disconnected_grad_(_tensor(x))


def undefined_grad(x: TensorLike) -> TensorVariable:
    """``x`` (a view, no copy) whose gradient is undefined: ``grad`` through it raises
    ``NullTypeGradError`` (or returns a NullType variable with ``null_gradients='return'``)."""
    return undefined_grad_(_tensor(x))


def consider_constant(x: TensorLike) -> TensorVariable:
    """``x`` (a view, no copy) considered a constant by ``grad``: its gradient is zeros (Theano's
    deprecated helper; ``zero_grad`` and ``disconnected_grad`` say which behaviour is meant)."""
    return consider_constant_(_tensor(x))


def grad_clip(x: TensorLike, lower_bound: float, upper_bound: float) -> TensorVariable:
    """``x`` (a view, no copy) whose gradient is clipped elementwise to ``[lower_bound, upper_bound]``."""
    return GradClip(lower_bound, upper_bound)(_tensor(x))


def grad_scale(x: TensorLike, multiplier: float) -> TensorVariable:
    """``x`` (a view, no copy) whose gradient is multiplied by ``multiplier`` (-1 reverses it)."""
    return GradScale(multiplier)(_tensor(x))


# ------------------------------------------------------------------ jacobian and hessian


# ``scan`` lives above the tensor layer (a loop body is compiled with the function's mode), so the
# package root registers it here: ``jacobian`` loops over the rows of an expression whose length is
# only known at run time (the Theano tutorial's way), instead of one gradient per row.
_scan = None


def register_scan(scan):
    """Give ``jacobian`` and ``hessian`` the ``scan`` builder (``ffigraph.scan``) for non-static lengths."""
    global _scan
    _scan = scan


def _rows_by_scan(expression, wrt_list, consider_constant, disconnected_inputs):
    """[d expression[i] / d w for i in range(len(expression))] per w, as one scan over the rows."""
    from ffigraph.tensor.basic import arange
    from ffigraph.tensor.shapes import reshape

    if _scan is None:
        raise ValueError("jacobian: the length of %s is not known statically and no scan is registered "
                         "(import ffigraph); give the variable a static shape, e.g. "
                         "T.tensor('float64', shape=(3,))" % (expression,))
    n = len(wrt_list)

    def row(i, y, *ws):
        return grad(y[i], list(ws), consider_constant=consider_constant,
                    disconnected_inputs=disconnected_inputs)

    rows, _ = _scan(row, sequences=arange(expression.shape[0]), non_sequences=[expression] + wrt_list,
                    return_list=True)
    # a loop of no steps does not know the rows' lengths: give the result the shape it has
    return [reshape(r, [expression.shape[0]] + [w.shape[a] for a in range(w.type.ndim)])
            for r, w in zip(rows[:n], wrt_list)]


@overload
def jacobian(expression: TensorLike, wrt: Variable, consider_constant: Optional[Iterable[Variable]] = None,
             disconnected_inputs: Literal["raise", "warn", "ignore"] = "raise",
             vectorize: bool = False) -> TensorVariable: ...
@overload
def jacobian(expression: TensorLike, wrt: Sequence[Variable], consider_constant: Optional[Iterable[Variable]] = None,
             disconnected_inputs: Literal["raise", "warn", "ignore"] = "raise",
             vectorize: bool = False) -> List[TensorVariable]: ...


def jacobian(expression: TensorLike, wrt: Any, consider_constant: Optional[Iterable[Variable]] = None,
             disconnected_inputs: Any = "raise", vectorize: bool = False) -> Any:
    """d expression[i] / d wrt for a 0-d or 1-d ``expression``: one gradient per element.

    Returns a variable of shape ``expression.shape + wrt.shape`` (a list of
    them when ``wrt`` is a list). With a static length, one gradient graph per
    element; otherwise a ``scan`` over the elements.

    vectorize: PyTensor's switch between a loop over the rows (False) and one batched graph
        (True, built by its ``vectorize_graph``). Here both compute the same thing the way above
        (the value is the same; only PyTensor's graph and speed differ): jacobian does not use
        ``ffigraph.graph.vectorize_graph`` yet.
    """
    from ffigraph.tensor.basic import as_tensor_variable, stack

    if not isinstance(vectorize, bool):
        raise TypeError("jacobian: vectorize must be True or False, got %r" % (vectorize,))
    expression = as_tensor_variable(expression)
    single = not isinstance(wrt, (list, tuple))
    wrt_list = [wrt] if single else list(wrt)
    if expression.ndim == 0:
        result = grad(expression, wrt_list, consider_constant=consider_constant,
                      disconnected_inputs=disconnected_inputs)
        return result[0] if single else result
    if expression.ndim != 1:
        raise TypeError("jacobian: the expression must be 0-d or 1-d, %s has %d dimensions"
                        % (expression, expression.ndim))
    n = expression.type.shape[0]
    if n is None:
        result = _rows_by_scan(expression, wrt_list, consider_constant, disconnected_inputs)
        return result[0] if single else result
    rows = [grad(expression[i], wrt_list, consider_constant=consider_constant,
                 disconnected_inputs=disconnected_inputs) for i in range(n)]
    result = []
    for k, w in enumerate(wrt_list):
        if n == 0:
            from ffigraph.tensor.basic import zeros

            result.append(zeros([0] + [w.shape[a] for a in range(w.type.ndim)], dtype=w.type.dtype))
        else:
            result.append(stack([row[k] for row in rows]))
    return result[0] if single else result


@overload
def hessian(cost: Variable, wrt: Variable, consider_constant: Optional[Iterable[Variable]] = None,
            disconnected_inputs: Literal["raise", "warn", "ignore"] = "raise") -> TensorVariable: ...
@overload
def hessian(cost: Variable, wrt: Sequence[Variable], consider_constant: Optional[Iterable[Variable]] = None,
            disconnected_inputs: Literal["raise", "warn", "ignore"] = "raise") -> List[TensorVariable]: ...


def hessian(cost: Variable, wrt: Any, consider_constant: Optional[Iterable[Variable]] = None,
            disconnected_inputs: Any = "raise") -> Any:
    """The matrix of second derivatives of the scalar ``cost`` w.r.t. each 1-d ``wrt``."""
    single = not isinstance(wrt, (list, tuple))
    wrt_list = [wrt] if single else list(wrt)
    result = []
    for w in wrt_list:
        if w.type.ndim != 1:
            raise TypeError("hessian: %s must be a vector (1-d), it has %d dimensions" % (w, w.type.ndim))
        g = grad(cost, w, consider_constant=consider_constant, disconnected_inputs=disconnected_inputs)
        # the gradient may no longer depend on w (a cost linear in w): zeros, not an error (PyTensor)
        result.append(jacobian(g, w, consider_constant=consider_constant, disconnected_inputs="ignore"))
    return result[0] if single else result


def hessian_vector_product(cost: Variable, wrt: Any, p: Any, **grad_kwargs: Any) -> Any:
    """The Hessian of the scalar ``cost`` w.r.t. ``wrt`` (a variable or a list of them) times ``p``
    (one per ``wrt``, of its shape), as PyTensor's: two reverse passes, ``d/dwrt sum_k (g_k . p_k)``
    with ``g = grad(cost, wrt)``, so no Hessian is ever formed. ``grad_kwargs`` go to both ``grad``s.
    A variable for a variable ``wrt``, a list for a list."""
    wrt_list = _variables("wrt", wrt)
    p_list = _variables("p", p)
    if len(wrt_list) != len(p_list):
        raise ValueError("hessian_vector_product: wrt has %d variables but p %d" % (len(wrt_list), len(p_list)))
    gradients = grad(cost, wrt_list, **grad_kwargs)
    directional = _summed([(g * v).sum() for g, v in zip(gradients, p_list)])
    result = grad(directional, wrt_list, **grad_kwargs)
    return result[0] if isinstance(wrt, Variable) else result


def pushforward(f: Any, wrt: Any, tangents: Any, disconnected_outputs: Any = "raise", return_disconnected: Any = "zero",
                use_op_pushforward: bool = False) -> Any:
    """PyTensor 3's name and signature for ``Rop`` (the Jacobian of ``f`` times ``tangents``);
    ``use_op_pushforward`` is ``Rop``'s ``use_op_rop_implementation``."""
    return Rop(f, wrt, tangents, disconnected_outputs=disconnected_outputs, return_disconnected=return_disconnected,
               use_op_rop_implementation=use_op_pushforward)


def pullback(f: Any, wrt: Any, cotangents: Any, consider_constant: Optional[Iterable[Variable]] = None,
             disconnected_inputs: Any = "raise", return_disconnected: Any = "zero") -> Any:
    """PyTensor 3's name and signature for ``Lop`` (``cotangents`` times the Jacobian of ``f``)."""
    return Lop(f, wrt, cotangents, consider_constant=consider_constant, disconnected_inputs=disconnected_inputs,
               return_disconnected=return_disconnected)


# ------------------------------------------------------------------ verify_grad
