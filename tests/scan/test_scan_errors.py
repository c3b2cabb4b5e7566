"""Bad input to scan: clear errors at build time or at run time, never a crash, and the
function keeps working with good input afterwards."""
import numpy as np
import pytest

import ffigraph as theano
import ffigraph.tensor as T


def test_build_time_errors():
    x = T.dvector("x")
    with pytest.raises(ValueError, match="n_steps is -2"):
        theano.scan(lambda h: h + 1, outputs_info=x, n_steps=-2)
    with pytest.raises(ValueError, match="returned 2 output.*outputs_info has 1"):
        theano.scan(lambda h: [h + 1, h * 2], outputs_info=[x], n_steps=3)
    with pytest.raises(ValueError, match="returned 1 output.*outputs_info has 2"):
        theano.scan(lambda h, g: h + g, outputs_info=[x, x], n_steps=3)
    with pytest.raises(TypeError, match="initial state.*must match"):
        theano.scan(lambda h: T.cast(h, "float32"), outputs_info=x, n_steps=3)
    with pytest.raises(ValueError, match="give sequences or n_steps"):
        theano.scan(lambda h: h + 1, outputs_info=x)
    with pytest.raises(ValueError, match="taps"):
        theano.scan(lambda h: h + 1, outputs_info=dict(initial=x, taps=[0]), n_steps=2)
    with pytest.raises(TypeError, match="scalar"):
        theano.scan(lambda v: v, sequences=T.dscalar("s"))
    with pytest.raises(TypeError, match="integer scalar"):
        theano.scan(lambda h: h + 1, outputs_info=x, n_steps=T.dscalar("n"))
    with pytest.raises(ValueError, match="truncate_gradient"):
        theano.scan(lambda h: h + 1, outputs_info=x, n_steps=2, truncate_gradient=0)
    with pytest.raises(ValueError, match="strict=True.*shared variable w"):
        w = theano.shared(np.ones(3), name="w")   # (a free symbolic variable is allowed: Theano's rule)
        theano.scan(lambda h: h + w, outputs_info=x, n_steps=2, strict=True)


@pytest.mark.parametrize("linker", ["py", "cvm"])
def test_run_time_errors(linker):
    """Negative symbolic n_steps, a sequence shorter than n_steps, and a recurrent output that
    changes shape are ValueErrors that say what is wrong; good calls work before and after."""
    n = T.iscalar("n")
    seq = T.dmatrix("seq")
    h0 = T.dvector("h0")
    cut = T.iscalar("cut")
    out, _ = theano.scan(lambda row, h: (h + row)[:cut], sequences=seq, outputs_info=h0, n_steps=n)
    f = theano.function([seq, h0, n, cut], out, mode=theano.Mode(linker=linker))
    s = np.arange(12.0).reshape(4, 3)
    good = f(s, np.zeros(3), 4, 3)
    np.testing.assert_allclose(good, np.cumsum(s, axis=0))
    with pytest.raises(ValueError, match="n_steps is -1"):
        f(s, np.zeros(3), -1, 3)
    with pytest.raises(ValueError, match="sequence 0 has 4 rows; 5 steps"):
        f(s, np.zeros(3), 5, 3)
    with pytest.raises(ValueError, match="shape"):
        f(s, np.zeros(3), 4, 2)
    np.testing.assert_allclose(f(s, np.zeros(3), 4, 3), good)
    assert f(s, np.zeros(3), 0, 3).shape == (0, 3)


def test_shortest_sequence_sets_the_steps():
    """As in Theano and PyTensor, without n_steps the loop runs as long as the shortest sequence."""
    a, b = T.dvector("a"), T.dvector("b")
    out, _ = theano.scan(lambda x, y_prev, y_next: x * y_prev * y_next, sequences=[a, dict(input=b, taps=[-1, 1])])
    f = theano.function([a, b], out, mode="py")
    av, bv = np.arange(10.0), np.arange(5.0)
    np.testing.assert_allclose(f(av, bv), av[:3] * bv[0:3] * bv[2:5])  # 3 steps: taps -1, 1 span 2 extra rows
