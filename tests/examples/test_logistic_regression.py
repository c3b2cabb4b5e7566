"""The logistic-regression tutorial (examples/logistic_regression.py): its first steps are those of
the same gradient descent written by hand in numpy, it learns, the linkers agree, and a run under
the other Python implementation (PyPy from CPython, CPython from PyPy) gives the same parameters.

"It learns" and "the linkers agree" would both pass with a wrong gradient (one off by a constant
factor still descends, and every linker runs the same wrong graph): the numpy comparison is what
pins the gradient ``ffigraph.grad`` derived.

The cross-implementation test looks for the other interpreter in ``$FFIGRAPH_PYPY`` (or
``$FFIGRAPH_CPYTHON`` when the tests run on PyPy), then in the venv ``./dev test`` makes for it
(``.venv-pypy`` or ``.venv``), then ``pypy3``/``pypy`` (``python3``/``python``) on PATH; it is skipped, saying why, when none can import numpy, cffi and ffigraph.
"""
import functools
import os
import platform
import re
import shutil
import subprocess

import numpy as np
import pytest

import logistic_regression as lr

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # the repository
SCRIPT = os.path.join(ROOT, "examples", "logistic_regression.py")
STEPS = 1000
PARAM_TOL = 1e-10
CHECKED_STEPS = 5     # steps whose parameters are compared with numpy's, one by one
NUMPY_RTOL = 1e-10    # float64: summation order and exp/log differ a few ulps, never 1e-10


@functools.lru_cache(maxsize=None)
def training_run(linker):
    """``((w, b, costs, accuracy), history)`` after STEPS steps of ``lr.train_model`` under ``linker``,
    computed once per session; ``history`` holds ``(w, b)`` after each of the first CHECKED_STEPS steps.

    The one ``train`` function ``train_model`` compiles is wrapped (through ``lr.build``) to read
    the shared parameters after each early step: the same compile serves both checks."""
    history = []
    real_build = lr.build

    def recording_build(*args, **kwargs):
        train, predict, w, b = real_build(*args, **kwargs)

        def recording_train(*values):
            out = train(*values)
            if len(history) < CHECKED_STEPS:
                history.append((w.get_value(), float(b.get_value())))
            return out
        return recording_train, predict, w, b

    lr.build = recording_build
    try:
        result = lr.train_model(linker, STEPS)
    finally:
        lr.build = real_build
    assert len(history) == CHECKED_STEPS
    return result, history


def trained(linker):
    """``(w, b, costs, accuracy)`` after STEPS steps under ``linker``."""
    return training_run(linker)[0]


def numpy_steps(x, y, steps):
    """``[(w, b, cost)]`` after each of ``steps`` gradient-descent steps from w = 0, b = 0, written
    by hand in numpy (``cost`` is the one computed before that step's update, as ``train`` returns).

    cost = mean(xent) + L2 |w|^2 with xent = -y log p - (1-y) log(1-p), p = sigmoid(x.w + b);
    d xent / dz = p - y, so  d cost / dw = x.T (p - y) / n + 2 L2 w  and  d cost / db = mean(p - y)."""
    n = x.shape[0]
    w, b = np.zeros(x.shape[1]), 0.0
    out = []
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(x.dot(w) + b)))
        cost = np.mean(-y * np.log(p) - (1 - y) * np.log(1 - p)) + lr.L2 * np.sum(w ** 2)
        gw = x.T.dot(p - y) / n + 2 * lr.L2 * w
        gb = np.mean(p - y)
        w = w - lr.LEARNING_RATE * gw
        b = b - lr.LEARNING_RATE * gb
        out.append((w, b, cost))
    return out


@pytest.mark.parametrize("linker", ["py", "c"])
def test_first_steps_are_numpys(linker):
    """w, b after each of the first steps, and each step's cost, equal the hand-written numpy step's."""
    (_, _, costs, _), history = training_run(linker)
    x, y = lr.make_data()
    reference = numpy_steps(x, y, CHECKED_STEPS)
    for step, ((w, b), (w_ref, b_ref, cost_ref)) in enumerate(zip(history, reference)):
        assert w.dtype == np.float64 and w.shape == (lr.FEATS,)
        assert np.max(np.abs(w_ref)) > 1e-3, "numpy's w moved away from 0: the comparison is not vacuous"
        np.testing.assert_allclose(w, w_ref, rtol=NUMPY_RTOL, atol=NUMPY_RTOL * np.max(np.abs(w_ref)),
                                   err_msg="w after step %d" % (step + 1))
        np.testing.assert_allclose(b, b_ref, rtol=NUMPY_RTOL, atol=0, err_msg="b after step %d" % (step + 1))
        np.testing.assert_allclose(costs[step], cost_ref, rtol=NUMPY_RTOL, atol=0,
                                   err_msg="cost of step %d" % (step + 1))


def param_difference(w1, b1, w2, b2):
    return max(float(np.max(np.abs(np.asarray(w1) - np.asarray(w2)))), abs(float(b1) - float(b2)))


def assert_falling(costs):
    """First > last, every step but a few lowers the cost, and every REPORT_EVERY-th cost is lower."""
    costs = np.asarray(costs)
    assert costs[0] > costs[-1], "cost went from %g to %g" % (costs[0], costs[-1])
    if len(costs) > 1:
        falls = np.mean(np.diff(costs) <= 0)
        assert falls >= 0.9, "the cost fell in only %.0f%% of the steps" % (100 * falls)


def test_learns_under_c_linker():
    w, b, costs, accuracy = trained("c")
    assert w.shape == (lr.FEATS,)
    assert len(costs) == STEPS
    assert np.isclose(costs[0], np.log(2)), "w = 0, b = 0 gives p = 1/2 and a cost of log 2"
    assert_falling(costs)
    reported = costs[::lr.REPORT_EVERY]
    assert np.all(np.diff(reported) < 0), "the reported costs do not fall: %s" % reported
    assert accuracy > 0.95


def test_command_line(tmp_path, capsys):
    """main() prints a falling cost and the accuracy, and --save writes the trained parameters."""
    path = str(tmp_path / "params.npz")
    lr.main(["--linker", "c", "--steps", str(STEPS), "--save", path])
    out = capsys.readouterr().out
    printed = [float(c) for c in re.findall(r"^step +\d+ +cost ([-+.\deE]+)$", out, re.M)]
    assert len(printed) == STEPS // lr.REPORT_EVERY + 1, out
    assert_falling(printed)
    assert all(a > b for a, b in zip(printed, printed[1:])), out
    accuracy = float(re.search(r"training accuracy: ([.\d]+)", out).group(1))
    assert accuracy > 0.95, out
    w, b, _, _ = trained("c")
    with np.load(path) as saved:
        assert param_difference(saved["w"], saved["b"], w, b) == 0.0, "two runs of the same linker differ"


def test_quiet_prints_only_the_accuracy(capsys):
    lr.main(["--linker", "c", "--steps", "3", "--quiet"])
    assert re.fullmatch(r"training accuracy: [.\d]+\n", capsys.readouterr().out)


def test_py_and_c_linkers_agree():
    w_py, b_py, costs_py, acc_py = trained("py")
    w_c, b_c, costs_c, acc_c = trained("c")
    diff = param_difference(w_py, b_py, w_c, b_c)
    assert diff <= PARAM_TOL, "linker 'py' and linker 'c' parameters differ by %.3g" % diff
    np.testing.assert_allclose(costs_py, costs_c, rtol=1e-10, atol=0)
    assert acc_py == acc_c


# ---------------------------------------------------------------------------- the other implementation

PROBE = "import platform, numpy, cffi, ffigraph; print(platform.python_implementation())"


def subprocess_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT  # import ffigraph from this checkout, without installing it
    return env


def other_interpreter():
    """Path of a working interpreter of the other implementation, or skip the test saying why."""
    if platform.python_implementation() == "PyPy":
        want, variable, names, venv = "CPython", "FFIGRAPH_CPYTHON", ("python3", "python"), ".venv"
    else:
        want, variable, names, venv = "PyPy", "FFIGRAPH_PYPY", ("pypy3", "pypy"), ".venv-pypy"
    candidates = [os.environ[variable]] if os.environ.get(variable) else []
    # the venv ./dev test makes for the other interpreter (present once that run has started)
    candidates.append(os.path.join(ROOT, venv, "bin", "python"))
    candidates += [path for path in map(shutil.which, names) if path]
    tried = []
    for exe in candidates:
        if not os.path.exists(exe):
            continue
        try:
            probe = subprocess.run([exe, "-c", PROBE], env=subprocess_env(), stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as exc:
            tried.append("%s: %s" % (exe, exc))
            continue
        implementation = probe.stdout.strip()
        if probe.returncode == 0 and implementation == want:
            return exe
        if probe.returncode == 0:
            why = "it is %s" % implementation
        else:
            why = (probe.stderr.strip().splitlines() or ["exit status %d" % probe.returncode])[-1]
        tried.append("%s: %s" % (exe, why))
    pytest.skip("no usable %s interpreter (one that can import numpy, cffi and ffigraph; set $%s to choose one)%s"
                % (want, variable, "; tried " + "; ".join(tried) if tried else ": none found on PATH"))


def test_other_implementation_gives_the_same_parameters(tmp_path):
    exe = other_interpreter()
    path = str(tmp_path / "params.npz")
    run = subprocess.run([exe, SCRIPT, "--linker", "c", "--steps", str(STEPS), "--quiet", "--save", path],
                         env=subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, timeout=600)
    assert run.returncode == 0, "%s %s failed:\n%s%s" % (exe, SCRIPT, run.stdout, run.stderr)
    w, b, _, accuracy = trained("c")
    assert "training accuracy: %.4f" % accuracy in run.stdout
    with np.load(path) as saved:
        diff = param_difference(saved["w"], saved["b"], w, b)
    assert diff <= PARAM_TOL, "%s and this interpreter differ by %.3g" % (exe, diff)
