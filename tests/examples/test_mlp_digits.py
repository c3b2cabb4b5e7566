"""The digits classifier (examples/mlp_digits.py): softmax regression and the dropout MLP reach
their held-out accuracy on scikit-learn's digits, and the MLP's training step, exported, runs 100
steps from a C host with no Python and ends with the parameters (and the random stream's state)
of the same 100 steps run from Python: the dropout masks come from the same Philox stream.

The accuracy test needs scikit-learn (the data ship inside it), which has no PyPy build; the
export test uses random data and runs on both interpreters.
"""
import shutil

import numpy as np
import pytest

import mlp_digits as md
from export_helpers import steps_from_c

QUICK_EPOCHS = 20   # the full example runs 40; 20 already clear 95 % held out


def test_digits_held_out_accuracy():
    pytest.importorskip("sklearn", reason="scikit-learn (which ships the digits data) is not installed here; "
                                          "it has no PyPy build")
    results = md.run("both", epochs=QUICK_EPOCHS, verbose=False)
    train_acc, test_acc, costs = results["mlp"]
    assert test_acc >= 0.95, results["mlp"][:2]
    assert costs[-1] < costs[0] / 4     # it trained
    assert results["softmax"][1] >= 0.90, results["softmax"][:2]


@pytest.mark.skipif(any(shutil.which(t) is None for t in ("make", "gcc")),
                    reason="exports are built with make and gcc; one is missing")
def test_exported_mlp_step_runs_100_steps_from_c(tmp_path):
    rng = np.random.default_rng(7)
    x = rng.random((32, 64))
    y = rng.integers(0, 10, 32).astype(np.int64)
    train, _, params, srng = md.build_mlp(64, n_hidden=40, linker="c")
    saved = steps_from_c(train, tmp_path, [x, y], 100)
    before = [p.get_value() for p in params]
    for _ in range(100):
        train(x, y)
    for p, start in zip(params, before):
        got = np.load(str(saved / ("%s.npy" % p.name)))
        want = p.get_value()
        assert np.abs(want - start).max() > 1e-3, p.name    # it trained
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12, err_msg=p.name)
    (state, _), = srng.updates()        # the dropout stream: 100 calls later, in both
    np.testing.assert_array_equal(np.load(str(saved / ("%s.npy" % state.name))), state.get_value())
    assert state.get_value()[1] == 100
