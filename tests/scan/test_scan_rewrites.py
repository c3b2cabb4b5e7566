"""Rewrites around scan: loop-invariant work is hoisted out of the body, constants move in,
and the body is rewritten (merge, constant folding, fusion) with the function's mode."""
import numpy as np

import ffigraph as theano
import ffigraph.tensor as T
from ffigraph.scan import Scan


def _scan_nodes(f):
    return [n for n in f.maker.fgraph.toposort() if isinstance(n.op, Scan)]


def _op_names(fgraph):
    return [type(n.op).__name__ + str(getattr(getattr(n.op, "scalar_op", None), "name", "")) for n in fgraph.toposort()]


def test_invariant_work_leaves_the_loop_and_constants_fold_inside():
    W = T.dmatrix("W")
    x = T.dmatrix("x")
    h0 = T.dvector("h0")

    def step(xt, h, W, scale):
        WT = T.exp(W).T * 2.0                # reads only non-sequences: computed once, before the loop
        same = T.tanh(T.dot(xt, WT) + h)
        again = T.tanh(T.dot(xt, WT) + h)    # merged with `same` inside the body
        return same + again * T.log(scale)   # scale is a constant non-sequence: log(3) folds

    hs, _ = theano.scan(step, sequences=x, outputs_info=h0, non_sequences=[W, T.constant(3.0)])
    fast = theano.function([x, W, h0], hs, mode=theano.Mode(linker="py", optimizer="fast_run"))
    plain = theano.function([x, W, h0], hs, mode=theano.Mode(linker="py", optimizer=None))
    rng = np.random.RandomState(0)
    xv, wv, hv = rng.uniform(-1, 1, (6, 3)), rng.uniform(-1, 1, (3, 3)), rng.uniform(-1, 1, 3)
    np.testing.assert_allclose(fast(xv, wv, hv), plain(xv, wv, hv), rtol=1e-12)

    (node,) = _scan_nodes(fast)
    inner = node.op.inner_graph()
    names = _op_names(inner)
    assert not any("exp" in n for n in names), names          # exp(W) was hoisted
    assert sum(n.startswith(("Dot", "Gemv")) for n in names) == 1, names  # the two dots merged
    assert not any(n.endswith("log") for n in names), names    # log(3) folded
    # the hoisted product is a non-sequence of the loop, computed outside it
    outer_names = _op_names(fast.maker.fgraph)
    assert any("composite" in n.lower() or "exp" in n for n in outer_names), outer_names
    # and the unrewritten function still runs the whole body
    (plain_node,) = _scan_nodes(plain)
    assert any("exp" in n for n in _op_names(plain_node.op.inner_graph()))


def test_unused_non_sequence_is_dropped():
    x = T.dvector("x")
    unused = T.dmatrix("unused")
    out, _ = theano.scan(lambda v, u: v * 2, sequences=x, non_sequences=unused)
    f = theano.function([x, unused], out, mode=theano.Mode(linker="py", optimizer="fast_run"),
                        on_unused_input="ignore")
    (node,) = _scan_nodes(f)
    assert node.op.info.n_non_seqs == 0
    np.testing.assert_allclose(f(np.arange(3.0), np.zeros((2, 2))), [0.0, 2.0, 4.0])


def test_gradient_loop_is_lean():
    """The backward loop of an RNN's gradient reads the forward trace instead of redoing the step,
    sums its weight gradients after the loop (one matrix product each), and does not compute the
    gradient of the data sequence nobody asked for; the values stay the unrewritten ones."""
    x, h0 = T.dmatrix("x"), T.dvector("h0")
    W, U, b = T.dmatrix("W"), T.dmatrix("U"), T.dvector("b")
    h, _ = theano.scan(lambda x_t, h_tm1: T.tanh(T.dot(x_t, W) + T.dot(h_tm1, U) + b), sequences=x, outputs_info=h0)
    cost = (h ** 2).sum()
    grads = T.grad(cost, [W, U, b])
    fast = theano.function([x, h0, W, U, b], grads, mode=theano.Mode(linker="cvm", optimizer="fast_run"))
    plain = theano.function([x, h0, W, U, b], grads, mode=theano.Mode(linker="py", optimizer=None))
    rng = np.random.RandomState(1)
    values = [rng.uniform(-1, 1, s) for s in [(7, 3), (4,), (3, 4), (4, 4), (4,)]]
    for got, want in zip(fast(*values), plain(*values)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    back = [n for n in _scan_nodes(fast) if (n.op.name or "").startswith("grad_of")]
    assert len(back) == 1
    op = back[0].op
    body = _op_names(op.inner_graph())
    assert sum(n.startswith(("Dot", "Gemv")) for n in body) == 1, body      # only h's carry: dot(U, .)
    assert not any("tanh" in n for n in body), body               # the forward step is not redone
    assert op.info.rec_last.count(True) <= 2, op.info             # W's and U's sums left the loop
    assert sum(n.startswith(("Dot", "Gemv", "Gemm")) for n in _op_names(fast.maker.fgraph)) >= 2


def test_shared_accumulator_of_unknown_shape_stays_in_the_loop():
    """A shared variable updated by an outer product per step (a Hebbian rule) keeps its sum in the
    loop when the shapes are not static: the term may broadcast there, and does here."""
    a, c = T.dmatrix("a"), T.dmatrix("c")
    hebb = theano.shared(np.zeros((3, 2)), name="hebb")
    _, updates = theano.scan(lambda a_t, c_t: {hebb: hebb + a_t[:, None] * c_t[None, :]}, sequences=[a, c])
    f = theano.function([a, c], [], updates=updates, mode=theano.Mode(linker="cvm", optimizer="fast_run"))
    (node,) = _scan_nodes(f)
    assert node.op.info.rec_last == (True,)
    rng = np.random.RandomState(2)
    av, cv = rng.uniform(-1, 1, (5, 1)), rng.uniform(-1, 1, (5, 2))   # a's rows broadcast over 3
    f(av, cv)
    np.testing.assert_allclose(hebb.get_value(), np.broadcast_to((av * cv).sum(0), (3, 2)), rtol=1e-12)
