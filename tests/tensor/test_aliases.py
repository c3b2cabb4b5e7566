"""PyTensor's other names for what ffigraph.tensor has (ffigraph/tensor/aliases.py): one compiled
function covering them, against numpy, under the C and Python linkers."""
import math

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import Mode, function


def _graph():
    x, m, i, p = T.dvector("x"), T.dmatrix("m"), T.lvector("i"), T.lmatrix("p")
    q, r = T.divmod(i, 3)
    outs = [T.square(x), T.greater(x, 0), T.greater_equal(x, 0), T.less(x, 0), T.less_equal(x, 0),
            T.equal(x, 0), T.not_equal(x, 0), T.bitwise_not(i), T.expit(x), T.log1pexp(x),
            T.log1mexp(-abs(x) - 1e-3), T.isfinite(x), T.isposinf(x), T.isneginf(x), T.isfinite(i),
            T.shape_padleft(x, 2), T.shape_padright(m), T.shape_padaxis(m, 1), T.horizontal_stack(m, m),
            T.vertical_stack(m, m), T.tensor_copy(x), T.identity(m), T.fill(m, 2.5), T.second(m, i[0]),
            T.empty_like(m).shape, T.extract_diag(m), T.iround(x), q, r, T.ceil_intdiv(i, 3),
            T.largest(x, 0.5, -x), T.smallest(x, 0.5, -x), T.matrix_transpose(m), T.nan_to_num(x),
            T.nan_to_num(x, nan=-1.0, posinf=9.0, neginf=-9.0), T.take_along_axis(m, p, axis=1),
            T.take_along_axis(m, p, axis=0), *T.tril_indices(4, 1, 3), *T.triu_indices(3),
            *T.tril_indices_from(m), *T.triu_indices_from(m, -1), T.compress(T.gt(x, 0), x),
            T.compress(T.gt(m[:, 0], 0), m, axis=0), T.cov(m), T.cov(m, rowvar=False, bias=True),
            T.cov(m[0], m[1]), T.inverse_permutation(i.argsort()), T.inverse_permutation(p),
            x * T.pi + T.e + T.euler_gamma]
    return [x, m, i, p], outs


def _expected(x, m, i, p):
    with np.errstate(all="ignore"):
        return [x * x, x > 0, x >= 0, x < 0, x <= 0, x == 0, x != 0, ~i, 1 / (1 + np.exp(-x)), np.logaddexp(0, x),
                np.log(-np.expm1(-abs(x) - 1e-3)), np.isfinite(x), np.isposinf(x), np.isneginf(x),
                np.ones(i.shape, bool), x[None, None], m[:, :, None], m[:, None, :], np.hstack([m, m]),
                np.vstack([m, m]), x, m, np.full(m.shape, 2.5), np.full(m.shape, i[0]), np.array(m.shape),
                m.diagonal(), np.rint(x).astype(np.int64), i // 3, i % 3, -(-i // 3), np.maximum(np.maximum(x, 0.5), -x),
                np.minimum(np.minimum(x, 0.5), -x), m.T, np.nan_to_num(x),
                np.nan_to_num(x, nan=-1.0, posinf=9.0, neginf=-9.0), np.take_along_axis(m, p, 1),
                np.take_along_axis(m, p, 0),
                *np.tril_indices(4, 1, 3), *np.triu_indices(3), *np.tril_indices_from(m), *np.triu_indices_from(m, -1),
                np.compress(x > 0, x), np.compress(m[:, 0] > 0, m, axis=0), np.cov(m), np.cov(m, rowvar=False, bias=True),
                np.cov(m[0], m[1]), np.argsort(np.argsort(i, kind="stable"), kind="stable"),
                np.argsort(p, axis=1), x * math.pi + math.e + 0.5772156649015329]


@pytest.mark.parametrize("linker", ["c", "py"])
def test_aliases_match_numpy(linker):
    f = function(*_graph(), mode=Mode(linker=linker))
    x = np.array([0.3, -1.2, np.inf, -np.inf, np.nan, 2.5, 0.0])
    m = np.array([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0], [-0.5, 4.0, 2.0]])
    i = np.array([5, -7, 0, 3, 9])
    p = np.array([[2, 0, 1], [1, 2, 0], [0, 1, 2]])
    for args in ((x, m, i, p), (x[::-1], m[::-1, ::-1], i[::-1], p[::-1])):
        got = f(*args)
        want = _expected(*args)
        assert len(got) == len(want)
        for k, (g, w) in enumerate(zip(got, want)):
            np.testing.assert_allclose(np.asarray(g, dtype=float), np.asarray(w, dtype=float), rtol=1e-12,
                                       equal_nan=True, err_msg="output %d" % k)


def test_alias_errors():
    with pytest.raises(ValueError, match="matrices"):
        T.horizontal_stack(T.dvector(), T.dvector())
    with pytest.raises(ValueError, match="at least 2"):
        T.matrix_transpose(T.dvector())
    with pytest.raises(ValueError, match="dimensions"):
        T.take_along_axis(T.dmatrix(), T.lvector(), axis=0)
    with pytest.raises(NotImplementedError, match="weights"):
        T.cov(T.dmatrix(), fweights=T.lvector())
    assert T.newaxis is None and T.as_tensor is T.as_tensor_variable
