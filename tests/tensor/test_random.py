"""Counter-based random streams (Philox4x32-10): known answers, bit-identical draws from the
Python and C linkers (and on PyPy: pinned digests computed on CPython), stream semantics, bad
arguments, statistics (with array parameters: every cell's distribution against scipy.stats; the
pinned digests only say the bits did not change, not that they are right), our own log/sin/cos, and
an exported library drawing from C."""
from __future__ import annotations

import hashlib
import math
import re
import shutil

import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph import function
from ffigraph.compile.mode import Mode
from ffigraph.tensor.random import philox
from ffigraph.tensor.random.utils import RandomStream
from ffigraph.tensor.shared_randomstreams import RandomStreams
from ffigraph.sandbox.rng_mrg import MRG_RandomStreams

LINKERS = ["py", "c", "cvm"]


def _mode(linker):
    return Mode(linker=linker) if linker == "cvm" else Mode(linker=linker, optimizer=None)


# ------------------------------------------------------------------ the generator and its math


# Random123's kat_vectors, the three "philox4x32 10" lines: counter[4] key[2] -> output[4]
PHILOX_KAT = [
    ((0x00000000, 0x00000000, 0x00000000, 0x00000000), (0x00000000, 0x00000000),
     (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
    ((0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff), (0xffffffff, 0xffffffff),
     (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
    ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
     (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1)),
]


def test_philox_known_answers():
    for ctr, key, want in PHILOX_KAT:
        assert tuple(int(w) for w in philox.philox4x32_10(*(ctr + key))) == want
    # vectorised: the three at once
    cols = list(zip(*[c + k for c, k, _ in PHILOX_KAT]))
    got = philox.philox4x32_10(*[np.array(c, dtype=np.uint64) for c in cols])
    assert [tuple(int(w[i]) for w in got) for i in range(3)] == [w for _, _, w in PHILOX_KAT]


def _ulps(got, want):
    got, want = np.asarray(got), np.asarray(want)
    return float((np.abs(got - want) / np.spacing(np.abs(want))).max())


def test_own_log_sin_cos_are_accurate():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(0, 1, 20000), 2.0 ** rng.uniform(-1000, 1000, 20000),
                        1 + rng.uniform(-1e-3, 1e-3, 5000), 2.0 ** -np.arange(1, 54), [0.5, 2.0, 3.0, 1e300]])
    want = np.array([math.log(v) for v in x])
    keep = want != 0
    assert _ulps(philox.log(x)[keep], want[keep]) <= 1.0
    assert philox.log(np.array([1.0]))[0] == 0.0
    a = rng.uniform(-math.pi / 4, math.pi / 4, 20000)
    assert _ulps(philox.ksin(a), [math.sin(v) for v in a]) <= 1.0
    assert _ulps(philox.kcos(a), [math.cos(v) for v in a]) <= 1.0
    b = rng.uniform(-100, 100, 20000)
    assert _ulps(philox.sin(b), [math.sin(v) for v in b]) <= 2.0
    assert _ulps(philox.cos(b), [math.cos(v) for v in b]) <= 2.0
    u = rng.uniform(0, 1, 20000)
    assert np.abs(philox.cos2pi(u) - [math.cos(2 * math.pi * v) for v in u]).max() < 2e-15
    assert np.abs(philox.sin2pi(u) - [math.sin(2 * math.pi * v) for v in u]).max() < 2e-15
    assert list(philox.cos2pi(np.array([0.0, 0.5]))) == [1.0, -1.0]


# ------------------------------------------------------------------ bit identity


def _draws(srng):
    """One of every distribution, with float32 and float64, broadcast parameter arrays, a symbolic
    size and an empty draw; inputs (loc, n_size) and their values."""
    loc = T.dmatrix("loc")
    k = T.lscalar("k")
    p = T.dvector("p")
    outs = [
        srng.uniform(size=(7,)),
        srng.uniform(-2.0, np.array([1.0, 5.0, 9.0]), size=(2, 3), dtype="float32"),
        srng.uniform(loc, 3.5),                                 # shape from the parameters
        srng.normal(loc, np.array([1.0, 0.5, 2.0]), size=(4, 2, 3)),
        srng.normal(size=(k, 3), dtype="float32"),              # a symbolic size
        srng.normal(size=(0, 3)),                               # empty
        srng.integers(-3, np.array([4, 10, 2 ** 40]), size=(5, 3)),
        srng.integers(-2 ** 63, 2 ** 63 - 1, size=(4,)),
        srng.integers(7, size=(6,), dtype="int32"),
        srng.bernoulli(p, size=(3, 4)),
        srng.binomial(np.array([0, 1, 5, 40]), 0.3, size=(2, 4)),
        srng.binomial(9, p),
        srng.choice(10, size=(5,)),
        srng.choice(np.array([1.5, 2.5, 3.5, 4.5]), size=(2, 3), p=[0.1, 0.0, 0.6, 0.3]),
        srng.choice(np.arange(20, 30), size=(4,), replace=False),
        srng.permutation(9),
        srng.permutation(np.array([1.0, 2.0, 3.0, 4.0, 5.0], dtype="float32")),
        # one value per parameter: the batched C path, over several batches and with odd tails
        srng.uniform(-1.0, 2.0, size=(3, 101)),
        srng.uniform(size=(517,), dtype="float32"),
        srng.normal(1.0, 2.0, size=(5, 61)),
        srng.normal(size=(259,), dtype="float32"),
        srng.integers(0, 5, size=(301,)),                      # rejections: retries from own blocks
        srng.bernoulli(0.3, size=(2, 131)),
        srng.binomial(1, 0.6, size=(263,)),
        srng.binomial(6, 0.45, size=(3, 7)),
        srng.uniform(0.0, np.array([[1.0, 2.0, 3.0]]), size=(2, 3)),   # broadcast along one axis only
    ]
    values = [np.array([[0.0, 10.0, -5.0], [1.0, 2.0, 3.0]]), np.int64(2), np.array([0.0, 0.25, 0.9, 1.0])]
    return [loc, k, p], outs, values


def _digest(arrays):
    h = hashlib.sha256()
    for a in arrays:
        h.update(str((a.dtype.str, a.shape)).encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


# computed on CPython 3.11 / numpy 2 with linker 'py'; PyPy (numpy 1.26) and C must give the same bits
PINNED_DIGEST_CALL0 = "8255d21292ce95f7beec16a54c2661890a8bdf837b6cbae723d43ac61b8cdeb3"
PINNED_DIGEST_CALL1 = "dc6216fd2781fe7d527477d06f51aa1bc351e178647c7226d74ddf551196e89c"
PINNED_FIRST_UNIFORMS = ['0x1.150b9537d59cap-1', '0x1.12490edea76e0p-6', '0x1.4f2702adfd9fep-2']


def test_same_seed_same_bits_under_every_linker_and_interpreter():
    results = {}
    for linker in LINKERS:
        srng = RandomStream(20240607)
        inputs, outs, values = _draws(srng)
        f = function(inputs, outs, mode=_mode(linker))
        results[linker] = [f(*values), f(*values)]
    ref = results["py"]
    for linker in LINKERS[1:]:
        for call in range(2):
            for i, (a, b) in enumerate(zip(ref[call], results[linker][call])):
                assert a.dtype == b.dtype and a.shape == b.shape, (linker, i, a.dtype, b.dtype, a.shape, b.shape)
                assert np.array_equal(a, b), (linker, call, i, a, b)
    first, second = ref
    assert [float(v).hex() for v in first[0][:3]] == PINNED_FIRST_UNIFORMS
    assert _digest(first) == PINNED_DIGEST_CALL0
    assert _digest(second) == PINNED_DIGEST_CALL1
    # shapes and dtypes as numpy's Generator gives them
    assert [o.shape for o in first] == [(7,), (2, 3), (2, 3), (4, 2, 3), (2, 3), (0, 3), (5, 3), (4,), (6,),
                                        (3, 4), (2, 4), (4,), (5,), (2, 3), (4,), (9,), (5,),
                                        (3, 101), (517,), (5, 61), (259,), (301,), (2, 131), (263,), (3, 7),
                                        (2, 3)]
    assert [o.dtype.name for o in first] == ["float64", "float32", "float64", "float64", "float32", "float64",
                                             "int64", "int64", "int32", "int64", "int64", "int64", "int64",
                                             "float64", "int64", "int64", "float32",
                                             "float64", "float32", "float64", "float32", "int64", "int64",
                                             "int64", "int64", "float64"]
    # each call draws new numbers
    assert not np.array_equal(first[0], second[0]) and not np.array_equal(first[3], second[3])


# ------------------------------------------------------------------ stream semantics


def test_stream_state_seed_and_updates():
    srng = RandomStream(7)
    u, v = srng.uniform(size=(4,)), srng.uniform(size=(4,))
    f = function([], [u, v])
    a1, b1 = f()
    a2, b2 = f()
    assert not np.array_equal(a1, b1)                 # two variables of one stream differ
    assert not np.array_equal(a1, a2)                 # successive calls differ
    state = u.rng
    assert state.get_value().dtype == np.uint64 and int(state.get_value()[1]) == 2
    srng.seed(7)                                      # reseeding gives the same numbers again
    assert int(state.get_value()[1]) == 0
    a3, b3 = f()
    assert np.array_equal(a1, a3) and np.array_equal(b1, b3)
    srng.seed(8)
    assert not np.array_equal(f()[0], a1)
    srng.seed()                                       # None: the stream's first seed
    assert np.array_equal(f()[0], a1)
    # the state moves only through its default update
    g = function([], u, no_default_updates=True)
    before = state.get_value()
    assert np.array_equal(g(), g()) and np.array_equal(state.get_value(), before)
    h = function([], u * 2)
    h()
    assert int(state.get_value()[1]) == int(before[1]) + 1
    # a new stream with the same seed reproduces everything; the key is SplitMix64 of (seed, index)
    again = RandomStream(7)
    x, y = again.uniform(size=(4,)), again.uniform(size=(4,))
    assert np.array_equal(function([], [x, y])()[1], b1)
    assert int(x.rng.get_value()[0]) == philox.derive_key(7, 0) and int(y.rng.get_value()[0]) == philox.derive_key(7, 1)
    assert srng.updates()[0][0] is state
    with ffigraph.config.change_flags(floatX="float32"):
        assert RandomStream(1).normal(size=(2,)).dtype == "float32"
    assert RandomStream(1).integers(5).dtype == "int64"
    # where users import the classes from
    assert ffigraph.RandomStream is RandomStream and ffigraph.tensor.random.utils.RandomStream is RandomStream
    assert ffigraph.RandomStreams is RandomStreams and issubclass(MRG_RandomStreams, RandomStreams)


def test_theano_signatures():
    srng = RandomStreams(seed=234)
    s = T.lvector("s")
    outs = [srng.uniform((2, 2), low=1.0, high=2.0), srng.normal((3,), avg=5.0, std=0.1),
            srng.binomial((4,), n=3, p=0.5), srng.random_integers((200,), low=-1, high=1),
            srng.choice((3,), a=5, replace=False), srng.permutation((2,), n=4),
            srng.uniform(s, ndim=1)]
    f = function([s], outs, mode=_mode("c"))
    u, z, b, r, c, perm, us = f(np.array([3]))
    assert u.shape == (2, 2) and ((u >= 1) & (u < 2)).all() and u.dtype == np.float64
    assert z.shape == (3,) and np.abs(z - 5).max() < 1
    assert b.dtype == np.int64 and ((b >= 0) & (b <= 3)).all()
    assert set(r.tolist()) == {-1, 0, 1}              # random_integers: high included
    assert len(set(c.tolist())) == 3 and perm.shape == (2, 4)
    assert all(sorted(row) == [0, 1, 2, 3] for row in perm.tolist())
    assert us.shape == (3,)
    m = MRG_RandomStreams(seed=12345)
    assert function([], m.uniform((5,), dtype="float32"))().dtype == np.float32
    with pytest.raises(NotImplementedError):
        m.normal((2,), truncate=True)


# ------------------------------------------------------------------ statistics


def _sample(build, n=40000, seed=12345):
    srng = RandomStream(seed)
    return function([], build(srng), mode=_mode("c"))()


def test_statistics_at_a_fixed_seed():
    u = _sample(lambda s: s.uniform(size=(40000,)))
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.003 and u.min() >= 0 and u.max() < 1
    u32 = _sample(lambda s: s.uniform(2.0, 3.0, size=(40000,), dtype="float32"))
    assert u32.dtype == np.float32 and abs(u32.mean() - 2.5) < 0.01 and u32.min() >= 2 and u32.max() < 3
    z = _sample(lambda s: s.normal(1.0, 2.0, size=(40000,)))
    assert abs(z.mean() - 1.0) < 0.05 and abs(z.std() - 2.0) < 0.05
    i = _sample(lambda s: s.integers(0, 7, size=(70000,)))
    counts = np.bincount(i, minlength=7)
    assert counts.size == 7 and (np.abs(counts - 10000) < 5 * math.sqrt(10000)).all()
    big = _sample(lambda s: s.integers(0, 3 * 2 ** 61, size=(20000,)))
    assert big.min() >= 0 and big.max() < 3 * 2 ** 61 and abs(big.mean() / (3 * 2 ** 61) - 0.5) < 0.02
    be = _sample(lambda s: s.bernoulli(0.3, size=(40000,)))
    assert abs(be.mean() - 0.3) < 0.01
    bi = _sample(lambda s: s.binomial(20, 0.25, size=(20000,)))
    assert abs(bi.mean() - 5.0) < 0.05 and abs(bi.var() - 3.75) < 0.15
    c = _sample(lambda s: s.choice(4, size=(40000,), p=[0.1, 0.2, 0.3, 0.4]))
    np.testing.assert_allclose(np.bincount(c, minlength=4) / 40000.0, [0.1, 0.2, 0.3, 0.4], atol=0.01)
    perm = _sample(lambda s: s.permutation(1000))
    assert sorted(perm.tolist()) == list(range(1000)) and perm.tolist() != list(range(1000))
    srng = RandomStream(3)
    first = function([], srng.permutation(50))
    rows = [tuple(first()) for _ in range(20)]
    assert len(set(rows)) == 20


def test_kolmogorov_smirnov():
    stats = pytest.importorskip("scipy.stats", reason="scipy is installed in the CPython venv only")
    u = _sample(lambda s: s.uniform(size=(20000,)))
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    z = _sample(lambda s: s.normal(size=(20000,)))
    assert stats.kstest(z, "norm").pvalue > 1e-3
    z32 = _sample(lambda s: s.normal(size=(20000,), dtype="float32"), seed=99)
    assert stats.kstest(z32.astype(np.float64), "norm").pvalue > 1e-3
    bi = _sample(lambda s: s.binomial(10, 0.4, size=(20000,)))
    observed = np.bincount(bi, minlength=11)
    expected = stats.binom.pmf(np.arange(11), 10, 0.4) * 20000
    keep = expected > 5
    assert stats.chisquare(observed[keep], expected[keep] * observed[keep].sum() / expected[keep].sum()).pvalue > 1e-3


# Array parameters: every draw has size (N_CELL, 3, 4) and parameters of shapes (3, 1), (4,) or
# (3, 4), so each of the 12 cells (i, j) has its own distribution, given by scipy.stats. Cells differ
# by far more than N_CELL samples can hide, so a parameter read from the wrong cell (swapped,
# broadcast along the wrong axis, reversed) fails the cells it lands in with p-values of 1e-40 and
# less; at this fixed seed the right draws pass every check with room to spare (smallest p-value
# 0.06, largest |z| 2.6).
N_CELL = 2000
P_MIN = 1e-5          # KS and chi-square p-values must be above this
Z_MAX = 5.0           # sample mean and variance within this many standard errors


def _array_parameter_draws(srng, stats):
    """``(inputs, values, draws)``: draws is [(name, variable, cell -> frozen scipy distribution)]."""
    size = (N_CELL, 3, 4)
    low, high = T.dmatrix("low"), T.dvector("high")              # (3, 1) and (4,): an outer product
    loc, scale = T.dmatrix("loc"), T.dvector("scale")
    ilow, ihigh = T.lmatrix("ilow"), T.lvector("ihigh")
    p_cells, n, p = T.dmatrix("p_cells"), T.lmatrix("n"), T.dvector("p")
    p_choice = T.dvector("p_choice")
    v = dict(low=np.array([[-2.0], [0.0], [3.0]]), high=np.array([10.0, 7.0, 5.0, 4.0])[::-1],  # negative strides
             loc=np.array([[-5.0], [0.0], [10.0]]), scale=np.array([0.5, 1.0, 2.0, 4.0]),
             ilow=np.array([[-3], [0], [2]]), ihigh=np.array([4, 6, 9, 17]),
             p_cells=np.linspace(0.04, 0.96, 12).reshape(4, 3).T,   # a transposed (F-ordered) array
             n=np.array([[1], [5], [40]]), p=np.array([0.1, 0.3, 0.6, 0.95]),
             p_choice=np.array([0.1, 0.0, 0.5, 0.15, 0.25]))
    draws = [
        ("uniform", srng.uniform(low, high, size=size),
         lambda i, j: stats.uniform(v["low"][i, 0], v["high"][j] - v["low"][i, 0])),
        ("normal", srng.normal(loc, scale, size=size), lambda i, j: stats.norm(v["loc"][i, 0], v["scale"][j])),
        ("integers", srng.integers(ilow, ihigh, size=size),
         lambda i, j: stats.randint(v["ilow"][i, 0], v["ihigh"][j])),
        ("bernoulli", srng.bernoulli(p_cells, size=size), lambda i, j: stats.bernoulli(v["p_cells"][i, j])),
        ("binomial", srng.binomial(n, p, size=size), lambda i, j: stats.binom(v["n"][i, 0], v["p"][j])),
        ("choice", srng.choice(5, size=(N_CELL, 1, 1), p=p_choice),
         lambda i, j: stats.rv_discrete(values=(np.arange(5), v["p_choice"]))),
    ]
    inputs = [low, high, loc, scale, ilow, ihigh, p_cells, n, p, p_choice]
    return inputs, [v[x.name] for x in inputs], draws


def _chisquare_pvalue(stats, sample, dist):
    """Chi-square of the counts of a discrete sample against ``dist``; values whose expected count
    is under 5 share one bin. A value the distribution cannot take fails at once."""
    values, counts = np.unique(sample, return_counts=True)
    pmf = dist.pmf(values)
    assert (pmf > 0).all(), "drew %s, which has probability 0" % values[pmf == 0]
    support = np.arange(dist.support()[0], dist.support()[1] + 1)
    expected = dist.pmf(support) * sample.size
    observed = np.zeros(support.size)
    observed[np.searchsorted(support, values)] = counts
    small = expected < 5
    observed = np.append(observed[~small], observed[small].sum())
    expected = np.append(expected[~small], expected[small].sum())
    keep = expected > 0
    if keep.sum() < 2:
        return 1.0                                    # one bin: nothing to compare (the pmf check did it)
    return stats.chisquare(observed[keep], expected[keep]).pvalue


def test_array_parameters_give_every_cell_its_distribution():
    stats = pytest.importorskip("scipy.stats", reason="scipy (the reference distributions) is installed "
                                                      "in the CPython venv only: it has no PyPy build")
    srng = RandomStream(20240611)
    inputs, values, draws = _array_parameter_draws(srng, stats)
    got = function(inputs, [d for _, d, _ in draws], mode=_mode("c"))(*values)
    problems, p_values = [], []
    for (name, _, cell_dist), out in zip(draws, got):
        for i in range(out.shape[1]):
            for j in range(out.shape[2]):
                dist, sample = cell_dist(i, j), out[:, i, j]
                mean, var = (float(m) for m in dist.stats(moments="mv"))
                kurt = float(dist.stats(moments="k"))
                z_mean = (sample.mean() - mean) / np.sqrt(var / sample.size)
                # the standard error of a sample variance; its 1/N**2 term matters where the first
                # vanishes (two equally likely values)
                z_var = (sample.var() - var) / (var * np.sqrt((kurt + 2.0) / sample.size + 2.0 / sample.size ** 2))
                if name in ("uniform", "normal"):
                    p_value = stats.kstest(sample, dist.cdf).pvalue
                else:
                    p_value = _chisquare_pvalue(stats, sample, dist)
                p_values.append(p_value)
                if abs(z_mean) > Z_MAX or abs(z_var) > Z_MAX or p_value < P_MIN:
                    problems.append("%s cell (%d, %d): mean %.4g (want %.4g), variance %.4g (want %.4g), p-value %.3g"
                                    % (name, i, j, sample.mean(), mean, sample.var(), var, p_value))
    assert [o.shape for o in got] == [(N_CELL, 3, 4)] * 5 + [(N_CELL, 1, 1)]
    assert not problems, "\n".join(problems)
    assert len(p_values) == 61 and min(p_values) > P_MIN


# ------------------------------------------------------------------ bad arguments


@pytest.mark.parametrize("linker", ["py", "c"])
def test_bad_arguments_raise_value_errors_naming_them(linker):
    srng = RandomStream(5)
    x, i = T.dvector("x"), T.lvector("i")
    cases = [
        (srng.normal(0.0, x), [np.array([1.0, -1.0])], "scale"),
        (srng.bernoulli(x), [np.array([0.5, 1.5])], "p must be in"),
        (srng.bernoulli(x), [np.array([np.nan])], "p must be in"),
        (srng.binomial(i, 0.5), [np.array([3, -1])], "n must be >= 0"),
        (srng.binomial(3, x), [np.array([-0.1])], "p must be in"),
        (srng.integers(i, 5), [np.array([1, 5])], "low >= high"),
        (srng.integers(i, size=(3,), dtype="int8"), [np.array([300])], "do not fit"),
        (srng.choice(i.shape[0] + 2, size=(5,), replace=False), [np.array([1])], "larger sample"),
        (srng.choice(3, size=(2,), p=x), [np.array([0.5, 0.2, 0.2])], "sum to 1"),
        (srng.choice(3, size=(2,), p=x), [np.array([0.5, 0.6, -0.1])], "non-negative"),
        (srng.choice(3, size=(2,), p=x), [np.array([0.5, 0.5])], "same size"),
        (srng.normal(x, 1.0, size=(2, 4)), [np.zeros(3)], "broadcast"),
        (srng.uniform(size=(i[0],)), [np.array([-2])], "negative dimensions"),
    ]
    for out, values, match in cases:
        f = function([v for v in (x, i) if v in _graph_inputs(out)], out, mode=_mode(linker))
        with pytest.raises(ValueError, match=match):
            f(*values)


def _graph_inputs(out):
    from ffigraph.graph.basic import graph_inputs

    return list(graph_inputs([out]))


def test_bad_constant_arguments_raise_when_the_graph_is_built():
    srng = RandomStream(5)
    for build, match in [(lambda: srng.normal(0.0, -1.0), "scale"), (lambda: srng.bernoulli(1.5), "p must be in"),
                         (lambda: srng.integers(5, 5), "low >= high"), (lambda: srng.binomial(-1, 0.5), "n must be"),
                         (lambda: srng.binomial(2, np.array([0.5, 2.0])), "p must be in"),
                         (lambda: srng.choice(3, p=[0.5, 0.2, 0.2]), "sum to 1"),
                         (lambda: srng.uniform(size=(-1,)), "negative"),
                         (lambda: srng.normal(np.zeros(3), size=(2, 4)), "broadcast"),
                         (lambda: srng.choice(3, size=(4,), replace=False), "larger sample"),
                         (lambda: srng.choice(T.constant([1.0, 2.0]), size=(3,), replace=False),
                          r"larger sample \(3\) than the population \(2\)")]:
        with pytest.raises(ValueError, match=match):
            build()
    with pytest.raises(NotImplementedError, match="replace=False"):
        srng.choice(3, size=(2,), replace=False, p=[0.2, 0.3, 0.5])


def test_generated_c_is_plain_and_strict():
    from ffigraph.tensor.random import philox_c

    op = RandomStream(1).normal(size=(2,)).owner.op
    assert op.c_compile_args() == ["-ffp-contract=off"]
    text = philox_c.SUPPORT_C
    assert "Python.h" not in text and "numpy" not in text and "fast-math" not in text
    code = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    # only our own log and sin/cos, never libm's (sqrt is correctly rounded everywhere)
    assert re.findall(r"(?<![\w.])(log|log1p|sin|cos|exp|pow|fma)\s*\(", code) == []
    assert len(re.findall(r"(?<![\w.])sqrt\s*\(", code)) == 1


@pytest.mark.skipif(shutil.which("gcc") is None, reason="compiles the support code with gcc")
def test_batch_kernels_give_the_reference_bits_at_every_cpu_level(tmp_path):
    """The batched words (across a multiple of 2**32 blocks, where the key's high word changes) and
    the batched normal pairs, at each dispatch level this CPU has, against the numpy reference."""
    import subprocess

    from ffigraph.tensor.random import philox_c

    key, call, i0, m = 0x0123456789ABCDEF, 5, (1 << 32) - 9, 40
    src = tmp_path / "k.c"
    src.write_text("#include <stdint.h>\n#include <stdio.h>\n#include <string.h>\n#include <stdlib.h>\n"
                   "#include <math.h>\n" + philox_c.SUPPORT_C + r"""
int main(void)
{
    uint64_t wa[FFG_RNG_BATCH], wb[FFG_RNG_BATCH];
    double ev[FFG_RNG_BATCH], od[FFG_RNG_BATCH];
    int level, t, top = 0;
#ifdef FFG_RNG_X86
    top = ffg_rng_level();
#endif
    for (level = 0; level <= top; ++level) {
#ifdef FFG_RNG_X86
        ffg_rng_level_cache = level;
#endif
        ffg_rng_words(%dULL, %dULL, %dULL, %d, wa, wb);
        ffg_rng_normal_pairs(wa, wb, %d, ev, od);
        printf("level %%d\n", level);
        for (t = 0; t < %d; ++t)
            printf("%%llu %%llu %%a %%a\n", (unsigned long long)wa[t], (unsigned long long)wb[t], ev[t], od[t]);
    }
    return 0;
}
""" % (key, call, i0, m, m, m))
    exe = tmp_path / "k"
    subprocess.run(["gcc", "-O3", "-std=gnu11", "-fwrapv", "-ffp-contract=off", str(src), "-o", str(exe), "-lm"],
                   check=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split("level ")[1:]
    w = philox.word64(key, call, np.arange(2 * i0, 2 * (i0 + m), dtype=np.uint64))
    u1, u2 = 1.0 - philox.u53(w[0::2]), philox.u53(w[1::2])
    r = np.sqrt(-2.0 * philox.log(u1))
    c, s = philox.sincos2pi(u2)
    assert len(out) >= 1
    for text in out:
        rows = [line.split() for line in text.strip().split("\n")[1:]]
        assert [int(a) for a, _, _, _ in rows] == w[0::2].tolist()
        assert [int(b) for _, b, _, _ in rows] == w[1::2].tolist()
        assert [float.fromhex(e) for _, _, e, _ in rows] == (r * c).tolist()
        assert [float.fromhex(o) for _, _, _, o in rows] == (r * s).tolist()


# ------------------------------------------------------------------ export


@pytest.mark.skipif(any(shutil.which(t) is None for t in ("make", "gcc")), reason="exports are built with make and gcc")
def test_exported_library_draws_the_same_bits(tmp_path):
    from export_helpers import no_python_env, output_slot_names, parse_printed, run

    srng = RandomStream(99)
    u, z = srng.uniform(size=(3, 2)), srng.normal(2.0, 3.0, size=(4,), dtype="float32")
    f = function([], [u, z], name="draws")
    bundle = f.export(str(tmp_path / "draws"))
    env = no_python_env(tmp_path)
    run(["make", "-s"], bundle.directory, env)
    printed = parse_printed(run(["./example", "-n", "3"], bundle.directory, env).stdout)
    calls = [f() for _ in range(3)]   # the export started from the state before these calls
    names = output_slot_names(f)[:2]
    for name, want in zip(names, calls[-1]):
        got = printed[("output", name)]
        assert got.dtype == want.dtype and np.array_equal(got, want), (name, got, want)
