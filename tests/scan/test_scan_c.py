"""Scan under the C linkers: the loop and its inner graph run inside one library, no Python per step.

One function holds many loops (compiling is the cost here), and every C linker must give the py
linker's numbers: recurrent outputs with one tap and with several ([-2, -1], [-3, -1]), sequence
taps [-1, 0, 1], nit-sot outputs beside recurrent ones, non-sequences, a shared variable updated
by the loop (a final value only), until, zero steps, go_backwards (a sequence with negative
strides), int32 / float32 / float64, a scan inside a scan, and random draws inside the step (the
same Philox numbers from C and Python). Then: the source holds the inner graph's functions, a
perform that raises changes nothing, and bad inputs are ValueErrors that leave the function usable.
"""
from __future__ import annotations

import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph import Mode, function, shared
from ffigraph.scan import Scan, until

C_LINKERS = ("c", "cvm", "c|py")


def _loops():
    """(inputs, outputs, updates, shared counter, random stream) of the function with every loop."""
    x = T.matrix("x")                 # a sequence (float64)
    xi = T.imatrix("xi")              # an int32 sequence
    xf = T.fmatrix("xf")              # a float32 sequence
    h0 = T.vector("h0")
    W, U = T.matrix("W"), T.matrix("U")
    b = T.vector("b")
    init2 = T.matrix("init2")         # initial rows for taps [-2, -1]
    init3 = T.matrix("init3")         # initial rows for taps [-3, -1] (4 given, 3 used)
    n = T.lscalar("n")
    outs = []

    # sit-sot: an Elman RNN over x
    h, _ = ffigraph.scan(lambda xt, hp, W_, U_, b_: T.tanh(xt.dot(W_) + hp.dot(U_) + b_),
                         sequences=x, outputs_info=h0, non_sequences=[W, U, b], name="rnn")
    outs.append(h)
    # mit-sot, taps [-2, -1], n steps (n = 0 gives empty traces)
    fib, _ = ffigraph.scan(lambda a, c: 0.5 * a + T.sin(c), outputs_info=[dict(initial=init2, taps=[-2, -1])],
                           n_steps=n)
    outs.append(fib)
    # mit-sot, taps [-3, -1], with a nit-sot output beside it
    (m3, norms), _ = ffigraph.scan(lambda a, c: (a - 0.25 * c, T.sqrt((c ** 2).sum())),
                                   outputs_info=[dict(initial=init3, taps=[-3, -1]), None], n_steps=n)
    outs += [m3, norms]
    # sequence taps [-1, 0, 1], two recurrent outputs and a nit-sot, a non-sequence
    (acc, mx, diff), _ = ffigraph.scan(
        lambda xm, x0, xp, a, m, w: (a + xm * w, T.maximum(m, x0), xp - xm),
        sequences=[dict(input=x, taps=[-1, 0, 1])], outputs_info=[T.zeros_like(h0), h0, None],
        non_sequences=[b[0]])
    outs += [acc, mx, diff]
    # go_backwards: the sequence reversed (negative strides in C)
    back, _ = ffigraph.scan(lambda xt, a: a * 0.5 + xt, sequences=x, outputs_info=T.zeros_like(h0), go_backwards=True)
    outs.append(back)
    # outputs that are the step's inputs or views of them: a reversed row (negative strides) and the
    # value before, unchanged (copied from the memory of an input, not computed)
    (rev, same), _ = ffigraph.scan(lambda r, p: (r[::-1], p), sequences=x, outputs_info=[None, h0],
                                   go_backwards=True)
    outs += [rev, same]
    # int32: a running sum (the initial state cast to the sequence's dtype)
    isum, _ = ffigraph.scan(lambda r, a: a + r, sequences=xi, outputs_info=T.zeros_like(xi[0]))
    outs.append(isum)
    # float32, nit-sot only (a map) with 0-d rows
    fm, _ = ffigraph.scan(lambda r: (r * 2).sum(), sequences=xf)
    outs.append(fm)
    # until: double the value until it passes 100 (at most n + 20 steps)
    grow, _ = ffigraph.scan(lambda v: (v * 2, until(v * 2 > 100)), outputs_info=T.constant(1.5), n_steps=n + 20)
    outs.append(grow)
    # a scan inside a scan: per row of x, the running products of its elements
    inner_prod, _ = ffigraph.scan(
        lambda row: ffigraph.scan(lambda e, p: p * e, sequences=row, outputs_info=T.constant(1.0))[0],
        sequences=x)
    outs.append(inner_prod)
    # a shared counter the loop updates (a final value only), beside a trace
    count = shared(np.int64(0), name="count")
    tr, count_upd = ffigraph.scan(lambda xt: (xt.sum(), {count: count + 1}), sequences=x)
    outs.append(tr)
    # random draws inside the step: a stream's state becomes a final-value state of the loop
    rs = T.shared_randomstreams.RandomStreams(1234)
    noise = rs.normal(size=(3,))
    noisy, rand_upd = ffigraph.scan(lambda xt: xt[:3] + noise, sequences=x)
    outs.append(noisy)
    updates = list(count_upd.items()) + list(rand_upd.items())
    return [x, xi, xf, h0, W, U, b, init2, init3, n], outs, updates, count, rs


def _values(rng, steps=6, n=7, reverse_x=False):
    x = rng.randn(steps, 4)
    if reverse_x:   # same values, negative strides
        x = np.ascontiguousarray(x[::-1])[::-1]
    return [x, rng.randint(-5, 5, size=(steps, 3)).astype("int32"), rng.randn(steps, 2).astype("float32"),
            rng.randn(4), rng.randn(4, 4), 0.3 * rng.randn(4, 4), rng.randn(4), rng.randn(2, 3), rng.randn(4, 3),
            np.int64(n)]


@pytest.fixture(scope="module")
def loops():
    ins, outs, updates, count, rs = _loops()
    built = dict(py=function(ins, outs, updates=updates, mode=Mode(linker="py")))
    for linker in C_LINKERS:
        built[linker] = function(ins, outs, updates=updates, mode=Mode(linker=linker))
    return built, count, rs


def _run(f, values, count, rs):
    count.set_value(np.int64(0))
    rs.seed(1234)
    got = f(*values)
    return got, int(count.get_value())


@pytest.mark.parametrize("linker", C_LINKERS)
def test_c_matches_py(loops, linker):
    built, count, rs = loops
    rng = np.random.RandomState(0)
    for values in (_values(rng), _values(rng, steps=3, n=0, reverse_x=True), _values(rng, steps=2, n=1)):
        want, want_count = _run(built["py"], values, count, rs)
        got, got_count = _run(built[linker], values, count, rs)
        assert got_count == want_count == len(values[0])
        assert len(got) == len(want)
        for k, (g, w) in enumerate(zip(got, want)):
            assert g.dtype == w.dtype and g.shape == w.shape, (k, g.dtype, w.dtype, g.shape, w.shape)
            if w.dtype.kind in "iub":
                np.testing.assert_array_equal(g, w, err_msg="output %d" % k)
            else:
                tol = 1e-5 if w.dtype == np.float32 else 1e-12
                np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg="output %d" % k)
        if values[-1] == 0:   # n = 0: the n-step loops ran no step
            assert got[1].shape == (0, 3) and got[2].shape == (0, 3) and got[3].shape == (0,)
        assert got[12].shape == (7,)   # until: stopped after the 7th doubling of 1.5


def test_one_library_no_python_per_step(loops, monkeypatch):
    built, count, rs = loops
    f = built["cvm"]
    assert {how for _, how in f.maker.linker.describe_nodes()} == {"C (whole-graph library)"}
    source = f.c_source()
    # every loop's inner graph is a static function of the same unit; the scan in the scan nests one more
    assert source.count("_g0_run(void *state_") == sum(isinstance(n.op, Scan) for n in f.maker.fgraph.toposort()) + 1
    assert "_n" in source and "Python.h" not in source
    # c|py compiles a scan node as one library holding its inner graph
    cpy = built["c|py"].c_source()
    assert "static int32_t" in cpy and "_g0_run(" in cpy

    def no_python(*args, **kwargs):
        raise AssertionError("Scan.perform ran under a C linker")

    monkeypatch.setattr(Scan, "perform", no_python)
    rng = np.random.RandomState(1)
    for linker in C_LINKERS:
        _run(built[linker], _values(rng), count, rs)


def test_many_steps_in_c():
    x0 = T.dscalar("x0")
    n = T.lscalar("n")
    out, _ = ffigraph.scan(lambda v: v * 0.999999 + 1.0, outputs_info=x0, n_steps=n)
    f = function([x0, n], out[-1], mode=Mode(linker="cvm"), profile=True)   # the scan node is timed, not its body
    value = 0.0
    for _ in range(100000):
        value = value * 0.999999 + 1.0
    np.testing.assert_allclose(f(0.0, 100000), value, rtol=1e-12)
    calls = {str(n.node): n.calls for n in f.profile.nodes()}
    assert [c for name, c in calls.items() if name.startswith("Scan")] == [1], calls   # 100000 steps, one call


def test_bad_inputs_then_good_ones():
    seq = T.vector("seq")
    h0 = T.vector("h0")
    n = T.lscalar("n")
    k = T.lscalar("k")
    # h changes shape when k != 0: a recurrent output must keep one shape
    h, _ = ffigraph.scan(lambda s0, s1, hp, k_: hp[k_:] * 0.5 + s0 - s1,
                         sequences=[dict(input=seq, taps=[0, 2])], outputs_info=h0, non_sequences=k, n_steps=n,
                         name="loop")
    ix = T.lvector("ix")
    picked, _ = ffigraph.scan(lambda i, v: v[i], sequences=ix, non_sequences=seq, name="pick")
    for linker in ("c", "c|py"):
        f = function([seq, h0, n, k, ix], [h, picked], mode=Mode(linker=linker))
        good = (np.arange(6.0), np.ones(2), 3, 0, np.array([0, 5, 2]))
        want = function([seq, h0, n, k, ix], [h, picked], mode=Mode(linker="py"))(*good)
        with pytest.raises(ValueError, match=r"scan 'loop': n_steps is -1; the number of steps must be 0 or more"):
            f(np.arange(6.0), np.ones(2), -1, 0, np.array([0]))
        with pytest.raises(ValueError, match=r"scan 'loop': sequence 0 has 6 rows; 5 steps with taps \[0, 2\] need 7"):
            f(np.arange(6.0), np.ones(2), 5, 0, np.array([0]))
        with pytest.raises(ValueError, match=r"scan 'loop': at step 0 the step function's output 0 has shape \(1,\), "
                                             r"but its initial state gives rows of shape \(2,\)"):
            f(np.arange(6.0), np.ones(2), 3, 1, np.array([0]))
        with pytest.raises(IndexError, match=r"step 1 of scan 'pick': "):
            f(np.arange(6.0), np.ones(2), 3, 0, np.array([0, 9]))
        got = f(*good)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-12)


def test_nit_sot_shape_change():
    ix = T.lvector("ix")
    rows, _ = ffigraph.scan(lambda i: T.arange(i), sequences=ix, name="ragged")
    f = function([ix], rows, mode=Mode(linker="c"))
    with pytest.raises(ValueError, match=r"scan 'ragged': at step 1 the step function's output 0 has shape \(2,\), "
                                         r"but had shape \(3,\) at step 0"):
        f(np.array([3, 2]))
    np.testing.assert_array_equal(f(np.array([2, 2, 2])), [[0, 1]] * 3)
    assert f(np.zeros(0, "int64")).shape == (0, 0)


def test_step_without_c_code_runs_perform():
    """A step with a node that has no C code: the scan node has none either, so cvm runs its perform."""
    from ffigraph.graph import Apply
    from ffigraph.graph.op import Op

    class PyDouble(Op):
        __props__ = ()

        def make_node(self, v):
            v = T.as_tensor_variable(v)
            return Apply(self, [v], [v.type()])

        def perform(self, node, inputs, out):
            out[0][0] = inputs[0] * 2

    x = T.vector("x")
    out, _ = ffigraph.scan(lambda r, a: PyDouble()(a) + r, sequences=x, outputs_info=T.constant(1.0))
    f = function([x], out, mode=Mode(linker="cvm"))
    assert dict((str(n.op), how) for n, how in f.maker.linker.describe_nodes())["Scan{scan_fn}"] \
        == "python (perform): no C code"
    np.testing.assert_array_equal(f(np.arange(4.0)), [2.0, 5.0, 12.0, 27.0])
