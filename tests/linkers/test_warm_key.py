"""The warm path: a graph's structural key names its cache entry, so a warm ``function()``
generates no C and runs no compiler; and every change that could change the library gives a new key."""
import importlib
import os
import subprocess
import sys
import textwrap
import warnings
import weakref

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import Mode, config, function
from ffigraph.graph.fg import FunctionGraph
from ffigraph.linkers.c import build, cache, codegen, graph_key, linker as c_linker, load
from ffigraph.tensor.elemwise import Elemwise


def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "compiledir", os.path.join(str(tmp_path), "cache"))
    _forget_loaded_libraries(monkeypatch)


def _forget_loaded_libraries(monkeypatch):
    """As a new process would: the next function() looks in the cache, not in this process's loads."""
    monkeypatch.setattr(load, "_memo", weakref.WeakValueDictionary())


def _forbid_codegen_and_compiler(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("C was generated or a compiler ran on the warm path")

    for module, name in ((codegen, "generate"), (c_linker, "generate"), (load, "library_for"),
                         (load, "build_library"), (cache, "build_library"), (cache, "_publish"),
                         (build, "build_library"), (build, "run_tool")):
        monkeypatch.setattr(module, name, refuse)


def _graph():
    x, y = T.dvector("x"), T.dvector("y")
    return [x, y], T.exp(x) * y + T.tanh(x) - 1.5 * y


def _expected(a, b):
    return np.exp(a) * b + np.tanh(a) - 1.5 * b


MODE = Mode(linker="c")   # the default rewrites (fusion, inplace), one library


def test_warm_hit_generates_no_c_and_runs_no_compiler(tmp_path, monkeypatch):
    _private_cache(tmp_path, monkeypatch)
    a, b = np.linspace(-1, 1, 5), np.arange(5.0)
    first = function(*_graph(), mode=MODE)
    assert not first.maker.linker.compiled.warm_hit
    assert os.listdir(os.path.join(config.compiledir, cache.GRAPHS))   # the record was written
    with monkeypatch.context() as m:
        _forget_loaded_libraries(m)
        _forbid_codegen_and_compiler(m)
        second = function(*_graph(), mode=MODE)
        compiled = second.maker.linker.compiled
        assert compiled.warm_hit and compiled.library.path == first.maker.linker.compiled.library.path
        np.testing.assert_allclose(second(a, b), _expected(a, b))
    # the source is still there when asked for, and it is the one the library was built from
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert compiled.source.prefix == compiled.library.prefix
    assert second.maker.linker.source() == first.maker.linker.source()


def test_warm_hit_source_comes_from_the_settings_it_was_compiled_under(tmp_path, monkeypatch):
    """A warm hit generates its source only when asked, maybe after the settings changed: it must be
    the source of the library it runs (generated under the settings of its compile), not of the
    settings of the moment it is asked for."""
    _private_cache(tmp_path, monkeypatch)
    now = config.threads
    threads = 3 if now != 3 else 4   # not the setting of the moment
    with config.change_flags(threads=threads, threads_min_size=1000):
        function(*_graph(), mode=MODE)
        _forget_loaded_libraries(monkeypatch)
        second = function(*_graph(), mode=MODE)
    compiled = second.maker.linker.compiled
    assert compiled.warm_hit
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # the linker warns when the prefixes differ
        source = second.c_source()
    assert "#define FFG_THREADS %d\n" % threads in source and compiled.source.prefix == compiled.library.prefix
    assert config.threads == now   # and the settings of the moment are left as they are


HIT_SCRIPT = textwrap.dedent("""
    import numpy as np
    import ffigraph.tensor as T
    from ffigraph import Mode, function
    from ffigraph.linkers.c import build, cache, codegen, linker, load
    if {forbid}:
        def refuse(*a, **k):
            raise AssertionError("C was generated or a compiler ran on the warm path")
        codegen.generate = linker.generate = load.library_for = build.build_library = refuse
        build.run_tool = cache.build_library = cache._publish = refuse
    x, y = T.dvector("x"), T.dvector("y")
    W = T.dmatrix("W")
    f = function([x, y, W], [T.tanh(T.dot(W, x)) * y + 1, (x - y).sum()], mode=Mode(linker="c"))
    out = f(np.ones(2), np.ones(2), np.eye(2))
    assert np.allclose(out[0], np.tanh(1) + 1) and out[1] == 0
    print("warm" if f.maker.linker.compiled.warm_hit else "cold")
""")


def test_warm_hit_in_a_new_process(tmp_path):
    """The key is the same in another process: the second one loads the library, nothing else."""
    env = dict(os.environ, FFIGRAPH_COMPILEDIR=str(tmp_path / "cache"))
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    runs = []
    for forbid in (False, True):
        out = subprocess.run([sys.executable, "-c", HIT_SCRIPT.format(forbid=forbid)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
        runs.append(out.stdout.split()[-1])
    assert runs == ["cold", "warm"]


def test_damaged_entry_behind_a_record_is_rebuilt(tmp_path, monkeypatch):
    _private_cache(tmp_path, monkeypatch)
    first = function(*_graph(), mode=MODE)
    lib = first.maker.linker.compiled.library.path
    _forget_loaded_libraries(monkeypatch)   # a new process, as far as loading goes
    damaged = lib + ".damaged"
    with open(lib, "rb") as fh:
        data = fh.read()
    with open(damaged, "wb") as fh:
        fh.write(data[:100])
    os.chmod(damaged, 0o700)
    os.replace(damaged, lib)   # a new file: the loaded library's pages stay valid
    with pytest.warns(cache.CorruptEntryWarning):
        again = function(*_graph(), mode=MODE)
    assert not again.maker.linker.compiled.warm_hit
    a, b = np.arange(3.0), np.ones(3)
    np.testing.assert_allclose(again(a, b), _expected(a, b))
    third = function(*_graph(), mode=MODE)
    assert third.maker.linker.compiled.warm_hit


def test_unreadable_record_falls_back(tmp_path, monkeypatch):
    _private_cache(tmp_path, monkeypatch)
    function(*_graph(), mode=MODE)
    (shard,) = os.listdir(os.path.join(config.compiledir, cache.GRAPHS))
    for name in os.listdir(os.path.join(config.compiledir, cache.GRAPHS, shard)):
        with open(os.path.join(config.compiledir, cache.GRAPHS, shard, name), "w") as fh:
            fh.write("{not json")
    again = function(*_graph(), mode=MODE)
    assert not again.maker.linker.compiled.warm_hit   # generated, found by its source key, recorded again
    assert function(*_graph(), mode=MODE).maker.linker.compiled.warm_hit


def test_record_others_may_write_is_refused(tmp_path, monkeypatch):
    _private_cache(tmp_path, monkeypatch)
    function(*_graph(), mode=MODE)
    graphs = os.path.join(config.compiledir, cache.GRAPHS)
    (shard,) = os.listdir(graphs)
    (name,) = os.listdir(os.path.join(graphs, shard))
    record = os.path.join(graphs, shard, name)
    assert os.stat(record).st_mode & 0o077 == 0   # written private
    os.chmod(record, 0o666)
    with pytest.raises(cache.CacheSecurityError):
        function(*_graph(), mode=MODE)


# ---------------------------------------------------------------- what the key covers (no compiling)


def _fgraph(scale=1.5, name="y"):
    x, y = T.dvector("x"), T.dvector(name)
    return FunctionGraph([x, y], [T.exp(x) * y + scale * y])


def _key(fgraph=None, **kwargs):
    key = graph_key.structural_key(fgraph or _fgraph(), **kwargs)
    assert key is not None, graph_key.why_no_key(fgraph or _fgraph())
    return key


def test_same_graph_same_key():
    assert _key() == _key()


def test_graph_changes_give_new_keys():
    base = _key()
    assert _key(_fgraph(scale=2.5)) != base                # a constant's value
    assert _key(_fgraph(name="z")) != base                 # a name (error messages and slot tables)
    assert _key(profile=True) != base
    assert _key(input_roles=[0, 1]) != base
    assert _key(output_alias=[0]) != base


def test_op_version_gives_new_key(monkeypatch):
    base = _key()
    monkeypatch.setattr(Elemwise, "c_code_cache_version", lambda self: (999, "changed"))
    assert _key() != base


def test_empty_op_version_gives_no_key(monkeypatch):
    monkeypatch.setattr(Elemwise, "c_code_cache_version", lambda self: ())
    assert graph_key.structural_key(_fgraph()) is None
    assert "no C cache version" in graph_key.why_no_key(_fgraph())


def test_ffigraph_code_change_gives_new_key(tmp_path, monkeypatch):
    """ffigraph's files are fingerprinted by path, size and mtime: an edit changes the key."""
    package = tmp_path / "ffigraph"
    (package / "linkers" / "c").mkdir(parents=True)
    (package / "linkers" / "c" / "graph_key.py").write_text("")
    source = package / "some_op_c.py"
    source.write_text("CODE = 'x = 1;'\n")
    with monkeypatch.context() as m:
        m.setattr(graph_key, "_PACKAGE_DIR", str(tmp_path))
        before = graph_key.package_fingerprint()
        assert before is not None
        source.write_text("CODE = 'x = 2;'\n")
        os.utime(str(source), ns=(1, 1))
        assert graph_key.package_fingerprint() not in (before, None)
        m.setattr(graph_key, "_PACKAGE_DIR", str(tmp_path / "elsewhere"))
        assert graph_key.package_fingerprint() is None   # nothing to fingerprint: no structural keys
        m.setattr(graph_key, "_environment", None)
        assert graph_key.structural_key(_fgraph()) is None
    monkeypatch.setattr(graph_key, "_environment", None)   # the process's environment, computed again
    base = _key()
    monkeypatch.setattr(graph_key, "package_fingerprint", lambda: "edited")
    monkeypatch.setattr(graph_key, "_environment", None)
    assert _key() != base


USER_OP = '''
from ffigraph.graph.basic import Apply
from ffigraph.graph.c_interface import COp
from ffigraph.graph.op import Op
import ffigraph.tensor as T


class Twice(COp, Op):
    __props__ = ()

    def make_node(self, x):
        x = T.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def c_code(self, node, name, inputs, outputs, sub):
        return "/* %s */"

    def c_code_cache_version(self):
        return (1,)
'''


def test_user_op_code_change_gives_new_key(tmp_path, monkeypatch):
    """An op from outside ffigraph: its file's contents are in the key, version bumped or not."""
    path = tmp_path / "warm_key_user_op.py"
    path.write_text(USER_OP % "one")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("warm_key_user_op")
    x = T.dvector("x")
    fgraph = FunctionGraph([x], [module.Twice()(x)])
    base = _key(fgraph)
    path.write_text(USER_OP % "two, a longer comment")
    assert _key(fgraph) != base
    sys.modules.pop("warm_key_user_op", None)


@pytest.mark.parametrize("flag, value", [("threads", 3), ("threads_min_size", 1234), ("floatX", "float32"),
                                         ("optimizer", "fast_compile"), ("compile_timeout", 77.0)])
def test_config_flags_give_new_keys(flag, value):
    base = _key()
    with config.change_flags(**{flag: value}):
        assert _key() != base
    assert _key() == base


def test_sanitize_flag_gives_new_key(monkeypatch):
    base = _key()
    monkeypatch.setattr(build, "check_sanitizer_runtime", lambda: None)
    with config.change_flags(sanitize="undefined"):
        assert _key() != base


def test_compiler_identity_and_command_give_new_keys(monkeypatch):
    base = _key()
    with monkeypatch.context() as m:
        m.setattr(graph_key, "compiler_identity", lambda cc: "/usr/bin/gcc | gcc 99.1")
        assert _key() != base
    with monkeypatch.context() as m:
        m.setattr(build, "BASE_FLAGS", build.BASE_FLAGS + ["-fno-math-errno"])
        assert _key() != base
    assert _key(compiler="some-other-cc") != base
    assert _key() == base


def test_abi_version_gives_new_key(monkeypatch):
    base = _key()
    monkeypatch.setattr(graph_key, "_environment", None)
    monkeypatch.setattr(graph_key, "ABI_VERSION", graph_key.ABI_VERSION + 1)
    assert _key() != base


def test_graphs_it_cannot_key():
    from ffigraph.graph.basic import Apply
    from ffigraph.graph.c_interface import COp
    from ffigraph.graph.op import Op

    class NoProps(COp, Op):   # compared by identity: its state is not written down anywhere
        def make_node(self, x):
            return Apply(self, [x], [x.type()])

        def c_code(self, node, name, inputs, outputs, sub):
            return ""

        def c_code_cache_version(self):
            return (1,)

    x = T.dvector("x")
    assert graph_key.structural_key(FunctionGraph([x], [NoProps()(x)])) is None
    assert "__props__" in graph_key.why_no_key(FunctionGraph([x], [NoProps()(x)]))


def test_prop_values_are_written_down_stably():
    enc = graph_key._encode
    assert enc((1, "a", None, slice(1, None, -1), 2.5), set()) == enc((1, "a", None, slice(1, None, -1), 2.5), set())
    assert enc(1, set()) != enc(True, set()) and enc(1, set()) != enc(1.0, set())
    assert enc(np.dtype("float32"), set()) != enc(np.dtype("float64"), set())
    assert enc(np.arange(3), set()) != enc(np.arange(3).astype("int32"), set())
    with pytest.raises(graph_key._NoKey):
        enc(object(), set())
    with pytest.raises(graph_key._NoKey):
        enc(lambda: 0, set())


# ---------------------------------------------------------------- types: dtype, broadcastable, ndim

# x's type, and a value for it; y is a float64 vector of 3 in every graph, and both keep their names
TYPED_X = {
    "float64 vector": (T.dvector, np.array([0.5, -1.0, 2.0])),
    "float32 vector": (T.fvector, np.array([0.5, -1.0, 2.0], dtype="float32")),
    "float64 matrix": (T.dmatrix, np.array([[0.5, -1.0, 2.0], [0.0, 1.0, -2.0]])),
    "float64 column": (T.dcol, np.array([[0.5], [-1.0]])),     # broadcast against y: (2, 3)
    "float64 row": (T.drow, np.array([[0.5, -1.0, 2.0]])),
}


def _typed_graph(kind):
    x, y = TYPED_X[kind][0]("x"), T.dvector("y")
    return [x, y], [T.exp(x) * y + 1.5 * y]


def test_type_changes_give_new_keys():
    """Graphs that differ only in one input's dtype, static shape (broadcastable) or ndim."""
    keys = {kind: _key(FunctionGraph(*_typed_graph(kind))) for kind in TYPED_X}
    assert len(set(keys.values())) == len(keys), keys


def test_type_changes_warm_path_gives_each_graph_its_own_library(tmp_path, monkeypatch):
    _private_cache(tmp_path, monkeypatch)
    y = np.array([1.0, -2.0, 3.0])
    kinds = ("float64 vector", "float32 vector", "float64 matrix", "float64 column")
    cold = {}
    for kind in kinds:
        f = function(*_typed_graph(kind), mode=MODE)
        assert not f.maker.linker.compiled.warm_hit, kind   # no other graph's entry answers for it
        cold[kind] = f.maker.linker.compiled.library.path
    assert len(set(cold.values())) == len(kinds)
    _forget_loaded_libraries(monkeypatch)
    for kind in kinds:
        f = function(*_typed_graph(kind), mode=MODE)
        compiled = f.maker.linker.compiled
        assert compiled.warm_hit and compiled.library.path == cold[kind], kind
        x = TYPED_X[kind][1]
        want = np.exp(x) * y + 1.5 * y   # numpy: exp in x's dtype, then float64
        (got,) = f(x, y)
        assert got.dtype == np.float64 and got.shape == want.shape, (kind, got.dtype, got.shape)
        np.testing.assert_allclose(got, want, rtol=1e-6 if x.dtype == np.float32 else 1e-13, err_msg=kind)
