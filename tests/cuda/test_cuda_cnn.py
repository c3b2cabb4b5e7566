"""The CNN family on CUDA (ffigraph/cuda/conv.py, pool.py, bn.py): generated source, the GPU rewrite,
launchers compiled by nvcc, their arithmetic on an emulated device, and results on a GPU.

Tiers (see tests/cuda_helpers.py):
  always    the nodes' types (the CPU ops' own), make_node's errors, the generated .cu text, and the
            rewrite of a CNN training step under Mode(device='cuda') (the graph, not its values);
  emulated  (needs g++) the same launchers compiled as C++ against a stand-in for cuda_runtime.h that
            runs each kernel on host threads (2 blocks of 4 threads, __syncthreads a barrier, host
            memory for device memory) and called by hand: every kernel's arithmetic, index, stride
            and grid-stride handling, and the batch norm's block reductions, checked against numpy
            references written here. It shows the code computes the right thing, not that it runs
            on a device;
  nvcc      a set of launchers (every op kind, both dtypes) compiled in ONE nvcc run and called by
            hand with ABI tensors: bad inputs are refused with the right code, good ones reach CUDA
            and fail with its own "no driver"/"no device" error on a GPU-less machine, never a crash
            (those tests show only that the error is reported; their names end in _without_gpu);
  gpu       results against the numpy references on a device (skipped without one).
"""
import itertools
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

import ffigraph.tensor as T
from cuda_helpers import NO_GPU_CUDA_ERRORS, NVCC, Functions, Slots, cubin_archs, needs_no_gpu, needs_nvcc, \
    undefined_python_symbols
from ffigraph import function, grad
from ffigraph.abi import HEADER_PATH, CudaError, dtype_code, ffi
from ffigraph.compile.mode import Mode
from ffigraph.cuda.bn import GpuBatchNormInference, GpuBatchNormInferenceGrad, GpuBatchNormTrain, \
    GpuBatchNormTrainGrad
from ffigraph.cuda.conv import GpuConv, GpuConv_gradInputs, GpuConv_gradWeights
from ffigraph.cuda.neighbours import GpuImages2Neibs, GpuNeibs2Images
from ffigraph.cuda.pool import GpuAveragePoolGrad, GpuDownsampleFactorMaxGradGrad, GpuMaxPoolGrad, GpuPool
from ffigraph.cuda.prelude import CUDA_PRELUDE
from ffigraph.cuda.type import GpuArrayType
from ffigraph.tensor.nnet import abstract_conv as ac
from ffigraph.tensor.nnet import bn as cpu_bn
from ffigraph.tensor.nnet import neighbours as cpu_neighbours
from ffigraph.tensor.signal import pool as cpu_pool

FFG_ERR_TYPE, FFG_ERR_VALUE, FFG_ERR_ABI, FFG_ERR_CUDA = 1, 2, 5, 7
CPU, CUDA = 1, 2
GXX = shutil.which("g++")
needs_gxx = pytest.mark.skipif(GXX is None, reason="g++ not found (the emulated tier compiles the launchers as C++)")


def gvar(dtype, ndim, shape=None):
    return GpuArrayType(dtype, shape if shape is not None else (None,) * ndim)()


# ================================================================== numpy references (written here)


def _conv_pads(mode, dk):
    if mode == "valid":
        return [(0, 0)] * len(dk)
    if mode == "full":
        return [(k - 1, k - 1) for k in dk]
    if mode == "half":
        return [(k // 2, k // 2) for k in dk]
    return [tuple(p) for p in mode]


def _conv_geometry(S, K, mode, st, dl):
    dk = [(k - 1) * d + 1 for k, d in zip(K, dl)]
    pads = _conv_pads(mode, dk)
    P = [(s + pl + pr - k) // t + 1 for s, (pl, pr), k, t in zip(S, pads, dk, st)]
    return pads, P


def _tap(i, dl, st, P):
    """The slices of the padded image read by kernel tap i over all output positions."""
    return tuple(slice(a * d, a * d + (p - 1) * s + 1, s) for a, d, s, p in zip(i, dl, st, P))


def _flipped(w, flip):
    return w[(Ellipsis,) + (slice(None, None, -1),) * (w.ndim - 2)] if flip else w


def conv_ref(x, w, mode, st, dl, flip, G):
    B, C = x.shape[:2]
    O, Cg = w.shape[:2]
    pads, P = _conv_geometry(x.shape[2:], w.shape[2:], mode, st, dl)
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + pads)
    wf = _flipped(w.astype(np.float64), flip)
    out = np.zeros((B, O) + tuple(P))
    Og = O // G
    for i in np.ndindex(*w.shape[2:]):
        patch = xp[(slice(None), slice(None)) + _tap(i, dl, st, P)]
        for g in range(G):
            out[:, g * Og:(g + 1) * Og] += np.einsum("bc...,oc->bo...", patch[:, g * Cg:(g + 1) * Cg],
                                                     wf[(slice(g * Og, (g + 1) * Og), slice(None)) + i])
    return out


def conv_grad_weights_ref(x, top, K, mode, st, dl, flip, G):
    C, O = x.shape[1], top.shape[1]
    Cg, Og = C // G, O // G
    pads, P = _conv_geometry(x.shape[2:], K, mode, st, dl)
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + pads)
    dwf = np.zeros((O, Cg) + tuple(K))
    for i in np.ndindex(*K):
        patch = xp[(slice(None), slice(None)) + _tap(i, dl, st, P)]
        for g in range(G):
            n = int(np.prod(P))
            t = top[:, g * Og:(g + 1) * Og].astype(np.float64).reshape(top.shape[0], Og, n)
            xg = patch[:, g * Cg:(g + 1) * Cg].reshape(x.shape[0], Cg, n)
            dwf[(slice(g * Og, (g + 1) * Og), slice(None)) + i] = np.einsum("bop,bcp->oc", t, xg)
    return _flipped(dwf, flip)


def conv_grad_inputs_ref(w, top, S, mode, st, dl, flip, G):
    O, Cg = w.shape[:2]
    B, C, Og = top.shape[0], Cg * G, O // G
    pads, P = _conv_geometry(S, w.shape[2:], mode, st, dl)
    dxp = np.zeros((B, C) + tuple(s + pl + pr for s, (pl, pr) in zip(S, pads)))
    wf = _flipped(w.astype(np.float64), flip)
    for i in np.ndindex(*w.shape[2:]):
        sl = _tap(i, dl, st, P)
        for g in range(G):
            dxp[(slice(None), slice(g * Cg, (g + 1) * Cg)) + sl] += np.einsum(
                "bo...,oc->bc...", top[:, g * Og:(g + 1) * Og].astype(np.float64),
                wf[(slice(g * Og, (g + 1) * Og), slice(None)) + i])
    return dxp[(slice(None), slice(None)) + tuple(slice(pl, pl + s) for s, (pl, _) in zip(S, pads))]


def _pool_starts(n, ws, st, pad, ignore_border):
    """Window starts along one axis (unpadded coordinates), by Theano's window counts."""
    v = n + 2 * pad
    if v == 0:
        count = 0
    elif ignore_border:
        count = max(0, (v - ws) // st + 1)
    elif st >= ws:
        count = (v - 1) // st + 1
    else:
        count = max(0, (v - 1 - ws) // st + 1) + 1
    return [o * st - pad for o in range(count)]


def _pool_windows(shape, ws, st, pad, ib):
    """(window index, slices of its part A inside the image, |A|, |T|) for every window."""
    axes = [_pool_starts(n, w, s, p, ib) for n, w, s, p in zip(shape, ws, st, pad)]
    for idx in itertools.product(*[range(len(a)) for a in axes]):
        sl, na, nt = [], 1, 1
        for q, o in enumerate(idx):
            s0 = axes[q][o]
            a, b = max(s0, 0), min(s0 + ws[q], shape[q])
            sl.append(slice(a, b))
            na *= b - a
            nt *= min(s0 + ws[q], shape[q] + pad[q]) - s0
        yield idx, tuple(sl), na, nt


def _pooled_shape(x, ws, st, pad, ib):
    nd = len(ws)
    return x.shape[:-nd] + tuple(len(_pool_starts(n, w, s, p, ib)) for n, w, s, p in zip(x.shape[-nd:], ws, st, pad))


def pool_ref(x, ws, st, pad, ib, mode):
    nd = len(ws)
    out = np.zeros(_pooled_shape(x, ws, st, pad, ib))
    axes = tuple(range(x.ndim - nd, x.ndim))
    for idx, sl, na, nt in _pool_windows(x.shape[-nd:], ws, st, pad, ib):
        region = x[(Ellipsis,) + sl].astype(np.float64)
        if mode == "max":
            v = region.max(axis=axes)
        else:
            v = region.sum(axis=axes) / {"sum": 1, "average_exc_pad": na, "average_inc_pad": nt}[mode]
        out[(Ellipsis,) + idx] = v
    return out


def max_pool_grad_ref(x, maxout, gz, ws, st, pad, ib):
    nd = len(ws)
    gx = np.zeros(x.shape)
    for idx, sl, _, _ in _pool_windows(x.shape[-nd:], ws, st, pad, ib):
        m = maxout[(Ellipsis,) + idx + (None,) * nd]
        g = gz[(Ellipsis,) + idx + (None,) * nd]
        gx[(Ellipsis,) + sl] += np.where(x[(Ellipsis,) + sl] == m, g, 0)
    return gx


def average_pool_grad_ref(x, gz, ws, st, pad, ib, mode):
    nd = len(ws)
    gx = np.zeros(x.shape)
    for idx, sl, na, nt in _pool_windows(x.shape[-nd:], ws, st, pad, ib):
        div = {"sum": 1, "average_exc_pad": na, "average_inc_pad": nt}[mode]
        gx[(Ellipsis,) + sl] += gz[(Ellipsis,) + idx + (None,) * nd].astype(np.float64) / div
    return gx


def max_pool_grad_grad_ref(x, maxout, ggx, ws, st, pad, ib):
    nd = len(ws)
    out = np.zeros(maxout.shape)
    axes = tuple(range(x.ndim - nd, x.ndim))
    for idx, sl, _, _ in _pool_windows(x.shape[-nd:], ws, st, pad, ib):
        hit = x[(Ellipsis,) + sl] == maxout[(Ellipsis,) + idx + (None,) * nd]
        out[(Ellipsis,) + idx] = np.where(hit, ggx[(Ellipsis,) + sl], 0).sum(axis=axes)
    return out


def bn_train_ref(x, scale, bias, eps, axes, factor=None, rm=None, rv=None):
    x = x.astype(np.float64)
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    invstd = 1 / np.sqrt(var + eps)
    out = [(x - mean) * scale * invstd + bias, mean, invstd]
    if rm is not None:
        m = np.prod([x.shape[a] for a in axes])
        out += [rm * (1 - factor) + mean * factor, rv * (1 - factor) + var * m / (m - 1) * factor]
    return out


def bn_inference_ref(x, scale, bias, mean, var, eps):
    return [(x.astype(np.float64) - mean) * scale / np.sqrt(var.astype(np.float64) + eps) + bias]


def bn_train_grad_ref(x, dy, scale, mean, invstd, axes, dmean=None, dinvstd=None):
    x, dy = x.astype(np.float64), dy.astype(np.float64)
    m = np.prod([x.shape[a] for a in axes])
    xd = x - mean
    c = dy * invstd - xd * (dy * xd).mean(axis=axes, keepdims=True) * invstd ** 3
    dx = scale * (c - c.mean(axis=axes, keepdims=True))
    if dmean is not None:
        dx = dx + dmean / m - dinvstd * invstd ** 3 * xd / m
    return [dx, (dy * invstd * xd).sum(axis=axes, keepdims=True), dy.sum(axis=axes, keepdims=True)]


def bn_inference_grad_ref(x, dy, scale, mean, var, eps, axes):
    x, dy = x.astype(np.float64), dy.astype(np.float64)
    sd = np.sqrt(var + eps)
    sdx = (dy * (x - mean)).sum(axis=axes, keepdims=True)
    sdy = dy.sum(axis=axes, keepdims=True)
    return [dy * scale / sd, sdx / sd, sdy, -sdy * scale / sd, -sdx * scale / (2 * (var + eps) * sd)]


def _neib_grid(n, c, s, mode):
    """(patch count, offset of the first patch) along one image axis."""
    if mode == "wrap_centered":
        return -(-n // s), c // 2
    span, offset = {"valid": (n - c, 0), "ignore_borders": (n - c, 0), "half": (n - c % 2, c // 2),
                    "full": (n + c - 2, c - 1)}[mode]
    return 1 + span // s, offset


def _neib_reads(shape, size, step, mode):
    """(patch row, patch column, image, channel, y, x) for every patch element that reads a pixel."""
    B, C, H, W = shape
    (gr, o_r), (gc, o_c) = _neib_grid(H, size[0], step[0], mode), _neib_grid(W, size[1], step[1], mode)
    row = 0
    for b, ch, pa, pb in itertools.product(range(B), range(C), range(gr), range(gc)):
        for i, j in itertools.product(range(size[0]), range(size[1])):
            y, x = pa * step[0] + i - o_r, pb * step[1] + j - o_c
            if mode == "wrap_centered":
                y, x = y % H, x % W
            if 0 <= y < H and 0 <= x < W:
                yield row, i * size[1] + j, b, ch, y, x
        row += 1


def images2neibs_ref(x, size, step, mode):
    B, C, H, W = x.shape
    rows = B * C * _neib_grid(H, size[0], step[0], mode)[0] * _neib_grid(W, size[1], step[1], mode)[0]
    out = np.zeros((rows, size[0] * size[1]), x.dtype)
    for r, k, b, ch, y, xx in _neib_reads(x.shape, size, step, mode):
        out[r, k] = x[b, ch, y, xx]
    return out


def neibs2images_ref(neibs, size, step, shape, mode):
    out = np.zeros(shape)
    for r, k, b, ch, y, xx in _neib_reads(shape, size, step, mode):
        out[b, ch, y, xx] += neibs[r, k]
    return out


# per mode: (image shape, neib_shape, neib_step), consistent with the mode's rules
NEIB_CASES = {"valid": ((2, 2, 6, 7), (2, 3), (2, 2)), "ignore_borders": ((2, 2, 6, 7), (2, 3), (3, 2)),
              "half": ((1, 3, 6, 8), (3, 2), (1, 2)), "full": ((2, 1, 5, 6), (2, 3), (1, 1)),
              "wrap_centered": ((2, 2, 5, 6), (3, 3), (2, 1))}


def _tol(dtype):
    return dict(rtol=2e-5, atol=2e-5) if dtype == "float32" else dict(rtol=1e-11, atol=1e-12)


def _rand(shape, dtype, seed, low=-2.0, high=2.0):
    return np.random.default_rng(seed).uniform(low, high, size=shape).astype(dtype)


def _odd_layout(a, kind):
    """The same values in another memory layout: reversed last axis, transposed copy, strided."""
    if kind == "reversed":
        return np.ascontiguousarray(a[..., ::-1])[..., ::-1]
    if kind == "transposed":
        return np.asfortranarray(a)
    if kind == "strided":
        big = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
        big[..., ::2] = a
        return big[..., ::2]
    return a


# ================================================================== the launcher set

F32, F64 = "float32", "float64"

# (symbol, GPU op, dtype, data-input ndims, host inputs as make_node arguments)
CONV = {
    "cv2_valid": (GpuConv(2), F64),
    "cv2_half": (GpuConv(2, border_mode="half", subsample=(2, 1), filter_dilation=(1, 2), num_groups=2,
                         filter_flip=False), F32),
    "cv2_pairs": (GpuConv(2, border_mode=((1, 2), (0, 3)), subsample=(1, 3)), F64),
    "cv3_full": (GpuConv(3, border_mode="full", subsample=(1, 2, 1), filter_dilation=(2, 1, 1)), F64),
    "cw2": (GpuConv_gradWeights(2, border_mode=((1, 2), (0, 1)), subsample=(2, 1), filter_dilation=(1, 2),
                                num_groups=2), F64),
    "cw3": (GpuConv_gradWeights(3, border_mode="half", subsample=(1, 1, 2), filter_flip=False), F32),
    "ci2": (GpuConv_gradInputs(2, border_mode="full", subsample=(2, 3), filter_dilation=(2, 1), num_groups=3),
            F64),
    "ci3": (GpuConv_gradInputs(3, subsample=(2, 1, 1)), F32),
}
POOL = {
    "pl_max": (GpuPool(True, "max", 2), F64, 4),
    "pl_max_nb": (GpuPool(False, "max", 2), F32, 3),
    "pl_sum": (GpuPool(True, "sum", 2), F64, 4),
    "pl_inc": (GpuPool(True, "average_inc_pad", 2), F64, 4),
    "pl_inc_nb": (GpuPool(False, "average_inc_pad", 2), F64, 2),
    "pl_exc": (GpuPool(True, "average_exc_pad", 2), F32, 4),
    "pl_exc3": (GpuPool(True, "average_exc_pad", 3), F64, 5),
    "pm": (GpuMaxPoolGrad(True, 2), F64, 4),
    "pm_nb3": (GpuMaxPoolGrad(False, 3), F32, 4),
    "pa_sum": (GpuAveragePoolGrad(True, "sum", 2), F64, 4),
    "pa_inc": (GpuAveragePoolGrad(True, "average_inc_pad", 2), F64, 3),
    "pa_exc": (GpuAveragePoolGrad(True, "average_exc_pad", 2), F32, 4),
    "pa_inc_nb": (GpuAveragePoolGrad(False, "average_inc_pad", 2), F64, 4),
    "pg": (GpuDownsampleFactorMaxGradGrad(True, "max", 2), F64, 4),
    "pg_nb": (GpuDownsampleFactorMaxGradGrad(False, "max", 2), F32, 3),
}
BN = {
    "bn_train": (GpuBatchNormTrain((0, 2, 3)), F64, 4, True),
    "bn_train_act": (GpuBatchNormTrain((0,)), F32, 2, False),
    "bn_inf": (GpuBatchNormInference((0, 2, 3)), F64, 4, None),
    "bn_grad": (GpuBatchNormTrainGrad((0, 2, 3)), F64, 4, True),
    "bn_grad_act": (GpuBatchNormTrainGrad((0, 2)), F32, 3, False),
    "bn_infgrad": (GpuBatchNormInferenceGrad((0, 2, 3)), F64, 4, None),
}
NEIBS = {
    "nb_valid": (GpuImages2Neibs("valid"), F64),
    "nb_ignore": (GpuImages2Neibs("ignore_borders"), "int32"),
    "nb_half": (GpuImages2Neibs("half"), F32),
    "nb_full": (GpuImages2Neibs("full"), F64),
    "nb_wrap": (GpuImages2Neibs("wrap_centered"), F64),
    "ni_valid": (GpuNeibs2Images("valid"), F64),
    "ni_ignore": (GpuNeibs2Images("ignore_borders"), F32),
    "ni_half": (GpuNeibs2Images("half"), F64),
    "ni_full": (GpuNeibs2Images("full"), F64),
    "ni_wrap": (GpuNeibs2Images("wrap_centered"), F64),
}
# the nvcc tier compiles one launcher of every op kind and dimension, in both dtypes
NVCC_SET = ("cv2_half", "cv3_full", "cw2", "cw3", "ci2", "ci3", "pl_max", "pl_exc", "pm", "pa_exc", "pg",
            "bn_train", "bn_train_act", "bn_inf", "bn_grad", "bn_infgrad", "nb_half", "ni_wrap")


def conv_node(symbol):
    op, dtype = CONV[symbol]
    nd = op.convdim + 2
    if op.kind == "forward":
        return op.make_node(gvar(dtype, nd), gvar(dtype, nd))
    return op.make_node(gvar(dtype, nd), gvar(dtype, nd), T.lvector())


def pool_node(symbol):
    op, dtype, nd = POOL[symbol]
    arrays = [gvar(dtype, nd) for _ in range(op.n_arrays)]
    return op.make_node(*(arrays + [T.lvector(), T.lvector(), T.lvector()]))


def bn_node(symbol):
    op, dtype, nd, extra = BN[symbol]
    g = [gvar(dtype, nd) for _ in range(7)]
    eps, factor = T.dscalar(), T.fscalar()
    if op.kind == "train":
        return op.make_node(*([g[0], g[1], g[2], eps, factor] + (g[3:5] if extra else [])))
    if op.kind == "inference":
        return op.make_node(g[0], g[1], g[2], g[3], g[4], eps)
    if op.kind == "train_grad":
        return op.make_node(*(g[:5] + [eps] + (g[5:7] if extra else [])))
    return op.make_node(g[0], g[1], g[2], g[3], g[4], eps)


def neibs_node(symbol):
    op, dtype = NEIBS[symbol]
    if op.kind == "images2neibs":
        return op.make_node(gvar(dtype, 4), T.lvector(), T.lvector())
    return op.make_node(gvar(dtype, 2), T.lvector(), T.lvector(), T.lvector())


def all_nodes():
    nodes = {s: conv_node(s) for s in CONV}
    nodes.update({s: neibs_node(s) for s in NEIBS})
    nodes.update({s: pool_node(s) for s in POOL})
    nodes.update({s: bn_node(s) for s in BN})
    return nodes


def sources(symbols=None):
    nodes = all_nodes()
    return {"ffg_cu_" + s: nodes[s].op.cuda_launcher(nodes[s], "ffg_cu_" + s) for s in (symbols or nodes)}


# ================================================================== always: types, errors, source


def test_node_types_are_the_cpu_ops_types():
    img, kern = gvar(F32, 4, (2, 6, 9, 8)), gvar(F32, 4, (4, 3, 3, 2))
    node = GpuConv(2, border_mode="half", subsample=(2, 1), num_groups=2).make_node(img, kern)
    cpu = ac.AbstractConv2d(border_mode="half", subsample=(2, 1), num_groups=2).make_node(
        T.tensor(F32, (2, 6, 9, 8)), T.tensor(F32, (4, 3, 3, 2)))
    assert isinstance(node.outputs[0].type, GpuArrayType)
    assert node.outputs[0].type.shape == cpu.outputs[0].type.shape == (2, 4, 5, 9)
    gw = GpuConv_gradWeights(2).make_node(gvar(F64, 4, (2, 3, 7, 7)), gvar(F64, 4, (2, 5, 5, 6)), (3, 2))
    assert gw.outputs[0].type.shape == (5, 3, 3, 2) and gw.inputs[2].type.dtype == "int64"
    gi = GpuConv_gradInputs(3).make_node(gvar(F64, 5), gvar(F64, 5), np.array([4, 5, 6]))
    assert gi.outputs[0].type.dtype == F64 and gi.outputs[0].type.shape[2:] == (4, 5, 6)
    p = GpuPool(True, "max", 2).make_node(gvar(F64, 4, (2, 3, 7, 6)), (2, 2), (2, 1), (1, 0))
    assert p.outputs[0].type.shape == (2, 3, 4, 5) and len(p.inputs) == 4
    b = GpuBatchNormTrain((0, 2, 3)).make_node(gvar(F32, 4, (8, 3, 5, 5)), gvar(F32, 4), gvar(F32, 4), 1e-4, 0.1)
    assert [o.type.shape for o in b.outputs] == [(8, 3, 5, 5), (1, 3, 1, 1), (1, 3, 1, 1)]
    assert all(isinstance(o.type, GpuArrayType) for o in b.outputs)
    assert b.inputs[3].type.ndim == 0 and not isinstance(b.inputs[3].type, GpuArrayType)
    # props and from_cpu round trip
    cpu_op = ac.AbstractConv3d_gradInputs(border_mode=1, subsample=2, filter_dilation=(1, 2, 1), num_groups=2)
    g = GpuConv_gradInputs.from_cpu(cpu_op)
    assert g.cpu_op() == cpu_op and g == GpuConv_gradInputs.from_cpu(cpu_op) and str(g) == "GpuConv3d_gradInputs"
    assert GpuPool.from_cpu(cpu_pool.Pool(True, "sum", 3)).cpu_op() == cpu_pool.Pool(True, "sum", 3)
    assert GpuBatchNormTrainGrad.from_cpu(cpu_bn.AbstractBatchNormTrainGrad((0, 2))).axes == (0, 2)
    # infer_shape is the CPU op's
    assert p.op.infer_shape(None, p, [(2, 3, 7, 6), (2,), (2,), (2,)]) == [[2, 3, 4, 5]]


def test_make_node_errors():
    with pytest.raises(TypeError, match="img .* is not a GPU array"):
        GpuConv(2).make_node(T.tensor(F32, (None,) * 4), gvar(F32, 4))
    with pytest.raises(TypeError, match="same dtype"):
        GpuConv(2).make_node(gvar(F32, 4), gvar(F64, 4))
    with pytest.raises(TypeError, match="float32 or float64"):
        GpuConv(2).make_node(gvar("int32", 4), gvar("int32", 4))
    with pytest.raises(TypeError, match="img must be 4D tensor"):
        GpuConv(2).make_node(gvar(F32, 5), gvar(F32, 4))
    with pytest.raises(TypeError, match="kern must be 5D tensor"):
        GpuConv(3).make_node(gvar(F32, 5), gvar(F32, 4))
    with pytest.raises(ValueError, match="input channels per group"):
        GpuConv(2, num_groups=2).make_node(gvar(F32, 4, (1, 4, 5, 5)), gvar(F32, 4, (2, 3, 2, 2)))
    with pytest.raises(ValueError, match="invalid filter_shape"):
        GpuConv_gradWeights(2).make_node(gvar(F32, 4), gvar(F32, 4), (0, 3))
    with pytest.raises(ValueError, match="invalid border_mode"):
        GpuConv(2, border_mode=-1)
    with pytest.raises(NotImplementedError, match="unshared"):
        GpuConv(2, unshared=True)
    with pytest.raises(TypeError, match="maxout .* is not a GPU array"):
        GpuMaxPoolGrad(True, 2).make_node(gvar(F32, 4), T.tensor(F32, (None,) * 4), gvar(F32, 4), (2, 2),
                                          (2, 2), (0, 0))
    with pytest.raises(ValueError, match="ws"):
        GpuPool(True, "max", 2).make_node(gvar(F32, 4), (0, 2), (1, 1), (0, 0))
    with pytest.raises(NotImplementedError, match="ignore_border=True"):
        GpuPool(False, "max", 2).make_node(gvar(F32, 4), (2, 2), (1, 1), (1, 0))
    with pytest.raises(ValueError, match="mode"):
        GpuPool(True, "median", 2)
    with pytest.raises(TypeError, match="all be float32 or all float64"):
        GpuBatchNormInference((0,)).make_node(gvar(F32, 2), gvar(F64, 2), gvar(F32, 2), gvar(F32, 2),
                                              gvar(F32, 2), 1e-3)
    with pytest.raises(ValueError, match="both be given"):
        GpuBatchNormTrain((0,)).make_node(gvar(F32, 2), gvar(F32, 2), gvar(F32, 2), 1e-4, 0.1, gvar(F32, 2))
    with pytest.raises(TypeError, match="scale .* is not a GPU array"):
        GpuBatchNormTrain((0,)).make_node(gvar(F32, 2), T.fmatrix(), gvar(F32, 2), 1e-4, 0.1)


def test_sources():
    texts = sources()
    for symbol, text in texts.items():
        assert text.count("FFG_CU_LAUNCHER") == 1 and "FFG_CU_LAUNCHER int32_t %s(" % symbol in text
        assert "ffg_cu_check_call(" in text and "%s_kernel<<<" % symbol in text
        assert "ffg_cu_cnn_fail(device_alloc, outputs, owned" in text   # released on failure
        for word in ("Python.h", "Py_", "atomic"):   # deterministic: no atomics
            assert word not in text, (symbol, word)
        assert "\t" not in text and max(len(line) for line in text.splitlines()) <= 120, symbol
        assert text.count("#ifndef FFG_CU_CNN_COMMON") == 1
    flip = texts["ffg_cu_cv2_valid"]
    assert "const int64_t w0 = a.K[0] - 1 - i0, w1 = a.K[1] - 1 - i1;" in flip
    assert "ko = w0 * a.ks[2] + w1 * a.ks[3];" in flip
    assert "a.K[0] - 1 - i0" not in texts["ffg_cu_cv2_half"]   # filter_flip=False: cross-correlation
    assert "a.pl[0] = dk[0] / 2;" in texts["ffg_cu_cv2_half"] and "a.pl[1] = 0;" in texts["ffg_cu_cv2_pairs"]
    assert "pr[1] = 3;" in texts["ffg_cu_cv2_pairs"] and "int64_t G = 2;" in texts["ffg_cu_cv2_half"]
    assert "invalid filter_shape for gradWeights" in texts["ffg_cu_cw2"]
    assert "invalid input_shape for gradInputs" in texts["ffg_cu_ci3"]
    assert "q0 % a.st[0] != 0" in texts["ffg_cu_ci2"]   # the gather of grad_inputs
    assert "if (v > m || v != v)" in texts["ffg_cu_pl_max"] and "/* |T| */" in texts["ffg_cu_pl_inc"]
    assert "/* |A| */" in texts["ffg_cu_pl_exc"] and "double acc" in texts["ffg_cu_pl_sum"]
    assert "FFG_DEVICE_CPU, 0, 64, 1" in texts["ffg_cu_pm"]
    assert "__shared__ double sh[FFG_CU_THREADS];" in texts["ffg_cu_bn_train"]
    assert texts["ffg_cu_bn_train"].count("ffg_cu_bn_block_sum(s, sh)") == 2   # two-pass variance
    assert "unbiased" in texts["ffg_cu_bn_train"] and "unbiased" not in texts["ffg_cu_bn_train_act"]
    assert "dmean" in texts["ffg_cu_bn_grad"] and "dmean" not in texts["ffg_cu_bn_grad_act"]
    a, b = GpuConv(2), conv_node("cv2_valid")
    assert "ffg_cu_zz_kernel" in a.cuda_launcher(b, "ffg_cu_zz") and "ffg_cu_cv2" not in a.cuda_launcher(b, "ffg_cu_zz")


def _op_names(f):
    return [type(n.op).__name__ for n in f.maker.fgraph.toposort()]


def _cnn_step(dtype="float32"):
    """A small CNN training step: conv -> batch norm -> relu -> max pool -> conv -> average pool ->
    softmax cross-entropy, and the SGD updates of its parameters."""
    x, y = T.tensor(dtype, (4, 1, 12, 12), name="x"), T.ivector("y")
    w1, w2 = T.tensor(dtype, (3, 1, 3, 3), name="w1"), T.tensor(dtype, (2, 3, 2, 2), name="w2")
    gamma, beta = T.tensor(dtype, (1, 3, 1, 1), name="gamma"), T.tensor(dtype, (1, 3, 1, 1), name="beta")
    h = ac.conv2d(x, w1, border_mode="half")
    h, _, _ = cpu_bn.batch_normalization_train(h, gamma, beta, axes="spatial")
    h = cpu_pool.pool_2d(T.maximum(h, 0), ws=(2, 2), ignore_border=True, mode="max")
    h = ac.conv2d(h, w2, subsample=(1, 1))
    h = cpu_pool.pool_2d(h, ws=(2, 2), ignore_border=True, mode="average_exc_pad", stride=(1, 1), pad=(1, 1))
    logits = h.reshape((4, -1))
    loss = -T.mean(T.log(T.nnet.softmax(logits))[T.arange(4), y])
    params = [w1, gamma, beta, w2]
    return [x, y] + params, [loss] + grad(loss, [x] + params)


def test_device_mode_moves_a_cnn_step_to_the_gpu():
    inputs, outputs = _cnn_step()
    f = function(inputs, outputs, mode=Mode(linker="py", device="cuda"))   # py: nothing is compiled here
    names = _op_names(f)
    cpu_kinds = (ac.BaseAbstractConv, cpu_pool.Pool, cpu_pool.MaxPoolGrad, cpu_pool.AveragePoolGrad,
                 cpu_bn.AbstractBatchNormTrain, cpu_bn.AbstractBatchNormTrainGrad)
    left = [n for n in f.maker.fgraph.apply_nodes if isinstance(n.op, cpu_kinds)]
    assert not left, left
    for name in ("GpuConv", "GpuConv_gradWeights", "GpuConv_gradInputs", "GpuPool", "GpuMaxPoolGrad",
                 "GpuAveragePoolGrad", "GpuBatchNormTrain", "GpuBatchNormTrainGrad"):
        assert name in names, (name, names)
    # the CNN ops read device values: each one's data inputs come from the device
    for node in f.maker.fgraph.apply_nodes:
        if type(node.op).__name__.startswith(("GpuConv", "GpuPool", "GpuMaxPool", "GpuAveragePool", "GpuBatch")):
            assert isinstance(node.inputs[0].type, GpuArrayType), node
    cpu = function(inputs, outputs, mode=Mode(linker="py"))
    assert not [n for n in _op_names(cpu) if n.startswith(("Gpu", "Host"))]
    # neighbours, and their gradient
    x = T.tensor("float32", (2, 3, 6, 6))
    nb = cpu_neighbours.images2neibs(x, (3, 3), (1, 1), mode="half")
    f = function([x], [nb, grad((nb ** 2).sum(), x)], mode=Mode(linker="py", device="cuda"))
    assert {"GpuImages2Neibs", "GpuNeibs2Images"} <= set(_op_names(f)), _op_names(f)


def test_device_mode_keeps_what_the_gpu_has_no_code_for():
    x = T.tensor("float64", (None, 2, 5, 5))
    w = T.tensor("float64", (None, 2, 3, 3))
    f = function([x, w], ac.conv2d(x, w), mode=Mode(linker="py", device="cuda"))
    assert "GpuConv" in _op_names(f)
    # a pooling window that is not known until run time still moves (ws, stride, pad stay on the host)
    ws = T.lvector("ws")
    g = function([x, ws], cpu_pool.Pool(True, "max", 2)(x, ws, ws, T.zeros((2,), "int64")),
                 mode=Mode(linker="py", device="cuda"))
    node = [n for n in g.maker.fgraph.apply_nodes if type(n.op) is GpuPool][0]
    assert all(not isinstance(v.type, GpuArrayType) for v in node.inputs[1:])


# ================================================================== emulated: the arithmetic, on the CPU

# A stand-in for cuda_runtime.h: device memory is host memory, and a launch runs the kernel as a grid
# of 2 blocks of 4 threads (POSIX threads: one block at a time, its threads at once, __syncthreads a
# barrier), whatever the configuration asked (every kernel walks its items with grid-stride loops).
EMULATION_HEADER = r"""
#pragma once
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
typedef int cudaError_t;
#define cudaSuccess 0
struct ffg_emu_dim { unsigned int x, y, z; };
static thread_local ffg_emu_dim threadIdx, blockIdx;
static const ffg_emu_dim blockDim = {4, 1, 1}, gridDim = {2, 1, 1};
static pthread_barrier_t ffg_emu_barrier;
#define __global__
#define __device__
#define __host__
#define __shared__ static
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __syncthreads() pthread_barrier_wait(&ffg_emu_barrier)
static inline cudaError_t cudaMalloc(void **p, size_t n) { *p = malloc(n); return *p ? 0 : 2; }
static inline cudaError_t cudaFree(void *p) { free(p); return 0; }
static inline cudaError_t cudaGetLastError(void) { return 0; }
static inline cudaError_t cudaGetDevice(int *d) { *d = 0; return 0; }
static inline const char *cudaGetErrorName(cudaError_t) { return "emulated"; }
static inline const char *cudaGetErrorString(cudaError_t) { return "emulated"; }

template <typename K, typename A> struct ffg_emu_job { K kernel; const A *args; unsigned int t, b; };

template <typename K, typename A> static void *ffg_emu_thread(void *p)
{
    ffg_emu_job<K, A> *job = (ffg_emu_job<K, A> *)p;
    threadIdx.x = job->t;
    threadIdx.y = threadIdx.z = 0;
    blockIdx.x = job->b;
    blockIdx.y = blockIdx.z = 0;
    job->kernel(*job->args);
    return NULL;
}

template <typename K, typename A> static void ffg_emu_launch(K kernel, const A &args)
{
    pthread_t threads[4];
    ffg_emu_job<K, A> jobs[4];
    unsigned int b, t;
    pthread_barrier_init(&ffg_emu_barrier, NULL, 4);
    for (b = 0; b < gridDim.x; ++b) {
        for (t = 0; t < blockDim.x; ++t) {
            jobs[t].kernel = kernel;
            jobs[t].args = &args;
            jobs[t].t = t;
            jobs[t].b = b;
            pthread_create(&threads[t], NULL, ffg_emu_thread<K, A>, &jobs[t]);
        }
        for (t = 0; t < blockDim.x; ++t)
            pthread_join(threads[t], NULL);
    }
    pthread_barrier_destroy(&ffg_emu_barrier);
}
"""


@pytest.fixture(scope="module")
def emulated():
    if GXX is None:
        pytest.skip("g++ not found")
    folder = tempfile.mkdtemp(prefix="ffg-cu-emu-")
    with open(os.path.join(folder, "cuda_runtime.h"), "w") as fh:
        fh.write(EMULATION_HEADER)
    texts = sources()
    text = CUDA_PRELUDE + "\n\n" + "\n\n".join(texts.values())
    text = re.sub(r"(\w+)<<<[^;]*?>>>\((\w+)\)", r"ffg_emu_launch(\1, \2)", text)   # every kernel takes one struct
    text += '\nextern "C" __attribute__((visibility("default"))) void ffg_emu_free(void *p) { free(p); }\n'
    cu, so = os.path.join(folder, "k.cpp"), os.path.join(folder, "libk.so")
    with open(cu, "w") as fh:
        fh.write(text)
    proc = subprocess.run([GXX, "-shared", "-fPIC", "-pthread", "-O0", "-w", "-DFFG_CU_EXPORT_LAUNCHERS", "-I" + folder,
                           "-I" + os.path.dirname(HEADER_PATH), "-o", so, cu],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    assert proc.returncode == 0, proc.stdout[-4000:]
    decls = {s: None for s in texts}
    decls["ffg_emu_free"] = "void ffg_emu_free(void *p);"
    return Functions(so, decls)


def _address(a):
    return a.__array_interface__["data"][0]


_DTYPE_OF = {dtype_code(d): np.dtype(d) for d in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                                                  "uint32", "uint64", "float32", "float64")}


def emu_call(lib, symbol, args):
    """Call launcher ``ffg_cu_<symbol>`` on ``args`` (numpy arrays; ("host", array) for host inputs).
    Returns (rc, message, outputs as numpy arrays)."""
    args = [a if isinstance(a, tuple) else ("dev", a) for a in args]
    n_out = len(all_nodes()[symbol].outputs)
    s = Slots(len(args), n_out)
    for i, (where, a) in enumerate(args):
        s.set(i, a.shape, *dtype_code(a.dtype), device_type=CUDA if where == "dev" else CPU,
              data=_address(a) if a.size else 0, strides=[st // a.itemsize for st in a.strides])
    rc, _, msg = s.call(getattr(lib, "ffg_cu_" + symbol))
    outs = []
    if rc == 0:
        for k in range(n_out):
            o = s.outputs[k]
            shape = tuple(o.shape[d] for d in range(o.ndim))
            dtype = _DTYPE_OF[(o.dtype.code, o.dtype.bits)]
            want = np.zeros(shape, dtype)
            assert o.device.device_type == CUDA and tuple(o.strides[d] for d in range(o.ndim)) == \
                tuple(st // want.itemsize for st in want.strides) or want.size == 0
            n = int(np.prod(shape))
            outs.append(np.frombuffer(ffi.buffer(o.data, n * want.itemsize), dtype).reshape(shape).copy()
                        if n else want)
            lib.ffg_emu_free(s.owned[k])
    return rc, msg, outs


def _ints(v):
    return ("host", np.asarray(v, dtype=np.int64))


def _check(got, want, dtype):
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, **_tol(dtype))


# conv cases: (symbol, image shape, kernel spatial shape), channels chosen to fit the groups
CONV_CASES = [
    ("cv2_valid", (2, 3, 7, 6), (3, 2), 4),
    ("cv2_valid", (1, 1, 3, 3), (3, 3), 1),        # batch 1, the kernel as large as the image
    ("cv2_half", (2, 4, 9, 8), (3, 2), 6),
    ("cv2_pairs", (3, 2, 5, 7), (2, 3), 3),
    ("cv3_full", (2, 2, 4, 5, 3), (2, 3, 2), 3),
    ("cw2", (2, 4, 8, 7), (3, 2), 6),
    ("cw3", (2, 3, 5, 4, 6), (3, 1, 2), 2),
    ("ci2", (2, 6, 7, 9), (2, 3), 3),
    ("ci3", (3, 2, 6, 4, 5), (3, 2, 1), 4),
]


def _conv_case(symbol, ishape, K, O, dtype, seed, layout="plain", empty_batch=False):
    op = CONV[symbol][0]
    G, st, dl, mode, flip = op.num_groups, op.subsample, op.filter_dilation, op.border_mode, op.filter_flip
    if empty_batch:
        ishape = (0,) + tuple(ishape[1:])
    C, S = ishape[1], ishape[2:]
    img = _rand(ishape, dtype, seed)
    kern = _rand((O, C // G) + tuple(K), dtype, seed + 1)
    _, P = _conv_geometry(S, K, mode, st, dl)
    top = _rand((ishape[0], O) + tuple(P), dtype, seed + 2)
    img, kern, top = (_odd_layout(a, layout) for a in (img, kern, top))
    if op.kind == "forward":
        return [img, kern], conv_ref(img, kern, mode, st, dl, flip, G)
    if op.kind == "grad_weights":
        return [img, top, _ints(K)], conv_grad_weights_ref(img, top, K, mode, st, dl, flip, G)
    return [kern, top, _ints(S)], conv_grad_inputs_ref(kern, top, S, mode, st, dl, flip, G)


@needs_gxx
def test_emulated_convolutions_match_numpy(emulated):
    for n, (symbol, ishape, K, O) in enumerate(CONV_CASES):
        dtype = CONV[symbol][1]
        for layout in ("plain", "reversed", "transposed", "strided"):
            args, want = _conv_case(symbol, ishape, K, O, dtype, 10 * n, layout)
            rc, msg, (got,) = emu_call(emulated, symbol, args)
            assert rc == 0, (symbol, msg)
            _check(got, want, dtype)
        args, want = _conv_case(symbol, ishape, K, O, dtype, 10 * n, empty_batch=True)
        rc, msg, outs = emu_call(emulated, symbol, args)
        assert rc == 0, msg
        _check(outs[0], want, dtype)   # empty, or zeros (grad_weights over an empty batch)


# pooling cases: (ws, stride, pad) for each input shape
POOL_PARAMS = [((2, 2), (2, 2), (0, 0)), ((3, 2), (1, 2), (1, 1)), ((3, 3), (2, 1), (2, 0)), ((1, 4), (3, 1), (0, 2))]
POOL_PARAMS_NB = [((2, 2), (2, 2), (0, 0)), ((3, 2), (2, 1), (0, 0)), ((2, 3), (3, 3), (0, 0))]
POOL3_PARAMS = [((2, 2, 2), (1, 2, 1), (1, 0, 1)), ((3, 1, 2), (2, 1, 2), (0, 0, 1))]


def _pool_inputs(nd_in, dtype, seed, ties=False):
    shape = {2: (7, 8), 3: (3, 7, 9), 4: (2, 3, 7, 8), 5: (2, 1, 5, 6, 4)}[nd_in]
    x = _rand(shape, dtype, seed)
    if ties:   # repeated values: every tie gets the gradient
        x = np.round(x * 2) / 2
    return x


@needs_gxx
def test_emulated_pooling_matches_numpy(emulated):
    for symbol, (op, dtype, nd_in) in POOL.items():
        params = POOL3_PARAMS if op.ndim == 3 else (POOL_PARAMS if op.ignore_border else POOL_PARAMS_NB)
        if op.ndim == 3 and not op.ignore_border:
            params = [((2, 2, 3), (2, 1, 2), (0, 0, 0)), ((3, 2, 2), (1, 3, 2), (0, 0, 0))]
        for k, (ws, st, pad) in enumerate(params):
            x = _pool_inputs(nd_in, dtype, k, ties=op.mode == "max")
            layout = ("plain", "reversed", "transposed", "strided")[k % 4]
            ib = op.ignore_border
            p = [_ints(ws), _ints(st), _ints(pad)]
            maxout = pool_ref(x, ws, st, pad, ib, "max").astype(dtype)
            gz = _rand(maxout.shape, dtype, 50 + k)
            if op.kind == "pool":
                args, want = [x], pool_ref(x, ws, st, pad, ib, op.mode)
            elif op.kind == "max_grad":
                args, want = [x, maxout, gz], max_pool_grad_ref(x, maxout, gz, ws, st, pad, ib)
            elif op.kind == "average_grad":
                args, want = [x, gz], average_pool_grad_ref(x, gz, ws, st, pad, ib, op.mode)
            else:
                ggx = _rand(x.shape, dtype, 70 + k)
                args, want = [x, maxout, ggx], max_pool_grad_grad_ref(x, maxout, ggx, ws, st, pad, ib)
            args = [_odd_layout(a, layout) for a in args]
            rc, msg, (got,) = emu_call(emulated, symbol, args + p)
            assert rc == 0, (symbol, ws, st, pad, msg)
            _check(got, want, dtype)
    # an empty pooled axis: no window, an empty result
    x = np.zeros((2, 3, 0, 5))
    rc, msg, (got,) = emu_call(emulated, "pl_max", [x, _ints((2, 2)), _ints((1, 1)), _ints((0, 0))])
    assert rc == 0 and got.shape == (2, 3, 0, 4), msg
    # ... unless padded: then its windows hold nothing (the max of nothing is an error; a sum is 0)
    rc, msg, _ = emu_call(emulated, "pl_max", [x, _ints((2, 2)), _ints((1, 1)), _ints((1, 0))])
    assert rc == FFG_ERR_VALUE and "the maximum of an empty window" in msg, msg
    rc, msg, (got,) = emu_call(emulated, "pl_sum", [x, _ints((2, 2)), _ints((1, 1)), _ints((1, 0))])
    assert rc == 0 and got.shape == (2, 3, 1, 4) and not got.any(), msg


@needs_gxx
def test_emulated_max_pool_nan_wins(emulated):
    x = np.arange(32, dtype=np.float64).reshape(1, 2, 4, 4)
    x[0, 1, 1, 1] = np.nan
    rc, msg, (got,) = emu_call(emulated, "pl_max", [x, _ints((2, 2)), _ints((2, 2)), _ints((0, 0))])
    assert rc == 0, msg
    assert np.isnan(got[0, 1, 0, 0]) and np.isfinite(np.delete(got.ravel(), 4)).all()


def _bn_arrays(nd, axes, dtype, seed):
    shape = {2: (9, 5), 3: (4, 3, 6), 4: (3, 4, 5, 2)}[nd]
    pshape = tuple(1 if a in axes else s for a, s in enumerate(shape))
    x = _rand(shape, dtype, seed, -3, 5)
    params = [_rand(pshape, dtype, seed + k) for k in range(1, 7)]
    return x, params, pshape


@needs_gxx
def test_emulated_batch_norm_matches_numpy(emulated):
    eps, factor = np.array(1e-3), np.array(0.25, np.float32)
    for symbol, (op, dtype, nd, extra) in BN.items():
        axes = op.axes
        x, p, pshape = _bn_arrays(nd, axes, dtype, 3)
        var = np.abs(p[3]) + 0.5
        for layout in ("plain", "reversed", "strided"):
            if op.kind == "train":
                args = [x, p[0], p[1], ("host", eps), ("host", factor)] + ([p[2], var] if extra else [])
                want = bn_train_ref(x, p[0], p[1], float(eps), axes, float(factor),
                                    *([p[2], var] if extra else []))
            elif op.kind == "inference":
                args = [x, p[0], p[1], p[2], var, ("host", eps)]
                want = bn_inference_ref(x, p[0], p[1], p[2], var, float(eps))
            elif op.kind == "train_grad":
                dy = _rand(x.shape, dtype, 9)
                mean = x.astype(np.float64).mean(axis=axes, keepdims=True).astype(dtype)
                invstd = (1 / np.sqrt(x.astype(np.float64).var(axis=axes, keepdims=True) + 1e-3)).astype(dtype)
                args = [x, dy, p[0], mean, invstd, ("host", eps)] + ([p[4], p[5]] if extra else [])
                want = bn_train_grad_ref(x, dy, p[0], mean, invstd, axes, *([p[4], p[5]] if extra else []))
            else:
                dy = _rand(x.shape, dtype, 9)
                args = [x, dy, p[0], p[2], var, ("host", eps)]
                want = bn_inference_grad_ref(x, dy, p[0], p[2], var, float(eps), axes)
            args = [a if isinstance(a, tuple) else _odd_layout(a, layout) for a in args]
            rc, msg, got = emu_call(emulated, symbol, args)
            assert rc == 0, (symbol, msg)
            assert len(got) == len(want)
            for g, w in zip(got, want):
                _check(g, np.broadcast_to(w, g.shape) if w.shape != g.shape else w, dtype)
    # a batch of one per statistic: the unbiased running variance is NaN (inf * 0), as on the CPU
    x = np.ones((1, 3, 1, 1))
    one = np.ones((1, 3, 1, 1))
    rc, msg, got = emu_call(emulated, "bn_train", [x, one, one, ("host", eps), ("host", factor), one, one])
    assert rc == 0 and np.isnan(got[4]).all() and (got[1] == 1).all(), msg


@needs_gxx
def test_emulated_neighbours_match_numpy(emulated):
    for symbol, (op, dtype) in NEIBS.items():
        shape, size, step = NEIB_CASES[op.mode]
        p = [_ints(size), _ints(step)]
        for k, layout in enumerate(("plain", "reversed", "transposed", "strided")):
            if op.kind == "images2neibs":
                x = _rand(shape, dtype, k, -9, 9)
                args, want = [_odd_layout(x, layout)] + p, images2neibs_ref(x, size, step, op.mode)
            else:
                rows = images2neibs_ref(np.zeros(shape), size, step, op.mode).shape
                neibs = _rand(rows, dtype, k)
                args = [_odd_layout(neibs, layout)] + p + [_ints(shape)]
                want = neibs2images_ref(neibs, size, step, shape, op.mode)
            rc, msg, (got,) = emu_call(emulated, symbol, args)
            assert rc == 0, (symbol, msg)
            _check(got, want, dtype if dtype.startswith("float") else F64)
    rc, msg, _ = emu_call(emulated, "nb_valid", [np.zeros((1, 1, 6, 7)), _ints((2, 2)), _ints((2, 2))])
    assert rc == FFG_ERR_TYPE and "not consistent: mode 'valid' needs (n - c) % 2 == 0" in msg, msg
    rc, msg, _ = emu_call(emulated, "ni_wrap", [np.zeros((4, 4)), _ints((2, 2)), _ints((1, 1)), _ints((1, 1, 2, 2))])
    assert rc == FFG_ERR_TYPE and "needs odd patch sizes" in msg, msg


# ================================================================== nvcc: compiled, called without a GPU


class _BackgroundNvcc:
    """The NVCC_SET launchers compiled into one library by ONE nvcc run (build_launchers' command),
    started when the module's first test runs so that it overlaps the other tiers."""

    def __init__(self):
        self.folder = tempfile.mkdtemp(prefix="ffg-cu-cnn-")
        self.cu, self.so = os.path.join(self.folder, "k.cu"), os.path.join(self.folder, "libk.so")
        with open(self.cu, "w") as fh:
            fh.write(CUDA_PRELUDE + "\n\n" + "\n\n".join(sources(NVCC_SET).values()))
        cmd = [NVCC, "-shared", "-O2", "-std=c++14", "-Xcompiler", "-fPIC,-fvisibility=hidden", "-cudart", "shared",
               "-DFFG_CU_EXPORT_LAUNCHERS", "-I" + os.path.dirname(HEADER_PATH),
               "-gencode", "arch=compute_90,code=sm_90", "-o", self.so, self.cu]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)

    def result(self):
        out, _ = self.proc.communicate()
        assert self.proc.returncode == 0, "nvcc failed on %s:\n%s" % (self.cu, out[-6000:])
        return Functions(self.so, {"ffg_cu_" + s: None for s in NVCC_SET}), self.so


_nvcc_job = []


@pytest.fixture(scope="module", autouse=True)
def _start_nvcc():
    if NVCC is not None:
        _nvcc_job.append(_BackgroundNvcc())
    yield
    for job in _nvcc_job:
        if job.proc.poll() is None:   # the nvcc tests were deselected: do not leave nvcc running
            job.proc.kill()
            job.proc.wait()
    del _nvcc_job[:]


@pytest.fixture(scope="module")
def compiled():
    """The NVCC_SET launchers in one library (one nvcc run, started in the background)."""
    return _nvcc_job[0].result()


def _slots_for(symbol, shapes, devices=None, dtypes=None):
    """Slots with fake device pointers: ``shapes`` per input (host int vectors and scalars get real
    host arrays, kept alive in the slots)."""
    node = all_nodes()[symbol]
    s = Slots(len(node.inputs), len(node.outputs))
    for i, (v, shape) in enumerate(zip(node.inputs, shapes)):
        on_gpu = isinstance(v.type, GpuArrayType)
        dtype = (dtypes or {}).get(i, v.type.dtype)
        device = (devices or {}).get(i, CUDA if on_gpu else CPU)
        if on_gpu and device == CUDA:
            s.set(i, shape, *dtype_code(dtype), device_type=CUDA, data=0x1000 * (i + 1))
        else:
            host = np.asarray(shape if v.type.ndim == 1 else 1e-3, dtype=dtype) if not on_gpu \
                else np.zeros(shape, dtype)
            s.keep.append(host)
            s.set(i, host.shape, *dtype_code(host.dtype), device_type=device, data=_address(host),
                  strides=[st // host.itemsize for st in host.strides])
    return s


# good shapes for every launcher of NVCC_SET (host int vectors: their values)
GOOD = {
    "cv2_half": [(2, 4, 9, 8), (6, 2, 3, 2)],
    "cv3_full": [(2, 2, 4, 5, 3), (3, 2, 2, 3, 2)],
    "cw2": [(2, 4, 8, 7), (2, 6, 5, 6), (3, 2)],
    "cw3": [(2, 3, 5, 4, 6), (2, 2, 5, 4, 4), (3, 1, 2)],
    "ci2": [(3, 2, 2, 3), (2, 3, 5, 4), (7, 9)],
    "ci3": [(4, 2, 3, 2, 1), (3, 4, 2, 3, 5), (6, 4, 5)],
    "pl_max": [(2, 3, 7, 8), (2, 2), (2, 2), (0, 0)],
    "pl_exc": [(2, 3, 7, 8), (3, 2), (1, 2), (1, 1)],
    "pm": [(2, 3, 7, 8), (2, 3, 3, 4), (2, 3, 3, 4), (2, 2), (2, 2), (0, 0)],
    "pa_exc": [(2, 3, 7, 8), (2, 3, 7, 4), (3, 2), (1, 2), (1, 0)],
    "pg": [(2, 3, 7, 8), (2, 3, 3, 4), (2, 3, 7, 8), (2, 2), (2, 2), (0, 0)],
    "bn_train": [(3, 4, 5, 2), (1, 4, 1, 1), (1, 4, 1, 1), (), (), (1, 4, 1, 1), (1, 4, 1, 1)],
    "bn_train_act": [(9, 5), (1, 5), (1, 5), (), ()],
    "bn_inf": [(3, 4, 5, 2)] + [(1, 4, 1, 1)] * 4 + [()],
    "bn_grad": [(3, 4, 5, 2), (3, 4, 5, 2)] + [(1, 4, 1, 1)] * 3 + [()] + [(1, 4, 1, 1)] * 2,
    "bn_infgrad": [(3, 4, 5, 2), (3, 4, 5, 2)] + [(1, 4, 1, 1)] * 3 + [()],
    "nb_half": [(1, 3, 6, 8), (3, 2), (1, 2)],
    "ni_wrap": [(2 * 2 * 3 * 6, 9), (3, 3), (2, 1), (2, 2, 5, 6)],
}


def _assert_no_gpu(got, what):
    rc, reserved, msg = got
    assert rc == FFG_ERR_CUDA, (what, got)
    assert reserved in NO_GPU_CUDA_ERRORS and NO_GPU_CUDA_ERRORS[reserved] in msg, (what, got)


@needs_nvcc
def test_library_is_sm90_and_python_free(compiled):
    lib, path = compiled
    assert cubin_archs(path) == {90}
    assert undefined_python_symbols(path) == []


@needs_no_gpu
@needs_nvcc
def test_good_inputs_reach_cuda_without_gpu(compiled):
    lib, _ = compiled
    for symbol in NVCC_SET:
        s = _slots_for(symbol, GOOD[symbol])
        _assert_no_gpu(s.call(getattr(lib, "ffg_cu_" + symbol)), symbol)
        assert all(s.owned[k] == ffi.NULL for k in range(s.n_outputs))


class _HostAllocator:
    """A device allocator handing out host memory: a launcher gets past its allocations to the launch."""

    def __init__(self):
        self.live = {}
        self.calls = 0
        self._alloc = ffi.callback("void *(void *, size_t)", self.alloc)
        self._release = ffi.callback("void (void *, void *)", self.release)
        self.struct = ffi.new("FfgAllocator *", {"alloc": self._alloc, "release": self._release})

    def alloc(self, ctx, nbytes):
        buf = ffi.new("char[]", max(nbytes, 8))
        p = ffi.cast("void *", buf)
        self.live[int(ffi.cast("uintptr_t", p))] = buf
        self.calls += 1
        return p

    def release(self, ctx, p):
        del self.live[int(ffi.cast("uintptr_t", p))]


def _call_with(fn, s, allocator):
    s.err.code = 0
    s.err.detail = 0
    rc = fn(s.inputs, s.n_inputs, s.outputs, s.owned, s.n_outputs, ffi.NULL, allocator.struct, s.err)
    return rc, s.err.detail, ffi.string(s.err.message).decode()


@needs_no_gpu
@needs_nvcc
def test_the_launch_fails_with_cudas_error_and_releases_the_outputs_without_gpu(compiled):
    """With a device allocator every launcher allocates its outputs and reaches the kernel launch,
    which reports CUDA's "no driver" error; everything allocated goes back to the allocator."""
    lib, _ = compiled
    for symbol in NVCC_SET:
        al = _HostAllocator()
        s = _slots_for(symbol, GOOD[symbol])
        got = _call_with(getattr(lib, "ffg_cu_" + symbol), s, al)
        _assert_no_gpu(got, symbol)
        assert "launching the kernel" in got[2], got
        assert al.calls == s.n_outputs and al.live == {}, symbol


@needs_nvcc
def test_empty_results_launch_nothing(compiled):
    lib, _ = compiled
    for symbol, shapes in [("cv2_half", [(0, 4, 9, 8), (6, 2, 3, 2)]), ("cw3", [(2, 3, 5, 4, 6), (2, 0, 5, 4, 4),
                                                                              (3, 1, 2)]),
                           ("pl_max", [(2, 3, 0, 8), (2, 2), (2, 2), (0, 0)]),
                           ("bn_train", [(3, 0, 5, 2), (1, 0, 1, 1), (1, 0, 1, 1), (), (), (1, 0, 1, 1),
                                         (1, 0, 1, 1)])]:
        al = _HostAllocator()
        s = _slots_for(symbol, shapes)
        rc, _, msg = _call_with(getattr(lib, "ffg_cu_" + symbol), s, al)
        assert rc == 0, (symbol, msg)
        assert len(al.live) == s.n_outputs and s.outputs[0].device.device_type == CUDA


def _refused(lib, symbol, shapes, code, *words, **kw):
    s = _slots_for(symbol, shapes, **kw)
    rc, _, msg = s.call(getattr(lib, "ffg_cu_" + symbol))
    assert rc == code == s.err.code, (symbol, rc, msg)
    for w in words:
        assert w in msg, (symbol, w, msg)
    assert all(s.owned[k] == ffi.NULL for k in range(s.n_outputs))
    return msg


@needs_nvcc
def test_bad_inputs_are_refused(compiled):
    lib, _ = compiled
    # devices, dtypes, NULL data
    _refused(lib, "cv2_half", GOOD["cv2_half"], FFG_ERR_TYPE, "input 0", "CPU", devices={0: CPU})
    _refused(lib, "cv2_half", GOOD["cv2_half"], FFG_ERR_TYPE, "input 1", "bits 64", dtypes={1: F64})
    _refused(lib, "cw2", GOOD["cw2"], FFG_ERR_TYPE, "input 2", "CUDA", "expected CPU", devices={2: CUDA})
    _refused(lib, "cw2", GOOD["cw2"], FFG_ERR_TYPE, "input 2", dtypes={2: "int32"})
    s = _slots_for("ci3", GOOD["ci3"])
    s.set(1, (3, 4, 2, 3, 5), *dtype_code(F32), data=0)
    rc, _, msg = s.call(lib.ffg_cu_ci3)
    assert rc == FFG_ERR_ABI and "NULL data" in msg
    # the convolutions' own checks
    _refused(lib, "cv2_half", [(2, 5, 9, 8), (6, 2, 3, 2)], FFG_ERR_VALUE, "5 input channels cannot be split into 2")
    _refused(lib, "cv2_half", [(2, 4, 9, 8), (5, 2, 3, 2)], FFG_ERR_VALUE, "5 output channels")
    _refused(lib, "cv2_half", [(2, 4, 9, 8), (6, 3, 3, 2)], FFG_ERR_VALUE,
             "the filters have 3 input channels per group, the image 2")
    _refused(lib, "ci3", [(4, 2, 7, 2, 1), (3, 4, 2, 3, 5), (6, 4, 5)], FFG_ERR_VALUE,
             "the filter (7 x 2 x 1, dilated) is larger than the padded input (6 x 4 x 5)")
    _refused(lib, "cw2", [(2, 4, 8, 7), (2, 6, 5, 6), (0, 2)], FFG_ERR_VALUE, "invalid filter_shape for gradWeights")
    _refused(lib, "cw2", [(2, 4, 8, 7), (2, 6, 4, 5), (3, 2)], FFG_ERR_VALUE,
             "invalid filter_shape for gradWeights", "gives an output of (5 x 6), topgrad is (4 x 5)")
    _refused(lib, "cw2", [(2, 4, 8, 7), (3, 6, 5, 6), (3, 2)], FFG_ERR_VALUE, "topgrad has 3 images, the input 2")
    _refused(lib, "cw2", [(2, 4, 8, 7), (2, 6, 5, 6), (3, 2, 1)], FFG_ERR_VALUE, "must have 2 entries, got 3")
    _refused(lib, "ci2", [(3, 2, 2, 3), (2, 3, 5, 4), (6, 9)], FFG_ERR_VALUE, "invalid input_shape for gradInputs")
    _refused(lib, "ci2", [(3, 2, 2, 3), (2, 4, 5, 4), (7, 9)], FFG_ERR_VALUE, "topgrad has 4 channels, the filters 3")
    _refused(lib, "ci2", [(3, 2, 2, 3), (2, 3, 5, 4), (-7, 9)], FFG_ERR_VALUE, "invalid input_shape")
    # pooling: the window, stride and padding, and the shapes of maxout and gz
    _refused(lib, "pl_max", [(2, 3, 7, 8), (0, 2), (2, 2), (0, 0)], FFG_ERR_VALUE, "ws must be positive", "ws[0] = 0")
    _refused(lib, "pl_max", [(2, 3, 7, 8), (2, 2), (2, -1), (0, 0)], FFG_ERR_VALUE, "stride must be positive")
    _refused(lib, "pl_exc", [(2, 3, 7, 8), (3, 2), (1, 2), (1, -1)], FFG_ERR_VALUE, "non-negative")
    _refused(lib, "pl_exc", [(2, 3, 7, 8), (3, 2), (1, 2), (1, 2)], FFG_ERR_VALUE,
             "padding must be smaller than the window (pad[1] = 2, ws[1] = 2)")
    _refused(lib, "pl_max", [(2, 3, 7, 8), (2, 2, 2), (2, 2), (0, 0)], FFG_ERR_VALUE, "must have 2 entries, got 3")
    _refused(lib, "pm", [(2, 3, 7, 8), (2, 3, 3, 3), (2, 3, 3, 4), (2, 2), (2, 2), (0, 0)], FFG_ERR_VALUE,
             "maxout has shape (2, 3, 3, 3), expected (2, 3, 3, 4)")
    _refused(lib, "pg", [(2, 3, 7, 8), (2, 3, 3, 4), (2, 3, 7, 7), (2, 2), (2, 2), (0, 0)], FFG_ERR_VALUE,
             "gz has shape (2, 3, 7, 7), expected (2, 3, 7, 8)")
    _refused(lib, "pa_exc", [(2, 3, 7, 8), (2, 3, 7, 5), (3, 2), (1, 2), (1, 0)], FFG_ERR_VALUE, "gz has shape")
    # batch norm: the parameters' shapes
    _refused(lib, "bn_train", [(3, 4, 5, 2), (1, 3, 1, 1), (1, 4, 1, 1), (), (), (1, 4, 1, 1), (1, 4, 1, 1)],
             FFG_ERR_VALUE, "scale has shape (1, 3, 1, 1), but (1, 4, 1, 1) is needed")
    _refused(lib, "bn_grad", [(3, 4, 5, 2), (3, 4, 5, 1)] + [(1, 4, 1, 1)] * 3 + [()] + [(1, 4, 1, 1)] * 2,
             FFG_ERR_VALUE, "dy has shape (3, 4, 5, 1), but (3, 4, 5, 2) is needed (the shape of x)")
    _refused(lib, "bn_train_act", [(9, 5), (1, 5), (1, 5), (), ()], FFG_ERR_TYPE, "input 3", "expected CPU",
             devices={3: CUDA})
    # neighbours: the patch grid and the patch matrix's shape
    _refused(lib, "nb_half", [(1, 3, 6, 8), (0, 2), (1, 2)], FFG_ERR_VALUE, "neib_shape must be positive, got (0, 2)")
    _refused(lib, "nb_half", [(1, 3, 6, 7), (3, 2), (1, 2)], FFG_ERR_TYPE, "not consistent: mode 'half'")
    _refused(lib, "nb_half", [(1, 3, 2, 8), (3, 2), (1, 2)], FFG_ERR_TYPE, "neib_shape[0]=3 is larger than "
             "ten4.shape[2]=2")
    _refused(lib, "ni_wrap", [(71, 9), (3, 3), (2, 1), (2, 2, 5, 6)], FFG_ERR_VALUE, "neibs has shape (71, 9), but "
             "images of shape (2, 2, 5, 6) have (72, 9) patches")
    _refused(lib, "ni_wrap", [(72, 9), (3, 3), (2, 1), (2, 2, -5, 6)], FFG_ERR_VALUE, "must not be negative")
    # ABI misuse
    s = _slots_for("pm", GOOD["pm"])
    s.err.code = 0
    assert lib.ffg_cu_pm(s.inputs, 5, s.outputs, s.owned, 1, ffi.NULL, ffi.NULL, s.err) == FFG_ERR_ABI
    assert lib.ffg_cu_pm(s.inputs, 6, s.outputs, s.owned, 1, ffi.NULL, ffi.NULL, ffi.NULL) == FFG_ERR_ABI


def _small_cnn():
    """conv (half) -> max pool -> batch norm (inference), float32: a graph whose GPU nodes take host
    int vectors (the pooling window, the shapes) and a host scalar (epsilon)."""
    x, w = T.tensor(F32, (2, 3, 8, 8), name="x"), T.tensor(F32, (4, 3, 3, 3), name="w")
    g = T.tensor(F32, (1, 4, 1, 1), name="g")
    h = cpu_pool.pool_2d(ac.conv2d(x, w, border_mode="half"), ws=(2, 2), ignore_border=True)
    return [x, w, g], cpu_bn.batch_normalization_test(h, g, g, g, g + 2, axes="spatial", epsilon=1e-3)


@needs_nvcc
@needs_no_gpu
def test_device_mode_cnn_graph_builds_and_reports_cuda_errors_without_gpu():
    """Under the strict C linker the graph's C side calls each launcher with its host inputs; the call
    reports CUDA's "no driver" error (its values on a device: test_gpu_device_mode_small_cnn)."""
    inputs, out = _small_cnn()
    f = function(inputs, out, mode=Mode(linker="c", device="cuda"))
    assert {"GpuConv", "GpuPool", "GpuBatchNormInference"} <= set(_op_names(f))
    with pytest.raises(CudaError) as info:
        f(np.ones((2, 3, 8, 8), F32), np.ones((4, 3, 3, 3), F32), np.ones((1, 4, 1, 1), F32))
    assert info.value.cuda_code in NO_GPU_CUDA_ERRORS, info.value


# ================================================================== gpu: results on a device


@pytest.mark.gpu
def test_gpu_device_mode_small_cnn():
    inputs, out = _small_cnn()
    f = function(inputs, out, mode=Mode(linker="c", device="cuda"))
    x, w, g = _rand((2, 3, 8, 8), F32, 1), _rand((4, 3, 3, 3), F32, 2), _rand((1, 4, 1, 1), F32, 3)
    h = pool_ref(conv_ref(x, w, "half", (1, 1), (1, 1), True, 1), (2, 2), (2, 2), (0, 0), True, "max")
    want = bn_inference_ref(h, g, g, g, g + 2, 1e-3)[0]
    _check(np.asarray(f(x, w, g)), want, F32)


def _gpu_function(node_maker, host_inputs):
    from ffigraph.cuda import gpu_from_host, host_from_gpu

    outs = node_maker([gpu_from_host(v) if v.ndim > 1 or v.dtype.startswith("float") else v
                       for v in host_inputs])
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    return function(host_inputs, [host_from_gpu(o) for o in outs])


@pytest.mark.gpu
def test_gpu_convolutions_match_numpy():
    for n, (symbol, ishape, K, O) in enumerate(CONV_CASES):
        op, dtype = CONV[symbol]
        nd = op.convdim + 2
        a, b = T.tensor(dtype, (None,) * nd), T.tensor(dtype, (None,) * nd)
        if op.kind == "forward":
            f = _gpu_function(lambda v: op(v[0], v[1]), [a, b])
        else:
            sh = T.lvector()
            f = _gpu_function(lambda v: op(v[0], v[1], v[2]), [a, b, sh])
        for layout in ("plain", "reversed", "transposed"):
            args, want = _conv_case(symbol, ishape, K, O, dtype, 10 * n, layout)
            got = f(*[x[1] if isinstance(x, tuple) else x for x in args])[0]
            _check(np.asarray(got), want, dtype)


@pytest.mark.gpu
def test_gpu_pooling_matches_numpy():
    for symbol, (op, dtype, nd_in) in POOL.items():
        arrays = [T.tensor(dtype, (None,) * nd_in) for _ in range(op.n_arrays)]
        params = [T.lvector() for _ in range(3)]
        f = _gpu_function(lambda v: op(*v), arrays + params)
        ps = POOL3_PARAMS if op.ndim == 3 else (POOL_PARAMS if op.ignore_border else POOL_PARAMS_NB)
        if op.ndim == 3 and not op.ignore_border:
            ps = [((2, 2, 3), (2, 1, 2), (0, 0, 0))]
        for k, (ws, st, pad) in enumerate(ps):
            x = _pool_inputs(nd_in, dtype, k, ties=op.mode == "max")
            ib = op.ignore_border
            maxout = pool_ref(x, ws, st, pad, ib, "max").astype(dtype)
            gz = _rand(maxout.shape, dtype, 50 + k)
            if op.kind == "pool":
                args, want = [x], pool_ref(x, ws, st, pad, ib, op.mode)
            elif op.kind == "max_grad":
                args, want = [x, maxout, gz], max_pool_grad_ref(x, maxout, gz, ws, st, pad, ib)
            elif op.kind == "average_grad":
                args, want = [x, gz], average_pool_grad_ref(x, gz, ws, st, pad, ib, op.mode)
            else:
                ggx = _rand(x.shape, dtype, 70 + k)
                args, want = [x, maxout, ggx], max_pool_grad_grad_ref(x, maxout, ggx, ws, st, pad, ib)
            got = f(*(args + [np.array(ws), np.array(st), np.array(pad)]))[0]
            _check(np.asarray(got), want, dtype)


@pytest.mark.gpu
def test_gpu_batch_norm_matches_numpy():
    for dtype in (F32, F64):
        x = T.tensor(dtype, (None,) * 4)
        g, b, rm, rv = [T.tensor(dtype, (1, None, 1, 1)) for _ in range(4)]
        f = _gpu_function(lambda v: GpuBatchNormTrain((0, 2, 3))(v[0], v[1], v[2], 1e-3, 0.25, v[3], v[4]),
                          [x, g, b, rm, rv])
        xv, p, _ = _bn_arrays(4, (0, 2, 3), dtype, 5)
        var = np.abs(p[3]) + 0.5
        got = f(xv, p[0], p[1], p[2], var)
        want = bn_train_ref(xv, p[0], p[1], 1e-3, (0, 2, 3), 0.25, p[2], var)
        for gv, w in zip(got, want):
            _check(np.asarray(gv), w, dtype)


@pytest.mark.gpu
def test_gpu_neighbours_match_numpy():
    for symbol, (op, dtype) in NEIBS.items():
        shape, size, step = NEIB_CASES[op.mode]
        p = [T.lvector() for _ in range(2 if op.kind == "images2neibs" else 3)]
        a = T.tensor(dtype, (None,) * (4 if op.kind == "images2neibs" else 2))
        f = _gpu_function(lambda v: op(*v), [a] + p)
        if op.kind == "images2neibs":
            x = _rand(shape, dtype, 1, -9, 9)
            got, want = f(x, np.array(size), np.array(step))[0], images2neibs_ref(x, size, step, op.mode)
        else:
            neibs = _rand(images2neibs_ref(np.zeros(shape), size, step, op.mode).shape, dtype, 2)
            got = f(neibs, np.array(size), np.array(step), np.array(shape))[0]
            want = neibs2images_ref(neibs, size, step, shape, op.mode)
        _check(np.asarray(got), want, dtype if dtype.startswith("float") else F64)
