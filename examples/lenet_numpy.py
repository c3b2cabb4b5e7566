"""LeNet-5 with batch normalization and dropout in plain numpy: forward and backward by hand.

The reference for ``examples/lenet_digits.py`` (its test compares the parameters of a few steps
with these) and the numpy column of ``bench/bench_conv.py``. Nothing here imports ffigraph.

The model, on 1x28x28 images (NCHW), Theano's semantics throughout::

    conv 5x5, 6 filters (no bias) -> batch norm (spatial) -> relu -> max-pool 2x2   (6x12x12)
    conv 5x5, 16 filters (no bias) -> batch norm (spatial) -> relu -> max-pool 2x2  (16x4x4)
    flatten (256) -> dense 120 -> relu -> dropout -> dense 84 -> relu -> dropout -> dense 10
    -> softmax; cost: mean over the batch of the negative log-likelihood of the labels

- Convolutions are Theano's ``conv2d`` with its default ``filter_flip=True``: a true convolution,
  ``out[n, o, i, j] = sum_{c,p,q} x[n, c, i + p, j + q] * w[o, c, kh - 1 - p, kw - 1 - q]``,
  computed as im2col (an ``as_strided`` view of the patches, copied to a matrix) times the flipped
  filters. The convolutions have no bias: batch norm's ``beta`` right after would duplicate it.
- Batch norm is Theano's ``batch_normalization_train(axes='spatial')``: statistics over the batch
  and both image axes, per channel; ``out = gamma * (x - mean) / sqrt(var + eps) + beta`` with the
  biased batch variance; the running averages ``r <- (1 - f) r + f stat`` take the *unbiased*
  variance ``var * m / (m - 1)`` (``m = N * H * W``). At test time
  (``batch_normalization_test``) the running mean and variance replace the batch's.
- Max pooling is ``pool_2d(ws=(2, 2), ignore_border=True)``; its gradient goes to every input
  equal to its window's maximum (ties all get it), as Theano's ``MaxPoolGrad``.
- relu is ``maximum(x, 0)``; dropout multiplies by a 0/1 ``mask`` and divides by the keep
  probability (inverted dropout: nothing to rescale at test time).
- The update is plain SGD: ``p <- p - lr * d cost / d p``.

Arrays keep their dtype: float32 parameters and images give float32 all through, float64 give
float64. ``step(params, state, x, y, masks, lr)`` is one training step; ``predict`` the test-time
forward pass.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

EPSILON = 1e-4           # batch norm's epsilon (Theano's default)
AVERAGE_FACTOR = 0.1     # batch norm's running_average_factor (Theano's default)
KEEP = 0.8               # dropout: probability that a dense unit is kept while training

# name -> shape, in the order the ffigraph example declares its shared parameters
PARAM_SHAPES = (
    ("w1", (6, 1, 5, 5)), ("gamma1", (6,)), ("beta1", (6,)),
    ("w2", (16, 6, 5, 5)), ("gamma2", (16,)), ("beta2", (16,)),
    ("w3", (256, 120)), ("b3", (120,)),
    ("w4", (120, 84)), ("b4", (84,)),
    ("w5", (84, 10)), ("b5", (10,)),
)
STATE_SHAPES = (("mean1", (6,)), ("var1", (6,)), ("mean2", (16,)), ("var2", (16,)))
MASK_SHAPES = ((120,), (84,))   # per image: the dropout masks after dense 120 and dense 84


def init_params(seed=1234, dtype="float32"):
    """Glorot-uniform weights (fan-in and fan-out of a conv counting its window), gamma 1,
    beta and biases 0; ``{name: array}`` in PARAM_SHAPES order."""
    rng = np.random.default_rng(seed)
    params = {}
    for name, shape in PARAM_SHAPES:
        if name.startswith("w"):
            if len(shape) == 4:
                field = shape[2] * shape[3]
                fan_in, fan_out = shape[1] * field, shape[0] * field
            else:
                fan_in, fan_out = shape
            bound = np.sqrt(6.0 / (fan_in + fan_out))
            params[name] = rng.uniform(-bound, bound, size=shape).astype(dtype)
        elif name.startswith("gamma"):
            params[name] = np.ones(shape, dtype=dtype)
        else:
            params[name] = np.zeros(shape, dtype=dtype)
    return params


def init_state(dtype="float32"):
    """Batch norm's running statistics before training: means 0, variances 1."""
    return {name: (np.zeros if name.startswith("mean") else np.ones)(shape, dtype=dtype)
            for name, shape in STATE_SHAPES}


# ---------------------------------------------------------------------------- layers

def _patches(x, kh, kw):
    """The im2col matrix of ``x`` (N, C, H, W) for a kh x kw 'valid' window, stride 1:
    rows (n, i, j), columns (c, p, q); shape (N * Ho * Wo, C * kh * kw)."""
    n, c, h, w = x.shape
    ho, wo = h - kh + 1, w - kw + 1
    s = x.strides
    view = as_strided(x, shape=(n, ho, wo, c, kh, kw), strides=(s[0], s[2], s[3], s[1], s[2], s[3]),
                      writeable=False)
    return view.reshape(n * ho * wo, c * kh * kw)   # a copy: the view is not contiguous


def conv_forward(x, w):
    """Theano's ``conv2d(x, w)`` ('valid', stride 1, filter_flip=True); returns (out, cache)."""
    n, _, h, wd = x.shape
    o, c, kh, kw = w.shape
    ho, wo = h - kh + 1, wd - kw + 1
    cols = _patches(np.ascontiguousarray(x), kh, kw)
    wmat = w[:, :, ::-1, ::-1].reshape(o, c * kh * kw)        # flipped: a true convolution
    out = (cols @ wmat.T).reshape(n, ho, wo, o).transpose(0, 3, 1, 2)
    return np.ascontiguousarray(out), (x.shape, cols, wmat)


def conv_backward(dout, cache, w_shape, need_dx=True):
    """Gradients of ``conv_forward``: ``(dx or None, dw)``."""
    x_shape, cols, wmat = cache
    n, c, h, wd = x_shape
    o, _, kh, kw = w_shape
    ho, wo = dout.shape[2], dout.shape[3]
    d = dout.transpose(0, 2, 3, 1).reshape(n * ho * wo, o)
    dw = (d.T @ cols).reshape(o, c, kh, kw)[:, :, ::-1, ::-1]   # back through the flip
    if not need_dx:
        return None, np.ascontiguousarray(dw)
    dcols = (d @ wmat).reshape(n, ho, wo, c, kh, kw)
    dx = np.zeros(x_shape, dtype=dout.dtype)
    for p in range(kh):          # col2im: each window offset adds its slice back
        for q in range(kw):
            dx[:, :, p:p + ho, q:q + wo] += dcols[:, :, :, :, p, q].transpose(0, 3, 1, 2)
    return dx, np.ascontiguousarray(dw)


def bn_train_forward(x, gamma, beta, running_mean, running_var, eps=EPSILON, factor=AVERAGE_FACTOR):
    """Spatial batch norm in training mode: ``(out, cache, new_running_mean, new_running_var)``."""
    axes = (0, 2, 3)
    m = x.shape[0] * x.shape[2] * x.shape[3]
    mean = x.mean(axis=axes)
    centred = x - mean[None, :, None, None]
    var = (centred * centred).mean(axis=axes)
    invstd = 1.0 / np.sqrt(var + eps)
    xhat = centred * invstd[None, :, None, None]
    out = gamma[None, :, None, None] * xhat + beta[None, :, None, None]
    new_mean = running_mean * (1.0 - factor) + mean * factor
    new_var = running_var * (1.0 - factor) + var * (float(m) / (m - 1)) * factor   # unbiased
    return out, (xhat, invstd, gamma), new_mean, new_var


def bn_train_backward(dout, cache):
    """``(dx, dgamma, dbeta)`` of ``bn_train_forward`` (the batch statistics are differentiated)."""
    xhat, invstd, gamma = cache
    axes = (0, 2, 3)
    dbeta = dout.sum(axis=axes)
    dgamma = (dout * xhat).sum(axis=axes)
    dxhat = dout * gamma[None, :, None, None]
    mean_dxhat = dxhat.mean(axis=axes)[None, :, None, None]
    mean_dxhat_xhat = (dxhat * xhat).mean(axis=axes)[None, :, None, None]
    dx = (dxhat - mean_dxhat - xhat * mean_dxhat_xhat) * invstd[None, :, None, None]
    return dx, dgamma, dbeta


def bn_test(x, gamma, beta, mean, var, eps=EPSILON):
    """``batch_normalization_test`` with spatial axes."""
    b = (None, slice(None), None, None)
    return (x - mean[b]) / np.sqrt(var[b] + eps) * gamma[b] + beta[b]


def pool_forward(x):
    """2x2 max pooling, stride 2, ignore_border=True; returns (out, cache)."""
    n, c, h, w = x.shape
    ho, wo = h // 2, w // 2
    win = x[:, :, :2 * ho, :2 * wo].reshape(n, c, ho, 2, wo, 2)
    out = win.max(axis=(3, 5))
    return out, (x.shape, win, out)


def pool_backward(dout, cache):
    """Gradient of ``pool_forward``: each window's gradient to every element equal to its max."""
    x_shape, win, out = cache
    n, c, ho, _, wo, _ = win.shape
    hit = win == out[:, :, :, None, :, None]
    dx = np.zeros(x_shape, dtype=dout.dtype)
    dx[:, :, :2 * ho, :2 * wo] = (hit * dout[:, :, :, None, :, None]).reshape(n, c, 2 * ho, 2 * wo)
    return dx


def softmax_nll(z, y):
    """``(mean negative log-likelihood, d cost / d z)`` of the labels ``y`` under softmax(z)."""
    n = z.shape[0]
    rows = np.arange(n)
    shifted = z - z.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    total = e.sum(axis=1, keepdims=True)
    p = e / total
    logp = shifted - np.log(total)
    cost = -logp[rows, y].mean()
    dz = p.copy()
    dz[rows, y] -= 1
    dz /= n
    return cost, dz


# ---------------------------------------------------------------------------- the model

def step(params, state, x, y, masks, lr, keep=KEEP):
    """One SGD step on the images ``x`` (N, 1, 28, 28) and int labels ``y`` (N,).

    ``masks``: the two dropout masks (N, 120) and (N, 84), 0/1. Returns
    ``(new_params, new_state, cost)``: new dicts (the inputs are not changed) and the cost before
    the update."""
    P = params
    m1, m2 = masks
    dt = P["w1"].dtype
    m1 = m1.astype(dt)
    m2 = m2.astype(dt)
    # forward
    a1, c1 = conv_forward(x, P["w1"])
    n1, bn1, mean1, var1 = bn_train_forward(a1, P["gamma1"], P["beta1"], state["mean1"], state["var1"])
    r1 = np.maximum(n1, 0)
    p1, pc1 = pool_forward(r1)
    a2, c2 = conv_forward(p1, P["w2"])
    n2, bn2, mean2, var2 = bn_train_forward(a2, P["gamma2"], P["beta2"], state["mean2"], state["var2"])
    r2 = np.maximum(n2, 0)
    p2, pc2 = pool_forward(r2)
    f = p2.reshape(p2.shape[0], -1)
    h3 = np.maximum(f @ P["w3"] + P["b3"], 0)
    d3 = h3 * m1 / keep
    h4 = np.maximum(d3 @ P["w4"] + P["b4"], 0)
    d4 = h4 * m2 / keep
    z = d4 @ P["w5"] + P["b5"]
    cost, dz = softmax_nll(z, y)
    # backward
    g = {"w5": d4.T @ dz, "b5": dz.sum(axis=0)}
    dh4 = (dz @ P["w5"].T) * m2 / keep * (h4 > 0)
    g["w4"], g["b4"] = d3.T @ dh4, dh4.sum(axis=0)
    dh3 = (dh4 @ P["w4"].T) * m1 / keep * (h3 > 0)
    g["w3"], g["b3"] = f.T @ dh3, dh3.sum(axis=0)
    dp2 = (dh3 @ P["w3"].T).reshape(p2.shape)
    dn2 = pool_backward(dp2, pc2) * (n2 > 0)
    da2, g["gamma2"], g["beta2"] = bn_train_backward(dn2, bn2)
    dp1, g["w2"] = conv_backward(da2, c2, P["w2"].shape)
    dn1 = pool_backward(dp1, pc1) * (n1 > 0)
    da1, g["gamma1"], g["beta1"] = bn_train_backward(dn1, bn1)
    _, g["w1"] = conv_backward(da1, c1, P["w1"].shape, need_dx=False)
    new_params = {name: (P[name] - lr * g[name]).astype(dt, copy=False) for name, _ in PARAM_SHAPES}
    new_state = {"mean1": mean1, "var1": var1, "mean2": mean2, "var2": var2}
    return new_params, new_state, cost


def predict_logits(params, state, x):
    """The test-time forward pass (running statistics, no dropout): logits (N, 10)."""
    P = params
    h = conv_forward(x, P["w1"])[0]
    h = pool_forward(np.maximum(bn_test(h, P["gamma1"], P["beta1"], state["mean1"], state["var1"]), 0))[0]
    h = conv_forward(h, P["w2"])[0]
    h = pool_forward(np.maximum(bn_test(h, P["gamma2"], P["beta2"], state["mean2"], state["var2"]), 0))[0]
    h = h.reshape(h.shape[0], -1)
    h = np.maximum(h @ P["w3"] + P["b3"], 0)
    h = np.maximum(h @ P["w4"] + P["b4"], 0)
    return h @ P["w5"] + P["b5"]


def predict(params, state, x):
    """Predicted labels of the images ``x``."""
    return predict_logits(params, state, x).argmax(axis=1)
