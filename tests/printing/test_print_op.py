"""``ffigraph.printing.Print``: an identity op that prints its value when computed, on every linker
that can run it, kept by the rewrites; the strict C linker refuses it by name."""
import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph import function
from ffigraph.compile.mode import Mode
from ffigraph.printing import Print, debugprint


def _prints(fgraph):
    return [n for n in fgraph.toposort() if isinstance(n.op, Print)]


@pytest.mark.parametrize("linker", ["py", "c|py", "cvm"])
def test_prints_its_value_each_call(linker, capsys):
    x = T.dvector("x")
    f = function([x], Print("x is")(x) * 2, mode=Mode(linker=linker))
    assert capsys.readouterr().out == ""            # nothing at compile time
    np.testing.assert_array_equal(f(np.array([1.0, 2.0])), [2.0, 4.0])
    assert capsys.readouterr().out == "x is __str__ = [1. 2.]\n"
    f(np.array([3.0]))
    assert capsys.readouterr().out == "x is __str__ = [3.]\n"


def test_cvm_runs_the_print_in_python_and_the_rest_in_c():
    x = T.dvector("x")
    f = function([x], T.exp(Print("x")(x)), mode=Mode(linker="cvm"))
    info = f.info()
    assert "Print{message='x'}(x)  [python (perform): no C code]" in info
    assert "C (own library)" in info


def test_strict_c_linker_refuses_naming_the_print():
    x = T.dvector("x")
    with pytest.raises(NotImplementedError, match=r"Print\{message='here'\}\(x\)") as info:
        function([x], Print("here")(x) * 2, mode=Mode(linker="c"))
    assert "c|py" in str(info.value)


def test_attrs_and_global_fn(capsys):
    x = T.dmatrix("x")
    f = function([x], Print("x", attrs=("shape", "dtype", "sum"))(x) + 1, mode=Mode(linker="py"))
    f(np.ones((2, 3)))
    assert capsys.readouterr().out == "x shape = (2, 3)\nx dtype = float64\nx sum = 6.0\n"
    seen = []
    f = function([x], Print("m", global_fn=lambda op, v: seen.append((op.message, v.copy())))(x) + 1,
                 mode=Mode(linker="py"))
    f(np.full((1, 2), 5.0))
    assert capsys.readouterr().out == ""
    assert seen[0][0] == "m" and np.array_equal(seen[0][1], [[5.0, 5.0]])


def test_value_passes_through_unchanged_and_gradient_too():
    x = T.dvector("x")
    p = Print("p", global_fn=lambda op, v: None)(x)
    assert p.type == x.type and p.owner.op.view_map == {0: [0]}
    g = ffigraph.grad((p ** 2).sum(), x)
    f = function([x], [p, g], mode=Mode(linker="py"))
    value, grad = f(np.array([1.0, -2.0]))
    np.testing.assert_array_equal(value, [1.0, -2.0])
    np.testing.assert_array_equal(grad, [2.0, -4.0])


def test_non_variable_input_becomes_a_constant(capsys):
    f = function([], Print("c")([1.0, 2.0]), mode=Mode(linker="py"))
    np.testing.assert_array_equal(f(), [1.0, 2.0])
    assert capsys.readouterr().out == "c __str__ = [1. 2.]\n"


# ------------------------------------------------------------------ the rewrites keep it


def test_print_of_a_constant_is_not_folded(capsys):
    """Constant folding would print once at compile time and never again."""
    x = T.dvector("x")
    c = T.constant(np.array([1.0, 2.0]))
    f = function([x], Print("c")(c) * x)   # FAST_RUN, cvm
    assert capsys.readouterr().out == ""
    assert len(_prints(f.maker.fgraph)) == 1
    f(np.ones(2))
    f(np.ones(2))
    assert capsys.readouterr().out == "c __str__ = [1. 2.]\n" * 2


def test_equal_prints_of_one_value_are_not_merged(capsys):
    x = T.dvector("x")
    p = Print("a")
    f = function([x], [p(x) * 2, Print("a")(x) * 3, p(x) + 1])   # three equal nodes
    assert len(_prints(f.maker.fgraph)) == 3
    f(np.ones(2))
    assert capsys.readouterr().out == "a __str__ = [1. 1.]\n" * 3


def test_print_between_elementwise_ops_is_not_fused_away(capsys):
    x = T.dvector("x")
    f = function([x], T.exp(Print("mid")(T.sin(x) * 2)) + 1)
    (node,) = _prints(f.maker.fgraph)
    assert len(f.maker.fgraph.apply_nodes) == 3   # fused loop, Print, fused loop
    value = np.array([0.5, 1.0])
    np.testing.assert_allclose(f(value), np.exp(np.sin(value) * 2) + 1, rtol=1e-15)
    assert capsys.readouterr().out == "mid __str__ = %s\n" % (np.sin(value) * 2,)
    text = debugprint(f, file="str")
    assert "Print{message='mid'}" in text


def test_print_of_an_output_is_copied_not_aliased(capsys):
    x = T.dvector("x")
    f = function([x], Print("out")(x), mode=Mode(linker="c|py"))
    value = np.array([1.0, 2.0])
    out = f(value)
    assert capsys.readouterr().out == "out __str__ = [1. 2.]\n"
    assert not np.shares_memory(out, value)
    np.testing.assert_array_equal(out, value)
