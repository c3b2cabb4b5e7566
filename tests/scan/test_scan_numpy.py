"""Scan's semantics against loops written here in numpy (not against another ffigraph linker).

One function holds every loop, compiled once per mode (``py``, ``c`` and the default mode); each
call is checked against the numpy loops below, over three sets of lengths. What the loops pin:
``go_backwards`` (two sequences of different lengths, each walked from its own last row), sequence
taps [-2, 0, 1] beside a second sequence (the shorter one sets the steps), output taps [-3, -1]
over an initial state longer than needed (its FIRST three rows are times -3..-1, as in Theano and
PyTensor), an output with the single tap -2, several outputs of each kind in one loop, ``n_steps``
shorter than the sequence, ``until`` (stopping early, and running to the end), and zero steps.
"""
from __future__ import annotations

import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph import Mode, function
from ffigraph.scan import until

MODES = {"py": lambda: Mode(linker="py"), "c": lambda: Mode(linker="c"), "default": lambda: None}


def _graph():
    x, y = T.matrix("x"), T.matrix("y")     # sequences, rows of 4 and 3
    z = T.vector("z")                        # a sequence of scalars
    h0, s0 = T.vector("h0"), T.vector("s0")
    a0 = T.matrix("a0")                      # initial rows for taps [-3, -1]: 5 given, the first 3 used
    b0 = T.matrix("b0")                      # initial rows for the single tap -2
    k = T.lscalar("k")
    lim = T.dscalar("lim")
    outs = []

    # go_backwards over two sequences of different lengths, n_steps = k, a recurrent and a nit-sot output
    (back, rows), _ = ffigraph.scan(lambda xt, yt, h: (0.5 * h + xt * yt[1], xt[::-1] - 2 * yt[0]),
                                    sequences=[x, y], outputs_info=[h0, None], n_steps=k, go_backwards=True)
    outs += [back, rows]

    # taps [-2, 0, 1] beside a tap-0 sequence; outputs: taps [-3, -1], a single tap -1, and a nit-sot
    def step(xm2, x0, xp1, zt, a3, a1, s):
        a = 0.5 * a3 - 0.3 * a1 + xm2 - 2.0 * x0 + 3.0 * xp1 * zt
        return a, s * 0.9 + x0 * a1, (xp1 - 4.0 * xm2).sum() + zt

    (a, s, d), _ = ffigraph.scan(step, sequences=[dict(input=x, taps=[-2, 0, 1]), z],
                                 outputs_info=[dict(initial=a0, taps=[-3, -1]), s0, None])
    outs += [a, s, d]

    # n_steps = k shorter than the sequence; an output with the single tap -2
    (c,), _ = ffigraph.scan(lambda xt, b2: [xt - 0.7 * b2], sequences=x, outputs_info=[dict(initial=b0, taps=[-2])],
                            n_steps=k, return_list=True)
    outs.append(c)

    # until: a running sum of squares that stops after the step where it passes lim
    (total, seen), _ = ffigraph.scan(lambda zt, acc, lim_: (acc + zt * zt, zt * 10.0, until(acc + zt * zt > lim_)),
                                     sequences=z, outputs_info=[T.constant(0.0), None], non_sequences=lim)
    outs += [total, seen]
    return [x, y, z, h0, s0, a0, b0, k, lim], outs


def _numpy(x, y, z, h0, s0, a0, b0, k, lim):
    """The same loops, in numpy."""
    back, rows, h = [], [], h0
    for t in range(k):
        xt, yt = x[len(x) - 1 - t], y[len(y) - 1 - t]
        h = 0.5 * h + xt * yt[1]
        back.append(h)
        rows.append(xt[::-1] - 2 * yt[0])

    steps = min(len(x) - 3, len(z))
    a_hist = {-3: a0[0], -2: a0[1], -1: a0[2]}
    a, s, d, sv = [], [], [], s0
    for t in range(steps):
        xm2, x0, xp1 = x[t], x[t + 2], x[t + 3]   # the current row is x[t + 2]
        a_t = 0.5 * a_hist[t - 3] - 0.3 * a_hist[t - 1] + xm2 - 2.0 * x0 + 3.0 * xp1 * z[t]
        sv = sv * 0.9 + x0 * a_hist[t - 1]
        a_hist[t] = a_t
        a.append(a_t)
        s.append(sv)
        d.append((xp1 - 4.0 * xm2).sum() + z[t])

    c_hist = {-2: b0[0], -1: b0[1]}
    c = []
    for t in range(k):
        c_hist[t] = x[t] - 0.7 * c_hist[t - 2]
        c.append(c_hist[t])

    total, seen, acc = [], [], 0.0
    for zt in z:
        acc = acc + zt * zt
        total.append(acc)
        seen.append(zt * 10.0)
        if acc > lim:
            break

    def rows_of(values, row_shape):
        return np.array(values).reshape((len(values),) + row_shape)

    return [rows_of(back, (4,)), rows_of(rows, (4,)), rows_of(a, (4,)), rows_of(s, (4,)), rows_of(d, ()),
            rows_of(c, (4,)), rows_of(total, ()), rows_of(seen, ())]


def _cases(rng):
    """Values for three calls: lengths chosen so that each loop's step count comes from a different place."""
    def values(nx, ny, nz, k, lim):
        return [rng.normal(size=(nx, 4)), rng.normal(size=(ny, 3)), rng.normal(size=nz), rng.normal(size=4),
                rng.normal(size=4), rng.normal(size=(5, 4)), rng.normal(size=(2, 4)), np.int64(k), np.float64(lim)]

    return [values(9, 11, 7, 5, 2.0),     # x sets the taps loop's steps (6); until stops early
            values(7, 4, 3, 3, 1e9),      # z sets them (3); until never fires: all 3 steps
            values(4, 2, 0, 0, 1.0)]      # zero steps everywhere (x with taps [-2, 0, 1] has 1, z has 0)


@pytest.fixture(scope="module")
def graph():
    return _graph()


@pytest.mark.parametrize("mode_name", sorted(MODES))
def test_scan_matches_numpy_loops(graph, mode_name):
    inputs, outputs = graph
    f = function(inputs, outputs, mode=MODES[mode_name]())
    rng = np.random.default_rng(44)
    stopped_early = False
    for values in _cases(rng):
        got = f(*values)
        want = _numpy(*values)
        assert len(got) == len(want)
        for o, (g, w) in enumerate(zip(got, want)):
            if o == 1 and len(w) == 0:   # a nit-sot whose row length no step told: scan gives rows of 0
                w = w.reshape((0, 0))
            assert g.shape == w.shape, (o, g.shape, w.shape)
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, err_msg="output %d" % o)
        stopped_early |= len(got[6]) < len(values[2])
    assert stopped_early   # the until loop did stop before its sequence ran out, at least once
