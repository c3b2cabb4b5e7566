"""User code over ffigraph's public API, for mypy (mypy.ini lists this file): it must type-check
against the package's hints, and every call in it must reach an annotated function (mypy.ini's
``disallow_untyped_calls`` for this module), so a public function that loses its hints fails the
check. Not a test module: pytest does not collect it (no ``test_`` prefix), and nothing imports it.
Running it (``python tests/typecheck/public_api_usage.py``) builds and calls the functions too.
"""
from __future__ import annotations

import os
import tempfile
from typing import Dict, List, Optional, Tuple

import numpy as np

import ffigraph
import ffigraph.tensor as pt
from ffigraph import In, Mode, Out, function, grad, shared
from ffigraph.compile.function import Function
from ffigraph.compile.sharedvalue import SharedVariable, TensorSharedVariable
from ffigraph.export import export_function
from ffigraph.gradient import (Lop, Rop, consider_constant, disconnected_grad, grad_clip, grad_scale, hessian,
                               jacobian, undefined_grad, verify_grad, zero_grad)
from ffigraph.graph.basic import Variable
from ffigraph.tensor.variable import TensorConstant, TensorVariable


def constructors() -> List[TensorVariable]:
    x: TensorVariable = pt.dmatrix("x")
    v = pt.fvector("v", shape=(3,))
    s = pt.scalar("s", dtype="int64")
    t = pt.tensor("float64", shape=(None, 2), name="t")
    t3 = pt.tensor3()
    r, c = pt.row("r"), pt.dcol("c")
    a, b = pt.dmatrices("a", "b")
    many: List[TensorVariable] = pt.fvectors(3)
    one = pt.lscalars("n")   # one name, one variable (typed Any: "ab" would give two)
    return [x, v, s, t, t3, r, c, a, b, *many, one]


def constants() -> Tuple[TensorConstant, TensorVariable, Variable]:
    k = pt.constant(np.arange(3.0), name="k")
    two = pt.constant(2, dtype="float32")
    y: TensorVariable = pt.as_tensor_variable(pt.dvector("y"))
    from_list = pt.as_tensor_variable([1.0, 2.0], ndim=1)
    return k, y, from_list if two.ndim == 0 else two


def compile_and_call() -> np.ndarray:
    x = pt.dmatrix("x")
    f: Function = function([x], x * 2)
    out = f(np.ones((2, 2)))
    g = function([In(x, value=np.zeros((2, 2)))], Out(x + 1, borrow=True), name="g",
                 mode=Mode(linker="c").excluding("fusion"), on_unused_input="ignore")
    g()
    h = g.copy(share_memory=True, name="h")
    h(x=np.eye(2))
    info: str = f.info()
    library: Optional[str] = f.library_path
    folder: Optional[str] = f.library_dir
    source: str = function([x], x.sum(), mode="CVM").c_source()
    print(info, library, folder, len(source))
    return np.asarray(out)


def shared_state() -> np.ndarray:
    w: TensorSharedVariable = shared(np.zeros(3), name="w")
    b = shared(0.5, name="b", borrow=False, shape=())
    w.set_value(np.ones(3))
    w.set_value([1.0, 2.0, 3.0], borrow=True)
    current: np.ndarray = w.get_value()
    base: SharedVariable = b
    x = pt.dvector("x")
    step = function([x], (w * x).sum() + b, updates={w: w + x},
                    givens=None, no_default_updates=[base], allow_input_downcast=True)
    step(np.ones(3))
    advance = function([], [], updates=[(b, b + 1.0)], mode="FAST_COMPILE")
    advance()
    return current + w.get_value(borrow=True)


def gradients() -> Dict[str, np.ndarray]:
    x = pt.dvector("x")
    w = shared(np.ones(3), name="w")
    cost = ((x * w) ** 2).sum()
    gw: TensorVariable = grad(cost, w)
    gx, gw2 = grad(cost, [x, w])
    maybe = grad(cost, [x], disconnected_inputs="ignore", return_disconnected="none")
    assert maybe[0] is not None
    j = jacobian(x ** 2, x)
    hs = hessian(cost, [x])
    u = pt.dvector("u")
    jvp = Rop(x ** 2, x, u)
    vjp: List[TensorVariable] = Lop(x ** 2, [x], [u])
    damped = grad_scale(grad_clip(zero_grad(x) + disconnected_grad(x) + consider_constant(x) + x, -1.0, 1.0), 0.5)
    assert undefined_grad(x).ndim == 1
    train = function([x, u], [gx, gw2, j, hs[0], jvp, vjp[0], damped], updates=[(w, w - 0.1 * gw)])
    values = train(np.arange(3.0), np.ones(3))
    verify_grad(lambda a: (a ** 2).sum(), [np.arange(3.0)], rng=np.random.default_rng(1))
    return {"gx": values[0], "jacobian": values[2]}


def modes() -> List[Mode]:
    base = Mode(linker="cvm", optimizer="fast_run")
    return [base.including("fusion"), base.excluding("inplace", "fusion"), base.requiring("fast_run"),
            Mode(linker="py", optimizer=None), Mode()]


def export(directory: str) -> str:
    x = pt.dvector("x")
    w = shared(np.arange(3.0), name="w")
    f = function([x], x * w, name="scale")
    bundle = f.export(os.path.join(directory, "scale"), example_inputs=[np.ones(3)])
    again = export_function(f, os.path.join(directory, "again"), name="again")
    header: str = bundle.header
    return header + again.library


if __name__ == "__main__":
    print(len(constructors()), constants(), compile_and_call(), shared_state(), gradients(), modes())
    with tempfile.TemporaryDirectory() as tmp:
        print(export(tmp))
    print(ffigraph.__version__)
