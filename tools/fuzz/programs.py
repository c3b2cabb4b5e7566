"""Fuzz whole programs: random graphs compiled under every linker, each output compared with numpy.

Programs come from gen.py (seeded: program I of seed S is always the same) over a batch's shared
inputs; most batches put many programs into one compiled function (one output per program, plus
its gradient's), a few compile one program alone. Every output of every linker is compared with
the numpy evaluation of the same program (gradients with a numpy reverse-mode derivative that
the generator builds beside the graph). A campaign runs in worker processes whose C is built with
AddressSanitizer + UBSan (as ./dev's sanitizer phase does); a signal or a sanitizer report is a
crash, recorded with (seed, index) and the programs' text.

    python tools/fuzz/programs.py --seed 1 --count 2000                  # a campaign, sanitized workers
    python tools/fuzz/programs.py --seed 1 --count 200 --in-process      # no sanitizers, this process
    python tools/fuzz/programs.py --replay 1:1234                        # program 1234 of seed 1, alone

Exit status: 0 when nothing crashed or disagreed, 1 otherwise. ``run_batch`` and ``campaign``
are the API the test uses.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
for path in (ROOT, HERE):
    if path not in sys.path:
        sys.path.insert(0, path)

import numpy as np  # noqa: E402

import ffigraph  # noqa: E402
import ffigraph.tensor as T  # noqa: E402
from ffigraph.compile.mode import Mode  # noqa: E402

import gen  # noqa: E402

LINKERS = ("py", "c", "cvm", "c|py")
# Compiling is the cost (gcc, not ffigraph: a batch's library is ~1 MB of C; c|py builds one ~45 KB
# library per node), so every batch runs under py (the default rewrites, each op's perform) and a
# seeded share of batches under the C linkers too (cvm reuses c's library: nearly free after it).
C_SHARE = {"c": 0.08, "cvm": 0.08, "c|py": 0.015}
BATCH = 24          # program indices per batch
SOLO = 0.06         # the share of batches that compile their first program alone
WILD = 0.3          # the share of batches whose float inputs hold NaN, inf, zeros, 1e300
# (rtol, atol) by dtype; gradients are compared with a numpy derivative, one more rounding path
TOLERANCE = {"float64": (1e-8, 1e-10), "float32": (2e-3, 1e-4)}
GRAD_TOLERANCE = {"float64": (1e-7, 1e-9), "float32": (5e-3, 1e-3)}


# ------------------------------------------------------------------ one batch


class Batch:
    """Batch ``number`` of campaign ``seed``: its inputs and programs (indices number*BATCH...)."""

    def __init__(self, seed, number, only=None):
        rng = random.Random("%d:batch:%d" % (seed, number))
        self.seed, self.number = seed, number
        self.stabilized = 0   # positions let through by compare (a finite result where numpy's is not)
        self.wild = rng.random() < WILD
        self.solo = rng.random() < SOLO
        draw = rng.random()   # one draw, so c and cvm come together and c|py's batches are among them
        self.linkers = ("py",) + tuple(l for l in ("c", "cvm", "c|py") if draw < C_SHARE[l])
        self.values = gen.input_values(rng, self.wild)
        self.syms = gen.input_vars()
        first = number * BATCH
        indices = [first] if self.solo else range(first, first + BATCH)
        if only is not None:
            indices = [i for i in indices if i in only]
        self.programs = []
        for i in indices:
            program, g = gen.generate(seed, i, self.syms, self.values, self.wild)
            self.programs.append((program, g))

    def outputs(self, programs=None):
        """[(program, what, ffigraph variable, expected numpy value)]; what: 'value' or 'grad <input>'."""
        out = []
        for program, g in (programs or self.programs):
            out.append((program, "value", g.syms[program.out], g.values[program.out]))
            # a float32 value on the way bounds the precision of everything after it
            program.precision = "float32" if any(
                program.nodes[i].dtype == "float32" for i in gen.ancestors(program.nodes, program.out)) else "float64"
            if program.wrt:
                cost = T.sum(g.syms[program.out] * T.constant(program.weights))
                grads = ffigraph.grad(cost, [self.syms[i] for i in program.wrt], disconnected_inputs="ignore")
                expected = gen.vjp_program(program.nodes, g.values, {program.out: program.weights})
                for i, sym in zip(program.wrt, grads):
                    want = expected.get(i, np.zeros(self.values[i].shape))
                    out.append((program, "grad " + gen.INPUTS[i][0], sym, want.astype(self.values[i].dtype)))
        return out


def compare(got, want, dtype, grad, precision="float64"):
    """(None when ``got`` matches ``want`` else why not, how many positions were let through).

    NaN positions must match. ``precision``: the lowest float precision the value was computed
    through. Let through: a finite result where numpy's is inf, since a rewrite may
    stabilize what numpy computes naively (log1p(exp(1e300)) is 1e300 as softplus, inf in numpy);
    only wild batches (inputs with inf and 1e300) reach a non-finite numpy value."""
    got = np.asarray(got)
    if got.shape != want.shape:
        return "shape %s, numpy %s" % (got.shape, want.shape), 0
    if str(got.dtype) != dtype:
        return "dtype %s, the graph says %s" % (got.dtype, dtype), 0
    if dtype in gen.ops.FLOATS:
        rtol, atol = (GRAD_TOLERANCE if grad else TOLERANCE)["float32" if "float32" in (dtype, precision) else "float64"]
        g64, w64 = got.astype("float64"), want.astype("float64")
        if not np.array_equal(np.isnan(g64), np.isnan(w64)):
            where = tuple(int(i) for i in np.argwhere(np.isnan(g64) != np.isnan(w64))[0])
            return "NaN at different positions (first %s: %r, numpy %r)" % (where, float(g64[where]),
                                                                            float(w64[where])), 0
        stabilized = np.isfinite(g64) & np.isinf(w64)
        with np.errstate(all="ignore"):
            ok = np.isclose(g64, w64, rtol=rtol, atol=atol, equal_nan=True) | stabilized
        if not ok.all():
            bad = tuple(int(i) for i in np.argwhere(~ok)[0])
            return "differs at %s: %r, numpy %r" % (bad, float(g64[bad]), float(w64[bad])), 0
        return None, int(stabilized.sum())
    if not np.array_equal(got, want):
        return "values differ: %r, numpy %r" % (got.ravel()[:8], want.ravel()[:8]), 0
    return None, 0


def _finding(kind, linker, program, what, detail):
    return dict(kind=kind, linker=linker, seed=program.seed, index=program.index, what=what,
                detail=detail[:2000], program=program.text())


def run_linker(batch, linker, programs=None):
    """Compile the programs of ``batch`` (default all) into one function under ``linker``, call it
    and compare; returns findings (dicts). An exception is isolated to the programs that raise alone
    (if none does, it is the batch's: a finding of its first program, naming the batch)."""
    programs = programs or batch.programs
    try:
        outs = batch.outputs(programs)
        f = ffigraph.function(batch.syms, [o[2] for o in outs], mode=Mode(linker=linker), on_unused_input="ignore")
        results = f(*batch.values)
    except Exception as e:
        detail = "%s: %s\n%s" % (type(e).__name__, str(e)[:1500], _tail(e))
        if len(programs) == 1:
            return [_finding("error", linker, programs[0][0], "build or call", detail)]
        found = []
        for p in programs:
            found += run_linker(batch, linker, [p])
        if found:
            return found
        if linker == "py" or len(programs) <= MINIMIZE_C:
            programs = minimize(batch, linker, programs)
        finding = _finding("error", linker, programs[0][0], "only together with programs %s"
                           % [p.index for p, _ in programs], detail)
        finding["program"] = "\n\n".join("# program %d:%d\n%s" % (p.seed, p.index, p.text()) for p, _ in programs)
        return [finding]
    found = []
    for (program, what, sym, want), got in zip(outs, results):
        why, lenient = compare(got, want, sym.dtype, what != "value", program.precision)
        batch.stabilized += lenient
        if why:
            found.append(_finding("wrong", linker, program, what, why))
    return found


MINIMIZE_C = 4   # a C linker's batch-only failure is reduced here only when this small (replay reduces any)


def _fails(batch, linker, programs):
    try:
        outs = batch.outputs(programs)
        ffigraph.function(batch.syms, [o[2] for o in outs], mode=Mode(linker=linker),
                          on_unused_input="ignore")(*batch.values)
    except Exception:
        return True
    return False


def minimize(batch, linker, programs):
    """A smallest subset of ``programs`` (greedy: drop one at a time) whose function still raises."""
    keep = list(programs)
    i = 0
    while i < len(keep) and len(keep) > 1:
        trial = keep[:i] + keep[i + 1:]
        if _fails(batch, linker, trial):
            keep = trial
        else:
            i += 1
    return keep


def _tail(e):
    return "".join(traceback.format_exception(type(e), e, e.__traceback__)[-3:])[-600:]


def run_batch(seed, number, linkers=LINKERS, only=None, every=False, on_linker=None):
    """(programs run, {linker: programs run}, findings, positions let through) of one batch under those of ``linkers`` its
    draw selects (``every``: all of ``linkers``)."""
    try:
        batch = Batch(seed, number, only)
    except Exception as e:   # a generator bug: the fuzzer's own, reported all the same
        return 0, {}, 0, [dict(kind="generator", linker="-", seed=seed, index=number * BATCH, what="generate",
                            detail="%s: %s\n%s" % (type(e).__name__, e, _tail(e)), program="")]
    found, ran = [], {}
    for linker in linkers:
        if every or linker in batch.linkers:
            if on_linker:
                on_linker(linker)
            found += run_linker(batch, linker)
            ran[linker] = len(batch.programs)
    return len(batch.programs), ran, found, batch.stabilized


def batches_for(count):
    """Batch numbers covering program indices 0..count-1."""
    return range((count + BATCH - 1) // BATCH)


# ------------------------------------------------------------------ workers (sanitized subprocesses)


def sanitizer_env(compiledir):
    """The environment of ./dev's sanitizer phase: libasan/libubsan preloaded, sanitize flags set."""
    env = dict(os.environ)
    cc = env.get("CC", "gcc")
    libs = []
    for lib in ("libasan.so", "libubsan.so"):
        path = subprocess.run([cc, "-print-file-name=" + lib], stdout=subprocess.PIPE,
                              universal_newlines=True).stdout.strip()
        if not os.path.isabs(path) or not os.path.exists(path):
            return None
        libs.append(path)
    env["LD_PRELOAD"] = " ".join(libs + ([env["LD_PRELOAD"]] if env.get("LD_PRELOAD") else []))
    env["ASAN_OPTIONS"] = "detect_leaks=0:allocator_may_return_null=1:abort_on_error=1"
    env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1:abort_on_error=1"
    env["FFIGRAPH_FLAGS"] = "sanitize=address+undefined,compiledir=" + compiledir
    env["PYTHONWARNINGS"] = "ignore"
    return env


def plain_env(compiledir):
    env = dict(os.environ)
    env["FFIGRAPH_FLAGS"] = "compiledir=" + compiledir
    return env


# the test's way to make a worker die as a crash would (abort as it starts that batch)
ABORT_AT = "FFIGRAPH_FUZZ_ABORT_AT"


def worker_main(seed, numbers, linkers, every):
    """The worker: one JSON line as each batch starts and one with its results."""
    for number in numbers:
        print(json.dumps(dict(start=number)), flush=True)
        if os.environ.get(ABORT_AT) == str(number):
            os.abort()
        n, ran, found, lenient = run_batch(seed, number, linkers, every=every,
                                           on_linker=lambda l: print(json.dumps(dict(linker=l)), flush=True))
        print(json.dumps(dict(done=number, programs=n, ran=ran, findings=found, stabilized=lenient)), flush=True)


CRASH_MARKS = ("ERROR: AddressSanitizer", "runtime error:", "Segmentation fault", "Fatal Python error")


def run_worker(python, seed, numbers, linkers, env, hang_s, log, every=False, on_done=None):
    """Run a worker over ``numbers``; returns (done {number: (programs, {linker: programs}, findings, let through)},
    crash or None) where crash = (batch number, linker, why, stderr tail); ``on_done(number, *result)`` as
    each batch's result arrives."""
    cmd = [python, os.path.abspath(__file__), "--worker", "--seed", str(seed), "--linkers", ",".join(linkers),
           "--batches", ",".join(str(n) for n in numbers)] + (["--every"] if every else [])
    errpath = tempfile.mktemp(prefix="ffigraph-fuzz-worker-", suffix=".err")
    done, current, linker = {}, None, None
    with open(errpath, "w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, env=env, universal_newlines=True)
        timer = [time.time()]
        killed = []

        def watchdog():
            while proc.poll() is None:
                if time.time() - timer[0] > hang_s:
                    killed.append(True)
                    proc.kill()
                    return
                time.sleep(1)
        threading.Thread(target=watchdog, daemon=True).start()
        for line in proc.stdout:
            timer[0] = time.time()
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if "start" in msg:
                current, linker = msg["start"], None
            elif "linker" in msg:
                linker = msg["linker"]
            else:
                done[msg["done"]] = (msg["programs"], msg["ran"], msg["findings"], msg["stabilized"])
                if on_done:
                    on_done(msg["done"], *done[msg["done"]])
                current = None
        proc.wait()
    with open(errpath) as fh:
        stderr = fh.read()
    os.unlink(errpath)
    crash = None
    if current is not None or proc.returncode != 0 or any(m in stderr for m in CRASH_MARKS):
        why = "hang (no progress for %d s)" % hang_s if killed else "exit status %s" % proc.returncode
        crash = (current, linker, why, stderr[-6000:])
    if log:
        log("worker %s..%s: %d batches, exit %s" % (numbers[0], numbers[-1], len(done), proc.returncode))
    return done, crash


def new_figures(seed):
    return dict(seed=seed, programs=0, batches=0, per_linker={}, crashes=[], findings=[], stabilized=0,
                started=time.time())


def add_batch(figures, n, ran, found, lenient):
    figures["stabilized"] += lenient
    figures["programs"] += n
    figures["batches"] += 1
    figures["findings"] += found
    for linker, k in ran.items():
        figures["per_linker"][linker] = figures["per_linker"].get(linker, 0) + k


def campaign(seed, count, workers=2, linkers=LINKERS, sanitize=True, chunk=20, hang_s=600, log=None,
             compiledir=None, python=None, on_batch=None, every=False, first=0, on_crash=None, isolate_max=8):
    """Run programs 0..count-1 of ``seed`` in ``workers`` worker processes; returns figures (dict)."""
    compiledir = compiledir or tempfile.mkdtemp(prefix="ffigraph-fuzz-cache-")
    env = sanitizer_env(compiledir) if sanitize else plain_env(compiledir)
    if env is None:
        raise RuntimeError("gcc has no AddressSanitizer/UBSan runtime (libasan.so, libubsan.so)")
    python = python or sys.executable
    todo = [n for n in batches_for(count) if n * BATCH >= first]
    lock = threading.Lock()
    figures = new_figures(seed)

    def take():
        with lock:
            part = todo[:chunk]
            del todo[:chunk]
            return part

    def one_done(number, n, ran, found, lenient):
        with lock:
            add_batch(figures, n, ran, found, lenient)
            if on_batch:
                on_batch(number, n, found, figures)

    def work():
        part = take()
        while part:
            done, crash = run_worker(python, seed, part, linkers, env, hang_s, log, every, one_done)
            with lock:
                if crash is not None:
                    key = crash_key(crash[3])
                    record = dict(seed=seed, batch=crash[0], linker=crash[1], why=crash[2], key=key,
                                  stderr=crash[3], programs=_batch_text(seed, crash[0]), isolated=None)
                    isolate = key not in seen_keys and len(seen_keys) < isolate_max
                    seen_keys.add(key)
                    figures["crashes"].append(record)
            if crash is not None:
                if isolate and crash[0] is not None and crash[1] is not None:
                    record["isolated"] = isolate_crash(python, seed, crash[0], crash[1], env, hang_s)
                if on_crash:
                    on_crash(record)
            rest = [n for n in part if n not in done and n != (crash[0] if crash else None)]
            part = rest if rest else take()
    seen_keys = set()
    threads = [threading.Thread(target=work) for _ in range(max(1, workers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    figures["seconds"] = time.time() - figures["started"]
    return figures


def crash_key(stderr):
    """What kind of crash: the sanitizer's SUMMARY line (or the signal) without numbers and paths."""
    for line in stderr.splitlines():
        if line.startswith("SUMMARY:") or "runtime error:" in line:
            line = re.sub(r"/\S*/", "", line)
            return re.sub(r"\d+", "N", line.strip())[:200]
    return "no sanitizer report"


def isolate_crash(python, seed, number, linker, env, hang_s):
    """The programs of batch ``number`` that crash compiled alone under ``linker`` (a replay each)."""
    crashing = []
    for program, _ in Batch(seed, number).programs:
        cmd = [python, os.path.abspath(__file__), "--replay", "%d:%d" % (seed, program.index), "--linkers", linker,
               "--alone"]
        try:
            proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  universal_newlines=True, timeout=hang_s)
        except subprocess.TimeoutExpired:
            crashing.append((program.index, "hang"))
            continue
        if proc.returncode < 0 or any(m in proc.stderr for m in CRASH_MARKS):
            crashing.append((program.index, crash_key(proc.stderr)))
    return crashing


def _batch_text(seed, number):
    if number is None:
        return ""
    try:
        batch = Batch(seed, number)
    except Exception as e:
        return "(cannot regenerate: %s)" % e
    return "\n\n".join("# program %d:%d\n%s" % (seed, p.index, p.text()) for p, _ in batch.programs)


def summary(figures):
    kinds = {}
    for f in figures["findings"]:
        kinds[f["kind"]] = kinds.get(f["kind"], 0) + 1
    seconds = figures.get("seconds", time.time() - figures["started"])
    return ("seed %d: %d programs in %d batches (per linker: %s), %.0f s (%.2f programs/s); crashes %d; findings %s; %d stabilized positions let through"
            % (figures["seed"], figures["programs"], figures["batches"],
               ", ".join("%s %d" % kv for kv in sorted(figures["per_linker"].items())), seconds,
               figures["programs"] / max(seconds, 1e-9), len(figures["crashes"]),
               ", ".join("%s=%d" % kv for kv in sorted(kinds.items())) or "none", figures["stabilized"]))


def describe_crash(c):
    return ("CRASH in batch %s of seed %d under %s (%s): %s\nalone: %s\n%s\n%s"
            % (c["batch"], c["seed"], c["linker"], c["why"], c["key"],
               "not tried (a kind seen before)" if c["isolated"] is None else c["isolated"] or "no program crashes alone",
               c["stderr"][-2500:], c["programs"]))


def describe(f):
    return ("[%s] %s:%d linker %s, %s: %s\n%s" % (f["kind"], f["seed"], f["index"], f["linker"], f["what"],
                                                  f["detail"], f["program"]))


# ------------------------------------------------------------------ the command line


def replay(seed, index, linkers, alone=False):
    number = index // BATCH
    batch = Batch(seed, number, only={index})
    if not batch.programs:
        print("program %d:%d is not run (batch %d compiles its first program alone)" % (seed, index, number))
        return 0
    program = batch.programs[0][0]
    print("# program %d:%d (batch %d, %s inputs; shapes %s)" % (
        seed, index, number, "wild" if batch.wild else "clean",
        ", ".join("%s%s" % (n, v.shape) for (n, _, _), v in zip(gen.INPUTS, batch.values))))
    print(program.text())
    bad = 0
    for linker in linkers:
        found = run_linker(batch, linker)
        print("%-5s %s" % (linker, "ok" if not found else ""))
        for f in found:
            print("   ", f["what"], f["detail"])
        bad += len(found)
    if not bad and not alone:   # some findings need the rest of the batch (rewrites see all its outputs at once)
        whole = Batch(seed, number)
        for linker in linkers:
            found = [f for f in run_linker(whole, linker) if f["index"] == index or "together" in f["what"]]
            print("%-5s %s (in its batch of %d)" % (linker, "ok" if not found else "", len(whole.programs)))
            for f in found:
                print(describe(f))
            bad += len(found)
    return 1 if bad else 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=2400, help="program indices 0..count-1")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--linkers", default=",".join(LINKERS))
    parser.add_argument("--replay", default=None, help="SEED:INDEX: generate, print and run one program alone")
    parser.add_argument("--in-process", action="store_true", help="run here, without sanitizers")
    parser.add_argument("--no-sanitize", action="store_true", help="workers without sanitizers")
    parser.add_argument("--json", default=None, help="write the figures and findings here")
    parser.add_argument("--every", action="store_true", help="every batch under every linker (default: py, and "
                        "the C linkers on a seeded share of batches, C_SHARE)")
    parser.add_argument("--first", type=int, default=0, help="start at this program index")
    parser.add_argument("--alone", action="store_true", help="with --replay: not in its batch too")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--batches", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    linkers = tuple(args.linkers.split(","))
    if args.worker:
        worker_main(args.seed, [int(n) for n in args.batches.split(",") if n], linkers, args.every)
        return 0
    if args.replay:
        seed, index = (int(p) for p in args.replay.split(":"))
        return replay(seed, index, linkers, args.alone)

    def progress(number, n, found, figures):
        for f in found:
            print(describe(f), flush=True)
        if figures["batches"] % 20 == 0:
            print("... " + summary(figures), flush=True)
            if args.json:   # the figures so far, for a campaign read before it ends
                with open(args.json, "w") as fh:
                    json.dump(figures, fh, indent=1, default=str)

    if args.in_process:
        figures = new_figures(args.seed)
        for number in batches_for(args.count):
            if number * BATCH < args.first:
                continue
            n, ran, found, lenient = run_batch(args.seed, number, linkers, every=args.every)
            add_batch(figures, n, ran, found, lenient)
            progress(number, n, found, figures)
        figures["seconds"] = time.time() - figures["started"]
    else:
        figures = campaign(args.seed, args.count, args.workers, linkers, sanitize=not args.no_sanitize,
                           log=lambda m: print(m, flush=True), on_batch=progress, every=args.every,
                           first=args.first, on_crash=lambda c: print(describe_crash(c), flush=True))
    print(summary(figures))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(figures, fh, indent=1, default=str)
    return 1 if figures["crashes"] or figures["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
