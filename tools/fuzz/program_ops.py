"""The operation tables of the program fuzzer: each operation as an ffigraph expression, as a numpy
function, and as a numpy vector-Jacobian product (the derivative the gradient checks compare with).
gen.py dispatches on these tables; parameters are plain data (tuples, ints, strings) so a program
prints as text and replays.

Where a gradient convention has a choice the numpy side follows ffigraph's documented one (maximum
and minimum: a tie goes to the first argument; a max reduction: to every position equal to the
result); the generator avoids the other ties and kinks (abs at 0, sort ties; see gen.py).
"""
from __future__ import annotations

import numpy as np

import ffigraph
import ffigraph.tensor as T

FLOATS = ("float64", "float32")
INTS = ("int64", "int32")


def unbroadcast(g, shape):
    """Sum the cotangent ``g`` of a broadcast result back to an argument of ``shape``."""
    g = np.asarray(g)
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for d, n in enumerate(shape):
        if n == 1 and g.shape[d] != 1:
            g = g.sum(axis=d, keepdims=True)
    return g


def _sigmoid(x):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


# ------------------------------------------------------------------ unary elementwise (float arguments)

# name -> (ffigraph function, numpy function, derivative d out / d x as a numpy function of (x, out), domain)
# domain: None (all reals), "pos" (x > 0), "nonneg" (x >= 0), "gt-1" (x > -1)
UNARY = {
    "neg": (T.neg, np.negative, lambda x, o: -np.ones_like(x), None),
    "abs": (T.abs, np.abs, lambda x, o: np.sign(x), None),
    "sin": (T.sin, np.sin, lambda x, o: np.cos(x), None),
    "cos": (T.cos, np.cos, lambda x, o: -np.sin(x), None),
    "tanh": (T.tanh, np.tanh, lambda x, o: 1 - o * o, None),
    "sigmoid": (T.sigmoid, _sigmoid, lambda x, o: o * (1 - o), None),
    "exp": (T.exp, np.exp, lambda x, o: o, None),
    "sqr": (T.sqr, np.square, lambda x, o: 2 * x, None),
    "log": (T.log, np.log, lambda x, o: 1 / x, "pos"),
    "sqrt": (T.sqrt, np.sqrt, lambda x, o: 0.5 / o, "pos"),
    "log1p": (T.log1p, np.log1p, lambda x, o: 1 / (1 + x), "gt-1"),
    "softplus": (T.softplus, lambda x: np.logaddexp(0, x), lambda x, o: _sigmoid(x), None),
}


def in_domain(values, domain):
    with np.errstate(invalid="ignore"):
        if domain == "pos":
            return bool(np.all(values > 1e-3))
        if domain == "nonneg":
            return bool(np.all(values >= 0))
        if domain == "gt-1":
            return bool(np.all(values > -1 + 1e-3))
    return True


# ------------------------------------------------------------------ binary elementwise

BINARY = {
    "add": (T.add, np.add, lambda g, a, b, o: (g, g)),
    "sub": (T.sub, np.subtract, lambda g, a, b, o: (g, -g)),
    "mul": (T.mul, np.multiply, lambda g, a, b, o: (g * b, g * a)),
    "true_div": (T.true_div, np.true_divide, lambda g, a, b, o: (g / b, -g * a / (b * b))),
    # ffigraph's rule (tensor/elemwise_grad.py): a tie goes to the first argument
    "maximum": (T.maximum, np.maximum, lambda g, a, b, o: (g * (a >= b), g * ~(a >= b))),
    "minimum": (T.minimum, np.minimum, lambda g, a, b, o: (g * (a <= b), g * ~(a <= b))),
}
INT_BINARY = ("add", "sub", "mul", "maximum", "minimum")

COMPARE = {
    "gt": (T.gt, np.greater), "lt": (T.lt, np.less), "ge": (T.ge, np.greater_equal),
    "le": (T.le, np.less_equal), "eq": (T.eq, np.equal), "neq": (T.neq, np.not_equal),
}

REDUCE = {
    "sum": (T.sum, np.sum), "prod": (T.prod, np.prod), "max": (T.max, np.max), "min": (T.min, np.min),
    "mean": (T.mean, np.mean), "argmax": (T.argmax, np.argmax),
}

# einsum specifications whose vjp is an einsum of the cotangent with the other operand (every letter of
# an operand appears in the other operand or the output)
EINSUM2 = ("ij,jk->ik", "ij,ij->i", "ij,kj->ik", "ij,ik->jk", "i,j->ij", "ij,j->i", "bij,bjk->bik", "ij,ij->ij")


def einsum_vjp(spec, g, a, b):
    lhs, out = spec.split("->")
    sa, sb = lhs.split(",")
    return np.einsum("%s,%s->%s" % (out, sb, sa), g, b), np.einsum("%s,%s->%s" % (sa, out, sb), a, g)


def _axis_tuple(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    return tuple(a % ndim for a in (axis if isinstance(axis, tuple) else (axis,)))


def reduce_vjp(kind, g, x, out, axis):
    """Cotangent of ``x`` for reduction ``kind`` over ``axis`` (out and g without the reduced axes)."""
    axes = _axis_tuple(axis, x.ndim)
    shape = tuple(1 if d in axes else n for d, n in enumerate(x.shape))
    g = np.reshape(g, shape)
    o = np.reshape(out, shape)
    if kind == "sum":
        return np.broadcast_to(g, x.shape) * np.ones_like(x)
    if kind == "mean":
        n = int(np.prod([x.shape[d] for d in axes])) if axes else 1
        return np.broadcast_to(g, x.shape) / n * np.ones_like(x)
    if kind == "prod":
        return g * o / x
    if kind in ("max", "min"):
        return g * (x == o)
    raise ValueError(kind)


# ------------------------------------------------------------------ indexing

def _bound(x, b):
    """A slice bound: None, an int, or ("shape", axis, offset) meaning x.shape[axis] - offset
    (x an ffigraph variable: a symbolic bound; a numpy array: its value)."""
    if b is None or isinstance(b, int):
        return b
    return x.shape[b[1]] - b[2]


def index_tuple(x, index):
    """The index ``index`` (plain data) of ``x``, an ffigraph variable or a numpy array."""
    out = []
    for item in index:
        if item[0] == "slice":
            out.append(slice(_bound(x, item[1]), _bound(x, item[2]), item[3]))
        elif item[0] == "int":
            out.append(item[1])
        else:   # ("array", values)
            out.append(np.asarray(item[1], dtype="int64"))
    return tuple(out)


def index_text(index, name):
    """``index`` as Python source, its symbolic bounds written as ``name.shape[d] - k``."""
    parts = []
    for item in index:
        if item[0] == "slice":
            def b(x):
                if x is None:
                    return ""
                return str(x) if isinstance(x, int) else "%s.shape[%d]-%d" % (name, x[1], x[2])
            parts.append("%s:%s%s" % (b(item[1]), b(item[2]), "" if item[3] is None else ":%d" % item[3]))
        elif item[0] == "int":
            parts.append(str(item[1]))
        else:
            parts.append(repr(list(item[1])))
    return "[" + ", ".join(parts) + "]"


def index_vjp(g, x, index):
    z = np.zeros(x.shape, dtype=np.result_type(g.dtype, x.dtype))
    idx = index_tuple(x, index)
    if any(item[0] == "array" for item in index):
        np.add.at(z, idx, g)
    else:
        z[idx] = g
    return z


# ------------------------------------------------------------------ the ffigraph side of the structural ops

def sym_reshape(var, shape):
    parts = [var.shape[s[1]] if isinstance(s, tuple) else s for s in shape]
    return T.reshape(var, parts, ndim=len(shape))


def np_reshape(value, shape):
    return np.reshape(value, [value.shape[s[1]] if isinstance(s, tuple) else s for s in shape])


def sym_ifelse(cond, a, b):
    return ffigraph.ifelse.ifelse(cond, a, b)
