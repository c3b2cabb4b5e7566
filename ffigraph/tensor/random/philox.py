"""The numpy reference of the random streams: Philox4x32-10, the bit layout, and the samplers.

Everything here is what ``perform`` runs, and ``philox_c.py`` writes the same steps in C, in the
same order, so both give the same bits on every interpreter and machine.

Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2, 3",
SC'11) maps a 128-bit counter and a 64-bit key to 128 random bits (four 32-bit words).

How a random variable's element gets its bits (no state inside a call):

    key     the variable's 64-bit key (from the stream's seed, see ``derive_key``)
    call    the call counter held beside the key in the variable's state (0, 1, 2, ...)
    i       a 64-bit block index
    j       0 for the shared blocks; 1, 2, ... for an element's own further blocks

    block(key, call, i, j) = philox4x32_10(counter = (j, i_lo, call_lo, call_hi),
                                           key     = (key_lo, key_hi ^ i_hi))

(``_lo``/``_hi``: the low and high 32 bits.) The shared blocks (j = 0) are cut into elements::

    64-bit elements  (uniform float64, bernoulli, binomial's first trial, integers' first try,
                      choice, permutation keys): element e is word (1:0) of block (e // 2, 0) for
                      even e, word (3:2) for odd e;
    32-bit elements  (uniform float32): element e is 32-bit word e % 4 of block (e // 4, 0);
    normal pairs     elements 2k and 2k+1 are the cosine and sine halves of one Box-Muller draw
                      from block (k, 0).

An element that needs more bits (a rejected integer, binomial's trials 1, 2, ...) takes them from
its own blocks (e, j) with j >= 1, which no other element reads. So an element's value depends only
on (key, call, e): the C loop, the numpy arrays and any split over threads agree.
Floating point: the samplers use only ``+``, ``-``, ``*``, ``/``, ``sqrt`` (all correctly rounded in IEEE 754
double, in numpy and in C compiled without FMA contraction) and exact scaling by bit
manipulation. ``log`` and ``sin``/``cos`` are written here from those operations (libm and
numpy's SIMD versions differ in the last bit).
"""
from __future__ import annotations

import numpy as np

U64 = np.uint64
MASK32 = U64(0xFFFFFFFF)
SHIFT32 = U64(32)

# Philox4x32 multipliers and Weyl key increments (the published constants)
PHILOX_M0 = U64(0xD2511F53)
PHILOX_M1 = U64(0xCD9E8D57)
PHILOX_W0 = U64(0x9E3779B9)
PHILOX_W1 = U64(0xBB67AE85)
PHILOX_ROUNDS = 10

# SplitMix64 (Steele, Lea and Flood, OOPSLA 2014), used to turn a seed into keys
SPLITMIX_GAMMA = 0x9E3779B97F4A7C15
_M64 = (1 << 64) - 1


# ------------------------------------------------------------------ keys


def splitmix64_mix(z):
    """SplitMix64's output function of a 64-bit state (a Python int)."""
    z &= _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def seed_to_int(seed):
    """A seed (int or numpy integer, or a sequence of them) as a 64-bit int."""
    if isinstance(seed, (bool, np.bool_)):
        raise TypeError("a seed must be an integer, got %r" % (seed,))
    if isinstance(seed, (int, np.integer)):
        return int(seed) & _M64
    if isinstance(seed, (list, tuple, np.ndarray)):
        acc = 0
        for s in np.asarray(seed).ravel().tolist():
            acc = splitmix64_mix(acc ^ seed_to_int(s))
        return acc
    raise TypeError("a seed must be an integer (or a sequence of integers), got %r" % (seed,))


def derive_key(seed, index):
    """The key of a stream's ``index``-th random variable: output ``index`` of SplitMix64 seeded with
    ``seed`` (its state advances by the golden-ratio gamma before each output)."""
    return splitmix64_mix(seed_to_int(seed) + (int(index) + 1) * SPLITMIX_GAMMA)


def initial_state(seed, index):
    """A variable's state: ``[key, call counter]`` as a uint64 vector, the counter at 0."""
    return np.array([derive_key(seed, index), 0], dtype=np.uint64)


# ------------------------------------------------------------------ Philox4x32-10


def philox4x32_10(c0, c1, c2, c3, k0, k1, rounds=PHILOX_ROUNDS):
    """Philox4x32 over arrays (uint64 arrays holding 32-bit words); returns the four output words.

    Each round multiplies words 0 and 2 by the constants (a 32x32 -> 64-bit product, exact in
    uint64), and mixes the high halves with words 1 and 3 and the key; the key grows by the Weyl
    constants between rounds."""
    c0, c1, c2, c3 = (np.asarray(c, dtype=U64) for c in (c0, c1, c2, c3))
    k0, k1 = np.asarray(k0, dtype=U64), np.asarray(k1, dtype=U64)
    for r in range(rounds):
        if r:
            k0 = (k0 + PHILOX_W0) & MASK32
            k1 = (k1 + PHILOX_W1) & MASK32
        p0 = PHILOX_M0 * c0
        p1 = PHILOX_M1 * c2
        c0, c1, c2, c3 = ((p1 >> SHIFT32) ^ c1 ^ k0, p1 & MASK32,
                          (p0 >> SHIFT32) ^ c3 ^ k1, p0 & MASK32)
    return c0, c1, c2, c3


def block(key, call, index, j):
    """The 128 bits of block ``(index, j)`` (``index`` a uint64 array, ``j`` 0 or an array of the
    same shape) of a variable with this ``key`` at call ``call`` (Python ints); four uint64 arrays of
    32-bit words."""
    index = np.asarray(index, dtype=U64)
    key, call = U64(int(key) & _M64), U64(int(call) & _M64)
    return philox4x32_10(np.asarray(j, dtype=U64), index & MASK32, call & MASK32, call >> SHIFT32,
                         key & MASK32, (key >> SHIFT32) ^ (index >> SHIFT32))


def stream64(key, call, n):
    """The 64-bit words of elements 0..n-1 (uint64): words (1:0) then (3:2) of blocks 0, 1, 2, ..."""
    x0, x1, x2, x3 = block(key, call, np.arange((n + 1) // 2, dtype=U64), 0)
    out = np.empty(2 * x0.size, dtype=U64)
    out[0::2] = bits64(x0, x1)
    out[1::2] = bits64(x2, x3)
    return out[:n]


def stream32(key, call, n):
    """The 32-bit words of elements 0..n-1 (uint64 arrays holding 32 bits): words 0, 1, 2, 3 of blocks
    0, 1, 2, ..."""
    words = block(key, call, np.arange((n + 3) // 4, dtype=U64), 0)
    return np.stack(words, axis=-1).reshape(-1)[:n]


def word64(key, call, elems):
    """The 64-bit word of each element of ``elems`` (any indices): half e % 2 of block (e // 2, 0)."""
    elems = np.asarray(elems, dtype=U64)
    x0, x1, x2, x3 = block(key, call, elems >> U64(1), 0)
    return np.where((elems & U64(1)) == U64(1), bits64(x2, x3), bits64(x0, x1))


def bits64(lo, hi):
    """Two 32-bit words as one 64-bit word (``hi`` above ``lo``)."""
    return (hi << SHIFT32) | lo


def u53(word):
    """A float64 in [0, 1): the top 53 bits of a 64-bit word, times 2**-53."""
    return (np.asarray(word, dtype=U64) >> U64(11)).astype(np.float64) * 2.0 ** -53


def u24(word):
    """A float64 in [0, 1) on the float32 grid: the top 24 bits of a 32-bit word, times 2**-24."""
    return (word >> U64(8)).astype(np.float64) * 2.0 ** -24


# ------------------------------------------------------------------ log, sin, cos from + - * /

LOG_COEFFS = tuple(2.0 / (2 * i + 1) for i in range(1, 11))   # 2/3, 2/5, ..., 2/21: 2*atanh(s) series
LN2_HI = float.fromhex("0x1.62e42feep-1")                      # ln 2 to 32 bits: k*LN2_HI is exact
LN2_LO = float.fromhex("0x1.a39ef35793c76p-33")                # ln 2 - LN2_HI
SQRT2 = float.fromhex("0x1.6a09e667f3bcdp+0")
SIN_COEFFS = tuple((-1.0) ** i / float(_f) for i, _f in
                   ((1, 6), (2, 120), (3, 5040), (4, 362880), (5, 39916800), (6, 6227020800),
                    (7, 1307674368000), (8, 355687428096000), (9, 121645100408832000)))
COS_COEFFS = tuple((-1.0) ** i / float(_f) for i, _f in
                   ((2, 24), (3, 720), (4, 40320), (5, 3628800), (6, 479001600), (7, 87178291200),
                    (8, 20922789888000), (9, 6402373705728000), (10, 2432902008176640000)))
PIO2 = float.fromhex("0x1.921fb54442d18p+0")                   # pi/2 rounded
PIO2_1 = float.fromhex("0x1.921fb544p+0")                      # pi/2 in three 33-bit pieces
PIO2_2 = float.fromhex("0x1.0b4611a6p-34")
PIO2_3 = float.fromhex("0x1.3198a2e037073p-69")
INV_PIO2 = float.fromhex("0x1.45f306dc9c883p-1")               # 2/pi
ROUND_MAGIC = float.fromhex("0x1.8p52")                        # (t + M) - M rounds t to an integer
EXP_MASK = U64(0x7FF)
MANT_MASK = U64((1 << 52) - 1)
ONE_BITS = U64(1023 << 52)


def _horner(z, coeffs):
    acc = np.full(np.shape(z), coeffs[-1], dtype=np.float64)
    for c in coeffs[-2::-1]:
        acc = c + z * acc
    return acc


def log(x):
    """Natural log of positive normal float64 values (an array), to about 1 ulp.

    x = 2**k * m with m in (sqrt(2)/2, sqrt(2)], f = m - 1 (exact), s = f / (2 + f), and
    log(1 + f) = 2*atanh(s) = f - f*f/2 + s*(f*f/2 + R), R = 2*(s**2/3 + s**4/5 + ... + s**20/21);
    then k*ln2 in two parts (fdlibm's arrangement)."""
    x = np.asarray(x, dtype=np.float64)
    bits = x.view(U64)
    k = ((bits >> U64(52)) & EXP_MASK).astype(np.int64) - 1023
    m = ((bits & MANT_MASK) | ONE_BITS).view(np.float64)        # in [1, 2)
    big = m > SQRT2
    m = np.where(big, m * 0.5, m)
    k = np.where(big, k + 1, k).astype(np.float64)
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    r = z * _horner(z, LOG_COEFFS)
    hfsq = 0.5 * f * f
    return k * LN2_HI - ((hfsq - (s * (hfsq + r) + k * LN2_LO)) - f)


def ksin(a):
    """sin(a) for ``|a| <= pi/4``: ``a + a*z*(S1 + z*(S2 + ...))``, Taylor coefficients through a**19."""
    a = np.asarray(a, dtype=np.float64)
    z = a * a
    return a + a * z * _horner(z, SIN_COEFFS)


def kcos(a):
    """cos(a) for ``|a| <= pi/4``: ``1 - z/2 + z*z*(C2 + z*(C3 + ...))``, with ``1 - z/2`` compensated."""
    a = np.asarray(a, dtype=np.float64)
    z = a * a
    hz = 0.5 * z
    w = 1.0 - hz
    return w + (((1.0 - w) - hz) + z * z * _horner(z, COS_COEFFS))


def _quadrant_select(q, s, c, for_cos):
    q = q.astype(np.int64) & 3
    if for_cos:   # cos(q*pi/2 + a)
        return np.where(q == 0, c, np.where(q == 1, -s, np.where(q == 2, -c, s)))
    return np.where(q == 0, s, np.where(q == 1, c, np.where(q == 2, -s, -c)))   # sin(q*pi/2 + a)


def _reduce(x):
    x = np.asarray(x, dtype=np.float64)
    q = (x * INV_PIO2 + ROUND_MAGIC) - ROUND_MAGIC
    r = ((x - q * PIO2_1) - q * PIO2_2) - q * PIO2_3
    return q, r


def sin(x):
    """sin(x) for ``|x| < 2**19`` (Cody-Waite reduction by pi/2 in three parts), to a few ulp."""
    q, r = _reduce(x)
    return _quadrant_select(q, ksin(r), kcos(r), False)


def cos(x):
    """cos(x) for ``|x| < 2**19``, as ``sin``."""
    q, r = _reduce(x)
    return _quadrant_select(q, ksin(r), kcos(r), True)


def cos2pi(u):
    """cos(2*pi*u) for u in [0, 1): reduced in turns, exactly (4u - round(4u)), then a kernel."""
    t = 4.0 * np.asarray(u, dtype=np.float64)
    q = (t + ROUND_MAGIC) - ROUND_MAGIC
    a = (t - q) * PIO2
    return _quadrant_select(q, ksin(a), kcos(a), True)


def sin2pi(u):
    """sin(2*pi*u) for u in [0, 1), as ``cos2pi``."""
    t = 4.0 * np.asarray(u, dtype=np.float64)
    q = (t + ROUND_MAGIC) - ROUND_MAGIC
    a = (t - q) * PIO2
    return _quadrant_select(q, ksin(a), kcos(a), False)


def sincos2pi(u):
    """(cos(2*pi*u), sin(2*pi*u)) for u in [0, 1), from one reduction and one pair of kernels."""
    t = 4.0 * np.asarray(u, dtype=np.float64)
    q = (t + ROUND_MAGIC) - ROUND_MAGIC
    a = (t - q) * PIO2
    s, c = ksin(a), kcos(a)
    return _quadrant_select(q, s, c, True), _quadrant_select(q, s, c, False)


# ------------------------------------------------------------------ samplers (flat arrays)
# Each takes the variable's key and call counter and the flat C-order parameters already broadcast
# to the output's size n, and returns a flat array of n values.


def std_uniform(key, call, n, dtype):
    """n uniforms in [0, 1): 53 bits of the element's 64-bit word (float64), or 24 bits of its 32-bit
    word (float32: four elements per block)."""
    if np.dtype(dtype) == np.float64:
        return u53(stream64(key, call, n))
    return u24(stream32(key, call, n))


def uniform(key, call, n, low, high, dtype):
    """low + (high - low) * u, in float64, rounded once to ``dtype``."""
    u = std_uniform(key, call, n, dtype)
    return (low + (high - low) * u).astype(dtype)


def std_normal(key, call, n):
    """Box-Muller in pairs: block (k, 0) gives u1 = 1 - u53(words 1:0) in (0, 1] and
    u2 = u53(words 3:2) in [0, 1), r = sqrt(-2 log u1); element 2k is r cos(2 pi u2) and element
    2k+1 is r sin(2 pi u2)."""
    w = stream64(key, call, 2 * ((n + 1) // 2))
    u1 = 1.0 - u53(w[0::2])
    u2 = u53(w[1::2])
    r = np.sqrt(-2.0 * log(u1))
    c, s = sincos2pi(u2)
    out = np.empty(w.size, dtype=np.float64)
    out[0::2] = r * c
    out[1::2] = r * s
    return out[:n]


def normal(key, call, n, loc, scale, dtype):
    """loc + scale * z, in float64, rounded once to ``dtype``."""
    z = std_normal(key, call, n)
    return (loc + scale * z).astype(dtype)


def _range_mask(rm1):
    """The smallest 2**b - 1 >= rm1 (uint64 arrays)."""
    m = rm1.copy()
    for sh in (1, 2, 4, 8, 16, 32):
        m |= m >> U64(sh)
    return m


def bounded(key, call, elems, rm1):
    """Unbiased integers in [0, rm1] (uint64 arrays, one per element in ``elems``), by masked
    rejection: the element's 64-bit word masked to the bits rm1 needs is kept if <= rm1; else the
    element's own blocks (e, 1), (e, 2), ... give two tries each (words 1:0, then 3:2)."""
    elems = np.asarray(elems, dtype=U64)
    rm1 = np.asarray(rm1, dtype=U64)
    mask = _range_mask(rm1)
    if elems.size and int(elems[-1]) == elems.size - 1 and np.array_equal(elems, np.arange(elems.size, dtype=U64)):
        v = stream64(key, call, elems.size) & mask
    else:
        v = word64(key, call, elems) & mask
    out = v.copy()
    pending = np.flatnonzero(v > rm1)
    j = 1
    while pending.size:
        x0, x1, x2, x3 = block(key, call, elems[pending], j)
        m, lim = mask[pending], rm1[pending]
        v0 = bits64(x0, x1) & m
        v1 = bits64(x2, x3) & m
        ok0 = v0 <= lim
        ok1 = ~ok0 & (v1 <= lim)
        out[pending[ok0]] = v0[ok0]
        out[pending[ok1]] = v1[ok1]
        pending = pending[~(ok0 | ok1)]
        j += 1
    return out


def integers(key, call, n, low, high):
    """Integers in [low, high) (int64 arrays): low + bounded(high - low - 1), in wrapping uint64."""
    low = np.asarray(low, dtype=np.int64)
    high = np.asarray(high, dtype=np.int64)
    rm1 = high.view(U64) - low.view(U64) - U64(1)
    return (low.view(U64) + bounded(key, call, np.arange(n, dtype=U64), rm1)).view(np.int64)


def bernoulli(key, call, n, p):
    """1 where u53 of the element's 64-bit word is below p, else 0 (int64)."""
    return (u53(stream64(key, call, n)) < p).astype(np.int64)


BINOMIAL_CHUNK = 1 << 18


def binomial(key, call, n_elems, trials, p):
    """The number of successes in ``trials`` Bernoulli(p) trials per element: trial 0 is the
    element's 64-bit word (so binomial(1, p) is bernoulli(p)); trial t >= 1 uses the element's own
    block ((t + 1) // 2 as j), words 1:0 for odd t and 3:2 for even t. Cost: O(trials) per element."""
    trials = np.asarray(trials, dtype=np.int64)
    p = np.asarray(p, dtype=np.float64)
    out = ((u53(stream64(key, call, n_elems)) < p) & (trials > 0)).astype(np.int64)
    nblocks = trials // 2                 # own blocks 1 .. trials // 2 hold trials 1 .. trials - 1
    total = int(nblocks.sum()) if n_elems else 0
    starts = np.cumsum(nblocks) - nblocks
    owner = np.repeat(np.arange(n_elems), nblocks)
    for lo in range(0, total, BINOMIAL_CHUNK):
        pos = np.arange(lo, min(total, lo + BINOMIAL_CHUNK))
        who = owner[pos]
        j = (pos - starts[who] + 1).astype(U64)
        x0, x1, x2, x3 = block(key, call, who.astype(U64), j)
        hit0 = u53(bits64(x0, x1)) < p[who]                                          # trial 2j - 1
        hit1 = (u53(bits64(x2, x3)) < p[who]) & (2 * j.astype(np.int64) < trials[who])  # trial 2j
        out += np.bincount(who, weights=hit0.astype(np.int64) + hit1.astype(np.int64),
                           minlength=n_elems).astype(np.int64)
    return out


def choice_cdf(p):
    """The running sums of p, added left to right in float64 (the order C uses)."""
    p = np.asarray(p, dtype=np.float64)
    cdf = np.empty(p.shape, dtype=np.float64)
    acc = 0.0
    for i, v in enumerate(p.tolist()):
        acc = acc + v
        cdf[i] = acc
    return cdf


def choice_index_p(key, call, n, cdf):
    """Indices drawn with the probabilities behind ``cdf``: the first i with cdf[i] > u*cdf[-1],
    u = u53 of the element's 64-bit word; the last index with a non-zero probability if rounding runs
    past the end."""
    target = u53(stream64(key, call, n)) * cdf[-1]
    idx = np.searchsorted(cdf, target, side="right")
    if np.any(idx >= cdf.size):
        last = cdf.size - 1
        while last > 0 and cdf[last] == cdf[last - 1]:
            last -= 1
        idx = np.minimum(idx, last)
    return idx.astype(np.int64)


def sort_keys(key, call, elems):
    """The 64-bit sort key of each element: its 64-bit word."""
    return word64(key, call, elems)


def permutation_indices(key, call, batch, n):
    """``batch`` permutations of range(n) (a (batch, n) int64 array): row b sorts 0..n-1 by the keys
    of elements b*n + i, ties broken by i (so a permutation always, and the same one everywhere)."""
    out = np.empty((batch, n), dtype=np.int64)
    idx = np.arange(n, dtype=np.int64)
    for b in range(batch):
        keys = sort_keys(key, call, U64(b * n) + idx.astype(U64))
        out[b] = np.lexsort((idx, keys))
    return out
