"""matmul / @, tensordot, batched_dot, kron and einsum (ffigraph/tensor/products.py) against NumPy.

Cheap on purpose: one function with many outputs is compiled under the C linker (and once under
the Python linker, which must agree), and the gradients are checked by one verify_grad over a
concatenation of several products.
"""
import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import Mode, function
from ffigraph.gradient import verify_grad
from ffigraph.tensor.products import EINSUM_SUBSET, BatchedMatMul

RNG = np.random.default_rng(27)


def _arr(shape, dtype="float64"):
    if np.dtype(dtype).kind == "i":
        return RNG.integers(-5, 6, size=shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


# the inputs: name -> value (reversed views among them, so that negative strides reach the C code)
VALUES = {
    "A4": _arr((2, 1, 3, 4)), "B3": _arr((5, 4, 2)),
    "M": _arr((3, 4)), "N": _arr((4, 5)), "v3": _arr((3,)), "v4": _arr((4,)), "S": _arr((2, 2)),
    "Fa": _arr((2, 3, 4), "float32"), "Fb": _arr((2, 4, 5), "float32"),
    "Ia": _arr((2, 3, 4), "int64"), "Ib": _arr((2, 4, 2), "int64"), "Im": _arr((4, 3), "int64"),
    "E0a": _arr((0, 3, 4)), "E0b": _arr((0, 4, 2)),          # an empty batch
    "K0a": _arr((2, 3, 0)), "K0b": _arr((2, 0, 5)),          # an empty inner dimension
    "Ra": _arr((3, 3, 4))[::-1, :, ::-1], "Rb": _arr((3, 4, 2))[:, ::-1],   # negative strides
    "Fr": _arr((2, 4, 3), "float32")[:, ::-1].transpose(0, 2, 1),         # float32, transposed reversed
    "Ba": _arr((4, 3, 5)), "Bb": _arr((4, 5, 2)), "Bv": _arr((4, 5)), "Bw": _arr((4, 5)), "Bs": _arr((4,)),
    "B4": _arr((4, 2, 3, 5)),
    "Ta": _arr((2, 3, 4)), "Tb": _arr((4, 3, 5)), "Tc": _arr((3, 4, 2)),
    "Q": _arr((3, 3)), "P": _arr((5, 2)),
}

# name -> (the symbolic product, from the symbolic inputs; NumPy's result, from the values)
CASES = {
    # matmul: broadcast batch axes, 1-d operands, <= 2-d (Dot), dtypes, empty, strides, dtype=
    "mm_bcast": (lambda s: T.matmul(s["A4"], s["B3"]), lambda v: np.matmul(v["A4"], v["B3"])),
    "mm_op": (lambda s: s["A4"] @ s["B3"], lambda v: v["A4"] @ v["B3"]),
    "mm_vec_3d": (lambda s: T.matmul(s["v4"], s["B3"]), lambda v: np.matmul(v["v4"], v["B3"])),
    "mm_4d_vec": (lambda s: T.matmul(s["A4"], s["v4"]), lambda v: np.matmul(v["A4"], v["v4"])),
    "mm_2d": (lambda s: s["M"] @ s["N"], lambda v: v["M"] @ v["N"]),
    "mm_vec_2d": (lambda s: T.matmul(s["v3"], s["M"]), lambda v: np.matmul(v["v3"], v["M"])),
    "mm_vec_vec": (lambda s: T.matmul(s["v4"], s["v4"]), lambda v: np.matmul(v["v4"], v["v4"])),
    "mm_f32": (lambda s: s["Fa"] @ s["Fb"], lambda v: v["Fa"] @ v["Fb"]),
    "mm_f32_strided": (lambda s: s["Fr"] @ s["Fb"], lambda v: v["Fr"] @ v["Fb"]),
    "mm_int": (lambda s: s["Ia"] @ s["Ib"], lambda v: v["Ia"] @ v["Ib"]),
    "mm_mixed": (lambda s: s["Fa"] @ s["N"], lambda v: v["Fa"] @ v["N"]),
    "mm_int_2d_3d": (lambda s: s["Im"] @ s["Ia"], lambda v: v["Im"] @ v["Ia"]),
    "mm_dtype": (lambda s: T.matmul(s["Ia"], s["Ib"], dtype="float32"),
                 lambda v: np.matmul(v["Ia"], v["Ib"]).astype("float32")),
    "mm_empty_batch": (lambda s: s["E0a"] @ s["E0b"], lambda v: v["E0a"] @ v["E0b"]),
    "mm_empty_inner": (lambda s: s["K0a"] @ s["K0b"], lambda v: v["K0a"] @ v["K0b"]),
    "mm_reversed": (lambda s: s["Ra"] @ s["Rb"], lambda v: v["Ra"] @ v["Rb"]),
    # tensordot
    "td_2": (lambda s: T.tensordot(s["Ta"], s["Tc"]), lambda v: np.tensordot(v["Ta"], v["Tc"])),
    "td_pairs": (lambda s: T.tensordot(s["Ta"], s["Tb"], ([1, 2], [1, 0])),
                 lambda v: np.tensordot(v["Ta"], v["Tb"], ([1, 2], [1, 0]))),
    "td_1": (lambda s: T.tensordot(s["M"], s["N"], 1), lambda v: np.tensordot(v["M"], v["N"], 1)),
    "td_0": (lambda s: T.tensordot(s["v3"], s["M"], 0), lambda v: np.tensordot(v["v3"], v["M"], 0)),
    "td_int_neg": (lambda s: T.tensordot(s["Ia"], s["Im"], ([-1, 1], [0, 1])),
                   lambda v: np.tensordot(v["Ia"], v["Im"], ([-1, 1], [0, 1]))),
    "td_reversed": (lambda s: T.tensordot(s["Ra"], s["Rb"], [[2], [1]]),
                    lambda v: np.tensordot(v["Ra"], v["Rb"], [[2], [1]])),
    "td_all": (lambda s: T.tensordot(s["M"], s["M"], 2), lambda v: np.tensordot(v["M"], v["M"], 2)),
    # batched_dot: batched_dot(a, b)[i] = dot(a[i], b[i])
    "bd_33": (lambda s: T.batched_dot(s["Ba"], s["Bb"]), lambda v: np.matmul(v["Ba"], v["Bb"])),
    "bd_32": (lambda s: T.batched_dot(s["Ba"], s["Bv"]), lambda v: np.einsum("bij,bj->bi", v["Ba"], v["Bv"])),
    "bd_23": (lambda s: T.batched_dot(s["Bv"], s["Bb"]), lambda v: np.einsum("bj,bjk->bk", v["Bv"], v["Bb"])),
    "bd_22": (lambda s: T.batched_dot(s["Bv"], s["Bw"]), lambda v: np.einsum("bj,bj->b", v["Bv"], v["Bw"])),
    "bd_12": (lambda s: T.batched_dot(s["Bs"], s["Bv"]), lambda v: v["Bs"][:, None] * v["Bv"]),
    "bd_43": (lambda s: T.batched_dot(s["B4"], s["Bb"]),
              lambda v: np.stack([np.dot(v["B4"][i], v["Bb"][i]) for i in range(4)])),
    "bd_34": (lambda s: T.batched_dot(s["Ba"], s["B4"].dimshuffle(0, 1, 3, 2)),
              lambda v: np.stack([np.dot(v["Ba"][i], v["B4"][i].transpose(0, 2, 1)) for i in range(4)])),
    # kron
    "kron_2d": (lambda s: T.kron(s["M"], s["S"]), lambda v: np.kron(v["M"], v["S"])),
    "kron_1d": (lambda s: T.kron(s["v3"], s["v4"]), lambda v: np.kron(v["v3"], v["v4"])),
    "kron_3d_2d": (lambda s: T.kron(s["Ta"], s["S"]), lambda v: np.kron(v["Ta"], v["S"])),
    "kron_int": (lambda s: T.kron(s["Im"], s["Ia"]), lambda v: np.kron(v["Im"], v["Ia"])),
}

EINSUMS = [
    ("ij,jk->ik", "M", "N"), ("bij,bjk->bik", "Ba", "Bb"), ("ii->i", "Q"), ("ij->ji", "M"), ("ij->", "M"),
    ("i,i->", "v4", "v4"), ("i,j->ij", "v3", "v4"), ("ii->", "Q"), ("ij,jk", "M", "N"), ("bij,bkj->bik", "Ba", "Ba"),
    ("ijk->kji", "Ta"), ("ij,jk,kl->il", "M", "N", "P"), ("bj,bj->b", "Bv", "Bw"), ("ijk,ikl->jl", "Ia", "Ib"),
    ("ij,ij->ij", "M", "M"), ("iij->ji", "Ra"), ("bij,bjk->ik", "Fa", "Fb"), ("ijk->i", "Ra"),
]
for _spec, *_names in EINSUMS:
    CASES["einsum " + _spec] = (
        lambda s, spec=_spec, names=tuple(_names): T.einsum(spec, *[s[n] for n in names]),
        lambda v, spec=_spec, names=tuple(_names): np.einsum(spec, *[v[n] for n in names]),
    )


def _symbols():
    return {k: T.tensor(str(v.dtype), (None,) * v.ndim, name=k) for k, v in VALUES.items()}


def _compile(linker):
    s = _symbols()
    outs = [build(s) for build, _ in CASES.values()]
    return function(list(s.values()), outs, mode=Mode(linker=linker), on_unused_input="ignore"), outs


@pytest.fixture(scope="module")
def compiled():
    return _compile("c")


def _check(results, outs):
    for (name, (_, ref)), got, out in zip(CASES.items(), results, outs):
        want = np.asarray(ref(VALUES))
        got = np.asarray(got)
        assert got.shape == want.shape, name
        assert got.dtype == np.dtype(out.type.dtype), name
        if got.dtype.kind in "iu":
            np.testing.assert_array_equal(got, want, err_msg=name)
        else:
            tol = 1e-4 if got.dtype == np.float32 else 1e-10
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=name)


def test_c_linker_against_numpy(compiled):
    f, outs = compiled
    _check(f(*VALUES.values()), outs)


def test_blocked_kernel_on_floats(monkeypatch):
    # without BLAS, the batched product runs Dot's blocked kernel and strided matrix-vector loop
    from ffigraph.tensor import dot_c

    monkeypatch.setattr(dot_c, "USE_BLAS", False)
    f, outs = _compile("c")
    _check(f(*VALUES.values()), outs)


def test_py_linker_agrees(compiled):
    f, _ = compiled
    g, outs = _compile("py")
    _check(g(*VALUES.values()), outs)
    for name, a, b in zip(CASES, f(*VALUES.values()), g(*VALUES.values())):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-5, err_msg=name)


def test_dtypes_follow_numpy(compiled):
    _, outs = compiled
    dtypes = dict(zip(CASES, (o.type.dtype for o in outs)))
    assert dtypes["mm_f32"] == "float32"
    assert dtypes["mm_int"] == "int64"
    assert dtypes["mm_mixed"] == "float64"
    assert dtypes["mm_dtype"] == "float32"


def test_matmul_uses_batched_op_and_dot():
    x, y = T.tensor3("x"), T.tensor3("y")
    assert isinstance((x @ y).owner.op, BatchedMatMul)
    assert isinstance(T.matmul(x, y).owner.op, BatchedMatMul)
    assert isinstance((T.matrix("m") @ T.matrix("n")).owner.op, T.Dot)
    assert T.matmul(T.vector("v"), T.vector("w")).ndim == 0


@pytest.mark.finite_differences
def test_gradients():
    mode = Mode(linker="c")

    def products(a4, b3, v4, m, n, ta, tb, ba, bv, q, s):
        parts = [
            T.matmul(a4, b3), T.matmul(v4, b3), a4 @ v4,
            T.tensordot(ta, tb, ([1, 2], [1, 0])),
            T.batched_dot(ba, bv), T.batched_dot(bv, ba.dimshuffle(0, 2, 1)),
            T.kron(m, s),
            T.einsum("bij,bjk->bik", ba, ba.dimshuffle(0, 2, 1)), T.einsum("ii->i", q), T.einsum("ij,jk", m, n),
        ]
        return T.concatenate([p.flatten() for p in parts])

    pt = [VALUES[k] for k in ("A4", "B3", "v4", "M", "N", "Ta", "Tb", "Ba", "Bv", "Q", "S")]
    verify_grad(products, pt, mode=mode)


@pytest.mark.finite_differences
def test_gradient_of_a_runtime_broadcast():
    # a batch axis of length 1 not known statically: the gradient is summed back to it at run time
    verify_grad(lambda x, y: T.matmul(x, y), [_arr((1, 3, 4)), _arr((2, 4, 2))], mode=Mode(linker="c"))


def _raises_naming(f, args, *pieces):
    with pytest.raises(ValueError) as info:
        f(*args)
    for p in pieces:
        assert p in str(info.value), (p, str(info.value))


def test_bad_shapes_raise_and_the_function_still_works():
    x, y = T.tensor3("x"), T.tensor3("y")
    a, b = T.matrix("a"), T.tensor3("b")
    f = function([x, y, a, b], [x @ y, T.tensordot(a, b, 2)], mode=Mode(linker="c"))
    good = [_arr((2, 3, 4)), _arr((2, 4, 5)), _arr((3, 4)), _arr((3, 4, 2))]
    want = [good[0] @ good[1], np.tensordot(good[2], good[3], 2)]
    _raises_naming(f, [good[0], _arr((2, 5, 5)), good[2], good[3]], "(2, 3, 4)", "(2, 5, 5)", "not aligned")
    _raises_naming(f, [good[0], _arr((3, 4, 5)), good[2], good[3]], "(2, 3, 4)", "(3, 4, 5)", "broadcast")
    # the summed lengths differ though their products agree: caught before the reshape
    _raises_naming(f, good[:2] + [_arr((4, 3)), good[3]], "(3, 4, 2)")
    for got, ref in zip(f(*good), want):
        np.testing.assert_allclose(got, ref)
    g = function([x, y], x @ y, mode=Mode(linker="py"))
    _raises_naming(g, [good[0], _arr((2, 5, 5))], "(2, 3, 4)", "(2, 5, 5)")


def test_bad_graphs_raise():
    with pytest.raises(ValueError, match="scalar"):
        T.matmul(T.scalar("s"), T.tensor3("x"))
    with pytest.raises(ValueError, match="scalar"):
        T.tensor3("x") @ T.scalar("s")
    with pytest.raises(ValueError, match=r"\(2, 3, 4\).*\(2, 5, 5\)"):
        T.matmul(T.tensor("float64", (2, 3, 4)), T.tensor("float64", (2, 5, 5)))
    with pytest.raises(ValueError, match="broadcast"):
        T.matmul(T.tensor("float64", (2, 3, 4)), T.tensor("float64", (3, 4, 5)))
    with pytest.raises(ValueError, match="tensordot"):
        T.tensordot(T.tensor("float64", (2, 3)), T.tensor("float64", (2, 3)), 1)
    with pytest.raises(TypeError, match="batch"):
        T.batched_dot(T.scalar("s"), T.matrix("m"))
    with pytest.raises(NotImplementedError) as info:
        T.einsum("...ij,...jk->...ik", T.tensor3("x"), T.tensor3("y"))
    assert EINSUM_SUBSET in str(info.value)
    with pytest.raises(ValueError, match="operand"):
        T.einsum("ij,jk->ik", T.matrix("m"))


def test_infer_shape_broadcasts_at_run_time():
    # the batch length of a result, from infer_shape: y's where x's turns out to be 1 at run time
    x, y = T.tensor3("x"), T.tensor3("y")
    z = x @ y
    shape = T.stack(list(T.inferred_shape(z)))
    f = function([x, y], shape, mode=Mode(linker="c"))
    np.testing.assert_array_equal(f(_arr((1, 3, 4)), _arr((2, 4, 5))), [2, 3, 5])
    np.testing.assert_array_equal(f(_arr((0, 3, 4)), _arr((1, 4, 5))), [0, 3, 5])
    assert T.matmul(T.tensor("float64", (1, 3, 4)), T.tensor("float64", (None, 4, 2))).type.shape == (None, 3, 2)
    assert T.matmul(T.tensor("float64", (7, 3, 4)), T.tensor("float64", (None, 4, 2))).type.shape == (7, 3, 2)
