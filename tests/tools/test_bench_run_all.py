"""bench/run_all.py's bookkeeping on made-up figures: merging runs, the issue-23 targets, the
before/after table and the chart data. No benchmark runs here."""
import importlib.util
import os

from helpers import REPO_ROOT

RUN_ALL_PY = os.path.join(REPO_ROOT, "bench", "run_all.py")


def load_run_all():
    # bench/ is not a package: load the file under a private name so nothing else can clash.
    spec = importlib.util.spec_from_file_location("_ffigraph_bench_run_all", RUN_ALL_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(label, interp, job, seconds, error=None):
    return {"label": label, "interpreter": interp, "job": job, "error": error, "data": {"seconds": seconds}}


US = 1e-6
CALL_CPYTHON = {"x+y 1 elem": {"numpy": 0.4 * US, "ffigraph": 1.5 * US, "ffigraph trusted": 0.7 * US},
                "50 inputs": {"numpy": 30 * US, "ffigraph": 30 * US, "ffigraph trusted": 5.0 * US}}
CALL_PYPY = {"x+y 1 elem": {"numpy": 2 * US, "ffigraph": 1.6 * US, "ffigraph trusted": 0.75 * US},
             "50 inputs": {"numpy": 90 * US, "ffigraph": 45 * US, "ffigraph trusted": 6 * US}}
CALL_PYTENSOR = {"x+y 1 elem": {"ffigraph": 1.5 * US, "ffigraph trusted": 0.7 * US, "pytensor cvm": 3.5 * US,
                                "pytensor cvm trusted": 0.9 * US},
                 "50 inputs": {"ffigraph": 30 * US, "ffigraph trusted": 5.0 * US, "pytensor cvm": 56 * US,
                               "pytensor cvm trusted": 3.6 * US}}
FUSION = {"exp(x)*y+tanh(x)-1.5*y n=1e+05 float64": {"numpy": 3e-4, "ffigraph default": 3e-4},
          "exp(x)*y+tanh(x)-1.5*y n=1e+07 float64": {"numpy": 0.2, "ffigraph default": 0.05},
          "exp(x)*y+tanh(x)-1.5*y n=1e+07 float32": {"numpy": 0.2, "ffigraph default": 0.5},
          "sum(exp(x)*y, axis=None) 1000x10000 float64": {"numpy": 0.024, "ffigraph default": 0.006},
          "sum(exp(x)*y, axis=0) 1000x10000 float64": {"numpy": 0.024, "ffigraph default": 0.012}}


def test_merge_keeps_the_best_of_rounds_and_drops_failed_runs():
    ra = load_run_all()
    runs = [run("current", "cpython", "call", {"x+y 1 elem": {"ffigraph": 2e-6, "numpy": 4e-7}}),
            run("current", "cpython", "call", {"x+y 1 elem": {"ffigraph": 1.5e-6, "numpy": 5e-7}}),
            run("current", "cpython", "call", {"x+y 1 elem": {"ffigraph": 1e-9}}, error="boom"),
            run("old", "pypy", "call", {"x+y 1 elem": {"ffigraph": 3e-6, "bad": float("nan")}}),
            {"label": "current", "interpreter": "cpython", "job": "dot", "error": None, "data": None}]
    merged = ra.merge(runs)
    assert merged == {"current": {"cpython": {"call": {"x+y 1 elem": {"ffigraph": 1.5e-6, "numpy": 4e-7}}}},
                      "old": {"pypy": {"call": {"x+y 1 elem": {"ffigraph": 3e-6}}}}}


def test_targets_on_made_up_figures():
    ra = load_run_all()
    results = ra.merge([run("current", "cpython", "call", CALL_CPYTHON), run("current", "pypy", "call", CALL_PYPY),
                        run("current", "pytensor", "call", CALL_PYTENSOR),
                        run("current", "cpython", "fusion", FUSION)])
    rows = {r["target"]: r for r in ra.targets(results["current"])}

    def ok(start):
        (found,) = [r for name, r in rows.items() if name.startswith(start)]
        return found["ok"]

    assert ok("x+y 1 elem, CPython, default <= 2.0") is True
    assert ok("x+y 1 elem, CPython, trusted <= 0.8") is True
    assert ok("x+y 1 elem, ffigraph / pytensor cvm <") is True
    assert ok("x+y 1 elem, ffigraph trusted / pytensor cvm trusted <") is True
    # per extra input: trusted (5.0 - 0.7) / 48 = 0.09 us, default (30 - 1.5) / 48 = 0.59 us
    assert ok("50 inputs, CPython trusted") is True
    assert ok("50 inputs, CPython default") is True
    # pytensor trusted: (3.6 - 0.9) / 48 = 0.06 us, less than ffigraph's
    assert ok("50 inputs, per extra input: ffigraph trusted / pytensor") is False
    assert ok("PyPy / CPython, bench_call 'x+y 1 elem'") is True          # 0.75 / 0.7 = 1.07
    assert ok("PyPy / CPython, bench_call '50 inputs'") is False          # 45 / 30 = 1.5
    assert ok("fused exp(x)*y+tanh(x)-1.5*y, n=1e+07 float64") is True    # the largest float64 size: 4x
    assert ok("sum(exp(x)*y), axis=None") is True
    assert ok("sum(exp(x)*y), axis=0") is False
    assert ok("sum(exp(x)*y) 1e7 axis=1") is None                          # not run: not measured
    assert ok("logistic-regression") is None
    assert ok("numpy dot then ffigraph dot alternating") is None
    table = "\n".join(ra.targets_table(ra.targets(results["current"])))
    assert "| PASS |" in table and "| MISS |" in table and "| n/a |" in table


def test_compare_rows_leave_numpy_out_and_measure_the_noise_with_it():
    ra = load_run_all()
    results = ra.merge([
        run("old", "cpython", "call", {"x+y 1 elem": {"numpy": 4e-7, "ffigraph": 5e-6, "pytensor cvm": 3e-6}}),
        run("current", "cpython", "call", {"x+y 1 elem": {"numpy": 5e-7, "ffigraph": 1.25e-6,
                                                           "pytensor cvm": 3e-6}, "new row": {"ffigraph": 1e-6}}),
        run("current", "cpython", "fusion", {"w": {"ffigraph default": 1.0}})])
    rows, noise = ra.compare_rows(results, "old", "current")
    assert rows == [("call", "cpython", "x+y 1 elem", "ffigraph", 5e-6, 1.25e-6)]
    assert noise == [1.25]
    table = ra.compare_table(results, "old", "current", ["loop-threads under cpython for old: no config.threads"])
    assert "| call | cpython | x+y 1 elem | ffigraph | 5 µs | 1.25 µs | 0.25 |" in table
    assert table[-1].startswith("not compared: loop-threads")


def test_chart_data_labels_interpreters_and_trees():
    ra = load_run_all()
    results = ra.merge([run("current", "cpython", "call", {"w": {"numpy": 1.0, "ffigraph": 2.0, "np.copy": 0.5,
                                                                  "memory bound": 0.4}}),
                        run("current", "pypy", "call", {"w": {"numpy": 3.0, "ffigraph": 4.0, "memory bound": 0.4}}),
                        run("current", "pytensor", "call", {"w": {"numpy": 9.0, "ffigraph": 9.0, "pytensor cvm": 5.0}}),
                        run("old", "cpython", "call", {"w": {"numpy": 9.0, "ffigraph": 6.0}})])
    assert ra.chart_data(results, "current", "call", ["old"]) == {"w": {
        "numpy": 1.0, "ffigraph": 2.0, "memory bound": 0.4, "pytensor cvm": 5.0, "numpy [pypy]": 3.0, "ffigraph [pypy]": 4.0,
        "ffigraph [old]": 6.0}}
