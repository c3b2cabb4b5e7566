"""The seeded generator of random programs, and the two interpreters of a program: to ffigraph
variables and to numpy values (forward, and the reverse-mode derivative).

A program is a list of ``Node``s (an op name, argument node ids, parameters) over a batch's
inputs. The generator grows it one node at a time from a pool of the values built so far, so
values are reused (shared subexpressions) and a program's value can be both an output and the
source of a gradient. Each choice is checked against the numpy value it produces: the generator
never picks a choice numpy refuses, one ffigraph refuses by its typing rules (broadcasting only on
dimensions typed broadcastable), or one whose answer hangs on rounding (a comparison, argmax,
argsort or int cast of nearly equal values; see ``_margin_ok``), so a disagreement is a bug.

Everything comes from ``random.Random("<seed>:<index>")``: (seed, index) names one program.
"""
from __future__ import annotations

import random

import numpy as np

import ffigraph
import ffigraph.tensor as T

import program_ops as ops

# ------------------------------------------------------------------ the IR


class Node:
    __slots__ = ("id", "op", "args", "params", "dtype")

    def __init__(self, id, op, args, params, dtype):
        self.id, self.op, self.args, self.params, self.dtype = id, op, list(args), params, dtype

    def text(self, names):
        a = ", ".join(names[i] for i in self.args)
        p = self.params
        if self.op == "index":
            return "%s%s" % (a, ops.index_text(p, a))
        if self.op == "scan":
            return "scan(seq=%s, init=%s, body={%s})" % (names[self.args[0]], names[self.args[1]],
                                                         "; ".join(program_text(p, ["x_t", "h"])))
        if p is None or p == ():
            return "%s(%s)" % (self.op, a)
        return "%s(%s; %r)" % (self.op, a, p)


def program_text(nodes, input_names, keep=None):
    """One line per node (those in ``keep``, default all): 'v3 = add(x, v2)'."""
    names = {i: n for i, n in enumerate(input_names)}
    lines = []
    for node in nodes:
        if node.op == "input" or (keep is not None and node.id not in keep):
            continue
        names[node.id] = "v%d" % node.id
        lines.append("v%d = %s  # %s" % (node.id, node.text(names), node.dtype))
    return lines


# ------------------------------------------------------------------ one node, three ways


def np_node(node, a):
    """The numpy value of ``node`` given its arguments' values ``a``; dtype the ffigraph dtype."""
    op, p, dt = node.op, node.params, node.dtype
    with np.errstate(all="ignore"):
        if op in ops.UNARY:
            out = ops.UNARY[op][1](a[0].astype(dt))
        elif op in ops.BINARY:
            out = ops.BINARY[op][1](a[0].astype(dt), a[1].astype(dt))
        elif op in ops.COMPARE:
            common = np.result_type(a[0].dtype, a[1].dtype)
            out = ops.COMPARE[op][1](a[0].astype(common), a[1].astype(common))
        elif op == "switch":
            out = np.where(a[0], a[1].astype(dt), a[2].astype(dt))
        elif op == "cast":
            out = a[0].astype(dt)
        elif op in ops.REDUCE:
            axis = p
            x = a[0].astype(dt) if op not in ("argmax",) else a[0]
            out = ops.REDUCE[op][1](x, axis=axis)
        elif op == "index":
            out = a[0][ops.index_tuple(a[0], p)]
        elif op == "reshape":
            out = ops.np_reshape(a[0], p)
        elif op == "dimshuffle":
            out = np.transpose(a[0], [d for d in p if d != "x"])
            for pos, d in enumerate(p):
                if d == "x":
                    out = np.expand_dims(out, pos)
        elif op == "dot":
            # (matmul, not np.dot: np.dot scales by a 1-element operand through BLAS, which writes 0
            # for 0 * inf where IEEE arithmetic, and so ffigraph, gives NaN)
            out = np.matmul(a[0].astype(dt), a[1].astype(dt))
        elif op == "einsum":
            out = np.einsum(p, a[0].astype(dt), a[1].astype(dt))
        elif op == "sort":
            out = np.sort(a[0], axis=p)
        elif op == "argsort":
            out = np.argsort(a[0], axis=p, kind="stable")
        elif op == "ifelse":
            out = a[1] if a[0] else a[2]
        elif op == "scan":
            out = scan_np(p, a[0], a[1])[0]
        else:
            raise ValueError(op)
    return np.asarray(out).astype(dt)


def sym_node(node, s):
    op, p = node.op, node.params
    if op in ops.UNARY:
        return ops.UNARY[op][0](s[0])
    if op in ops.BINARY:
        return ops.BINARY[op][0](s[0], s[1])
    if op in ops.COMPARE:
        return ops.COMPARE[op][0](s[0], s[1])
    if op == "switch":
        return T.switch(s[0], s[1], s[2])
    if op == "cast":
        return T.cast(s[0], node.dtype)
    if op in ops.REDUCE:
        return ops.REDUCE[op][0](s[0], axis=p)
    if op == "index":
        return s[0][ops.index_tuple(s[0], p)]
    if op == "reshape":
        return ops.sym_reshape(s[0], p)
    if op == "dimshuffle":
        return s[0].dimshuffle(*p)
    if op == "dot":
        return T.dot(s[0], s[1])
    if op == "einsum":
        return T.einsum(p, s[0], s[1])
    if op == "sort":
        return T.sort(s[0], axis=p)
    if op == "argsort":
        return T.argsort(s[0], axis=p)
    if op == "ifelse":
        return ops.sym_ifelse(s[0], s[1], s[2])
    if op == "scan":
        def body(x_t, h):
            return build_syms(p, [x_t, h])[p[-1].id]
        out, _ = ffigraph.scan(body, sequences=[s[0]], outputs_info=[s[1]])
        return out
    raise ValueError(op)


def vjp_node(node, g, a, out):
    """Cotangents of the arguments (None: no derivative) given the output's cotangent ``g``."""
    op, p = node.op, node.params
    with np.errstate(all="ignore"):
        if op in ops.UNARY:
            x = a[0].astype(node.dtype)
            return [g * ops.UNARY[op][2](x, out)]
        if op in ops.BINARY:
            x, y = a[0].astype(node.dtype), a[1].astype(node.dtype)
            gx, gy = ops.BINARY[op][2](g, x, y, out)
            return [ops.unbroadcast(gx, a[0].shape), ops.unbroadcast(gy, a[1].shape)]
        if op in ops.COMPARE or op == "argsort" or op == "argmax":
            return [None] * len(a)
        if op == "switch":
            c = a[0].astype(bool)
            return [None, ops.unbroadcast(np.where(c, g, 0), a[1].shape),
                    ops.unbroadcast(np.where(c, 0, g), a[2].shape)]
        if op == "cast":   # only between floats: ffigraph's gradient through an int is zero
            return [g if node.dtype in ops.FLOATS and a[0].dtype.kind == "f" else None]
        if op in ops.REDUCE:
            return [ops.reduce_vjp(op, g, a[0].astype(node.dtype), out, p)]
        if op == "index":
            return [ops.index_vjp(g, a[0], p)]
        if op == "reshape":
            return [np.reshape(g, a[0].shape)]
        if op == "dimshuffle":
            kept = [d for d in p if d != "x"]
            g = np.reshape(g, [n for d, n in zip(p, g.shape) if d != "x"])
            return [np.transpose(g, np.argsort(kept))]
        if op == "dot":
            x, y = a
            if x.ndim == 1 and y.ndim == 1:
                return [g * y, g * x]
            if x.ndim == 2 and y.ndim == 1:
                return [np.outer(g, y), x.T.dot(g)]
            if x.ndim == 1 and y.ndim == 2:
                return [y.dot(g), np.outer(x, g)]
            return [g.dot(y.T), x.T.dot(g)]
        if op == "einsum":
            return list(ops.einsum_vjp(p, g, a[0].astype(node.dtype), a[1].astype(node.dtype)))
        if op == "sort":
            z = np.zeros_like(g)
            np.put_along_axis(z, np.argsort(a[0], axis=p, kind="stable"), g, axis=p)
            return [z]
        if op == "ifelse":
            zero = [np.zeros_like(a[1]), np.zeros_like(a[2])]
            zero[0 if a[0] else 1] = g
            return [None] + zero
        if op == "scan":
            return list(scan_vjp(p, g, a[0], a[1]))
    raise ValueError(op)


# ------------------------------------------------------------------ whole programs


def softplus_of(by_id, node):
    """The id of x where ``node`` is log1p(exp(x)), else None. The rewrites make it softplus(x), as
    Theano's and PyTensor's do: where exp(x) overflows, the rewritten graph is finite and right
    (log1p(exp(1e300)) is 1e300) while numpy's naive inf turns into NaN downstream (inf / inf), so
    the oracle computes such a node as softplus(x), and its derivative as sigmoid(x), the same
    numbers where nothing overflows."""
    if node.op == "log1p" and node.dtype in ops.FLOATS:
        arg = by_id[node.args[0]]
        if arg.op == "exp" and arg.dtype == node.dtype:
            return arg.args[0]
    return None


def np_softplus(node, x):
    with np.errstate(all="ignore"):
        return np.asarray(ops.UNARY["softplus"][1](x.astype(node.dtype))).astype(node.dtype)


def _interpret(nodes, inputs, one):
    out, by_id = {}, {}
    for node in nodes:
        by_id[node.id] = node
        x = softplus_of(by_id, node) if one is np_node else None
        if node.op == "input":
            out[node.id] = inputs[node.params]
        elif x is not None:
            out[node.id] = np_softplus(node, out[x])
        else:
            out[node.id] = one(node, [out[i] for i in node.args])
    return out


def eval_np(nodes, inputs):
    """{node id: numpy value} for ``nodes`` with the input nodes' values ``inputs`` (a list)."""
    return _interpret(nodes, inputs, np_node)


def build_syms(nodes, inputs):
    """{node id: ffigraph variable} for ``nodes`` over the variables ``inputs``."""
    return _interpret(nodes, inputs, sym_node)


def vjp_program(nodes, values, seeds):
    """{node id: cotangent} by reverse accumulation from ``seeds`` ({node id: cotangent})."""
    grads = {k: np.asarray(v, dtype="float64") for k, v in seeds.items()}
    by_id = {node.id: node for node in nodes}
    for node in reversed(nodes):
        if node.id not in grads or node.op == "input":
            continue
        g = grads[node.id]
        x = softplus_of(by_id, node)
        if x is not None:   # straight to x, past the exp (whose other uses still reach it)
            with np.errstate(all="ignore"):
                ga = np.asarray(g * ops.UNARY["softplus"][2](values[x].astype(node.dtype), values[node.id]),
                                dtype="float64")
            grads[x] = grads[x] + ga if x in grads else ga
            continue
        for arg, ga in zip(node.args, vjp_node(node, g, [values[i] for i in node.args], values[node.id])):
            if ga is None:
                continue
            ga = np.asarray(ga, dtype="float64")
            grads[arg] = grads[arg] + ga if arg in grads else ga
    return grads


def scan_np(body, seq, init):
    """The rows h_1..h_n of h_t = body(seq[t-1], h_{t-1}), and each step's values (for the vjp)."""
    h, rows, steps = init, [], []
    for t in range(seq.shape[0]):
        values = eval_np(body, [seq[t], h])
        steps.append(values)
        h = values[body[-1].id]
        rows.append(h)
    out = np.stack(rows) if rows else np.zeros((0,) + init.shape, dtype=init.dtype)
    return out, steps


def scan_vjp(body, g, seq, init):
    _, steps = scan_np(body, seq, init)
    gseq = np.zeros(seq.shape)
    gh = np.zeros(init.shape)
    for t in reversed(range(seq.shape[0])):
        grads = vjp_program(body, steps[t], {body[-1].id: g[t] + gh})
        gseq[t] = grads.get(0, 0.0)
        gh = grads.get(1, np.zeros(init.shape))
    return gseq, gh


# ------------------------------------------------------------------ the batch's inputs

# (name, dtype, shape letters; "1" a dimension typed broadcastable)
INPUTS = (("x", "float64", "rc"), ("y", "float64", "rc"), ("v", "float64", "c"), ("u", "float64", "r1"),
          ("w", "float32", "rc"), ("s", "float64", ""), ("k", "int64", "rc"), ("j", "int32", "c"),
          ("t", "float64", "prc"), ("q", "float32", "r"))


def input_vars():
    out = []
    for name, dtype, letters in INPUTS:
        out.append(T.tensor(dtype, tuple(1 if c == "1" else None for c in letters), name))
    return out


def _layout(rng, a):
    """``a``'s values in a random memory layout: contiguous, reversed (negative strides), strided."""
    choice = rng.random()
    if a.ndim == 0 or choice < 0.6:
        return a
    if choice < 0.8:
        axis = rng.randrange(a.ndim)
        big = np.flip(a, axis).copy()
        return np.flip(big, axis)    # negative strides on one axis
    if choice < 0.9 and a.ndim >= 2:
        return np.asfortranarray(a)
    big = np.zeros(tuple(2 * n for n in a.shape), dtype=a.dtype)
    view = big[tuple(slice(None, None, 2) for _ in a.shape)]
    view[...] = a
    return view


def input_values(rng, wild):
    """One value per INPUTS entry. ``wild``: NaN, inf and zeros among the floats."""
    dims = dict(r=rng.choice((1, 2, 3, 4, 0)), c=rng.choice((1, 2, 3, 5, 0)), p=rng.choice((1, 2, 3)))
    if rng.random() < 0.7:   # empty only sometimes
        dims["r"] = dims["r"] or 2
        dims["c"] = dims["c"] or 3
    nrng = np.random.RandomState(rng.randrange(2 ** 31))
    out = []
    for name, dtype, letters in INPUTS:
        shape = tuple(1 if c == "1" else dims[c] for c in letters)
        if dtype.startswith("int"):
            a = nrng.randint(-5, 6, size=shape).astype(dtype)
        else:
            a = nrng.uniform(-2, 2, size=shape)
            if wild and a.size:
                mask = nrng.random_sample(shape) < 0.25
                a[mask] = nrng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e300], size=int(mask.sum()))
            a = np.asarray(a).astype(dtype)
        out.append(_layout(rng, np.asarray(a)))
    return out


# ------------------------------------------------------------------ the generator


class Rejected(Exception):
    """A choice that does not fit (numpy refuses it, or its answer depends on rounding)."""


def _margin(dtype):
    return 1e-7 if dtype == "float64" else 1e-3


def _margin_ok(a, b, dtype):
    """Comparing a and b elementwise gives the same answer under any rounding of either."""
    with np.errstate(all="ignore"):
        a = np.asarray(a, "float64")
        b = np.asarray(b, "float64")
        d = np.abs(a - b)
        scale = 1 + np.abs(a) + np.abs(b)
        ok = ~(d <= _margin(dtype) * scale) | (a == b) & ~np.isfinite(a)
        return bool(np.all(ok))


def _distinct_along(x, axis, dtype):
    if x.size == 0:
        return True
    s = np.sort(x.astype("float64"), axis=axis)
    if not np.all(np.isfinite(s)):
        return False
    d = np.diff(s, axis=axis)
    return bool(np.all(d > _margin(dtype) * (1 + np.abs(s).max())))


def _ffg_broadcastable(bcast, values):
    """ffigraph broadcasts only dimensions typed broadcastable: the arguments' shapes must agree."""
    nd = max(v.ndim for v in values)
    for d in range(nd):
        sizes = set()
        for b, v in zip(bcast, values):
            k = d - (nd - v.ndim)
            if k < 0 or b[k]:
                continue
            sizes.add(v.shape[k])
        if len(sizes) > 1:
            return False
        for b, v in zip(bcast, values):   # (a dimension typed broadcastable has length 1)
            k = d - (nd - v.ndim)
            if k >= 0 and b[k] and v.shape[k] != 1:
                return False
    return True


SAFE_BODY_UNARY = ("neg", "sin", "cos", "tanh", "sigmoid")
SAFE_BODY_BINARY = ("add", "sub", "mul")


class Generator:
    """Grows one program over the batch's inputs (``syms``: ffigraph variables, ``values``: numpy)."""

    def __init__(self, rng, syms, values, wild, grad, max_nodes=None):
        self.rng, self.wild, self.grad = rng, wild, grad
        self.nodes = [Node(i, "input", [], i, str(v.dtype)) for i, v in enumerate(values)]
        self.syms = dict(enumerate(syms))
        self.values = dict(enumerate(values))
        self.max_nodes = max_nodes

    # -- pool helpers
    def pick(self, pred=lambda n: True):
        pool = [n for n in self.nodes if pred(n)]
        if not pool:
            raise Rejected("no argument")
        # prefer recent values (deeper programs) but keep reaching back to the inputs
        if self.rng.random() < 0.6 and len(pool) > 1:
            return pool[-1 - min(int(self.rng.expovariate(0.7)), len(pool) - 1)]
        return self.rng.choice(pool)

    def is_float(self, n):
        return n.dtype in ops.FLOATS

    def bcast(self, n):
        return self.syms[n.id].type.broadcastable

    def add(self, op, args, params):
        syms = [self.syms[a] for a in args]
        sym = sym_node(Node(-1, op, args, params, None), syms)
        node = Node(len(self.nodes), op, args, params, sym.dtype)
        try:
            x = softplus_of(self.nodes, node)
            value = np_node(node, [self.values[a] for a in args]) if x is None else \
                np_softplus(node, self.values[x])
        except (ValueError, IndexError, TypeError) as e:
            raise Rejected(str(e))
        if value.shape != tuple(n if not b else 1 for n, b in zip(value.shape, sym.type.broadcastable)):
            raise Rejected("a broadcastable dimension of size %s" % (value.shape,))
        if value.ndim != sym.ndim:
            raise Rejected("ndim")
        self._check_value(node, value)
        self.nodes.append(node)
        self.syms[node.id] = sym
        self.values[node.id] = value
        return node

    def _check_value(self, node, value):
        if node.dtype.startswith("int") and value.size and np.abs(value.astype("float64")).max() > 2 ** 24:
            raise Rejected("integers that may overflow")
        if self.grad and node.dtype in ops.FLOATS and value.size:
            with np.errstate(all="ignore"):
                if not np.all(np.isfinite(value)) or np.abs(value).max() > 1e6:
                    raise Rejected("non-finite or huge values in a gradient program")
        if node.dtype in ops.FLOATS and value.size and not self.wild:
            if not np.all(np.isfinite(value)):
                raise Rejected("non-finite values in a clean batch")

    # -- the choices, one per kind of op
    def unary(self):
        a = self.pick(self.is_float)
        name = self.rng.choice(sorted(ops.UNARY))
        domain = ops.UNARY[name][3]
        if not self.wild and not ops.in_domain(self.values[a.id], domain):
            raise Rejected("domain")
        if self.grad and name == "abs" and np.any(np.abs(self.values[a.id]) < 1e-6):
            raise Rejected("abs at 0")
        return self.add(name, [a.id], None)

    def binary(self):
        a = self.pick()
        b = self.pick(lambda n: (n.dtype in ops.FLOATS) == (a.dtype in ops.FLOATS) or self.rng.random() < 0.3)
        floats = a.dtype in ops.FLOATS or b.dtype in ops.FLOATS
        names = sorted(ops.BINARY) if floats else ops.INT_BINARY
        name = self.rng.choice(names)
        if a.dtype == "bool" or b.dtype == "bool":
            raise Rejected("bool arithmetic")
        va, vb = self.values[a.id], self.values[b.id]
        if not _ffg_broadcastable([self.bcast(a), self.bcast(b)], [va, vb]):
            raise Rejected("shapes")
        if name == "true_div" and not self.wild and np.any(np.abs(vb.astype("float64")) < 1e-2):
            raise Rejected("division by ~0")
        if name in ("maximum", "minimum") and a.id != b.id and not _margin_ok(va, vb, "float32"):
            raise Rejected("near tie")
        return self.add(name, [a.id, b.id], None)

    def compare(self):
        a = self.pick(lambda n: n.dtype != "bool")
        b = self.pick(lambda n: n.dtype != "bool")
        va, vb = self.values[a.id], self.values[b.id]
        if not _ffg_broadcastable([self.bcast(a), self.bcast(b)], [va, vb]):
            raise Rejected("shapes")
        if a.id != b.id and not _margin_ok(va, vb, "float32"):
            raise Rejected("near tie")
        return self.add(self.rng.choice(sorted(ops.COMPARE)), [a.id, b.id], None)

    def switch(self):
        c = self.pick(lambda n: n.dtype in ("bool",) + ops.INTS)
        a, b = self.pick(), self.pick()
        if (a.dtype == "bool") != (b.dtype == "bool"):
            raise Rejected("bool branch")
        vals = [self.values[n.id] for n in (c, a, b)]
        if not _ffg_broadcastable([self.bcast(n) for n in (c, a, b)], vals):
            raise Rejected("shapes")
        return self.add("switch", [c.id, a.id, b.id], None)

    def cast(self):
        a = self.pick()
        targets = [d for d in ops.FLOATS + ops.INTS if d != a.dtype]
        dtype = self.rng.choice(targets)
        v = self.values[a.id]
        if dtype in ops.INTS and a.dtype in ops.FLOATS:
            with np.errstate(all="ignore"):
                if v.size and (not np.all(np.isfinite(v)) or np.abs(v).max() > 1e6):
                    raise Rejected("float to int out of range")
                frac = np.abs(v - np.round(v))
                if v.size and np.any(frac < 1e-3) and np.any(v != np.round(v)):
                    raise Rejected("near an integer")
        if dtype in ops.INTS and a.dtype == "float32" and v.size and np.any(v == np.round(v)):
            raise Rejected("float32 integer")
        node = Node(-1, "cast", [a.id], None, dtype)
        sym = T.cast(self.syms[a.id], dtype)
        value = np_node(node, [v])
        node.id, node.dtype = len(self.nodes), sym.dtype
        self._check_value(node, value)
        self.nodes.append(node)
        self.syms[node.id], self.values[node.id] = sym, value
        return node

    def reduce(self):
        a = self.pick(lambda n: self.syms[n.id].ndim >= 1 and n.dtype != "bool")
        nd = self.syms[a.id].ndim
        kinds = ["sum", "max", "min", "mean", "argmax"] + (["prod"] if a.dtype in ops.FLOATS else [])
        kind = self.rng.choice(kinds)
        axis = self.rng.choice([None] + list(range(-nd, nd)) + ([(0, nd - 1)] if nd >= 2 and kind != "argmax" else []))
        v = self.values[a.id]
        if kind == "argmax":
            if v.size == 0:
                raise Rejected("argmax of empty")
            rows = v.reshape(-1) if axis is None else np.moveaxis(v, axis, -1)
            if not _distinct_along(rows, -1, "float32"):
                raise Rejected("argmax tie")
        if kind in ("max", "min") and v.size == 0:
            raise Rejected("max of empty")
        if kind == "prod" and (v.size > 12 or (self.grad and np.any(np.abs(v) < 1e-2))):
            raise Rejected("prod")
        if kind in ("max", "min") and self.grad:
            o = np.max(v, axis=axis, keepdims=True) if kind == "max" else np.min(v, axis=axis, keepdims=True)
            near = np.abs(v - o) < 1e-6 * (1 + np.abs(o))
            if np.any(near.sum(axis=axis) > 1):
                raise Rejected("tie at the max")
        return self.add(kind, [a.id], axis)

    def index(self):
        a = self.pick(lambda n: self.syms[n.id].ndim >= 1)
        v = self.values[a.id]
        nd = v.ndim
        items, used_array = [], False
        for d in range(self.rng.randint(1, nd)):
            n = v.shape[d]
            r = self.rng.random()
            if r < 0.5 or self.bcast(a)[d]:
                def bound():
                    c = self.rng.random()
                    if c < 0.3:
                        return None
                    if c < 0.6:
                        return self.rng.randint(-3, 3)
                    return ("shape", d, self.rng.randint(-1, 2))
                items.append(("slice", bound(), bound(), self.rng.choice([None, 1, -1, 2, -2])))
            elif r < 0.75 and n > 0:
                items.append(("int", self.rng.randint(-n, n - 1)))
            elif not used_array and n > 0:
                used_array = True
                items.append(("array", tuple(self.rng.randint(-n, n - 1) for _ in range(self.rng.randint(0, 4)))))
            else:
                items.append(("slice", None, None, -1))
        return self.add("index", [a.id], tuple(items))

    def reshape(self):
        a = self.pick(lambda n: self.syms[n.id].ndim >= 1)
        v = self.values[a.id]
        if v.size == 0:
            raise Rejected("reshape of empty with -1")
        choices = [(-1,), (("shape", 0), -1), (-1, 1), (1, -1)]
        for k in (2, 3):
            if v.size % k == 0:
                choices += [(-1, k), (k, -1)]
        if v.ndim >= 2:
            choices.append((-1, ("shape", v.ndim - 1)))
        return self.add("reshape", [a.id], self.rng.choice(choices))

    def dimshuffle(self):
        a = self.pick()
        nd = self.syms[a.id].ndim
        dims = list(range(nd))
        self.rng.shuffle(dims)
        bc = self.bcast(a)
        dims = [d for d in dims if not (bc[d] and self.rng.random() < 0.5)]   # drop broadcastable dims
        if nd < 3 and self.rng.random() < 0.5:
            dims.insert(self.rng.randint(0, len(dims)), "x")
        return self.add("dimshuffle", [a.id], tuple(dims))

    def dot(self):
        a = self.pick(lambda n: self.is_float(n) and 1 <= self.syms[n.id].ndim <= 2)
        b = self.pick(lambda n: self.is_float(n) and 1 <= self.syms[n.id].ndim <= 2)
        va, vb = self.values[a.id], self.values[b.id]
        if va.shape[-1] != vb.shape[0]:
            raise Rejected("inner dimensions")
        return self.add("dot", [a.id, b.id], None)

    def einsum(self):
        spec = self.rng.choice(ops.EINSUM2)
        lhs = spec.split("->")[0].split(",")
        a = self.pick(lambda n: self.is_float(n) and self.syms[n.id].ndim == len(lhs[0]))
        b = self.pick(lambda n: self.is_float(n) and self.syms[n.id].ndim == len(lhs[1]))
        va, vb = self.values[a.id], self.values[b.id]
        sizes = {}
        for letters, val in ((lhs[0], va), (lhs[1], vb)):
            for c, n in zip(letters, val.shape):
                if sizes.setdefault(c, n) != n:
                    raise Rejected("einsum sizes")
        return self.add("einsum", [a.id, b.id], spec)

    def sort(self):
        a = self.pick(lambda n: self.syms[n.id].ndim >= 1 and n.dtype != "bool")
        axis = self.rng.choice([-1, 0])
        kind = self.rng.choice(["sort", "argsort"])
        v = self.values[a.id]
        if (kind == "argsort" or self.grad) and not _distinct_along(v, axis, "float32"):
            raise Rejected("ties")
        if self.wild and a.dtype in ops.FLOATS and np.any(np.isnan(v)):
            raise Rejected("NaN order")
        return self.add(kind, [a.id], axis)

    def scan(self):
        seq = self.pick(lambda n: self.is_float(n) and self.syms[n.id].ndim == 2 and not self.bcast(n)[1])
        init = self.pick(lambda n: n.dtype == seq.dtype and self.syms[n.id].ndim == 1 and not self.bcast(n)[0]
                         and self.values[n.id].shape[0] == self.values[seq.id].shape[1])
        if self.values[seq.id].shape[0] == 0:
            raise Rejected("scan of no steps")
        body = [Node(0, "input", [], 0, seq.dtype), Node(1, "input", [], 1, seq.dtype)]
        for _ in range(self.rng.randint(1, 3)):
            if self.rng.random() < 0.5:
                body.append(Node(len(body), self.rng.choice(SAFE_BODY_UNARY), [self.rng.randrange(len(body))],
                                 None, seq.dtype))
            else:
                body.append(Node(len(body), self.rng.choice(SAFE_BODY_BINARY),
                                 [self.rng.randrange(len(body)), self.rng.randrange(len(body))], None, seq.dtype))
        if 1 not in [i for n in body for i in n.args]:
            body.append(Node(len(body), "add", [len(body) - 1, 1], None, seq.dtype))
        body.append(Node(len(body), "tanh", [len(body) - 1], None, seq.dtype))   # keeps the state bounded
        return self.add("scan", [seq.id, init.id], body)

    def ifelse(self):
        c = self.pick(lambda n: self.syms[n.id].ndim == 0 and n.dtype != "bool")
        cv = self.values[c.id]
        if c.dtype in ops.FLOATS and not (np.isfinite(cv) and abs(cv) > 1e-3) and cv != 0:
            raise Rejected("condition near 0")
        a = self.pick()
        b = self.pick(lambda n: self.syms[n.id].type == self.syms[a.id].type)
        if self.values[a.id].shape != self.values[b.id].shape:
            raise Rejected("branch shapes")
        return self.add("ifelse", [c.id, a.id, b.id], None)

    KINDS = (("unary", 6), ("binary", 8), ("compare", 2), ("switch", 2), ("cast", 2), ("reduce", 4),
             ("index", 4), ("reshape", 2), ("dimshuffle", 2), ("dot", 2), ("einsum", 2), ("sort", 2),
             ("scan", 1), ("ifelse", 1))

    def step(self):
        kinds, weights = zip(*self.KINDS)
        for _ in range(30):
            kind = self.rng.choices(kinds, weights)[0]
            try:
                return getattr(self, kind)()
            except Rejected:
                continue
        return None


class Program:
    """One generated program: its nodes, the node it outputs, and the inputs its gradient is taken
    with respect to (empty: no gradient)."""

    def __init__(self, seed, index, nodes, out, wrt, weights):
        self.seed, self.index, self.nodes, self.out, self.wrt, self.weights = seed, index, nodes, out, wrt, weights

    def text(self):
        names = [n for n, _, _ in INPUTS]
        lines = program_text(self.nodes, names, ancestors(self.nodes, self.out))
        lines.append("output v%d" % self.out)
        if self.wrt:
            lines.append("cost = sum(v%d * W), W of shape %s uniform in [0.5, 1.5) (from the seed); grad wrt %s"
                         % (self.out, self.weights.shape, ", ".join(names[i] for i in self.wrt)))
        return "\n".join(lines)


def ancestors(nodes, out):
    seen, todo = set(), [out]
    while todo:
        i = todo.pop()
        if i in seen:
            continue
        seen.add(i)
        todo.extend(nodes[i].args)
    return seen


def generate(seed, index, syms, values, wild):
    """Program ``index`` of campaign ``seed`` over the batch's inputs."""
    rng = random.Random("%d:%d" % (seed, index))
    grad = not wild and rng.random() < 0.5
    gen = Generator(rng, syms, values, wild, grad)
    for _ in range(rng.randint(4, 12)):
        gen.step()
    nodes = gen.nodes
    candidates = [n for n in nodes[len(values):]]
    if grad:
        candidates = [n for n in candidates if n.dtype in ops.FLOATS]
    if not candidates:
        candidates = [n for n in nodes[:len(values)] if not grad or n.dtype in ops.FLOATS]
    # the output: the value with the most of the program behind it (latest among equals)
    out = max(candidates, key=lambda n: (len(ancestors(nodes, n.id)), n.id)).id
    keep = ancestors(nodes, out)
    wrt, weights = [], None
    if grad:
        wrt = sorted(i for i in keep if i < len(values) and nodes[i].dtype in ops.FLOATS)
        shape = gen.values[out].shape
        weights = np.asarray(np.random.RandomState(rng.randrange(2 ** 31)).uniform(0.5, 1.5, size=shape))
    return Program(seed, index, nodes, out, wrt, weights), gen
