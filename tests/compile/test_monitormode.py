"""``MonitorMode``: pre_func and post_func around every node, as PyTensor's (and Theano's
three-argument form); the tutorial's detect_nan example."""
import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph import function
from ffigraph.compile.monitormode import MonitorMode, WrapLinker, detect_nan


def test_tutorial_detect_nan(capsys):
    x = T.dscalar("x")
    f = function([x], [T.log(x) * x], mode=ffigraph.compile.MonitorMode(post_func=detect_nan))
    (out,) = f(0)   # log(0) * 0 = -inf * 0 = NaN
    assert np.isnan(out)
    text = capsys.readouterr().out
    assert text.startswith("*** NaN detected ***\nComposite{(log(i0) * i0)} [id A]\n └─ x [id B]\n")
    assert text.endswith("Inputs : [array(0.)]\nOutputs: [array(nan)]\n")
    f(1.0)
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("linker", ["py", "c|py"])
def test_pre_and_post_see_each_node_in_order(linker):
    x = T.dvector("x")
    calls = []

    def pre(fgraph, i, node, fn):
        assert fgraph.toposort()[i] is node
        calls.append(("pre", i, str(node.op), [c[0].tolist() for c in fn.inputs], fn.outputs[0][0]))

    def post(fgraph, i, node, fn):
        calls.append(("post", i, str(node.op), [c[0].tolist() for c in fn.outputs]))

    f = function([x], T.exp(x) * 2, mode=MonitorMode(pre, post, linker=linker).excluding("fusion"))
    np.testing.assert_allclose(f(np.array([0.0])), [2.0])
    assert calls == [
        ("pre", 0, "Elemwise{exp}", [[0.0]], None),
        ("post", 0, "Elemwise{exp}", [[1.0]]),
        ("pre", 1, "Elemwise{mul}", [[1.0], [2.0]], None),
        ("post", 1, "Elemwise{mul}", [[2.0]]),
    ]
    how = "python (perform)" if linker == "py" else "C (own library)"
    assert f.info().count(how) == 2


def test_theano_three_argument_form(capsys):
    def inspect_inputs(i, node, fn):
        print(i, node, "input(s) value(s):", [input[0] for input in fn.inputs], end="")

    def inspect_outputs(i, node, fn):
        print(" output(s) value(s):", [output[0] for output in fn.outputs])

    x = T.dscalar("x")
    f = function([x], [5 * x], mode=MonitorMode(pre_func=inspect_inputs, post_func=inspect_outputs))
    f(3)
    assert capsys.readouterr().out == ("0 Elemwise{mul}(5.0, x) input(s) value(s): [array(5.), array(3.)] "
                                       "output(s) value(s): [array(15.)]\n")


def test_no_funcs_runs_like_fast_run_and_by_name():
    x = T.dvector("x")
    f = function([x], T.exp(x) + 1, mode="MonitorMode")
    np.testing.assert_allclose(f(np.zeros(2)), [2.0, 2.0])
    assert isinstance(f.maker.linker, WrapLinker)
    assert "its own library" in f.c_source()


def test_strict_c_refuses_a_node_without_c_code():
    from ffigraph.printing import Print

    x = T.dvector("x")
    with pytest.raises(NotImplementedError, match=r"node #0 Print\{message='p'\}\(x\) has none"):
        function([x], Print("p")(x) * 2, mode=MonitorMode(linker="c"))
    with pytest.raises(ValueError, match="unknown linker 'nope'"):
        MonitorMode(linker="nope")
    with pytest.raises(TypeError, match="must be callable"):
        MonitorMode(pre_func=3)
