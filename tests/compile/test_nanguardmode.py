"""``NanGuardMode``: the first node (or graph input) holding NaN, inf or big values raises, named."""
import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph import NanGuardMode, function
from ffigraph.compile.mode import get_mode
from ffigraph.compile.nanguardmode import NanGuardError


def _unfused(linker=None):
    return NanGuardMode(linker=linker).excluding("fusion")


@pytest.mark.parametrize("linker", ["py", "c|py"])
def test_nan_from_log_of_minus_one_names_the_node(linker):
    x = T.dvector("x")
    f = function([x], T.log(x) * 2, mode=_unfused(linker))
    np.testing.assert_allclose(f(np.array([1.0, np.e])), [0.0, 2.0])
    with pytest.raises(NanGuardError) as info:
        f(np.array([1.0, -1.0]))
    err = info.value
    assert isinstance(err, AssertionError)            # what PyTensor raises
    assert err.kinds == ("NaN",) and str(err.node.op) == "Elemwise{log}" and err.output_index == 0
    text = str(err)
    assert text.startswith("NanGuardMode: NaN detected in output 0 (shape (2,), float64) of node #0, "
                           "op Elemwise{log}; first at index (1,): nan")
    assert "Input values: x (shape (2,), float64)" in text
    assert "Elemwise{log} [id A]\n └─ x [id B]" in text     # its debugprint
    assert "Function inputs it depends on: x (position 0)" in text


def test_inf_from_one_over_zero():
    x = T.dvector("x")
    f = function([x], (1 / x) + 1, mode=_unfused())
    with pytest.raises(NanGuardError, match=r"Inf detected in output 0 .* op Elemwise\{true_div\}; "
                                            r"first at index \(2,\): inf") as info:
        f(np.array([1.0, 2.0, 0.0]))
    assert info.value.kinds == ("Inf",)


def test_big_values():
    x = T.dvector("x")
    f = function([x], x * 1e6 - 1, mode=_unfused())
    f(np.array([1e3]))
    with pytest.raises(NanGuardError, match=r"big value detected .* op Elemwise\{mul\}; "
                                            r"first at index \(0,\): 100000000000\.0") as info:
        f(np.array([1e5]))
    assert info.value.kinds == ("big value",)
    n = T.lvector("n")   # integers are checked for big values only
    g = function([n], n * 1000, mode=NanGuardMode(linker="py"))
    np.testing.assert_array_equal(g(np.array([5])), [5000])
    with pytest.raises(NanGuardError, match="big value"):
        g(np.array([10 ** 8]))


def test_fused_loop_is_named_by_its_expression():
    x = T.dvector("x")
    f = function([x], T.log(x) * 2, mode=NanGuardMode())   # FAST_RUN: one fused loop
    with pytest.raises(NanGuardError, match=r"op Composite\{\(log\(i0\) \* 2\.0\)\}"):
        f(np.array([-1.0]))


def test_first_bad_node_is_named_not_a_later_one():
    x = T.dvector("x")
    f = function([x], T.exp(T.log(x)), mode=_unfused("py"))   # NaN from log, then from exp
    with pytest.raises(NanGuardError, match=r"node #0, op Elemwise\{log\}"):
        f(np.array([-1.0]))


def test_graph_input_is_checked_and_named():
    x, y = T.dvector("x"), T.dvector("y")
    f = function([x, y], x + y, mode=NanGuardMode(linker="py"))
    with pytest.raises(NanGuardError, match=r"NaN detected in input 1 \(y\) of the graph \(shape \(2,\), "
                                            r"float64\); first at index \(1,\): nan") as info:
        f(np.zeros(2), np.array([0.0, np.nan]))
    assert info.value.input_index == 1 and info.value.node is None
    w = ffigraph.shared(np.array([np.inf]), name="w")
    g = function([x], x * w, mode=NanGuardMode(linker="py"))
    with pytest.raises(NanGuardError, match=r"Inf detected in shared variable w of the graph"):
        g(np.ones(1))


def test_switches_turn_checks_off():
    x = T.dvector("x")
    f = function([x], [T.log(x), 1 / x, x * 1e12], mode=NanGuardMode(False, False, None, linker="py"))
    with pytest.raises(NanGuardError, match="big value"):   # None means True
        f(np.array([-1.0, 0.0, 1.0]))
    g = function([x], [T.log(x), 1 / x], mode=NanGuardMode(nan_is_error=False, inf_is_error=False,
                                                            big_is_error=True, linker="py"))
    out = g(np.array([-1.0, 1.0]))   # NaN passes
    assert np.isnan(out[0][0])
    with pytest.raises(NanGuardError, match="big value"):   # inf counts as big when inf is not an error
        g(np.array([0.0]))
    with pytest.raises(ValueError, match="at least one"):
        NanGuardMode(False, False, False)


def test_trace_of_the_node_is_shown():
    x = T.dvector("x")
    y = T.log(x)
    y.owner.tag.trace = [[("model.py", 12, "build", "y = T.log(x)")]]
    f = function([x], y, mode=NanGuardMode(linker="py", optimizer=None))
    with pytest.raises(NanGuardError) as info:
        f(np.array([-1.0]))
    assert 'The node was created at:\n  File "model.py", line 12, in build\n    y = T.log(x)' in str(info.value)


def test_registered_name_clean_values_and_info():
    x = T.dvector("x")
    mode = get_mode("NanGuardMode")
    assert isinstance(mode, NanGuardMode)
    f = function([x], T.exp(x).sum(), mode=mode)
    assert f(np.zeros(3)) == 3.0
    assert "C (own library)" in f.info()
    assert isinstance(ffigraph.compile.NanGuardMode(), ffigraph.compile.mode.Mode)


def test_trace_forms():
    import traceback

    from ffigraph.compile.nanguardmode import trace_text

    x = T.dvector("x")
    assert "test_trace_forms" in trace_text(T.log(x))   # recorded where the node was built
    with ffigraph.config.change_flags(traceback__limit=0):
        y = T.log(x)
    assert trace_text(y) == ""                          # recording off: nothing
    y.tag.trace = [traceback.extract_stack()]         # PyTensor's form: a list of stack summaries
    assert "test_trace_forms" in trace_text(y)
    y.tag.trace = traceback.extract_stack()           # one stack
    assert "test_trace_forms" in trace_text(y)
    y.tag.trace = "made here\n"
    assert trace_text(y) == "made here"
    f = function([x], y, mode=NanGuardMode(linker="py", optimizer=None))   # the output's trace, when
    with pytest.raises(NanGuardError, match="The node was created at:\nmade here"):   # the node has none
        f(np.array([-1.0]))
