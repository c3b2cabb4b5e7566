"""An Elman RNN exported with its scan: the loop runs from C with no Python, and gives Python's numbers.

h_t = tanh(x_t W + h_{t-1} U + b) over a sequence, read out linearly (y_t = h_t V + c) and through
a softmax at the last step. The export folder is built with make in an environment without Python,
its example runs the function on shipped inputs, and what it prints must match the Python call to
1e-12. (The training step, through the gradient of the scan, is test_rnn_training_export.py's.)
"""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph import Mode, function, shared
from export_helpers import no_python_env, output_slot_names, parse_printed, run

pytestmark = pytest.mark.skipif(any(shutil.which(t) is None for t in ("make", "gcc", "nm")),
                                reason="exports are built with make and gcc, checked with nm; one is missing")

STEPS, N_IN, N_H, N_OUT = 12, 3, 5, 4


def _params():
    rng = np.random.default_rng(7)
    return dict(W=0.5 * rng.standard_normal((N_IN, N_H)), U=0.4 * rng.standard_normal((N_H, N_H)),
                b=0.1 * rng.standard_normal(N_H), V=0.5 * rng.standard_normal((N_H, N_OUT)),
                c=0.1 * rng.standard_normal(N_OUT))


def _data():
    rng = np.random.default_rng(8)
    return rng.standard_normal((STEPS, N_IN)), rng.standard_normal(N_H) * 0.1


def _rnn(params):
    """(x, h0, shared {name: variable}, h, readout, last-step softmax)."""
    sh = {name: shared(value.copy(), name=name) for name, value in params.items()}
    x, h0 = T.dmatrix("x"), T.dvector("h0")
    h, _ = ffigraph.scan(lambda xt, hp: T.tanh(T.dot(xt, sh["W"]) + T.dot(hp, sh["U"]) + sh["b"]),
                         sequences=x, outputs_info=h0, name="elman")
    readout = T.dot(h, sh["V"]) + sh["c"]
    logits = readout[-1]
    probs = T.exp(logits - logits.max()) / T.exp(logits - logits.max()).sum()
    return x, h0, sh, h, readout, probs


def _build_and_run(bundle, tmp_path):
    env = no_python_env(tmp_path)
    run(["make", "-s"], bundle.directory, env)
    return run(["./example"], bundle.directory, env).stdout


def test_rnn_forward_runs_from_c(tmp_path):
    x, h0, _, h, readout, probs = _rnn(_params())
    f = function([x, h0], [h, readout, probs], name="elman", mode=Mode(linker="c"))
    xv, h0v = _data()
    want = f(xv, h0v)
    for got, value in zip(want, function([x, h0], [h, readout, probs], mode=Mode(linker="py"))(xv, h0v)):
        np.testing.assert_allclose(got, value, rtol=1e-12, atol=1e-12)   # the C loop gives perform's numbers
    bundle = f.export(str(tmp_path / "elman"), example_inputs=[xv, h0v])
    source = open(bundle.source).read()
    assert "_n" in source and "_g0_run(" in source and "Python.h" not in source   # the loop body is in the unit
    out = _build_and_run(bundle, tmp_path)
    assert "1 run(s) succeeded" in out
    printed = parse_printed(out)
    for name, value in zip(output_slot_names(f), want):
        got = printed[("output", name)]
        assert got.shape == value.shape and got.dtype == value.dtype
        np.testing.assert_allclose(got, value, rtol=1e-12, atol=1e-12)
    assert want[0].shape == (STEPS, N_H) and abs(want[2].sum() - 1) < 1e-12
