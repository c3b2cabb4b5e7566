"""Timing helpers shared by the bench scripts (bench/ is sys.path[0] when a script runs)."""
import argparse
import json
import os
import subprocess
import time
import timeit


def time_interleaved(fns, repeat, number, clock=time.perf_counter):
    """Best-of-``repeat`` seconds per call for each of ``fns`` (dict), ``number`` calls a timing, rounds
    interleaved (each round times every function once, in a rotating order), after one warm-up timing each."""
    timers = {k: timeit.Timer(f, timer=clock) for k, f in fns.items()}  # timeit turns the GC off while timing
    for t in timers.values():
        t.timeit(number)  # warm up
    best = {k: float("inf") for k in fns}
    keys = list(fns)
    for r in range(repeat):
        shift = r % len(keys)
        for k in keys[shift:] + keys[:shift]:
            best[k] = min(best[k], timers[k].timeit(number) / number)
    return best


def load_average():
    """The 1-minute load average as text ("?" where the system does not tell)."""
    try:
        return "%.2f" % os.getloadavg()[0]
    except (AttributeError, OSError):
        return "?"


def best_of(fn, repeat):
    """The shortest of ``repeat`` timings of one call of ``fn``, in seconds."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def worker_result(python, argv):
    """Run ``python argv...`` (a bench script as a worker under another interpreter: JAX's or
    PyTensor's venv) and read the JSON object its last stdout line holds: (result, None), or
    (None, why) when the interpreter is missing or the worker failed."""
    if not os.path.exists(python):
        return None, "%s not found" % python
    proc = subprocess.run([python] + list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True)
    if proc.returncode != 0:
        return None, "failed: %s" % (proc.stderr.strip().splitlines() or ["exit %d" % proc.returncode])[-1]
    return json.loads(proc.stdout.strip().splitlines()[-1]), None


def side_by_side_parser(doc, repeat, jax_python, pytensor_python):
    """The arguments of a bench that times ffigraph here and JAX and PyTensor in workers:
    --quick, --repeat, --number, --jax-python, --pytensor-python, and the worker's own --worker
    and --npz (the inputs it loads)."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=repeat)
    parser.add_argument("--number", type=int, default=None)
    parser.add_argument("--jax-python", default=jax_python)
    parser.add_argument("--pytensor-python", default=pytensor_python)
    parser.add_argument("--worker", choices=["jax", "pytensor"])
    parser.add_argument("--npz")
    return parser
