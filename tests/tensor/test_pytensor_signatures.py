"""PyTensor's signatures for issue 27's names: the parameter names and order that PyTensor 3.0.7
gives them (read from its functions with ``inspect.signature``), so that code calling them by
keyword runs here too; and the keywords those signatures add (``name=``/``return_list=`` on every
elementwise function, ``stable=``, ``return_matrix=``, ``n_splits`` left out, ``add_names``,
``no_zeros_in_input``, ``optimize``), checked on values in one compiled function."""
import inspect

import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph import Mode, function

# name -> PyTensor 3.0.7's leading parameters, in order (ffigraph may add optional ones after them)
PYTENSOR_PARAMETERS = {
    "prod": ["input", "axis", "dtype", "keepdims", "acc_dtype", "no_zeros_in_input"],
    "sum": ["input", "axis", "dtype", "keepdims", "acc_dtype"],
    "mean": ["input", "axis", "dtype", "keepdims", "acc_dtype"],
    "repeat": ["a", "repeats", "axis"],
    "tile": ["A", "reps"],
    "swapaxes": ["y", "axis1", "axis2"],
    "flip": ["arr", "axis"],
    "split": ["x", "splits_size", "n_splits", "axis"],
    "einsum": ["subscripts", "operands", "optimize"],
    "conj": ["x"],
    "sort": ["a", "axis", "kind", "order", "stable"],
    "argsort": ["a", "axis", "kind", "order", "stable"],
    "nonzero": ["a", "return_matrix"],
    "linspace": ["start", "stop", "num", "endpoint", "retstep", "dtype", "axis", "end", "steps"],
    "geomspace": ["start", "stop", "num", "base", "endpoint", "dtype", "axis", "end", "steps"],
    "moveaxis": ["a", "source", "destination"],
    "roll": ["x", "shift", "axis"],
    "broadcast_to": ["x", "shape"],
    "diff": ["x", "n", "axis"],
    "searchsorted": ["x", "v", "side", "sorter"],
    "tensordot": ["a", "b", "axes"],
    "matmul": ["x1", "x2", "dtype"],
    "eye": ["n", "m", "k", "dtype"],
    "tri": ["N", "M", "k", "dtype"],
    "full": ["shape", "fill_value", "dtype"],
    "fill_diagonal": ["a", "val"],
}
ELEMWISE_NAMES = ["arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "arcsinh", "arccosh", "arctanh",
                  "reciprocal", "trunc", "exp2", "expm1", "log1p", "deg2rad", "rad2deg", "gammaln", "psi",
                  "digamma", "erfc", "erfinv", "round_half_to_even", "round_half_away_from_zero", "exp", "log"]
GRAD_PARAMETERS = ["cost", "wrt", "consider_constant", "disconnected_inputs", "add_names", "known_grads",
                   "return_disconnected", "null_gradients"]


def _leading(fn, count):
    return [p.name for p in inspect.signature(fn).parameters.values()][:count]


def test_parameter_names_and_order_are_pytensors():
    wrong = {name: _leading(getattr(T, name), len(want))
             for name, want in PYTENSOR_PARAMETERS.items() if _leading(getattr(T, name), len(want)) != want}
    assert not wrong, "signatures differing from PyTensor's: %s" % wrong
    assert _leading(ffigraph.grad, len(GRAD_PARAMETERS)) == GRAD_PARAMETERS
    assert _leading(T.dmatrix().dot, 1) == ["right"]
    for name in ELEMWISE_NAMES:
        params = inspect.signature(getattr(T, name)).parameters
        assert "name" in params and "return_list" in params, name


def test_op_call_name_and_return_list():
    x = T.dvector("x")
    assert T.exp(x, name="ex").name == "ex"
    assert T.arctan2(x, x, name="a2").name == "a2"
    listed = T.sinh(x, return_list=True)
    assert isinstance(listed, list) and len(listed) == 1 and listed[0].ndim == 1
    assert T.add(x, x, x, name="s3").name == "s3"
    assert T.mul(x, x, return_list=True)[0].ndim == 1
    outs = T.max_and_argmax(T.dmatrix(), axis=1)
    assert len(outs) == 2
    # a multi-output op names its outputs from a list, and says so for a lone string
    from ffigraph.tensor.layout import Split

    parts = Split(2, 0)(x, T.constant(np.array([1, 2])), name=["left", "right"])
    assert [p.name for p in parts] == ["left", "right"]
    with pytest.raises(ValueError, match="2 outputs"):
        Split(2, 0)(x, T.constant(np.array([1, 2])), name="one")
    with pytest.raises(ValueError, match="2 outputs but 3 names"):
        Split(2, 0)(x, T.constant(np.array([1, 2])), name=["a", "b", "c"])


def test_grad_add_names():
    w = T.dvector("w")
    cost = (w ** 2).sum()
    cost.name = "cost"
    assert ffigraph.grad(cost, w).name == "(dcost/dw)"
    assert ffigraph.grad(cost, w, add_names=False).name is None
    unnamed = (T.dvector("v") ** 2).sum()
    assert ffigraph.grad(unnamed, unnamed.owner.inputs[0].owner.inputs[0]).name is None


def test_sort_kind_and_stable():
    x = T.dvector("x")
    assert T.sort(x, stable=True).owner.op.kind == "stable"
    assert T.argsort(x).owner.op.kind == "quicksort"
    with pytest.raises(ValueError, match="kind and stable"):
        T.sort(x, kind="mergesort", stable=True)
    with pytest.raises(ValueError, match="kind and stable"):
        T.argsort(x, kind="heapsort", stable=False)


def test_split_needs_a_count_only_for_unknown_lengths():
    with pytest.raises(ValueError, match="n_splits is needed"):
        T.split(T.dvector(), T.lvector())


@pytest.mark.parametrize("linker", ["c", "py"])
def test_keywords_compute_as_numpy(linker):
    m, v, s = T.dmatrix("m"), T.dvector("v"), T.lvector("s")
    pieces = T.split(v, [2, 1, 3])                       # n_splits from the list's length
    sized = T.split(v, T.as_tensor_variable(np.array([4, 2])), axis=0)   # a constant vector's length
    rows, cols = T.nonzero(m, return_matrix=True), m.nonzero(return_matrix=True)
    prod = T.prod(m, axis=0, no_zeros_in_input=True)
    outs = pieces + sized + [
        rows, cols, prod, ffigraph.grad(prod.sum(), m),
        T.einsum("ij,jk->ik", m, m.T, optimize="greedy"), T.repeat(a=s, repeats=2), T.tile(A=v, reps=(2, 1)),
        T.swapaxes(y=m, axis1=0, axis2=1), T.flip(arr=m, axis=1), T.conj(x=m), m.dot(right=m.T),
        T.sort(v, stable=True), T.argsort(v, stable=True)]
    f = function([m, v, s], outs, mode=Mode(linker=linker))
    mv = np.array([[1.5, 0.0, -2.0], [0.0, 3.0, 0.5]])
    vv = np.array([3.0, -1.0, 2.0, -1.0, 0.5, 7.0])
    sv = np.array([4, -2, 9])
    for args in ((mv, vv, sv), (mv[::-1, ::-1], vv[::-1], sv[::-1])):
        a, b, c = args
        grad_prod = np.stack([np.prod(np.delete(a, i, axis=0), axis=0) for i in range(a.shape[0])])
        want = [b[:2], b[2:3], b[3:], b[:4], b[4:], np.stack(np.nonzero(a)), np.stack(np.nonzero(a)),
                a.prod(axis=0), grad_prod, a @ a.T, np.repeat(c, 2), np.tile(b, (2, 1)), a.T, a[:, ::-1], a,
                a @ a.T, np.sort(b, kind="stable"), np.argsort(b, kind="stable")]
        got = f(*args)
        assert len(got) == len(want)
        for k, (g, w) in enumerate(zip(got, want)):
            np.testing.assert_allclose(g, w, rtol=1e-12, err_msg="output %d" % k)
            assert g.shape == w.shape, k
