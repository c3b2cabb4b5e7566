"""``function``: inputs, outputs, In/Out, givens, updates, aliasing, modes, bad input."""
import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph import In, Mode, Out, function, shared
from ffigraph.compile.mode import get_mode, predefined_modes
from ffigraph.compile.ops import DeepCopyOp
from ffigraph.graph import MissingInputError
from ffigraph.tensor.type import TensorType


def test_single_output_and_list_output(mode):
    x, y = T.dvector("x"), T.dvector("y")
    f = function([x, y], x + y, mode=mode)
    g = function([x, y], [x + y, x * y], mode=mode)
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    np.testing.assert_allclose(f(a, b), a + b)
    r = g(a, b)
    assert isinstance(r, list) and len(r) == 2
    np.testing.assert_allclose(r[1], a * b)


def test_keyword_arguments_and_defaults(mode):
    x, y = T.dscalar("x"), T.dscalar("y")
    f = function([x, In(y, value=10.0)], x - y, mode=mode)
    assert f(1.0) == -9.0
    assert f(1.0, 2.0) == -1.0
    assert f(y=1.0, x=5.0) == 4.0
    with pytest.raises(TypeError, match="twice"):
        f(1.0, x=2.0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        f(1.0, z=2.0)


def test_missing_and_extra_arguments_name_the_input(mode):
    x, y = T.dvector("x"), T.dvector("y")
    f = function([x, y], x + y, mode=mode)
    with pytest.raises(TypeError, match=r"missing input 'y' \(position 1"):
        f(np.ones(2))
    with pytest.raises(TypeError, match="at most 2 inputs, got 3"):
        f(np.ones(2), np.ones(2), np.ones(2))
    np.testing.assert_allclose(f(np.ones(2), np.ones(2)), [2.0, 2.0])


@pytest.mark.parametrize("bad,exc,msg", [
    (np.ones((2, 2)), TypeError, "expected 1 dimensions, got 2"),
    ("not an array", TypeError, "expected an array-like"),
    (object(), TypeError, "expected an array-like"),
    (np.array([1.5], dtype="float64"), TypeError, "losing precision"),
])
def test_bad_input_values(mode, bad, exc, msg):
    x = T.fvector("x")
    f = function([x], x * 2, mode=mode)
    with pytest.raises(exc, match=msg) as info:
        f(bad)
    assert "'x' (position 0" in str(info.value)
    np.testing.assert_allclose(f(np.array([1.0], dtype="float32")), [2.0])


def test_strict_input(mode):
    x = T.dvector("x")
    f = function([In(x, strict=True)], x + 1, mode=mode)
    with pytest.raises(TypeError, match="strict"):
        f(np.ones(2, dtype="float32"))
    with pytest.raises(TypeError, match="ndarray"):
        f([1.0, 2.0])
    np.testing.assert_allclose(f(np.ones(2)), [2.0, 2.0])


def test_allow_input_downcast(mode):
    x = T.fvector("x")
    f = function([x], x, mode=mode, allow_input_downcast=True)
    assert f(np.array([0.1])).dtype == np.float32


def test_static_shape_mismatch_names_input(mode):
    x = T.tensor("float64", (3,), "x")
    f = function([x], x.sum(), mode=mode)
    with pytest.raises(ValueError, match="'x'.*static shape"):
        f(np.ones(4))
    assert f(np.ones(3)) == 3.0


def test_runtime_broadcast_error_names_node_and_inputs(mode):
    x, y = T.dvector("x"), T.dvector("y")
    f = function([x, y], x * y, mode=mode)
    with pytest.raises(ValueError, match="broadcast") as info:
        f(np.ones(2), np.ones(3))
    text = str(info.value)
    assert "Elemwise{mul}" in text and "x (position 0)" in text and "y (position 1)" in text
    np.testing.assert_allclose(f(np.ones(3), np.ones(3)), np.ones(3))


def test_inputs_must_be_symbolic_free_variables():
    x = T.dvector("x")
    with pytest.raises(TypeError, match="must be a list"):
        function(x, x)
    # (an intermediate variable as an input cuts the graph: tests/compile/test_theano_api_compile.py)
    with pytest.raises(TypeError, match="constant"):
        function([T.constant(1.0)], x)
    with pytest.raises(ValueError, match="more than once"):
        function([x, x], x)
    with pytest.raises(TypeError, match="shared variable"):
        function([shared(1.0)], x)


def test_missing_and_unused_inputs():
    x, y = T.dvector("x"), T.dvector("y")
    with pytest.raises(MissingInputError, match="y"):
        function([x], x + y)
    with pytest.raises(ValueError, match="not used"):
        function([x, y], x)
    f = function([x, y], x, on_unused_input="ignore")
    np.testing.assert_allclose(f([1.0], [2.0]), [1.0])


def test_givens(mode):
    x, y = T.dvector("x"), T.dvector("y")
    z = T.exp(x) + y
    f = function([x], z, givens=[(y, x * 2)], mode=mode)
    v = np.array([0.0, 1.0])
    np.testing.assert_allclose(f(v), np.exp(v) + 2 * v)
    s = shared(np.array([5.0, 6.0]), name="s")
    g = function([], z, givens={x: s, y: s}, mode=mode)
    np.testing.assert_allclose(g(), np.exp([5.0, 6.0]) + [5.0, 6.0])


# ------------------------------------------------------------------ aliasing and DeepCopyOp


@pytest.mark.parametrize("build", [lambda x: x, lambda x: x.T, lambda x: x[1:], lambda x: x.reshape((-1,)),
                                   lambda x: x.dimshuffle(1, 0)])
def test_outputs_never_alias_inputs(mode, build):
    x = T.dmatrix("x")
    f = function([x], build(x), mode=mode)
    v = np.arange(6.0).reshape(2, 3)
    out = f(v)
    assert not np.shares_memory(out, v)
    out[...] = -1
    assert v[0, 0] == 0.0
    assert any(isinstance(n.op, DeepCopyOp) for n in f.maker.fgraph.toposort())


def test_borrowed_output_may_alias_lent_input(mode):
    x = T.dmatrix("x")
    f = function([In(x, borrow=True)], Out(x.T, borrow=True), mode=mode)   # both must allow it
    v = np.arange(6.0).reshape(2, 3)
    assert not any(isinstance(n.op, DeepCopyOp) for n in f.maker.fgraph.toposort())
    np.testing.assert_array_equal(f(v), v.T)


def test_constant_output_is_copied(mode):
    c = T.constant(np.arange(3.0))
    f = function([], c, mode=mode)
    out = f()
    out[0] = 100.0
    np.testing.assert_array_equal(f(), [0.0, 1.0, 2.0])


def test_repeated_outputs_do_not_alias_each_other(mode):
    x = T.dvector("x")
    y = x * 2
    f = function([x], [y, y, y.T if False else y[::-1]], mode=mode)
    a, b, c = f(np.array([1.0, 2.0]))
    assert not np.shares_memory(a, b) and not np.shares_memory(a, c)
    np.testing.assert_array_equal(c, [4.0, 2.0])


def test_outputs_fresh_each_call(mode):
    x = T.dvector("x")
    f = function([x], x + 1, mode=mode)
    a = f(np.zeros(2))
    b = f(np.ones(2))
    assert not np.shares_memory(a, b)
    np.testing.assert_array_equal(a, [1.0, 1.0])


# ------------------------------------------------------------------ shared variables and updates


def test_counter_counts(mode):
    c = shared(0, name="c")
    inc = function([], c, updates=[(c, c + 1)], mode=mode)
    assert [int(inc()) for _ in range(4)] == [0, 1, 2, 3]
    assert c.get_value() == 4


def test_updates_apply_after_all_outputs(mode):
    a = shared(np.array([1.0, 2.0]), name="a")
    b = shared(np.array([10.0, 20.0]), name="b")
    f = function([], [a + b], updates=[(a, b), (b, a)], mode=mode)  # swap
    np.testing.assert_array_equal(f()[0], [11.0, 22.0])
    np.testing.assert_array_equal(a.get_value(), [10.0, 20.0])
    np.testing.assert_array_equal(b.get_value(), [1.0, 2.0])
    assert not np.shares_memory(a.get_value(borrow=True), b.get_value(borrow=True))


def test_update_from_input_does_not_alias_callers_array(mode):
    w = shared(np.zeros(2), name="w")
    x = T.dvector("x")
    f = function([x], [], updates=[(w, x)], mode=mode)
    v = np.array([1.0, 2.0])
    assert f(v) == []
    v[0] = 99.0
    np.testing.assert_array_equal(w.get_value(), [1.0, 2.0])


def test_output_that_is_also_update_is_not_aliased(mode):
    c = shared(np.zeros(2), name="c")
    new = c + 1
    f = function([], new, updates=[(c, new)], mode=mode)
    out = f()
    out[0] = 50.0
    np.testing.assert_array_equal(c.get_value(), [1.0, 1.0])


def test_shared_set_value_copies_unless_borrow():
    v = np.array([1.0, 2.0])
    s = shared(v)
    v[0] = 7.0
    assert s.get_value()[0] == 1.0  # shared() copied
    w = np.array([3.0, 4.0])
    s.set_value(w, borrow=False)
    w[0] = 9.0
    assert s.get_value()[0] == 3.0
    s.set_value(w, borrow=True)
    assert np.shares_memory(s.get_value(borrow=True), w)
    got = s.get_value()
    got[1] = -1
    assert s.get_value()[1] == 4.0  # get_value copies


def test_shared_set_value_filters():
    s = shared(np.zeros(2), name="s")
    with pytest.raises(TypeError, match="expected 1 dimensions"):
        s.set_value(np.zeros((2, 2)))
    s.set_value([1, 2])
    assert s.get_value().dtype == np.float64
    s.set_value(np.zeros(5))  # the shape may change
    assert s.get_value().shape == (5,)


def test_shared_shared_across_functions(mode):
    w = shared(np.array([1.0]), name="w")
    x = T.dvector("x")
    step = function([x], [], updates=[(w, w + x)], mode=mode)
    read = function([], w * 1, mode=mode)
    step([2.0])
    step([3.0])
    np.testing.assert_array_equal(read(), [6.0])


def test_update_type_mismatch():
    w = shared(np.zeros(2), name="w")
    with pytest.raises(TypeError, match="update for shared variable w"):
        function([], [], updates=[(w, T.fvector("f"))])
    with pytest.raises(TypeError, match="not a shared variable"):
        function([], [], updates=[(T.dvector("v"), w)])
    with pytest.raises(ValueError, match="more than once"):
        function([], [], updates=[(w, w + 1), (w, w + 2)])


def test_shared_rejects_unknown_values():
    with pytest.raises(TypeError, match="no shared variable type"):
        shared({"a": 1})
    with pytest.raises(TypeError, match="not the symbolic variable"):
        shared(T.dvector())


class _ArraySubclass(np.ndarray):
    """An ndarray that is not exactly an ndarray: inputs like it go through their type's filter."""


def test_trust_input_skips_filtering(mode, monkeypatch):
    x, y = T.dvector("x"), T.dvector("y")
    trusted = function([x, y], x + y, mode=mode, trust_input=True)
    checked = function([x, y], x + y, mode=mode)
    filtered = []
    real_filter = TensorType.filter

    def counting_filter(self, data, *args, **kwargs):
        filtered.append(data)
        return real_filter(self, data, *args, **kwargs)

    monkeypatch.setattr(TensorType, "filter", counting_filter)
    a, b = np.array([1.0, 2.0]), np.array([10.0, 20.0])
    np.testing.assert_array_equal(trusted(a, b), [11.0, 22.0])
    assert filtered == [], "trust_input=True still filtered its inputs"
    # the C entry takes an ndarray of the input's dtype and rank without filtering it anyway: an
    # ndarray subclass it sends to the filter, unless the inputs are trusted (so this can fail
    # under every linker)
    sa, sb = a.view(_ArraySubclass), b.view(_ArraySubclass)
    np.testing.assert_array_equal(trusted(sa, sb), [11.0, 22.0])
    assert filtered == [], "trust_input=True still filtered its inputs"
    np.testing.assert_array_equal(checked(sa, sb), [11.0, 22.0])
    assert [type(v) for v in filtered] == [_ArraySubclass, _ArraySubclass]
    del filtered[:]
    np.testing.assert_array_equal(checked(a, b), [11.0, 22.0])
    # trust_input=False filters at most once per input: an ndarray already of the input's dtype and
    # rank is what the filter would return, and the whole-graph C path takes it without the call
    assert set(map(id, filtered)) <= {id(a), id(b)} and len(filtered) in (0, 2)
    # filtering is what turns a list (or another dtype) into an array
    del filtered[:]
    np.testing.assert_array_equal(checked([1.0, 2.0], b), [11.0, 22.0])
    np.testing.assert_array_equal(checked(a, np.array([10, 20], dtype=np.int32)), [11.0, 22.0])
    assert [type(v) for v in filtered][:1] == [list] and len(filtered) in (2, 4)
    with pytest.raises(TypeError, match="input .x. .position 0"):
        checked(np.ones((2, 2)), b)   # the wrong rank is refused, naming the input
    trusted.trust_input = False   # the setting can be changed on a compiled function
    np.testing.assert_array_equal(trusted(a, b), [11.0, 22.0])
    with pytest.raises(TypeError, match="input .x. .position 0"):
        trusted(np.ones((2, 2)), b)   # its inputs are checked now
    trusted.trust_input = True
    seen = len(filtered)
    with pytest.raises(TypeError, match="takes 2 inputs, got 1"):
        trusted(a)
    assert len(filtered) == seen


def test_function_does_not_keep_input_alive(mode):
    # Checked on the cells (not with weakref): PyPy frees numpy arrays lazily.
    x, y = T.dvector("x"), T.dvector("y")
    f = function([x, y], x * y, mode=mode)
    f(np.ones(3), np.ones(3))
    assert all(cell[0] is None for cell in f._input_cells)
    with pytest.raises(TypeError, match="'y'"):
        f(np.ones(3), object())
    assert all(cell[0] is None for cell in f._input_cells)


# ------------------------------------------------------------------ modes and config


def test_modes_registry_and_info():
    assert "FAST_RUN" in predefined_modes and "FAST_COMPILE" in predefined_modes
    assert isinstance(get_mode("FAST_RUN"), Mode)
    with pytest.raises(ValueError, match="unknown mode"):
        get_mode("NOPE")
    with pytest.raises(ValueError, match="unknown linker"):
        Mode(linker="nope")
    x = T.dvector("x")
    f = function([x], T.exp(x), mode="FAST_COMPILE", name="f")
    text = f.info()
    assert "linker py" in text and "Elemwise{exp}" in text and "python (perform)" in text


def test_mode_optimizer_callable_and_tags():
    calls = []
    x = T.dvector("x")
    function([x], x + 1, mode=Mode(linker="py", optimizer=lambda fg: calls.append(fg)))
    assert len(calls) == 1
    m = Mode(linker="py").including("a").excluding("b").requiring("c")
    assert (m.include, m.exclude, m.require) == (("a",), ("b",), ("c",))


def test_rewrite_database_order_and_query():
    from ffigraph.graph.rewriting import RewriteDatabase

    db = RewriteDatabase()
    db.register("late", lambda fg: None, "fast_run", position=2)
    db.register("early", lambda fg: None, "fast_run", "cheap", position=1)
    db.register("other", lambda fg: None, "fast_compile", position=0)
    assert [n for n, _ in db.query(include=["fast_run"])] == ["early", "late"]
    assert [n for n, _ in db.query(include=["fast_run"], exclude=["cheap"])] == ["late"]
    assert [n for n, _ in db.query(include=["fast_run", "fast_compile"], require=["cheap"])] == ["early"]
    with pytest.raises(ValueError, match="already registered"):
        db.register("late", lambda fg: None)


def test_config_flags_env_and_validation(monkeypatch):
    from ffigraph.config import Config

    cfg = Config("floatX=float32, linker=py")
    assert cfg.floatX == "float32" and cfg.linker == "py"
    with pytest.warns(UserWarning, match="unknown key 'nope'"):
        Config("nope=1")
    with pytest.raises(ValueError, match="floatX"):
        cfg.floatX = "float16"
    with pytest.raises(AttributeError, match="no setting"):
        cfg.bogus = 1
    del cfg.floatX  # back to the default
    assert cfg.floatX == "float64"
    assert ffigraph.config.compiledir.endswith(("cpython311", "pypy39")) or "compiledir_" in ffigraph.config.compiledir
    assert ffigraph.config.cxx


def test_config_from_environment_in_subprocess():
    import os
    import subprocess
    import sys

    env = dict(os.environ, FFIGRAPH_FLAGS="floatX=float32,cxx=mycc")
    out = subprocess.run([sys.executable, "-c", "import ffigraph; print(ffigraph.config.floatX, "
                          "ffigraph.config.cxx)"], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["float32", "mycc"]
