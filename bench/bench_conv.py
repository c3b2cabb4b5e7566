"""Convolutional networks: ffigraph vs JAX CPU vs numpy im2col, side by side in one run.

Run: ``python bench/bench_conv.py`` (``--quick`` for a smoke run, ``--repeat N``, ``--number N``,
``--jax-python PATH``, ``--json PATH``). Four workloads, float32:

- LeNet forward, batch 64: examples/lenet_digits.py's test-time network (conv 5x5 x6, batch norm
  with the running statistics, relu, max-pool 2, conv 5x5 x16, ..., dense 256-120-84-10): logits;
- LeNet training step, batch 64: forward with batch statistics and dropout, softmax
  cross-entropy, the gradients of the 12 parameters, SGD updates and batch norm's running averages;
- conv 3x3, 64 -> 64 channels, 32x32 images, batch 64, border 'half': forward;
- the same layer forward + backward: the output and the gradients wrt the images and the filters
  of ``sum(conv(x, w) * g)`` for a fixed ``g``.

Implementations: ffigraph (this process, default mode: C), numpy (examples/lenet_numpy.py's
hand-written im2col step, this process) and JAX on the CPU (``jax.lax.conv_general_dilated``,
``jax.lax.reduce_window``, ``jax.value_and_grad``, all under ``jax.jit``), which runs in a
subprocess under another interpreter, ``/root/venv-jax/bin/python`` by default (JAX is not a
dependency of ffigraph; that venv is made with ``python3 -m venv /root/venv-jax &&
/root/venv-jax/bin/pip install jax jaxlib numpy``). The subprocess is this same script with
``--jax-worker``: it imports numpy, jax and lenet_numpy, never ffigraph. The inputs travel to it in
an ``.npz`` and its outputs come back the same way; then it times a workload each time the main
process asks (a line on its stdin), so that its timings interleave with the others'. A missing
JAX leaves its column empty, saying why.

Every implementation computes the same numbers, and the run checks it before timing: one
training step from the same parameters with the same dropout masks (those ffigraph's step drew
and returned) gives the same new parameters (float32: to 2e-4 relative to each array's largest
value), the forward passes the same logits and conv outputs, the conv gradients the same
gradients. The convolutions are true convolutions (Theano's filter_flip=True: JAX is given the
flipped filters). Max pooling's gradient differs on ties (JAX's goes to one element of a window,
Theano's to all): the ties here are windows of relu's zeros, whose gradient relu then drops.

Threads: OPENBLAS/OMP/MKL_NUM_THREADS are set to 1 before numpy is imported, as in the other
benches (numpy's matmuls run on one core). ffigraph splits its convolutions, large loops and BLAS
calls over its own pool of ``config.threads`` threads (default: the CPU count); XLA runs JAX's
jitted code on its own intra-op pool (default: every CPU core; OMP_NUM_THREADS does not reach
it). Each time is the best of --repeat timings of --number calls (wall clock; threads add up in
CPU time), the rounds of the three implementations interleaved in a rotating order (JAX's timed
in its process, between the others'); the machine is noisy: compare figures within one run. ffigraph's training step draws its dropout
masks from its Philox stream inside the step; numpy and JAX are given theirs.
"""
import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
import timeit  # noqa: E402

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "examples"))

import lenet_numpy as ref  # noqa: E402  (examples/: plain numpy, no ffigraph)

JAX_PYTHON = "/root/venv-jax/bin/python"
BATCH = 64
LR = 0.05
CONV = (64, 64, 32, 32, 3)      # batch, channels in = out, height = width, kernel
CHECK_RTOL = 2e-4
WORKLOADS = (
    ("lenet_forward", "LeNet forward, batch %d" % BATCH),
    ("lenet_step", "LeNet training step, batch %d" % BATCH),
    ("conv_forward", "conv 3x3 %d->%d, %dx%d, batch %d: forward" % (CONV[1], CONV[1], CONV[2], CONV[2], CONV[0])),
    ("conv_backward", "conv 3x3 %d->%d, %dx%d, batch %d: forward+backward"
     % (CONV[1], CONV[1], CONV[2], CONV[2], CONV[0])),
)


def problem(seed=0):
    """The inputs every implementation gets, as a dict of float32 arrays (labels int64)."""
    rng = np.random.default_rng(seed)
    n, c, size, _, k = CONV
    data = {"x": rng.random((BATCH, 1, 28, 28)).astype(np.float32),
            "y": rng.integers(0, 10, BATCH).astype(np.int64),
            "conv_x": rng.standard_normal((n, c, size, size)).astype(np.float32),
            "conv_w": (rng.standard_normal((c, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32),
            "conv_g": rng.standard_normal((n, c, size, size)).astype(np.float32)}
    state = ref.init_state("float32")   # running statistics that are not the identity
    for name in state:
        state[name] = (state[name] + rng.uniform(0.1, 0.5, state[name].shape)).astype(np.float32)
    data.update(("param_" + k_, v) for k_, v in ref.init_params(1, "float32").items())
    data.update(("state_" + k_, v) for k_, v in state.items())
    return data


def unpack(data):
    params = {name: data["param_" + name] for name, _ in ref.PARAM_SHAPES}
    state = {name: data["state_" + name] for name, _ in ref.STATE_SHAPES}
    return params, state


# ---------------------------------------------------------------------------- numpy

def numpy_conv_half(x, w):
    """'half' padding (k // 2 each side) + lenet_numpy's im2col convolution: (out, cache)."""
    p = w.shape[2] // 2
    return ref.conv_forward(np.pad(x, ((0, 0), (0, 0), (p, p), (p, p))), w)


def numpy_conv_fb(x, w, g):
    out, cache = numpy_conv_half(x, w)
    dxp, dw = ref.conv_backward(g, cache, w.shape)
    p = w.shape[2] // 2
    return out, dxp[:, :, p:-p, p:-p], dw


# ---------------------------------------------------------------------------- JAX (the worker)

def jax_worker(npz_in, npz_out):
    """Runs under JAX's interpreter: jits the four workloads, writes their outputs for the check to
    ``npz_out``, prints ``ready <jax version> <devices>``, then answers each line ``<workload>
    <calls>`` of its standard input with the seconds per call of that many calls (``quit`` ends it).
    Imports no ffigraph."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    data = dict(np.load(npz_in))
    params, state = unpack(data)
    masks = (data["mask1"], data["mask2"])
    eps, factor, keep = ref.EPSILON, ref.AVERAGE_FACTOR, ref.KEEP
    dn = ("NCHW", "OIHW", "NCHW")
    ch = (None, slice(None), None, None)

    def conv(x, w, pad):
        return lax.conv_general_dilated(x, w[:, :, ::-1, ::-1], (1, 1), [(pad, pad), (pad, pad)],
                                        dimension_numbers=dn)

    def pool(x):
        return lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

    def bn_train(a, gamma, beta, mean_r, var_r):
        m = a.shape[0] * a.shape[2] * a.shape[3]
        mean = a.mean(axis=(0, 2, 3))
        var = ((a - mean[ch]) ** 2).mean(axis=(0, 2, 3))
        out = (a - mean[ch]) / jnp.sqrt(var[ch] + eps) * gamma[ch] + beta[ch]
        return out, mean_r * (1 - factor) + mean * factor, var_r * (1 - factor) + var * (m / (m - 1.0)) * factor

    def bn_test(a, gamma, beta, mean, var):
        return (a - mean[ch]) / jnp.sqrt(var[ch] + eps) * gamma[ch] + beta[ch]

    def dense_head(f, p, m1, m2):
        h = jnp.maximum(f @ p["w3"] + p["b3"], 0) * m1 / keep
        h = jnp.maximum(h @ p["w4"] + p["b4"], 0) * m2 / keep
        return h @ p["w5"] + p["b5"]

    def loss(p, s, x, y, m1, m2):
        h, mean1, var1 = bn_train(conv(x, p["w1"], 0), p["gamma1"], p["beta1"], s["mean1"], s["var1"])
        h = pool(jnp.maximum(h, 0))
        h, mean2, var2 = bn_train(conv(h, p["w2"], 0), p["gamma2"], p["beta2"], s["mean2"], s["var2"])
        h = pool(jnp.maximum(h, 0))
        z = dense_head(h.reshape(h.shape[0], -1), p, m1, m2)
        logp = jax.nn.log_softmax(z, axis=1)
        cost = -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))
        return cost, {"mean1": mean1, "var1": var1, "mean2": mean2, "var2": var2}

    @jax.jit
    def step(p, s, x, y, m1, m2, lr):
        (cost, new_s), g = jax.value_and_grad(loss, has_aux=True)(p, s, x, y, m1, m2)
        return jax.tree_util.tree_map(lambda a, b: a - lr * b, p, g), new_s, cost

    @jax.jit
    def forward(p, s, x):
        h = pool(jnp.maximum(bn_test(conv(x, p["w1"], 0), p["gamma1"], p["beta1"], s["mean1"], s["var1"]), 0))
        h = pool(jnp.maximum(bn_test(conv(h, p["w2"], 0), p["gamma2"], p["beta2"], s["mean2"], s["var2"]), 0))
        h = h.reshape(h.shape[0], -1)
        h = jnp.maximum(h @ p["w3"] + p["b3"], 0)
        h = jnp.maximum(h @ p["w4"] + p["b4"], 0)
        return h @ p["w5"] + p["b5"]

    pad = CONV[4] // 2
    conv_fwd = jax.jit(lambda x, w: conv(x, w, pad))

    @jax.jit
    def conv_fb(x, w, g):
        out, pullback = jax.vjp(lambda x_, w_: conv(x_, w_, pad), x, w)
        dx, dw = pullback(g)
        return out, dx, dw

    jp = {k: jnp.asarray(v) for k, v in params.items()}
    js = {k: jnp.asarray(v) for k, v in state.items()}
    x, y = jnp.asarray(data["x"]), jnp.asarray(data["y"].astype(np.int32))
    m1, m2 = jnp.asarray(masks[0]), jnp.asarray(masks[1])
    lr = jnp.float32(LR)
    cx, cw, cg = (jnp.asarray(data[k]) for k in ("conv_x", "conv_w", "conv_g"))
    new_p, new_s, cost = step(jp, js, x, y, m1, m2, lr)
    outputs = {"param_" + k: np.asarray(v) for k, v in new_p.items()}
    outputs.update(("state_" + k, np.asarray(v)) for k, v in new_s.items())
    outputs["cost"] = np.asarray(cost)
    outputs["logits"] = np.asarray(forward(jp, js, x))
    outputs["conv_out"] = np.asarray(conv_fwd(cx, cw))
    outputs["conv_out2"], outputs["conv_dx"], outputs["conv_dw"] = (np.asarray(v) for v in conv_fb(cx, cw, cg))
    np.savez(npz_out, **outputs)

    carry = [jp, js]

    def run_step():
        carry[0], carry[1], c = step(carry[0], carry[1], x, y, m1, m2, lr)
        c.block_until_ready()

    fns = {"lenet_forward": lambda: forward(jp, js, x).block_until_ready(),
           "lenet_step": run_step,
           "conv_forward": lambda: conv_fwd(cx, cw).block_until_ready(),
           "conv_backward": lambda: jax.block_until_ready(conv_fb(cx, cw, cg))}
    print("ready %s %s" % (jax.__version__, ",".join(str(d) for d in jax.devices())), flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == "quit":
            break
        print(repr(timeit.Timer(fns[words[0]]).timeit(int(words[1])) / int(words[1])), flush=True)


class JaxWorker:
    """The JAX side in its own process (see jax_worker): ``outputs`` for the check, ``time(key, n)``."""

    def __init__(self, python, data):
        self.proc = self.outputs = None
        self.note = None
        if not (os.path.isfile(python) and os.access(python, os.X_OK)):
            self.note = ("JAX: %s not found (python3 -m venv /root/venv-jax && "
                         "/root/venv-jax/bin/pip install jax jaxlib numpy)" % python)
            return
        self.folder = tempfile.mkdtemp(prefix="ffg-bench-conv-")
        paths = [os.path.join(self.folder, name) for name in ("in.npz", "out.npz")]
        np.savez(paths[0], **data)
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)     # the worker must not see ffigraph
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen([python, os.path.abspath(__file__), "--jax-worker"] + paths, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
                                     universal_newlines=True)
        ready = self.proc.stdout.readline().split()
        if not ready or ready[0] != "ready":
            self.close()
            self.stderr.seek(0)
            lines = self.stderr.read().strip().splitlines() or ["no answer"]
            self.note = "JAX worker failed: %s" % lines[-1]
            self.proc = None
            return
        self.outputs = dict(np.load(paths[1]))
        self.note = "JAX %s on %s, in a subprocess (XLA's own thread pool: every core by default)" % (
            ready[1], ready[2])

    def time(self, key, number):
        self.proc.stdin.write("%s %d\n" % (key, number))
        self.proc.stdin.flush()
        return float(self.proc.stdout.readline())

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
            self.proc.wait()
        if getattr(self, "folder", None):
            shutil.rmtree(self.folder, ignore_errors=True)


def interleaved(timers, repeat, number):
    """Best-of-``repeat`` seconds per call for each of ``timers`` (``{name: f(number) -> seconds per
    call}``), the rounds interleaved in a rotating order, after one warm-up timing each."""
    for t in timers.values():
        t(number)
    best = {k: float("inf") for k in timers}
    keys = list(timers)
    for r in range(repeat):
        shift = r % len(keys)
        for k in keys[shift:] + keys[:shift]:
            best[k] = min(best[k], timers[k](number))
    return best


def local_timer(fn):
    return lambda number: timeit.Timer(fn).timeit(number) / number   # timeit turns the GC off


# ---------------------------------------------------------------------------- ffigraph and the main run

def ffigraph_side(data):
    """The compiled LeNet (examples/lenet_digits.py) and the conv layer's two functions."""
    # imported here, not at the top: the JAX worker runs this same file and must not import ffigraph
    import ffigraph
    import ffigraph.tensor as T
    from ffigraph.tensor.nnet import conv2d

    import lenet_digits

    params, state = unpack(data)
    model = lenet_digits.LeNet(init=params, linker="cvm")
    for v in model.state:
        v.set_value(state[v.name])
    n, c, size, _, k = CONV
    x, w, g = T.tensor4("x", dtype="float32"), T.tensor4("w", dtype="float32"), T.tensor4("g", dtype="float32")
    out = conv2d(x, w, input_shape=(n, c, size, size), filter_shape=(c, c, k, k), border_mode="half")
    dx, dw = ffigraph.grad((out * g).sum(), [x, w])
    conv_fwd = ffigraph.function([x, w], out, name="conv_forward")
    conv_fb = ffigraph.function([x, w, g], [out, dx, dw], name="conv_forward_backward")
    return model, conv_fwd, conv_fb


def close(name, got, want, failures):
    scale = max(float(np.max(np.abs(want))), 1e-30) if want.size else 1.0
    diff = float(np.max(np.abs(np.asarray(got, dtype=np.float64) - want))) if want.size else 0.0
    if not diff <= CHECK_RTOL * scale:
        failures.append("%s: max |difference| %.3g (largest value %.3g)" % (name, diff, scale))
    return diff / scale


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls and repeats (smoke run)")
    parser.add_argument("--repeat", type=int, default=None, help="rounds, best-of (default 7, quick 3)")
    parser.add_argument("--number", type=int, default=None, help="calls a timing (default 10, quick 3)")
    parser.add_argument("--jax-python", default=JAX_PYTHON, help="interpreter with jax installed (default %s)" % JAX_PYTHON)
    parser.add_argument("--json", metavar="PATH", help="also write the timings as JSON (bench/run_all.py reads it)")
    parser.add_argument("--jax-worker", nargs=2, metavar=("IN", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    repeat = args.repeat if args.repeat is not None else (3 if args.quick else 7)
    number = args.number if args.number is not None else (3 if args.quick else 10)
    if repeat < 1 or number < 1:
        parser.error("--repeat and --number must be >= 1")
    if args.jax_worker:
        return jax_worker(*args.jax_worker)

    from ffigraph.config import config   # (not at the top: see ffigraph_side)

    data = problem()
    model, conv_fwd, conv_fb = ffigraph_side(data)
    params, state = unpack(data)
    x, y = data["x"], data["y"]
    lr = np.float32(LR)
    cx, cw, cg = data["conv_x"], data["conv_w"], data["conv_g"]

    # one step from the shared start: ffigraph's draws the masks that numpy and JAX are given
    ffg_cost, mask1, mask2 = model.train(x, y, lr)
    data["mask1"], data["mask2"] = mask1, mask2
    ffg_after = model.values()
    np_params, np_state, np_cost = ref.step(params, state, x, y, (mask1, mask2), LR)
    for v in model.params:               # back to the start for the forward check
        v.set_value(params[v.name])
    for v in model.state:
        v.set_value(state[v.name])
    reference = {"param_" + k: v for k, v in np_params.items()}
    reference.update(("state_" + k, v) for k, v in np_state.items())
    reference["cost"] = np.asarray(np_cost)
    reference["logits"] = ref.predict_logits(params, state, x)
    reference["conv_out"], reference["conv_dx"], reference["conv_dw"] = numpy_conv_fb(cx, cw, cg)
    reference["conv_out2"] = reference["conv_out"]
    ffg = {"param_" + k: v for k, v in ffg_after[0].items()}
    ffg.update(("state_" + k, v) for k, v in ffg_after[1].items())
    ffg["cost"] = np.asarray(ffg_cost)
    ffg["logits"] = model.logits(x)
    ffg["conv_out"] = conv_fwd(cx, cw)
    ffg["conv_out2"], ffg["conv_dx"], ffg["conv_dw"] = conv_fb(cx, cw, cg)

    def np_step():
        np_step.carry = ref.step(np_step.carry[0], np_step.carry[1], x, y, (mask1, mask2), LR)
    np_step.carry = (params, state, None)

    fns = {"lenet_forward": {"ffigraph": lambda: model.logits(x),
                             "numpy": lambda: ref.predict_logits(params, state, x)},
           "lenet_step": {"ffigraph": lambda: model.train(x, y, lr), "numpy": np_step},
           "conv_forward": {"ffigraph": lambda: conv_fwd(cx, cw), "numpy": lambda: numpy_conv_half(cx, cw)},
           "conv_backward": {"ffigraph": lambda: conv_fb(cx, cw, cg), "numpy": lambda: numpy_conv_fb(cx, cw, cg)}}
    jax = JaxWorker(args.jax_python, data)
    jax_out, jax_note = jax.outputs, jax.note
    try:
        seconds = {}
        for key, impls in fns.items():
            timers = {name: local_timer(fn) for name, fn in impls.items()}
            if jax.proc is not None:
                timers["JAX"] = lambda number, key=key: jax.time(key, number)
            seconds[key] = interleaved(timers, repeat, number)
    finally:
        jax.close()

    failures, worst = [], {"ffigraph": 0.0, "JAX": 0.0}
    for key, want in reference.items():
        worst["ffigraph"] = max(worst["ffigraph"], close("ffigraph " + key, ffg[key], want, failures))
        if jax_out is not None:
            worst["JAX"] = max(worst["JAX"], close("JAX " + key, jax_out[key], want, failures))
    if failures:
        raise SystemExit("bench_conv: implementations disagree with numpy:\n  " + "\n  ".join(failures))

    impl = "PyPy" if hasattr(sys, "pypy_version_info") else "CPython"
    machine = "%s %s, numpy %s, %s, %d CPUs" % (impl, sys.version.split()[0], np.__version__, platform.machine(),
                                                os.cpu_count() or 0)
    print("%s; float32; wall clock; best of %d rounds of %d calls" % (machine, repeat, number))
    print("threads: ffigraph config.threads=%d (its own pool); numpy OPENBLAS_NUM_THREADS=1; "
          "JAX: XLA's intra-op pool (default, every core)" % config.threads)
    print()
    print("| %-52s | %11s | %9s | %9s | %13s | %15s |" % ("workload", "ffigraph ms", "JAX ms", "numpy ms",
                                                          "JAX/ffigraph", "numpy/ffigraph"))
    print("|%s|%s|%s|%s|%s|%s|" % ("-" * 54, "-" * 13, "-" * 11, "-" * 11, "-" * 15, "-" * 17))
    table = {}
    for key, label in WORKLOADS:
        t = dict(seconds[key])
        table[label] = t
        jax_ms = "%9.3f" % (t["JAX"] * 1e3) if "JAX" in t else "%9s" % "-"
        jax_ratio = "%13.2f" % (t["JAX"] / t["ffigraph"]) if "JAX" in t else "%13s" % "-"
        print("| %-52s | %11.3f | %s | %9.3f | %s | %15.2f |" % (label, t["ffigraph"] * 1e3, jax_ms, t["numpy"] * 1e3,
                                                                 jax_ratio, t["numpy"] / t["ffigraph"]))
    print()
    notes = [jax_note, "checked before timing: one training step, the forward logits and the conv layer's output "
             "and gradients agree with numpy's (largest difference relative to the array's largest value: "
             "ffigraph %.2g%s)" % (worst["ffigraph"], ", JAX %.2g" % worst["JAX"] if jax_out is not None else ""),
             "ratios > 1: ffigraph is faster"]
    for note in notes:
        print(note)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(machine=machine, quick=args.quick, repeat=repeat, number=number, clock="wall",
                           threads=config.threads, notes=notes, seconds=table), fh, indent=1)


if __name__ == "__main__":
    main()
