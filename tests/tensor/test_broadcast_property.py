"""Property test: elementwise graphs broadcast exactly like numpy for any compatible shapes."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ffigraph.tensor as T
from ffigraph import function
from helpers import assert_matches

_FUNCS = {}


def _compiled(nd_a, nd_b, mode):
    key = (nd_a, nd_b, mode.linker.name)
    if key not in _FUNCS:
        a = T.tensor("float64", (None,) * nd_a, "a")
        b = T.tensor("float64", (None,) * nd_b, "b")
        out = T.maximum(a * b - T.exp(-abs(a)), b) + 1.5
        _FUNCS[key] = (function([a, b], out, mode=mode), out.type)
    return _FUNCS[key]


# the mode fixture is immutable, so sharing it across examples is safe
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=4),
       seed=st.integers(0, 2**16))
def test_broadcasting_matches_numpy(mode, shapes, seed):
    sa, sb = shapes.input_shapes
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=sa), rng.normal(size=sb)
    f, vtype = _compiled(len(sa), len(sb), mode)
    expected = np.maximum(a * b - np.exp(-np.abs(a)), b) + 1.5
    assert_matches(f(a, b), expected, vtype, dtype="float64")
