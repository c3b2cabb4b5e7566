"""Time the C convolution kernels (conv_c.py) on LeNet's layers and a 3x3 64->64 layer, float32:
forward, grad_weights and grad_inputs, ms per call (best of a few repeats).

    FFIGRAPH_FLAGS=threads=2 .venv/bin/python bench/bench_conv_kernels.py [--no-blas] [--blas-threads N] [--fused]

``--fused`` times instead the forward of ``relu(conv + b)`` and ``relu(batch_normalization_test(conv))``
in the default mode with the epilogue fused into the convolution (``ffigraph.rewriting.conv``) and
without (``Mode().excluding('conv_fusion')``: the epilogue as one fused elementwise loop).
"""
from __future__ import annotations

import sys
import time

import numpy as np

import ffigraph.tensor as T
from ffigraph import function
from ffigraph.compile.mode import Mode
from ffigraph.config import config
from ffigraph.tensor import blas, dot_c
from ffigraph.tensor.nnet import abstract_conv as ac
from ffigraph.tensor.nnet import bn, relu

SHAPES = [("lenet conv1 1->6 5x5 28x28", (64, 1, 28, 28), (6, 1, 5, 5), "valid"),
          ("lenet conv2 6->16 5x5 12x12", (64, 6, 12, 12), (16, 6, 5, 5), "valid"),
          ("3x3 64->64 32x32 half", (64, 64, 32, 32), (64, 64, 3, 3), "half")]


def best_ms(f, args, repeat=15):
    f(*args)
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f(*args)
        ts.append(time.perf_counter() - t0)
    return 1e3 * min(ts)


def fused_main():
    rng = np.random.default_rng(0)
    fused, unfused = Mode(), Mode().excluding("conv_fusion")
    print("threads=%d blas=%s: relu(conv + b) and relu(bn(conv)), fused / unfused ms (best of 30)"
          % (config.threads, dot_c.blas_enabled()))
    for label, ish, ksh, bm in SHAPES:
        x = rng.standard_normal(ish).astype("float32")
        w = rng.standard_normal(ksh).astype("float32")
        b, g, m = (rng.standard_normal(ksh[0]).astype("float32") for _ in range(3))
        v = rng.uniform(0.5, 2, ksh[0]).astype("float32")
        X, W = T.ftensor4(), T.ftensor4()
        B, G, M, V = T.fvector(), T.fvector(), T.fvector(), T.fvector()
        conv = ac.AbstractConv2d(imshp=ish, kshp=ksh, border_mode=bm)(X, W)
        cases = [("bias", [X, W, B], relu(conv + B.dimshuffle("x", 0, "x", "x")), (x, w, b)),
                 ("bn", [X, W, G, B, M, V], relu(bn.batch_normalization_test(conv, G, B, M, V, "spatial")),
                  (x, w, g, b, m, v))]
        cols = ["conv alone %7.3f" % best_ms(function([X, W], conv, mode=fused), (x, w), repeat=30)]
        for what, ins, out, args in cases:
            ff, fu = function(ins, out, mode=fused), function(ins, out, mode=unfused)
            assert any("Epilogue" in type(n.op).__name__ for n in ff.maker.fgraph.toposort())
            assert np.allclose(ff(*args), fu(*args), rtol=1e-4, atol=1e-3)
            tf, tu = [], []
            for _ in range(3):   # interleaved: a busy machine slows both alike
                tf.append(best_ms(ff, args, repeat=10))
                tu.append(best_ms(fu, args, repeat=10))
            tf, tu = min(tf), min(tu)
            cols.append("%s %7.3f / %7.3f (%+5.1f%%)" % (what, tf, tu, 100 * (tf - tu) / tu))
        print("%-30s %s" % (label, "   ".join(cols)))


def main():
    if "--fused" in sys.argv:
        return fused_main()
    if "--no-blas" in sys.argv:
        dot_c.USE_BLAS = False
    if "--blas-threads" in sys.argv:
        n = int(sys.argv[sys.argv.index("--blas-threads") + 1])
        blas.set_threads(blas.probe(blas.library().path), n)
    mode = Mode(linker="c", optimizer=None)
    rng = np.random.default_rng(0)
    print("threads=%d blas=%s" % (config.threads, dot_c.blas_enabled()))
    for label, ish, ksh, bm in SHAPES:
        x = rng.standard_normal(ish).astype("float32")
        w = rng.standard_normal(ksh).astype("float32")
        fwd = ac.AbstractConv2d(imshp=ish, kshp=ksh, border_mode=bm)
        X, W, Tp = T.ftensor4(), T.ftensor4(), T.ftensor4()
        f = function([X, W], fwd(X, W), mode=mode)
        top = f(x, w).copy()
        gw = function([X, Tp], ac.AbstractConv2d_gradWeights(imshp=ish, kshp=ksh, border_mode=bm)(
            X, Tp, np.asarray(ksh[2:], "int64")), mode=mode)
        gi = function([W, Tp], ac.AbstractConv2d_gradInputs(imshp=ish, kshp=ksh, border_mode=bm)(
            W, Tp, np.asarray(ish[2:], "int64")), mode=mode)
        print("%-30s fwd %7.2f  gradW %7.2f  gradI %7.2f ms" % (
            label, best_ms(f, (x, w)), best_ms(gw, (x, top)), best_ms(gi, (w, top))))


if __name__ == "__main__":
    main()
