"""Scan's semantics against loops written here in numpy (not against another ffigraph linker).

One function holds every loop, compiled once per mode (``py``, ``c`` and the default mode); each
call is checked against the numpy loops below, over three sets of lengths. What the loops pin:
``go_backwards`` (two sequences of different lengths, each walked from its own last row), sequence
taps [-2, 0, 1] beside a second sequence (the shorter one sets the steps), output taps [-3, -1]
over an initial state longer than needed (its FIRST three rows are times -3..-1, as in Theano and
PyTensor), an output with the single tap -2, several outputs of each kind in one loop, ``n_steps``
shorter than the sequence, ``until`` (stopping early, and running to the end), and zero steps.

A second function (``test_sequence_taps_match_theano``) pins how sequence taps are read, as Theano
and PyTensor read them: taps all negative or all positive (cut as if tap 0 were among them), several
taps with ``go_backwards`` (each tap reversed, so tap -1 stays the earlier row), output taps beside
them, ``n_steps`` shorter than the sequence, and a sequence too short for its taps under ``n_steps``.
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


# ---------------------------------------------------------------- sequence taps, as Theano and PyTensor read them
#
# The rule the loops below are written to (Theano's and PyTensor's ``scan``): a sequence with taps K
# runs over the rows p where p + k is inside the sequence for every k in K AND for k = 0, so taps all
# negative or all positive cut the sequence as if tap 0 were among them: len - (max(0, max K) -
# min(0, min K)) steps. Forward, step t is at row p = t - min(0, min K); with go_backwards it is at
# row p = len - 1 - max(0, max K) - t, walking down, and tap k still reads row p + k (tap -1 is the
# earlier row of the array). n_steps = k runs the first k of those steps. Output taps do not depend on
# go_backwards: the initial state's first rows are times min(taps) .. -1.


def _first_row(length, taps, backwards):
    """(row of step 0, direction, number of steps) of a sequence of ``length`` rows read at ``taps``."""
    low, high = min(0, min(taps)), max(0, max(taps))
    if backwards:
        return length - 1 - high, -1, length - (high - low)
    return -low, 1, length - (high - low)


def _taps_graph():
    x = T.vector("x")              # scalar rows
    m = T.matrix("m")              # rows of 3
    a0 = T.vector("a0")            # initial values for output taps [-2, -1]: 3 given, the first 2 used
    w = T.vector("w")              # a sequence that may be too short for its taps
    k, j = T.lscalar("k"), T.lscalar("j")
    outs = []
    # the three loops of the report (issue 44): taps all negative, taps mixed backwards, one positive tap
    outs.append(ffigraph.scan(lambda p, q: 10 * p + q, sequences=dict(input=x, taps=[-2, -1]))[0])
    outs.append(ffigraph.scan(lambda p, q, r: 100 * p + 10 * q + r, sequences=dict(input=x, taps=[-1, 0, 1]),
                              go_backwards=True)[0])
    outs.append(ffigraph.scan(lambda p: p, sequences=dict(input=x, taps=[1]))[0])
    # all negative with a gap, taps given out of order (the step's arguments follow the user's order)
    outs.append(ffigraph.scan(lambda p1, p3: p1 - 3.0 * p3 * p3, sequences=dict(input=x, taps=[-1, -3]))[0])
    # all positive over matrix rows, with a recurrent output
    outs.append(ffigraph.scan(lambda r1, r3, h: 0.5 * h + r1 - 2.0 * r3, sequences=dict(input=m, taps=[1, 3]),
                              outputs_info=T.zeros_like(m[0]))[0])
    # mixed taps backwards beside a tap-0 sequence, with an output of taps [-2, -1] and a nit-sot
    (a, d), _ = ffigraph.scan(
        lambda xm2, x0, xp1, mt, a2, a1: (0.3 * a2 - 0.6 * a1 + xm2 + 2.0 * x0 - 4.0 * xp1 + mt[0], xp1 * mt),
        sequences=[dict(input=x, taps=[-2, 0, 1]), m], outputs_info=[dict(initial=a0, taps=[-2, -1]), None],
        go_backwards=True)
    outs += [a, d]
    # all negative, backwards, over matrix rows
    outs.append(ffigraph.scan(lambda r3, r2: r3 - 2.0 * r2, sequences=dict(input=m, taps=[-3, -2]),
                              go_backwards=True)[0])
    # all positive, backwards
    outs.append(ffigraph.scan(lambda p2, p4: p2 * p4, sequences=dict(input=x, taps=[2, 4]), go_backwards=True)[0])
    # n_steps = k, shorter than the sequences: all positive forward, mixed backwards, one negative tap backwards
    outs.append(ffigraph.scan(lambda p1, p2: p1 - 5.0 * p2, sequences=dict(input=x, taps=[1, 2]), n_steps=k)[0])
    outs.append(ffigraph.scan(lambda rm1, r2: rm1 * 2.0 + r2, sequences=dict(input=m, taps=[-1, 2]), n_steps=k,
                              go_backwards=True)[0])
    outs.append(ffigraph.scan(lambda p2, h: h * 0.5 + p2, sequences=dict(input=x, taps=[-2]), n_steps=k,
                              outputs_info=T.constant(1.0), go_backwards=True)[0])
    # n_steps = j over a sequence that may be too short for the tap -3: it must be refused, not read short
    outs.append(ffigraph.scan(lambda p3: p3 * 1.0, sequences=dict(input=w, taps=[-3]), n_steps=j)[0])
    return [x, m, a0, w, k, j], outs


def _taps_numpy(x, m, a0, w, k, j):
    """The loops of _taps_graph, in numpy, from the rule above."""
    def loop(seq, taps, backwards, step, n_steps=None):
        p, direction, steps = _first_row(len(seq), taps, backwards)
        rows = []
        for t in range(steps if n_steps is None else n_steps):
            rows.append(step(*[seq[p + direction * t + tap] for tap in taps]))
        return rows

    outs = [loop(x, [-2, -1], False, lambda p, q: 10 * p + q),
            loop(x, [-1, 0, 1], True, lambda p, q, r: 100 * p + 10 * q + r),
            loop(x, [1], False, lambda p: p),
            loop(x, [-1, -3], False, lambda p1, p3: p1 - 3.0 * p3 * p3)]
    h, hs = np.zeros(3), []
    for r1, r3 in loop(m, [1, 3], False, lambda r1, r3: (r1, r3)):
        h = 0.5 * h + r1 - 2.0 * r3
        hs.append(h)
    outs.append(hs)
    # the mixed backwards loop: x's rows from _first_row; m (tap 0) from its own last row
    p, _, steps_x = _first_row(len(x), [-2, 0, 1], True)
    hist, a, d = {-2: a0[0], -1: a0[1]}, [], []
    for t in range(min(steps_x, len(m))):
        xm2, x0, xp1, mt = x[p - t - 2], x[p - t], x[p - t + 1], m[len(m) - 1 - t]
        hist[t] = 0.3 * hist[t - 2] - 0.6 * hist[t - 1] + xm2 + 2.0 * x0 - 4.0 * xp1 + mt[0]
        a.append(hist[t])
        d.append(xp1 * mt)
    outs += [a, d,
             loop(m, [-3, -2], True, lambda r3, r2: r3 - 2.0 * r2),
             loop(x, [2, 4], True, lambda p2, p4: p2 * p4),
             loop(x, [1, 2], False, lambda p1, p2: p1 - 5.0 * p2, n_steps=k),
             loop(m, [-1, 2], True, lambda rm1, r2: rm1 * 2.0 + r2, n_steps=k)]
    h, hs = 1.0, []
    for p2 in loop(x, [-2], True, lambda p2: p2, n_steps=k):
        h = h * 0.5 + p2
        hs.append(h)
    outs += [hs, loop(w, [-3], False, lambda p3: p3, n_steps=j)]
    return outs


@pytest.fixture(scope="module")
def taps_graph():
    return _taps_graph()


@pytest.mark.parametrize("mode_name", ["py", "c"])
def test_sequence_taps_match_theano(taps_graph, mode_name):
    inputs, outputs = taps_graph
    f = function(inputs, outputs, mode=MODES[mode_name]())
    rng = np.random.default_rng(4401)

    # the report's numbers, as Theano 1.0 and PyTensor give them
    got = f(np.arange(1.0, 6.0), np.zeros((5, 3)), np.zeros(3), np.zeros(3), np.int64(1), np.int64(0))
    for o, want in enumerate([[12, 23, 34], [345, 234, 123], [2, 3, 4, 5]]):
        np.testing.assert_array_equal(got[o], want, err_msg="output %d" % o)

    big = rng.normal(size=(20, 6))
    cases = [   # x, m, a0, w, k, j: lengths that give several steps, one step, and zero steps
        (rng.normal(size=9), rng.normal(size=(8, 3)), rng.normal(size=3), rng.normal(size=7), 3, 4),
        (rng.normal(size=12)[::-2], big[::-3, 4:1:-1], rng.normal(size=3), rng.normal(size=3), 2, 0),  # negative strides
        (rng.normal(size=5), rng.normal(size=(4, 3)), rng.normal(size=3), rng.normal(size=4), 1, 1),
        (rng.normal(size=4), rng.normal(size=(3, 3)), rng.normal(size=2), rng.normal(size=3), 0, 0),
    ]
    for x, m, a0, w, k, j in cases:
        got = f(x, m, a0, w, np.int64(k), np.int64(j))
        want = _taps_numpy(x, m, a0, w, k, j)
        assert len(got) == len(want)
        for o, (g, v) in enumerate(zip(got, want)):
            v = np.array(v, dtype=np.float64)
            if v.size == 0:   # zero steps: a trace of no rows (row lengths no step told are 0)
                assert g.shape[0] == 0 and g.size == 0, (o, g.shape)
                continue
            assert g.shape == v.shape, (o, len(x), g.shape, v.shape)
            np.testing.assert_allclose(g, v, rtol=1e-12, atol=1e-12, err_msg="output %d, len(x) %d" % (o, len(x)))

    # 1 step of tap -3 needs w's row 3 (tap 0's): 2 rows are too few, whatever n_steps says (cutting
    # the 3 rows tap -3 never reads as the stop -1 would leave one row, and read it)
    with pytest.raises(ValueError, match="scan"):
        f(*cases[0][:3], rng.normal(size=2), np.int64(0), np.int64(1))
