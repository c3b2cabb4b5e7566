"""Theano's typed_list: every op against Python's own list methods, under the Python linker and
the mixed cvm linker (the list ops in Python, the tensor ops beside them in C)."""
import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
import ffigraph.typed_list as tl
from ffigraph import Mode, function


@pytest.mark.parametrize("linker", ["py", "cvm"])
def test_ops_match_python_lists(linker):
    L = tl.TypedListType(T.dvector)("L")
    v, i = T.dvector("v"), T.lscalar("i")
    outs = [L.append(v), L[i], tl.length(L), L.extend(L), L.insert(i, v), L.reverse(), L[1:], L[::-1],
            L.count(v), L.ind(v), L.remove(v), tl.getitem(L, -1), T.exp(L[i]).sum() + tl.length(L)]
    f = function([L, v, i], outs, mode=Mode(linker=linker))
    items = [np.array([1.0, 2.0]), np.array([0.0, 0.0]), np.array([1.0, 2.0])]
    got = f(items, np.array([1.0, 2.0]), 1)
    py = [list(items) + [np.array([1.0, 2.0])], items[1], len(items), items + items,
          items[:1] + [np.array([1.0, 2.0])] + items[1:], items[::-1], items[1:], items[::-1], 2, 0,
          items[1:], items[-1], np.exp(items[1]).sum() + 3]
    for g, w in zip(got, py):
        if isinstance(w, list):
            assert len(g) == len(w) and all(np.array_equal(a, b) for a, b in zip(g, w))
        else:
            np.testing.assert_array_equal(g, w)
    assert items[0].tolist() == [1.0, 2.0] and len(items) == 3   # the caller's list is left as it was
    with pytest.raises(IndexError, match="out of range"):
        f(items, np.zeros(2), 7)
    with pytest.raises(ValueError, match="not in the list"):
        function([L, v], L.ind(v), mode=Mode(linker=linker))(items, np.array([5.0, 5.0]))


def test_types_make_list_and_errors():
    x, y = T.dmatrix("x"), T.dmatrix("y")
    m = tl.make_list([x, y])
    assert m.type == tl.TypedListType(T.dmatrix) and m.ttype == T.dmatrix and m.ndim == 2 and m.dtype == "float64"
    nested = tl.TypedListType(T.dvector, depth=1)
    assert nested.get_depth() == 1 and nested.ttype == tl.TypedListType(T.dvector)
    f = function([x, y], [tl.length(m), m[0]])
    n, first = f(np.ones((2, 2)), np.zeros((2, 2)))
    assert n == 2 and first.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    with pytest.raises(TypeError, match="expected a list"):
        tl.TypedListType(T.dvector).filter(np.zeros(2))
    with pytest.raises(TypeError, match="one type"):
        tl.make_list([x, T.dvector()])
    with pytest.raises(TypeError, match="list's type"):
        m.append(T.dvector())
    with pytest.raises(TypeError, match="no len"):
        len(m)
    assert tl.TypedListType(T.lscalar).filter([1, 2])[1] == 2
