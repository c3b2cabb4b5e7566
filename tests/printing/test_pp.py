"""``pp``/``pprint`` (a graph as one infix expression, Theano's format) and ``pydotprint``."""
import os
import shutil

import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph import function
from ffigraph.compile.mode import Mode
from ffigraph.printing import FunctionPrinter, OperatorPrinter, PPrinter, Print, Printer, pp, pprint, pydotprint


def test_theano_example():
    x, y = T.dmatrix("x"), T.dmatrix("y")
    assert pp(x * 2 + T.exp(y)) == "((x * TensorConstant{2.0}) + exp(y))"
    assert pprint is pp


def test_logistic_regression_prediction_as_in_the_tutorial():
    x, w = T.dmatrix("x"), T.dvector("w")
    b = ffigraph.shared(0.0, name="b")
    p = 1 / (1 + T.exp(-T.dot(x, w) - b))
    assert pp(p > 0.5) == ("gt((TensorConstant{1.0} / (TensorConstant{1.0} + exp(((-(x \\dot w)) - b)))), "
                           "TensorConstant{0.5})")


@pytest.mark.parametrize("build, text", [
    (lambda x, y: x - y, "(x - y)"),
    (lambda x, y: x / y, "(x / y)"),
    (lambda x, y: x // y, "(x // y)"),
    (lambda x, y: x % y, "(x % y)"),
    (lambda x, y: x ** y, "(x ** y)"),
    (lambda x, y: -x, "(-x)"),
    (lambda x, y: (x - y) * (x + y), "((x - y) * (x + y))"),
    (lambda x, y: x.T, "x.T"),
    (lambda x, y: T.maximum(x, y), "maximum(x, y)"),
    (lambda x, y: T.switch(x > y, x, y), "switch(gt(x, y), x, y)"),
    (lambda x, y: ~(x > y) & (x < y), "((~gt(x, y)) & lt(x, y))"),
    (lambda x, y: x.sum(axis=0), "Sum{axis=0}(x)"),
    (lambda x, y: T.dot(x, y), "(x \\dot y)"),
])
def test_operators_functions_and_other_ops(build, text):
    x, y = T.dmatrix("x"), T.dmatrix("y")
    assert pp(build(x, y)) == text


def test_unnamed_variables_large_constants_and_print():
    x = T.dvector()
    assert pp(x + 1) == "(<dvector> + TensorConstant{1.0})"
    big = T.constant(np.arange(30.0))
    assert pp(T.dvector("v") + big) == "(v + TensorConstant{float64, shape=(30,)})"
    assert pp(Print("p")(T.dvector("v"))) == "Print{message='p'}(v)"


def test_function_graph_apply_and_lists_print_one_line_per_output():
    x = T.dvector("x")
    out = [x * 2, T.exp(x)]
    assert pp(out) == "(x * TensorConstant{2.0})\nexp(x)"
    f = function([x], out, mode=Mode(linker="py", optimizer=None))
    assert pp(f) == "(x * TensorConstant{2.0})\nexp(x)"
    assert pp(f.maker.fgraph) == pp(f)
    assert pp(out[1].owner) == "exp(x)"
    with pytest.raises(TypeError, match="cannot print 3"):
        pp(3)


def test_shared_subexpressions_and_long_chains():
    x = T.dvector("x")
    e = T.exp(x)
    assert pp(e * e) == "(exp(x) * exp(x))"
    for _ in range(3000):   # no recursion limit: ancestors are printed deepest first
        x = x + 1
    text = pp(x)
    assert text.startswith("(" * 3000 + "x + TensorConstant{1.0})") and len(text) == 3000 * 24 + 1


def test_assign_a_printer_to_an_op_class_or_a_condition():
    x, y = T.dvector("x"), T.dvector("y")
    mine = pprint.clone()
    mine.assign(type((x + y).owner.op), FunctionPrinter(["elementwise"]))
    assert mine(T.exp(x) + y) == "elementwise(elementwise(x), y)"
    assert pp(T.exp(x) + y) == "(exp(x) + y)"   # the default printer is unchanged

    class Upper(Printer):
        def process(self, output, pstate):
            return str(output).upper()

    mine.assign(lambda pstate, r: r.owner is None, Upper())   # conditions: for what no op printer takes
    assert mine(x + y) == "elementwise(X, Y)"
    assert mine.clone_assign(type((x + y).owner.op), OperatorPrinter("<+>", 0))(x + y) == "(X <+> Y)"
    fresh = PPrinter()   # nothing assigned: ops print as op(inputs), variables by name
    assert fresh(T.exp(x)) == "Elemwise{exp}(x)"


# ------------------------------------------------------------------ pydotprint


def _needs_dot():
    pytest.importorskip("graphviz", reason="graphviz Python package not installed (pip install graphviz)")
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot program is not on PATH (apt-get install graphviz)")


def test_pydotprint_writes_a_png(tmp_path, capsys):
    _needs_dot()
    x = T.dvector("x")
    f = function([x], T.exp(x) * 2, mode=Mode(linker="py"))
    out = pydotprint(f, outfile=str(tmp_path / "graph.png"))
    assert out == str(tmp_path / "graph.png")
    with open(out, "rb") as data:
        assert data.read(8) == b"\x89PNG\r\n\x1a\n"
    assert capsys.readouterr().out == "The output file is available at %s\n" % out
    # Theano's styling options are accepted; the suffix is added when missing
    out = pydotprint(x * 2, outfile=str(tmp_path / "v"), format="svg", with_ids=True, compact=False,
                     var_with_name_simple=True, print_output_file=False)
    assert out == str(tmp_path / "v.svg") and os.path.getsize(out) > 0
    assert capsys.readouterr().out == ""
    assert pydotprint(x * 2, format="svg", return_image=True).lstrip().startswith(b"<")


def test_pydotprint_default_outfile_is_in_the_compiledir(tmp_path):
    _needs_dot()
    with ffigraph.config.change_flags(compiledir=str(tmp_path / "cd")):
        out = pydotprint(T.dvector("x") * 2, format="dot", print_output_file=False)
    assert out == str(tmp_path / "cd" / ("ffigraph.pydotprint.%s.dot" % ffigraph.config.device))
    with open(out) as text:
        assert text.read().startswith("digraph")


def test_pydotprint_unknown_format():
    with pytest.raises(ValueError, match="unknown format 'jpeg'"):
        pydotprint(T.dvector("x") * 2, format="jpeg")
