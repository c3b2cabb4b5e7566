"""What profiling costs per call: on, off, and off against a checkout without profiling at all;
and how much of the wall time the profile accounts for.

In one process, on the same data, each workload is compiled twice (profile=False and
profile=True) and timed best-of-N, calls interleaved. With ``--baseline DIR`` (a checkout
of an earlier ffigraph, e.g. ``git worktree add /tmp/ffg-base 87983dc``), the same
profile-off timings are also taken in child processes running that checkout and this
one, alternately, and their ratio printed: "no measurable cost" means that ratio stays
within the run-to-run noise, which the script prints beside it.

The second table times 10 profiled calls of the 600x800 matrix graph per linker, garbage
collection off, and prints the ratios that tests/compile/test_profile.py used to assert (calls'
time / wall time around them, expected near 1; node time / calls' time, expected above about
0.5; and the nodes' shares summed, the same ratio from the per-node figures). They are
measurements: the test keeps only what cannot depend on the machine's load (node time <= calls'
time <= wall time).

Run: ``python bench/bench_profile.py [--baseline DIR] [--rounds N] [--json PATH]``. Nothing here is a
pass/fail test. ``--json PATH`` also writes the first table as ``{workload: {"profile off"|"profile on":
seconds per call}}`` and the second's ratios (what bench/run_all.py collects).
"""
import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
import timeit

import numpy as np

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NUMBER, REPEAT = 2000, 7


def workloads():
    """name -> (build(T) -> (inputs, output), argument values, calls per timing)."""
    rng = np.random.default_rng(0)
    small = (rng.standard_normal(10), rng.standard_normal(10))
    big = (rng.standard_normal((300, 300)), rng.standard_normal(300))
    return {
        "x + y, 10 elements": (lambda T: _vec_add(T), small, NUMBER),
        "exp(x)*y + x, sum, 300x300": (lambda T: _matrix_graph(T), big, 100),
    }


def _vec_add(T):
    x, y = T.dvector("x"), T.dvector("y")
    return [x, y], x + y


def _matrix_graph(T):
    x, y = T.dmatrix("x"), T.dvector("y")
    return [x, y], [T.exp(x) * y + x, (x * 2).sum(axis=0)]


def best_per_call(fn, args, number):
    return min(timeit.repeat(lambda: fn(*args), number=number, repeat=REPEAT)) / number


def time_here(profile_flags):
    """{workload: {flag: seconds per call}} for this interpreter's ffigraph."""
    import ffigraph.tensor as T
    from ffigraph import function

    out = {}
    for name, (build, args, number) in workloads().items():
        fns = {}
        for flag in profile_flags:
            ins, outs = build(T)
            fns[flag] = function(ins, outs, **({"profile": flag} if flag is not None else {}))
            fns[flag](*args)   # warm: compiled, loaded, caches filled
        times = {flag: [] for flag in profile_flags}
        for _ in range(3):     # interleaved, so a noisy moment hits both
            for flag, fn in fns.items():
                times[flag].append(best_per_call(fn, args, number))
        out[name] = {str(flag): min(ts) for flag, ts in times.items()}
    return out


def child(root):
    """Profile-off timings in a child process running the ffigraph found at ``root``."""
    env = dict(os.environ, PYTHONPATH=root)
    code = "import sys, json; sys.path.insert(0, %r); import bench_profile as b; print(json.dumps(b.time_here([None])))" \
        % os.path.join(HERE, "bench")
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def totals_vs_wall(linkers=("c", "cvm", "c|py", "py"), calls=10):
    """{linker: (calls' seconds / wall, node seconds / calls' seconds, sum of node shares)}."""
    import ffigraph.tensor as T
    from ffigraph import Mode, function

    rng = np.random.default_rng(0)
    args = (rng.standard_normal((600, 800)), rng.standard_normal(800))   # the nodes, not the call, take the time
    out = {}
    for linker in linkers:
        ins, outs = _matrix_graph(T)
        f = function(ins, outs, mode=Mode(linker=linker), profile=True)
        f(*args)
        f.profile.reset()
        gc.collect()
        gc.disable()   # a collection of earlier garbage inside the loop is nobody's node time
        try:
            start = time.perf_counter()
            for _ in range(calls):
                f(*args)
            wall = time.perf_counter() - start
        finally:
            gc.enable()
        prof = f.profile
        out[linker] = (prof.seconds / wall, prof.node_seconds / prof.seconds, sum(s.share for s in prof.nodes()))
    return out


def fmt(t):
    return "%8.2f us" % (t * 1e6)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", metavar="DIR", help="a checkout of ffigraph from before profiling")
    parser.add_argument("--rounds", type=int, default=4, help="alternating child runs per checkout (default 4)")
    parser.add_argument("--json", metavar="PATH", help="also write the timings as JSON (bench/run_all.py reads it)")
    args = parser.parse_args(argv)

    print("profile on vs off, one process (best of %d, interleaved):" % REPEAT)
    here = time_here([False, True])
    for name, t in here.items():
        print("  %-28s off %s   on %s   on/off %.3f" % (name, fmt(t["False"]), fmt(t["True"]),
                                                       t["True"] / t["False"]))
    print("\nprofile totals vs the wall time around 10 calls, exp(x)*y + x and sum, 600x800:")
    totals = totals_vs_wall()
    for linker, (calls_wall, nodes_calls, shares) in totals.items():
        print("  linker %-5s calls/wall %.3f   nodes/calls %.3f   node shares summed %.3f"
              % (linker, calls_wall, nodes_calls, shares))
    if args.json:
        import platform
        with open(args.json, "w") as fh:
            json.dump(dict(machine="%s %s, numpy %s" % (platform.python_implementation(), platform.python_version(),
                                                        np.__version__),
                           ratios={linker: dict(zip(("calls/wall", "nodes/calls", "node shares summed"), r))
                                   for linker, r in totals.items()},
                           seconds={name: {"profile off": t["False"], "profile on": t["True"]}
                                    for name, t in here.items()}), fh, indent=1)
    if not args.baseline:
        return
    print("\nprofile off here vs %s (child processes, alternating, %d rounds):" % (args.baseline, args.rounds))
    runs = {"here": [], "baseline": []}
    for _ in range(args.rounds):
        runs["baseline"].append(child(os.path.abspath(args.baseline)))
        runs["here"].append(child(HERE))
    for name in workloads():
        here = [r[name]["None"] for r in runs["here"]]
        base = [r[name]["None"] for r in runs["baseline"]]
        noise = (max(base) - min(base)) / statistics.median(base)
        print("  %-28s here %s   baseline %s   here/baseline %.3f   (baseline's own spread %.1f%%)"
              % (name, fmt(statistics.median(here)), fmt(statistics.median(base)),
                 statistics.median(here) / statistics.median(base), 100 * noise))


if __name__ == "__main__":
    main()
