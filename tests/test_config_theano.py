"""Theano's configuration flags that Theano programs set: ``config.print_test_value`` (repr of a
variable with a test value shows it, as in Theano 1.0 and PyTensor) and the ``config.warn.*`` flags
(accepted with Theano 1.0's defaults; no effect: they guarded against bugs of old Theano releases)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as pt
from ffigraph import config
from ffigraph.config import Config

# Theano 1.0's warn flags (theano/configdefaults.py) and the release that fixed each bug
THEANO_WARN = {
    "argmax_pushdown_bug": "0.3", "gpusum_01_011_0111_bug": "0.3", "sum_sum_bug": "0.3",
    "sum_div_dimshuffle_bug": "0.3", "identify_1pexp_bug": "0.4.1", "subtensor_merge_bug": "0.5",
    "gpu_set_subtensor1": "0.6", "vm_gc_bug": None, "signal_conv2d_interface": "0.7", "reduce_join": "0.7",
    "inc_set_subtensor1": "0.7", "round": "0.9", "inc_subtensor1_opt": "0.10",
}


def test_warn_flags_have_theano_1_0_names_and_defaults():
    cfg = Config("")
    assert cfg.warn.ignore_bug_before == "0.9"
    # Theano 1.0: warn about a bug fixed after ignore_bug_before (0.9): only 0.10's; vm_gc_bug False
    assert {name: getattr(cfg.warn, name) for name in THEANO_WARN} == {
        name: name == "inc_subtensor1_opt" for name in THEANO_WARN}
    everything = Config("warn.ignore_bug_before=None")
    assert {n: getattr(everything.warn, n) for n in THEANO_WARN} == {n: n != "vm_gc_bug" for n in THEANO_WARN}
    nothing = Config("warn.ignore_bug_before=all")
    assert not any(getattr(nothing.warn, n) for n in THEANO_WARN)
    since_05 = Config("warn__ignore_bug_before=0.5")   # bugs fixed in 0.6 and later
    assert [n for n in THEANO_WARN if getattr(since_05.warn, n)] == [
        "gpu_set_subtensor1", "signal_conv2d_interface", "reduce_join", "inc_set_subtensor1", "round",
        "inc_subtensor1_opt"]
    assert sorted(dir(cfg.warn)) == sorted(["ignore_bug_before"] + list(THEANO_WARN))


def test_warn_flags_are_set_as_theano_programs_set_them():
    config.warn.subtensor_merge_bug = False
    config.warn.sum_div_dimshuffle_bug = False
    try:
        assert config.warn.subtensor_merge_bug is False and config.warn__subtensor_merge_bug is False
        config.warn.round = "True"              # a string, as from a flags file
        assert config.warn.round is True
        with config.change_flags(**{"warn.round": False}):
            assert config.warn.round is False
        with config.change_flags(warn__round=False):
            assert config.warn.round is False
        assert config.warn.round is True
        assert Config("warn.round=False,warn__reduce_join=1").warn.round is False
        assert Config("warn.round=False,warn__reduce_join=1").warn.reduce_join is True
    finally:
        del config.warn.subtensor_merge_bug, config.warn.sum_div_dimshuffle_bug, config.warn.round
    assert config.warn.round is False           # the default again


def test_unknown_or_bad_warn_flags_raise():
    with pytest.raises(AttributeError, match=r"no setting 'warn.subtensor_merge' \(known in warn: "):
        config.warn.subtensor_merge = False
    with pytest.raises(AttributeError, match=r"no setting 'warn.nope'"):
        config.warn.nope
    with pytest.raises(AttributeError, match="no setting 'warn__nope'"):
        config.warn__nope = True
    with pytest.raises(ValueError, match=r"ffigraph.config.warn__round must be True or False, got 'maybe'"):
        config.warn.round = "maybe"
    with pytest.raises(ValueError, match=r"warn__ignore_bug_before must be one of .*'1.0.5'.*got '2.0'"):
        config.warn.ignore_bug_before = "2.0"
    with pytest.raises(AttributeError, match="config.warn is a group of settings"):
        config.warn = False
    with pytest.warns(UserWarning, match="ignoring unknown key 'warn__nope'"):
        Config("warn.nope=1")
    with pytest.raises(AttributeError, match="no setting 'traceback.depth'"):
        config.traceback.depth
    assert config.traceback.limit == config.traceback__limit   # the other groups read the same way


def test_warn_flags_change_nothing_compiled():
    """No effect: the compile-cache keys (config.describe()) do not see them, and results match."""
    x = pt.dvector("x")
    before = config.describe()
    f = ffigraph.function([x], (x[::-1][1:] / 2).sum())
    with config.change_flags(warn__subtensor_merge_bug=True, warn__sum_div_dimshuffle_bug=True,
                             warn__ignore_bug_before="None", print_test_value=True):
        assert config.describe() == before
        g = ffigraph.function([x], (x[::-1][1:] / 2).sum())
    values = np.array([1.0, -2.5, 4.0, 8.0])
    assert f(values) == g(values) == (values[::-1][1:] / 2).sum()
    assert "warn__" not in before and "print_test_value" not in before


def test_print_test_value_shows_test_values_in_repr():
    x = pt.dmatrix("x")
    x.tag.test_value = np.array([[1.0, 2.0], [3.0, -4.0]])
    y = pt.dvector("y")                      # no test value
    w = ffigraph.shared(np.array([0.5, -1.5]), name="w")
    c = pt.constant(np.array([7.0, 8.0]))
    assert [repr(v) for v in (x, y, w)] == ["x", "y", "w"]
    with config.change_flags(print_test_value=True):
        assert repr(x) == "x\n" + repr(np.array([[1.0, 2.0], [3.0, -4.0]]))
        assert repr(y) == "y"                 # nothing to show
        assert repr(w) == "w\n" + repr(np.array([0.5, -1.5]))   # a shared variable's value
        assert repr(c) == str(c) + "\n" + repr(np.array([7.0, 8.0]))
        assert x.__repr__(firstPass=False) == "x"
        with config.change_flags(compute_test_value="raise"):
            z = (x * 2).sum(axis=0)
        assert repr(z) == str(z) + "\n" + repr(np.array([8.0, -4.0]))
        assert str(x) == "x"                  # str is unchanged
    assert repr(x) == "x"
    assert Config("print_test_value=1").print_test_value is True
    with pytest.raises(ValueError, match="print_test_value must be True or False, got 'sometimes'"):
        config.print_test_value = "sometimes"


def test_flags_from_the_environment():
    env = dict(os.environ, FFIGRAPH_FLAGS="warn.subtensor_merge_bug=False,warn.round=True,print_test_value=True")
    program = ("import ffigraph; c = ffigraph.config; "
               "print(c.warn.subtensor_merge_bug, c.warn.round, c.print_test_value)")
    out = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True", "True"]
