"""Random-variable ops: draws from the counter-based Philox4x32-10 stream of a state vector.

Every op takes the state first: a uint64 vector ``[key, call counter]`` (a shared variable made by
a stream, ``ffigraph.compile.random_stream``), then, for those that have one, ``size`` (an int64
vector, left out when the op has ``has_size=False``), then its parameters. The op reads the state
and never changes it; the stream gives the state a ``default_update`` that adds one to the
counter, so each call of a compiled function draws new numbers. Element ``e`` of the output takes
its bits from Philox blocks of (key, counter, e) only (``philox.py``), so ``perform`` (numpy) and
the C code (``philox_c.py``) give the same bits.

Parameters broadcast against each other; with ``size`` they must broadcast to ``size`` (numpy's
``Generator`` rules). Bad parameter values raise ValueError naming the parameter, at graph-build
time when they are constants, from ``perform``, and from C (``FFG_ERR_VALUE``).
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.basic import Apply, Constant
from ffigraph.graph.c_interface import DelegatedCOp
from ffigraph.graph.op import Op
from ffigraph.tensor.basic import as_tensor_variable, cast, constant, stack
from ffigraph.tensor.random import philox
from ffigraph.tensor.type import TensorType, normalize_dtype

BINOMIAL_MAX_N = 1 << 32   # binomial sums n trials; more would take minutes per element
INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32")


# ------------------------------------------------------------------ argument handling


def as_state(state):
    state = as_tensor_variable(state)
    if state.dtype != "uint64" or state.ndim != 1:
        raise TypeError("a random variable's state must be a uint64 vector [key, counter], got %s of type %s"
                        % (state, state.type))
    return state


def as_size(size, what="size"):
    """``size`` as an int64 vector variable of static length, or None (absent)."""
    if size is None:
        return None
    if isinstance(size, (int, np.integer)) and not isinstance(size, (bool, np.bool_)):
        size = (int(size),)
    if isinstance(size, (list, tuple)):
        if all(isinstance(s, (int, np.integer)) and not isinstance(s, (bool, np.bool_)) for s in size):
            for s in size:
                if s < 0:
                    raise ValueError("%s: negative dimensions are not allowed, got %s" % (what, tuple(size)))
            return constant(np.asarray(size, dtype=np.int64).reshape(len(size)))
        entries = []
        for s in size:
            s = as_tensor_variable(s)
            if s.ndim != 0 or np.dtype(s.dtype).kind not in "iu":
                raise TypeError("%s: each entry must be an integer scalar, got %s of type %s" % (what, s, s.type))
            entries.append(cast(s, "int64"))
        return stack(entries) if entries else constant(np.zeros(0, dtype=np.int64))
    size = as_tensor_variable(size)
    if size.ndim != 1 or np.dtype(size.dtype).kind not in "iu":
        raise TypeError("%s must be a tuple of ints or an integer vector, got %s of type %s"
                        % (what, size, size.type))
    if size.type.shape[0] is None:
        raise ValueError("%s=%s has no static length, so the number of dimensions of the draw is unknown; "
                         "give a tuple, or a vector of static length" % (what, size))
    return cast(size, "int64")


def static_size(size):
    """The size as a tuple when it is a constant, else None."""
    if isinstance(size, Constant):
        return tuple(int(s) for s in np.asarray(size.data).ravel())
    return None


def _broadcast_static(shapes, what):
    """The static broadcast of static shapes (None: unknown), right-aligned; ValueError on a clash."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for d in range(ndim):
        lens = [s[d - ndim + len(s)] for s in shapes if d - ndim + len(s) >= 0]
        known = {n for n in lens if n is not None and n != 1}
        if len(known) > 1:
            raise ValueError("%s: parameter shapes %s do not broadcast" % (what, shapes))
        if known:
            out.append(known.pop())
        elif lens and all(n == 1 for n in lens):
            out.append(1)
        else:
            out.append(None)
    return tuple(out)


def _check_fits_size(shapes, size, what):
    """Static check that every parameter shape broadcasts to ``size`` (numpy Generator rules)."""
    for shp in shapes:
        if len(shp) > len(size):
            raise ValueError("%s: a parameter of %d dimensions does not fit size %s" % (what, len(shp), size))
        for n, want in zip(shp[::-1], size[::-1]):
            if n is not None and n != 1 and want is not None and n != want:
                raise ValueError("%s: parameter shape %s does not broadcast to size %s" % (what, shp, size))


def broadcast_values(params, size, what):
    """(shape, flat params broadcast to it) at run time; ValueError when they do not fit."""
    shapes = [np.shape(p) for p in params]
    if size is None:
        try:
            shape = np.broadcast_shapes(*shapes) if shapes else ()
        except ValueError:
            raise ValueError("%s: parameter shapes %s do not broadcast" % (what, shapes)) from None
    else:
        shape = tuple(int(s) for s in size)
        if any(s < 0 for s in shape):
            raise ValueError("%s: negative dimensions are not allowed in size %s" % (what, shape))
        for shp in shapes:
            ok = len(shp) <= len(shape) and all(n == 1 or n == want for n, want in zip(shp[::-1], shape[::-1]))
            if not ok:
                raise ValueError("%s: parameter shape %s does not broadcast to size %s" % (what, shp, shape))
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    flat = [np.broadcast_to(p, shape).reshape(n) for p in params]
    return shape, n, flat


def read_state(state, what):
    state = np.asarray(state)
    if state.shape != (2,):
        raise ValueError("%s: the random state must be a vector [key, counter] of length 2, got shape %s"
                         % (what, state.shape))
    return int(state[0]), int(state[1])


def _fmt(v):
    return repr(v.item()) if isinstance(v, np.generic) else repr(v)


# ------------------------------------------------------------------ the ops


class RandomVariable(DelegatedCOp, Op):
    """A draw of ``dtype`` with ``ndim`` dimensions from the stream of the state input.

    Subclasses name the distribution (``dist``), its parameters and their dtypes, and give
    ``check`` (the bad-value rule, on flat broadcast values) and ``sample`` (the numpy reference).
    """

    c_impl = "ffigraph.tensor.random.philox_c"
    __props__ = ("dtype", "ndim", "has_size")
    dist = None
    param_names = ()
    param_dtypes = ()

    def __init__(self, dtype, ndim, has_size):
        self.dtype = normalize_dtype(dtype)
        self.ndim = int(ndim)
        self.has_size = bool(has_size)

    # -- the graph

    def make_node(self, state, size, *params):
        what = self.dist
        state = as_state(state)
        if len(params) != len(self.param_names):
            raise TypeError("%s takes the parameters %s, got %d" % (what, ", ".join(self.param_names), len(params)))
        params = [cast(as_tensor_variable(p), dt) for p, dt in zip(params, self.param_dtypes)]
        shapes = [p.type.shape for p in params]
        inputs = [state]
        if self.has_size:
            size = as_size(size)
            if size.type.shape[0] != self.ndim:
                raise ValueError("%s: size has %d entries but the op draws %d dimensions"
                                 % (what, size.type.shape[0], self.ndim))
            inputs.append(size)
            known = static_size(size)
            out_shape = known if known is not None else (None,) * self.ndim
            _check_fits_size(shapes, out_shape, what)
        else:
            if size is not None:
                raise TypeError("%s: this op has no size input" % what)
            out_shape = _broadcast_static(shapes, what)
            if len(out_shape) != self.ndim:
                raise ValueError("%s: the parameters have %d dimensions, the op draws %d"
                                 % (what, len(out_shape), self.ndim))
        self.check_constants(params)
        return Apply(self, inputs + params, [TensorType(self.dtype, out_shape)()])

    def check_constants(self, params):
        """Raise at graph-build time for constant parameters with bad values."""
        if all(isinstance(p, Constant) for p in params) and params:
            try:
                _, _, flat = broadcast_values([p.data for p in params], None, self.dist)
            except ValueError:
                return   # the build-time shape checks say it better
            self.check(flat)
        else:
            for p, name in zip(params, self.param_names):
                if isinstance(p, Constant):
                    self.check_one(name, np.asarray(p.data).ravel())

    def check(self, flat):
        for name, values in zip(self.param_names, flat):
            self.check_one(name, values)

    def check_one(self, name, values):
        """Checks of one parameter alone (all its values)."""

    def do_constant_folding(self, fgraph, node):
        return False   # a draw is never a constant, even from a constant state

    def grad(self, inputs, output_grads):
        from ffigraph.tensor.gradient import grad_undefined

        return [grad_undefined(self, i, inp, "a random draw has no gradient with respect to its state "
                               "or parameters") for i, inp in enumerate(inputs)]

    def connection_pattern(self, node):
        return [[True] for _ in node.inputs]

    # -- running

    def perform(self, node, inputs, output_storage):
        key, call = read_state(inputs[0], self.dist)
        size = inputs[1] if self.has_size else None
        params = inputs[2:] if self.has_size else inputs[1:]
        shape, n, flat = broadcast_values(params, size, self.dist)
        self.check(flat)
        out = self.sample(key, call, n, flat)
        output_storage[0][0] = np.asarray(out, dtype=self.dtype).reshape(shape)

    def sample(self, key, call, n, flat):
        raise NotImplementedError

    def __str__(self):
        return "%s{%s%s}" % (type(self).__name__, self.dtype, ", size" if self.has_size else "")


def _bad_message(dist, name, rule, value):
    return "%s: %s %s, got %s" % (dist, name, rule, _fmt(value))


class UniformRV(RandomVariable):
    """Uniform on [low, high): low + (high - low) * u in float64, rounded once to ``dtype``;
    u has 53 random bits for float64 and 24 for float32."""

    dist = "uniform"
    param_names = ("low", "high")
    param_dtypes = ("float64", "float64")

    def __init__(self, dtype, ndim, has_size):
        super().__init__(dtype, ndim, has_size)
        if self.dtype not in ("float32", "float64"):
            raise TypeError("uniform: dtype must be float32 or float64, got %s" % self.dtype)

    def sample(self, key, call, n, flat):
        return philox.uniform(key, call, n, flat[0], flat[1], self.dtype)


class NormalRV(RandomVariable):
    """Normal(loc, scale) by Box-Muller on one Philox block per element (see philox.std_normal)."""

    dist = "normal"
    param_names = ("loc", "scale")
    param_dtypes = ("float64", "float64")

    def __init__(self, dtype, ndim, has_size):
        super().__init__(dtype, ndim, has_size)
        if self.dtype not in ("float32", "float64"):
            raise TypeError("normal: dtype must be float32 or float64, got %s" % self.dtype)

    def check_one(self, name, values):
        if name == "scale":
            bad = np.flatnonzero(values < 0)
            if bad.size:
                raise ValueError(_bad_message("normal", "scale", "must be >= 0", values[bad[0]]))

    def sample(self, key, call, n, flat):
        return philox.normal(key, call, n, flat[0], flat[1], self.dtype)


class IntegersRV(RandomVariable):
    """Integers uniform on [low, high), without modulo bias (masked rejection, philox.bounded)."""

    dist = "integers"
    param_names = ("low", "high")
    param_dtypes = ("int64", "int64")

    def __init__(self, dtype, ndim, has_size):
        super().__init__(dtype, ndim, has_size)
        if self.dtype not in INT_DTYPES:
            raise TypeError("integers: dtype must be one of %s, got %s" % (", ".join(INT_DTYPES), self.dtype))

    def check(self, flat):
        low, high = flat
        bad = np.flatnonzero(low >= high)
        if bad.size:
            raise ValueError("integers: low >= high (low=%s, high=%s)" % (_fmt(low[bad[0]]), _fmt(high[bad[0]])))
        info = np.iinfo(self.dtype)
        bad = np.flatnonzero((low < info.min) | (high - 1 > info.max))
        if bad.size:
            raise ValueError("integers: low=%s, high=%s do not fit dtype %s" % (_fmt(low[bad[0]]), _fmt(high[bad[0]]),
                                                                              self.dtype))

    def sample(self, key, call, n, flat):
        return philox.integers(key, call, n, flat[0], flat[1])


class BernoulliRV(RandomVariable):
    """1 with probability p, else 0 (u53 < p)."""

    dist = "bernoulli"
    param_names = ("p",)
    param_dtypes = ("float64",)

    def check_one(self, name, values):
        _check_probability("bernoulli", values)

    def sample(self, key, call, n, flat):
        return philox.bernoulli(key, call, n, flat[0])


class BinomialRV(RandomVariable):
    """The number of successes in n Bernoulli(p) trials, counted one trial at a time (exact for any
    n and p; the cost is O(n) per element, so n is limited to 2**32)."""

    dist = "binomial"
    param_names = ("n", "p")
    param_dtypes = ("int64", "float64")

    def check_one(self, name, values):
        if name == "n":
            bad = np.flatnonzero(values < 0)
            if bad.size:
                raise ValueError(_bad_message("binomial", "n", "must be >= 0", values[bad[0]]))
            bad = np.flatnonzero(values > BINOMIAL_MAX_N)
            if bad.size:
                raise ValueError(_bad_message("binomial", "n", "must be <= 2**32 (n trials are drawn one by one)",
                                              values[bad[0]]))
        else:
            _check_probability("binomial", values)

    def sample(self, key, call, n, flat):
        return philox.binomial(key, call, n, flat[0], flat[1])


def _check_probability(dist, values):
    bad = np.flatnonzero(~((values >= 0) & (values <= 1)))
    if bad.size:
        raise ValueError(_bad_message(dist, "p", "must be in [0, 1]", values[bad[0]]))


def choice_tolerance(p_dtype):
    """How far sum(p) may be from 1: numpy's choice rule, sqrt of the float epsilon."""
    return float(np.sqrt(np.finfo(np.float32 if p_dtype == "float32" else np.float64).eps))


def _population(op, name, v):
    """``v`` (choice's ``a``, permutation's ``x``) checked: an integer (the population size, cast
    to int64; a constant must be >= 0) or a vector of the op's dtype. Arrays of 2 or more
    dimensions are not implemented."""
    v = as_tensor_variable(v)
    if v.ndim == 0:
        if np.dtype(v.dtype).kind not in "iu":
            raise TypeError("%s: %s must be an integer (the population size) or a vector, got %s"
                            % (op.dist, name, v.type))
        v = cast(v, "int64")
        if isinstance(v, Constant) and int(v.data) < 0:
            raise ValueError("%s: %s must be a non-negative integer, got %d" % (op.dist, name, int(v.data)))
    elif v.ndim != 1:
        raise NotImplementedError("%s: %s must be an integer or a vector; populations of %d dimensions are "
                                  "not implemented" % (op.dist, name, v.ndim))
    if v.dtype != op.dtype:
        raise TypeError("%s: the op's dtype %s is not the population's %s" % (op.dist, op.dtype, v.dtype))
    return v


class ChoiceRV(DelegatedCOp, Op):
    """``a[i]`` for random indices i (or i itself when ``a`` is an integer count), ``size`` draws.

    With ``replace`` each draw is independent: uniform indices (philox.bounded) or, with ``p``,
    the first index whose running sum of p passes u * sum(p). Without ``replace`` the population
    is permuted as ``PermutationRV`` does and the first prod(size) are kept. ``p`` without
    replacement is not implemented."""

    c_impl = "ffigraph.tensor.random.philox_c"
    __props__ = ("dtype", "ndim", "has_size", "replace", "has_p", "p_dtype")
    dist = "choice"

    def __init__(self, dtype, ndim, has_size, replace=True, has_p=False, p_dtype="float64"):
        self.dtype = normalize_dtype(dtype)
        self.ndim = int(ndim)
        self.has_size = bool(has_size)
        self.replace = bool(replace)
        self.has_p = bool(has_p)
        self.p_dtype = normalize_dtype(p_dtype)
        if self.has_p and not self.replace:
            raise NotImplementedError("choice: p with replace=False (weighted sampling without replacement) "
                                      "is not implemented")

    def make_node(self, state, size, a, p=None):
        state = as_state(state)
        a = _population(self, "a", a)
        inputs = [state]
        out_shape = ()
        if self.has_size:
            size = as_size(size)
            if size.type.shape[0] != self.ndim:
                raise ValueError("choice: size has %d entries but the op draws %d dimensions"
                                 % (size.type.shape[0], self.ndim))
            inputs.append(size)
            known = static_size(size)
            out_shape = known if known is not None else (None,) * self.ndim
        elif self.ndim != 0:
            raise ValueError("choice: without size the draw is a scalar")
        inputs.append(a)
        if not self.replace:
            self._check_sample_fits(a, out_shape)
        if self.has_p:
            p = as_tensor_variable(p)
            if p.ndim != 1 or np.dtype(p.dtype).kind != "f":
                raise TypeError("choice: p must be a float vector, got %s" % p.type)
            if p.dtype != self.p_dtype:
                raise TypeError("choice: p has dtype %s, the op expects %s" % (p.dtype, self.p_dtype))
            inputs.append(p)
            if isinstance(p, Constant):
                self.check_p(np.asarray(p.data), None)
        elif p is not None:
            raise TypeError("choice: this op has no p input")
        return Apply(self, inputs, [TensorType(self.dtype, out_shape)()])

    @staticmethod
    def _check_sample_fits(a, out_shape):
        """Without replacement, a sample larger than the population is refused when the graph is
        built, when both sizes are known then (a constant ``a`` or a vector of static length, and a
        constant ``size``); otherwise ``perform`` and the C code refuse it."""
        if any(s is None for s in out_shape):
            return
        if a.ndim == 0:
            if not isinstance(a, Constant):
                return
            n = int(a.data)
        elif a.type.shape[0] is None:
            return
        else:
            n = a.type.shape[0]
        k = int(np.prod(out_shape, dtype=np.int64)) if out_shape else 1
        if 0 <= n < k:
            raise ValueError("choice: cannot take a larger sample (%d) than the population (%d) when "
                             "replace=False" % (k, n))

    def check_p(self, p, n):
        if n is not None and p.shape[0] != n:
            raise ValueError("choice: p must have the same size as a (%d), got %d" % (n, p.shape[0]))
        bad = np.flatnonzero(~(p.astype(np.float64) >= 0))
        if bad.size:
            raise ValueError("choice: p must be non-negative, got %s" % _fmt(p[bad[0]]))
        total = philox.choice_cdf(p)[-1] if p.size else 0.0
        if not abs(total - 1.0) <= choice_tolerance(self.p_dtype):
            raise ValueError("choice: p must sum to 1, its sum is %r" % float(total))

    def do_constant_folding(self, fgraph, node):
        return False

    def grad(self, inputs, output_grads):
        from ffigraph.tensor.gradient import grad_undefined

        return [grad_undefined(self, i, inp, "a random draw has no gradient") for i, inp in enumerate(inputs)]

    def perform(self, node, inputs, output_storage):
        key, call = read_state(inputs[0], "choice")
        pos = 1
        if self.has_size:
            shape = tuple(int(s) for s in inputs[1])
            pos = 2
            if any(s < 0 for s in shape):
                raise ValueError("choice: negative dimensions are not allowed in size %s" % (shape,))
        else:
            shape = ()
        a = inputs[pos]
        k = int(np.prod(shape, dtype=np.int64)) if shape else 1
        population = None if np.ndim(a) == 0 else np.asarray(a)
        n = int(a) if population is None else population.shape[0]
        if n < 0:
            raise ValueError("choice: a must be a positive integer, got %d" % n)
        if n == 0 and k > 0:
            raise ValueError("choice: a cannot be empty unless no samples are taken")
        if self.has_p:
            p = np.asarray(inputs[pos + 1])
            self.check_p(p, n)
        if not self.replace and k > n:
            raise ValueError("choice: cannot take a larger sample (%d) than the population (%d) when "
                             "replace=False" % (k, n))
        if k == 0:
            idx = np.zeros(0, dtype=np.int64)
        elif not self.replace:
            idx = philox.permutation_indices(key, call, 1, n)[0, :k]
        elif self.has_p:
            idx = philox.choice_index_p(key, call, k, philox.choice_cdf(p))
        else:
            rm1 = np.full(k, n - 1, dtype=np.uint64)
            idx = philox.bounded(key, call, np.arange(k, dtype=np.uint64), rm1).astype(np.int64)
        out = idx if population is None else population[idx]
        output_storage[0][0] = np.asarray(out, dtype=self.dtype).reshape(shape)

    def __str__(self):
        return "ChoiceRV{%s%s%s%s}" % (self.dtype, ", size" if self.has_size else "",
                                       "" if self.replace else ", no replace", ", p" if self.has_p else "")


class PermutationRV(DelegatedCOp, Op):
    """A random permutation of ``x`` (a vector) or of ``range(x)`` (an integer): positions sorted by
    64-bit Philox keys, ties broken by position. With ``size`` (Theano's form, integer x only) the
    output has shape size + (x,), one independent permutation per row."""

    c_impl = "ffigraph.tensor.random.philox_c"
    __props__ = ("dtype", "ndim", "has_size")
    dist = "permutation"

    def __init__(self, dtype, ndim, has_size):
        self.dtype = normalize_dtype(dtype)
        self.ndim = int(ndim)
        self.has_size = bool(has_size)

    def make_node(self, state, size, x):
        state = as_state(state)
        x = _population(self, "x", x)
        inputs = [state]
        lead = ()
        if self.has_size:
            if x.ndim:
                raise NotImplementedError("permutation: size is only implemented for an integer x")
            size = as_size(size)
            inputs.append(size)
            known = static_size(size)
            lead = known if known is not None else (None,) * size.type.shape[0]
        n_static = (int(x.data) if isinstance(x, Constant) else None) if x.ndim == 0 else x.type.shape[0]
        out_shape = tuple(lead) + (n_static,)
        if len(out_shape) != self.ndim:
            raise ValueError("permutation: the op draws %d dimensions, the arguments give %d"
                             % (self.ndim, len(out_shape)))
        return Apply(self, inputs + [x], [TensorType(self.dtype, out_shape)()])

    def do_constant_folding(self, fgraph, node):
        return False

    def grad(self, inputs, output_grads):
        from ffigraph.tensor.gradient import grad_undefined

        return [grad_undefined(self, i, inp, "a random draw has no gradient") for i, inp in enumerate(inputs)]

    def perform(self, node, inputs, output_storage):
        key, call = read_state(inputs[0], "permutation")
        lead = ()
        if self.has_size:
            lead = tuple(int(s) for s in inputs[1])
            if any(s < 0 for s in lead):
                raise ValueError("permutation: negative dimensions are not allowed in size %s" % (lead,))
        x = inputs[-1]
        population = None if np.ndim(x) == 0 else np.asarray(x)
        n = int(x) if population is None else population.shape[0]
        if n < 0:
            raise ValueError("permutation: x must be a non-negative integer, got %d" % n)
        batch = int(np.prod(lead, dtype=np.int64)) if lead else 1
        idx = philox.permutation_indices(key, call, batch, n)
        out = idx if population is None else population[idx]
        output_storage[0][0] = np.asarray(out, dtype=self.dtype).reshape(tuple(lead) + (n,))

    def __str__(self):
        return "PermutationRV{%s%s}" % (self.dtype, ", size" if self.has_size else "")


# ------------------------------------------------------------------ building draws


def _default_float_dtype(dtype):
    return normalize_dtype("floatX" if dtype is None else dtype)


def _draw(cls, state, size, params, dtype):
    params = [as_tensor_variable(p) for p in params]
    size_var = as_size(size)
    if size_var is None:
        ndim = max((p.ndim for p in params), default=0)
    else:
        ndim = size_var.type.shape[0]
    op = cls(dtype, ndim, size_var is not None)
    return op(state, size_var, *params)


def uniform(state, low=0.0, high=1.0, size=None, dtype=None):
    """A uniform draw on [low, high) from ``state``; ``dtype`` floatX by default."""
    return _draw(UniformRV, state, size, (low, high), _default_float_dtype(dtype))


def normal(state, loc=0.0, scale=1.0, size=None, dtype=None):
    """A normal draw (Box-Muller) from ``state``; ``dtype`` floatX by default."""
    return _draw(NormalRV, state, size, (loc, scale), _default_float_dtype(dtype))


def integers(state, low, high=None, size=None, dtype="int64"):
    """Integers in [low, high) (``integers(state, high)``: [0, high)), int64 by default."""
    if high is None:
        low, high = 0, low
    return _draw(IntegersRV, state, size, (low, high), dtype)


def bernoulli(state, p, size=None):
    return _draw(BernoulliRV, state, size, (p,), "int64")


def binomial(state, n, p, size=None):
    return _draw(BinomialRV, state, size, (n, p), "int64")


def choice(state, a, size=None, replace=True, p=None):
    """Draws from ``a`` (a vector, or an integer: range(a)), numpy's ``Generator.choice`` on axis 0."""
    a = as_tensor_variable(a)
    size_var = as_size(size)
    ndim = 0 if size_var is None else size_var.type.shape[0]
    dtype = "int64" if a.ndim == 0 else a.dtype
    p_var = None
    p_dtype = "float64"
    if p is not None:
        p_var = as_tensor_variable(p)
        if np.dtype(p_var.dtype).kind != "f":
            p_var = cast(p_var, "float64")
        p_dtype = p_var.dtype
    op = ChoiceRV(dtype, ndim, size_var is not None, replace, p_var is not None, p_dtype)
    return op(state, size_var, a, p_var) if p_var is not None else op(state, size_var, a)


def permutation(state, x, size=None):
    """A permutation of ``x`` (a vector) or of range(x) (an integer)."""
    x = as_tensor_variable(x)
    size_var = None if size is None else as_size(size)
    if x.ndim == 0:
        dtype = "int64"
    else:
        dtype = x.dtype
    ndim = (0 if size_var is None else size_var.type.shape[0]) + 1
    op = PermutationRV(dtype, ndim, size_var is not None)
    return op(state, size_var, x)


__all__ = ["RandomVariable", "UniformRV", "NormalRV", "IntegersRV", "BernoulliRV", "BinomialRV", "ChoiceRV",
           "PermutationRV", "uniform", "normal", "integers", "bernoulli", "binomial", "choice", "permutation"]
