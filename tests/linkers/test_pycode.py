"""The per-arity call's code, compiled once (ffigraph.linkers.c.pycode): kept in the compile cache,
read back by the next process, and compiled again when its file is damaged."""
import os
import subprocess
import sys
import textwrap

import numpy as np

import ffigraph.tensor as T
from ffigraph import Mode, config, function
from ffigraph.linkers.c import cache, pycode

SOURCE = "def call(a, b):\n    return a * b + 1\n"


def _files(root):
    found = []
    for folder, _, names in os.walk(os.path.join(root, cache.PYCODE)):
        found += [os.path.join(folder, n) for n in names]
    return found


def test_code_is_cached_and_a_damaged_file_is_replaced(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "compiledir", str(tmp_path))
    monkeypatch.setattr(pycode, "_memo", {})
    code = pycode.compiled(SOURCE, "<test call>")
    namespace = {}
    exec(code, namespace)
    assert namespace["call"](3, 4) == 13
    (path,) = _files(str(tmp_path))
    assert not path.endswith(".tmp")
    same = pycode.compiled(SOURCE, "<test call>")   # this process: from its memo, a fresh object
    assert same == code and same is not code
    monkeypatch.setattr(pycode, "_memo", {})   # as a new process
    again = pycode.compiled(SOURCE, "<test call>")
    assert again is not code and again == code   # read back from the file
    with open(path, "wb") as fh:
        fh.write(b"not marshalled code")
    monkeypatch.setattr(pycode, "_memo", {})
    rebuilt = pycode.compiled(SOURCE, "<test call>")
    namespace = {}
    exec(rebuilt, namespace)
    assert namespace["call"](2, 2) == 5
    with open(path, "rb") as fh:
        assert fh.read().startswith(pycode._MAGIC)   # replaced by a good one
    assert os.stat(path).st_mode & 0o077 == 0   # the owner's alone
    os.chmod(path, 0o666)   # others may write it: it is not run, but compiled again and replaced
    monkeypatch.setattr(pycode, "_memo", {})
    namespace = {}
    exec(pycode.compiled(SOURCE, "<test call>"), namespace)
    assert namespace["call"](2, 3) == 7
    assert os.stat(path).st_mode & 0o077 == 0   # the owner's alone again
    other = pycode.compiled(SOURCE.replace("+ 1", "+ 2"), "<test call>")
    assert other != code and len(_files(str(tmp_path))) == 2   # another text, another file
    cache.clear()   # ffigraph-cache clear
    assert not _files(str(tmp_path))


def test_an_unwritable_cache_only_costs_the_compile(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setattr(config, "compiledir", str(blocker))   # a file: nothing can be made under it
    monkeypatch.setattr(pycode, "_memo", {})
    namespace = {}
    exec(pycode.compiled(SOURCE, "<test call>"), namespace)
    assert namespace["call"](1, 1) == 2


CHILD = textwrap.dedent("""
    import numpy as np
    import ffigraph.tensor as T
    from ffigraph import Mode, function
    from ffigraph.linkers.c import pycode
    compiles = []
    real = compile
    def counting(*args, **kwargs):
        compiles.append(args[1])
        return real(*args, **kwargs)
    pycode.compile = counting
    x, y = T.dvector("x"), T.dvector("y")
    f = function([x, y], [x * y + 1, x - y], mode=Mode(linker="c"))
    assert np.allclose(f(np.ones(3), np.full(3, 2.0))[0], 3.0)
    print(len(compiles))
""")


def test_a_new_process_reads_the_call_from_the_cache(tmp_path):
    env = dict(os.environ, FFIGRAPH_FLAGS="compiledir=%s" % tmp_path)
    counts = [subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True)
              .stdout.split()[-1] for _ in range(2)]
    assert counts == ["1", "0"], counts   # compiled by the first process only
    x = T.dvector("x")
    with config.change_flags(compiledir=str(tmp_path)):
        f = function([x], x * 2.0, mode=Mode(linker="c"))
    np.testing.assert_array_equal(f(np.arange(3.0)), [0.0, 2.0, 4.0])
