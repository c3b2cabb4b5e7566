"""Timing helpers shared by the bench scripts (bench/ is sys.path[0] when a script runs)."""
import os
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
