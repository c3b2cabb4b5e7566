"""The methods of PyTensor's TensorVariable (issue 27) over ffigraph.tensor's functions: one
compiled function covering them all, against numpy, under the C and the Python linkers."""
import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import Mode, function


def _outputs():
    x, v, i = T.dmatrix("x"), T.dvector("v"), T.lvector("i")
    outs = [x.var(axis=0), x.std(ddof=1), x.ptp(axis=1), x.cumsum(axis=0), x.cumprod(), x.sort(),
            x.argsort(axis=0), v.sort().searchsorted(v, side="right"), x.dimshuffle("x", 0, 1).squeeze(),
            x.swapaxes(0, 1), v.repeat(2), x.take(i, axis=0), x.nonzero(return_matrix=True),
            x.nonzero_values(), x.diagonal(), x.trace(), x.round(), x.round("half_away_from_zero"), x.conj(),
            x.conjugate(), x.var(keepdims=True, corrected=True)]
    return [x, v, i], outs


def _expected(a, b, idx):
    return [a.var(0), a.std(ddof=1), np.ptp(a, 1), a.cumsum(0), a.cumprod(), np.sort(a),
            np.argsort(a, 0, kind="stable"), np.searchsorted(np.sort(b), b, side="right"), a, a.T, b.repeat(2),
            a[idx], np.array(a.nonzero()), a[a != 0], a.diagonal(), a.trace(), np.round(a),
            np.where(a >= 0, np.floor(a + 0.5), np.ceil(a - 0.5)), a, a, a.var(keepdims=True)]   # corrected: the two-pass algorithm, not ddof


@pytest.mark.parametrize("linker", ["c", "py"])
def test_tensor_methods_match_numpy(linker):
    ins, outs = _outputs()
    f = function(ins, outs, mode=Mode(linker=linker))
    a = np.array([[0.5, -1.5, 2.0], [2.5, 0.0, -3.5]])
    b = np.array([3.0, 1.0, 2.0, 2.0])
    idx = np.array([1, 0, 1])
    for args in ((a, b, idx), (a[::-1, ::-1], b[::-1], idx[::-1])):   # and negative strides
        for k, (got, want) in enumerate(zip(f(*args), _expected(*args))):
            np.testing.assert_allclose(got, want, rtol=1e-12, err_msg="output %d" % k)


def test_round_mode_is_checked():
    with pytest.raises(ValueError, match="half_to_even"):
        T.dvector().round("up")
