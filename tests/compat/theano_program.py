"""A Theano program, written as a Theano 1.0 user writes one: a Lasagne-style stack of dense
layers, parameters collected from the graph, Adam written against ``theano.tensor``.

Nothing here knows about ffigraph: tests/compat/test_theano.py runs it after
``ffigraph.compat.theano.install()`` (the only line a user adds) and checks every number it
returns against a numpy re-implementation.
"""
from collections import OrderedDict

import numpy as np
import theano
import theano.tensor as T
from theano.compile import SharedVariable


class DenseLayer(object):
    """output = nonlinearity(dot(input, W) + b)."""

    def __init__(self, incoming, num_inputs, num_units, rng, W=None, b=None, nonlinearity=None):
        self.input = incoming
        if not W:
            bound = np.sqrt(6.0 / (num_inputs + num_units))
            W = theano.shared(np.asarray(rng.uniform(-bound, bound, (num_inputs, num_units)),
                                         dtype=theano.config.floatX), name='W', borrow=True)
        if not b:
            b = theano.shared(np.zeros(num_units), name='b', broadcastable=(False,))
        self.W = W
        self.b = b
        self.nonlinearity = nonlinearity if nonlinearity is not None else (lambda v: v)

    def get_output(self):
        return self.nonlinearity(T.dot(self.input, self.W) + self.b)


class ScaledSoftmaxLayer(DenseLayer):
    """softmax(gain * (dot(input, W) + b)), with a learned scalar gain (a temperature)."""

    def __init__(self, incoming, num_inputs, num_units, rng, gain=1.0):
        DenseLayer.__init__(self, incoming, num_inputs, num_units, rng)
        self.gain = theano.shared(np.asarray(gain, dtype=theano.config.floatX), name='gain',
                                  broadcastable=())

    def get_output(self):
        return T.nnet.softmax((T.dot(self.input, self.W) + self.b) * self.gain)


def get_all_params(output):
    """The shared variables the graph of ``output`` reads, in graph order."""
    return [v for v in theano.gof.graph.inputs([output]) if isinstance(v, SharedVariable)]


def adam(loss, params, learning_rate=0.01, beta1=0.9, beta2=0.999, epsilon=1e-8):
    """Adam (Kingma & Ba, 2014): the updates for one step, with bias-corrected step size."""
    grads = T.grad(loss, params)
    step_count = theano.shared(np.asarray(0., dtype=theano.config.floatX), name='t')
    t = step_count + 1
    one = T.constant(1)
    step_size = learning_rate * T.sqrt(one - beta2 ** t) / (one - beta1 ** t)
    updates = OrderedDict()
    for param, grad in zip(params, grads):
        value = param.get_value(borrow=True)
        m = theano.shared(np.zeros(value.shape, dtype=value.dtype), broadcastable=param.broadcastable)
        v = theano.shared(np.zeros(value.shape, dtype=value.dtype), broadcastable=param.broadcastable)
        m_t = beta1 * m + (one - beta1) * grad
        v_t = beta2 * v + (one - beta2) * grad ** 2
        updates[m] = m_t
        updates[v] = v_t
        updates[param] = param - step_size * m_t / (T.sqrt(v_t) + epsilon)
    updates[step_count] = t
    return grads, updates


def build(num_inputs, num_hidden, num_classes, rng):
    x = T.dmatrix('x')
    y = T.ivector('y')
    W_hidden = theano.shared(np.asarray(rng.normal(0, 0.5, (num_inputs, num_hidden)),
                                        dtype=theano.config.floatX), name='W', borrow=True)
    hidden = DenseLayer(x, num_inputs, num_hidden, rng, W=W_hidden, nonlinearity=T.nnet.relu)
    output = ScaledSoftmaxLayer(hidden.get_output(), num_hidden, num_classes, rng, gain=1.5)
    probabilities = output.get_output()
    loss = T.mean(T.nnet.categorical_crossentropy(probabilities, y))
    error = T.mean(T.neq(T.argmax(probabilities, axis=1), y))
    params = get_all_params(probabilities)
    grads, updates = adam(loss, params)
    train = theano.function([x, y], [loss, error] + grads, updates=updates)
    return params, train


def run(inputs, labels, num_hidden, num_classes, steps, seed=1234):
    """Train for ``steps`` steps on one batch; returns what each step saw and left."""
    rng = np.random.RandomState(seed)
    params, train = build(inputs.shape[1], num_hidden, num_classes, rng)
    history = {"names": [p.name for p in params],
               "initial": [p.get_value() for p in params],
               "steps": []}
    for _ in range(steps):
        loss, error, *grads = train(inputs, labels)
        history["steps"].append({"loss": float(loss), "error": float(error), "grads": grads,
                                 "params": [p.get_value() for p in params]})
    return history
