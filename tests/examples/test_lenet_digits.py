"""The LeNet example (examples/lenet_digits.py): its first training steps are those of the same
step written by hand in numpy (examples/lenet_numpy.py: im2col convolutions, max pooling, spatial
batch norm with running averages, dropout, softmax cross-entropy, SGD), it reaches 97 % held out
on scikit-learn's digits, and its training step, exported, runs 10 steps from a C host that knows
only the ABI header (tests/examples/step_host.c) and ends with Python's parameters.

The numpy step is the oracle: it shares nothing with ffigraph but the initial parameters and the
dropout masks, which the compiled step returns with its cost (they come from its Philox stream).
The accuracy test needs scikit-learn (the data ship inside it), which has no PyPy build; the step
and export tests use random data and run on both interpreters.
"""
import os
import platform
import shutil
import subprocess

import numpy as np
import pytest

import lenet_digits as ld
import lenet_numpy as ref
from export_helpers import no_python_env

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def random_batches(rng, n, steps, dtype):
    """``steps`` minibatches of random images in [0, 1) and labels."""
    return [(rng.random((n, 1, 28, 28)).astype(dtype), rng.integers(0, 10, n).astype(np.int64))
            for _ in range(steps)]


@pytest.mark.parametrize("linker", ["c", "py"])
def test_lenet_first_steps_match_the_numpy_step(linker):
    # float64, so that the comparison is tight: the two sides sum in different orders (im2col
    # matmuls vs ffigraph's conv kernels), which costs a few ulps per step, never 1e-10. Under
    # "c" the whole step is C (the strict linker refuses a node without C code); under "py" every
    # op's perform, the reference semantics.
    rng = np.random.default_rng(5)
    start = ref.init_params(11, "float64")
    for name in start:   # gamma 1 and beta 0 would leave half of the batch norm's gradient untested
        if name.startswith(("gamma", "beta", "b")):
            start[name] = start[name] + rng.normal(0.0, 0.2, start[name].shape)
    model = ld.LeNet(linker=linker, dtype="float64", init=start, with_predict=False)
    params, state = model.values()
    lr = 0.1
    for step, (x, y) in enumerate(random_batches(rng, 6, 3, "float64")):
        if step == 1:
            x = x[:, :, ::-1, :]      # a view with negative strides: the step copies nothing wrong
        cost, mask1, mask2 = model.train(x, y, np.float64(lr))
        assert mask1.shape == (6, 120) and mask2.shape == (6, 84)
        assert set(np.unique(mask1)) <= {0.0, 1.0} and 0 < mask1.sum() < mask1.size
        params, state, want_cost = ref.step(params, state, x, y, (mask1, mask2), lr)
        assert abs(float(cost) - want_cost) <= 1e-10 * abs(want_cost), (step, cost, want_cost)
        got_params, got_state = model.values()
        for name, want in list(params.items()) + list(state.items()):
            got = got_params.get(name, got_state.get(name))
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12,
                                       err_msg="%s after step %d" % (name, step + 1))
    for name, before in start.items():     # every parameter moved
        assert np.abs(params[name] - before).max() > 1e-5, name


def test_digits_held_out_accuracy():
    pytest.importorskip("sklearn", reason="scikit-learn (which ships the digits data) is not installed here; "
                                          "it has no PyPy build")
    # the full example (12 epochs, a few seconds); the "c" linker: its training step is then the
    # library the export test builds (one compile for both)
    train_acc, test_acc, costs = ld.run(linker="c", verbose=False)
    assert test_acc >= 0.97, (train_acc, test_acc)
    assert costs[-1] < costs[0] / 4     # it trained


def _build_host(folder):
    """step_host.c compiled against a folder holding ffigraph_abi.h alone."""
    include = os.path.join(str(folder), "include")
    os.mkdir(include)
    shutil.copy(os.path.join(ROOT, "ffigraph", "abi", "ffigraph_abi.h"), include)
    host = os.path.join(str(folder), "step_host")
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-I", include,
                    os.path.join(HERE, "step_host.c"), "-ldl", "-o", host], check=True)
    return host


@pytest.mark.skipif(shutil.which("gcc") is None, reason="the C host is built with gcc")
@pytest.mark.skipif(platform.python_implementation() == "PyPy",
                    reason="the exported library and its C host are the same bytes from either interpreter "
                           "(export from PyPy: tests/export); CPython runs this one")
def test_exported_lenet_step_runs_10_steps_from_c(tmp_path):
    rng = np.random.default_rng(9)
    (x, y), = random_batches(rng, 16, 1, "float32")
    lr = np.float32(0.05)
    model = ld.LeNet(linker="c", dtype="float32", with_predict=False)
    bundle = model.train.export(str(tmp_path / "bundle"), example_inputs=[x, y, lr])
    host = _build_host(tmp_path)
    env = no_python_env(tmp_path)
    listing = subprocess.run([host, bundle.library, "list"], env=env, check=True, stdout=subprocess.PIPE,
                             universal_newlines=True).stdout.split("\n")
    slots = [line.split() for line in listing if line.strip()]   # index, name, role, ndim
    streams = [state for state, _ in model.srng.updates()]   # one Philox state per dropout draw
    shared = {v.name: v for v in model.params + model.state + streams}
    values = {"x": x, "y": y, "lr": lr}
    values.update((name, v.get_value()) for name, v in shared.items())
    assert sorted(name for _, name, _, _ in slots) == sorted(values)
    given, saved = tmp_path / "given", tmp_path / "saved"
    given.mkdir()
    saved.mkdir()
    for _, name, _, ndim in slots:
        value = np.array(values[name], order="C")   # (ascontiguousarray makes a 0-d array 1-d)
        assert value.ndim == int(ndim), name
        (given / (name + ".shape")).write_text(" ".join(str(d) for d in value.shape) + "\n")
        value.tofile(str(given / (name + ".bin")))
    proc = subprocess.run([host, bundle.library, "run", str(given), "10", str(saved)], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    assert proc.returncode == 0, proc.stderr
    assert "10 step(s) run" in proc.stdout, proc.stdout
    c_costs = [float(line.split()[2]) for line in proc.stdout.splitlines() if line.startswith("step ")]
    py_costs = [float(model.train(x, y, lr)[0]) for _ in range(10)]
    np.testing.assert_allclose(c_costs, py_costs, rtol=1e-5)
    assert py_costs[-1] < py_costs[0]     # it trained
    for name, v in shared.items():
        want = v.get_value()
        got = np.fromfile(str(saved / (name + ".bin")), dtype=want.dtype).reshape(want.shape)
        if v in streams:      # the dropout streams: 10 calls later, in both
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)
