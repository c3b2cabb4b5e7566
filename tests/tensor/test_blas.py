"""Which OpenBLAS ``Dot`` links against (ffigraph/tensor/blas.py): numpy's own copy where it can be
called, so that numpy and ffigraph share one library and one thread pool, else the scipy-openblas64
package with the pools' thread counts coordinated; exports always take the package.

The choice itself is tested on fakes (loaded files, numpy's build configuration, what a library
exports); the real process is looked at in a fresh interpreter (what is mapped, and what the
dynamic loader bound the graph library's CBLAS calls to, from ``LD_DEBUG=bindings``). Numbers are
compared with numpy through both libraries; how fast they are is bench/bench_dot.py's business.
"""
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import Mode, function
from ffigraph.linkers.c.cache import cache_key
from ffigraph.tensor import blas, dot_c

LINUX = sys.platform.startswith("linux")
NUMPY_BLAS = blas.numpy_blas_config() or {}
NUMPY_HAS_OPENBLAS = "openblas" in (NUMPY_BLAS.get("name") or "").lower()
needs_shared = pytest.mark.skipif(not (LINUX and NUMPY_HAS_OPENBLAS),
                                  reason="numpy's BLAS is shared on Linux when it is an OpenBLAS (numpy's: %s)"
                                  % (NUMPY_BLAS.get("name"),))

CONFIG = "OpenBLAS %s  USE64BITINT DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64"
VERSION = "0.3.31.188.0"
NUMPY_CONFIG = {"name": "scipy-openblas", "version": VERSION}


def fake_probe(table):
    """probe() over a table {path: (prefix, suffix, version, ilp64)} (absent: not an OpenBLAS)."""
    def probe(path):
        entry = table.get(path)
        if entry is None:
            return None
        prefix, suffix, version, ilp64 = entry
        config = CONFIG % version if ilp64 else (CONFIG % version).replace("USE64BITINT ", "")
        return blas.OpenBlas(path, prefix, suffix, config, version, ilp64 and suffix == "64_", None)
    return probe


class Site:
    """Empty files named as the libraries of a numpy 2 wheel, scipy's wheel and the package."""

    def __init__(self, root):
        def touch(rel):
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"")
            return str(path)
        self.numpy = touch("numpy.libs/libscipy_openblas64_-32a4b2a6.so")
        self.numpy126 = touch("numpy.libs/libopenblas64_p-r0-0cf96a72.3.23.dev.so")
        self.package = touch("scipy_openblas64/lib/libscipy_openblas64_.so")
        self.scipy = touch("scipy.libs/libscipy_openblas-68440149.so")
        self.weird = touch("lib/libopenblas_weird.so")
        self.libc = touch("lib/libc.so.6")
        self.table = {self.numpy: ("scipy_", "64_", VERSION, True),
                      self.numpy126: ("", "64_", "0.3.23.dev", True),
                      self.package: ("scipy_", "64_", "0.3.34.481.3", True),
                      self.scipy: ("scipy_", "", VERSION, False)}

    def find(self, loaded, config=NUMPY_CONFIG, platform="linux", **versions):
        table = dict(self.table)
        for name, version in versions.items():
            path = getattr(self, name)
            table[path] = table[path][:2] + (version,) + table[path][3:]
        return blas.find_numpy_blas(loaded, config, self.package, probe=fake_probe(table), platform=platform)


@pytest.fixture
def site(tmp_path):
    return Site(tmp_path)


# ------------------------------------------------------------------ the choice, on fakes


def test_numpy_2_wheel_shares_its_own_copy(site):
    lib, why = site.find([site.libc, site.package, site.scipy, site.numpy])
    assert lib.origin == "numpy" and lib.path == site.numpy, why
    assert lib.lib_dir == os.path.dirname(site.numpy) and lib.link_name == ":libscipy_openblas64_-32a4b2a6.so"
    assert lib.symbol("dgemm") == "scipy_cblas_dgemm64_" and lib.version == VERSION
    assert "one thread pool with numpy" in why


def test_numpy_1_26_wheel_has_other_symbol_names(site):
    """numpy 1.26 (PyPy's here) bundles openblas64_: cblas_dgemm64_, no scipy_ prefix."""
    lib, why = site.find([site.numpy126], {"name": "openblas64", "version": "0.3.23.dev"})
    assert lib.symbol("sgemv") == "cblas_sgemv64_", why
    assert lib.link_name == ":libopenblas64_p-r0-0cf96a72.3.23.dev.so"


def test_the_package_copy_is_taken_last_and_only_if_it_is_numpys_version(site):
    lib, _ = site.find([site.package, site.numpy], package=VERSION)
    assert lib.path == site.numpy
    # numpy built against the package itself: its file is the one loaded, and is shared
    lib, _ = site.find([site.package], package=VERSION)
    assert lib.path == site.package and lib.link_name == ":libscipy_openblas64_.so"
    # another version than numpy's is something else's copy
    lib, why = site.find([site.package])
    assert lib is None and "OpenBLAS 0.3.34.481.3, numpy was built with %s" % VERSION in why


@pytest.mark.parametrize("config, loaded, platform, expected", [
    ({"name": "mkl-sdl", "version": "2024.2"}, ["numpy"], "linux", "numpy's BLAS is mkl-sdl, not an OpenBLAS"),
    ({"name": "accelerate"}, ["numpy"], "darwin", "Linux (ELF) only, not on darwin"),
    (NUMPY_CONFIG, ["scipy"], "linux", "not an ILP64 build exporting scipy_cblas_dgemm and the rest"),
    (NUMPY_CONFIG, ["libc"], "linux", "numpy's OpenBLAS %s is not loaded as a library ffigraph can call" % VERSION),
    ({"name": "openblas"}, ["weird"], "linux", "no openblas_get_config of a known symbol scheme"),
])
def test_numpy_blas_not_usable(site, config, loaded, platform, expected):
    lib, why = site.find([getattr(site, name) for name in loaded], config, platform)
    assert lib is None and expected in why, why


def test_a_deleted_file_is_not_linked_against(site):
    os.remove(site.numpy)
    lib, why = site.find([site.numpy])
    assert lib is None and "the file is gone" in why


def test_unknown_numpy_configuration_goes_by_what_is_loaded(site):
    """numpy before 1.26 has no show_config(mode='dicts'): the loaded ILP64 OpenBLAS is taken."""
    lib, _ = site.find([site.scipy, site.numpy], None)
    assert lib.path == site.numpy


def test_a_global_definition_from_another_file_refuses_sharing(site):
    lib = site.find([site.numpy])[0]
    assert blas.shadowed(lib, lambda symbol: None) == ""
    assert blas.shadowed(lib, lambda symbol: site.numpy) == ""
    why = blas.shadowed(lib, lambda symbol: site.package if symbol == "scipy_cblas_dgemm64_" else None)
    assert "scipy_cblas_dgemm64_ is defined in the global scope by %s" % site.package in why


@pytest.mark.parametrize("own, others, cpus, expected", [
    (2, [2], 2, 1),        # 2 cores, both pools 2 threads: ffigraph's on the caller alone
    (2, [1], 2, None),     # numpy's pool of 1 (the caller only) leaves ffigraph both cores
    (8, [8], 8, 1),
    (8, [4], 8, 5),        # 5 threads + 3 spinning workers of numpy's = 8
    (4, [2, 6], 8, 3),     # the biggest other pool counts
    (1, [8], 8, None),     # already 1
    (8, [], 8, None),      # no other OpenBLAS: nothing to coordinate
])
def test_coordinated_thread_counts(own, others, cpus, expected):
    assert blas.coordinated_threads(own, others, cpus) == expected


# ------------------------------------------------------------------ the real process


def test_probe_reads_the_loaded_numpy_openblas():
    found = [p for p in blas.loaded_libraries() if "openblas" in os.path.basename(p).lower()]
    if not found:
        pytest.skip("no OpenBLAS loaded by numpy (%s)" % (NUMPY_BLAS.get("name"),))
    probes = [blas.probe(p) for p in found]
    assert all(ob is not None and ob.version for ob in probes), probes
    assert all(blas.get_threads(ob) >= 1 for ob in probes)


@needs_shared
def test_dot_links_against_numpys_openblas():
    lib = blas.library()
    assert lib is not None and lib.origin == "numpy", blas.why()
    x, y = T.matrix(), T.matrix()
    f = function([x, y], T.dot(x, y), mode=Mode(linker="c", optimizer=None))
    src = f.maker.linker.source()
    assert "numpy's own OpenBLAS" in src and lib.symbol("dgemm") + "(" in src
    op = f.maker.fgraph.toposort()[0].op
    assert dot_c.c_libraries(op) == [lib.link_name] and dot_c.c_lib_dirs(op) == [lib.lib_dir]


def test_the_choice_is_in_the_source_and_the_cache_key(monkeypatch):
    """A graph linked against the other BLAS is another library: another source (so another
    symbol prefix and in-process memo entry) and another compile-cache key."""
    got = {}
    for share in (True, False):
        monkeypatch.setattr(blas, "SHARE_NUMPY_BLAS", share)
        monkeypatch.setattr(blas, "COORDINATE_THREADS", False)
        lib = blas.library()
        x, y = T.matrix(), T.matrix()
        node = T.dot(x, y).owner
        support = dot_c.c_support_code_apply(node.op, node, "n")
        requirements = dict(headers=[], header_dirs=[], libraries=dot_c.c_libraries(node.op),
                            lib_dirs=dot_c.c_lib_dirs(node.op), compile_args=[])
        got[share] = (lib, support, cache_key(support, requirements), dot_c.c_code_cache_version(node.op))
    (shared, s_src, s_key, s_ver), (package, p_src, p_key, p_ver) = got[True], got[False]
    assert package.origin == "scipy-openblas64" and "the scipy-openblas64 package" in p_src
    if shared.origin == "numpy":
        assert "numpy's own OpenBLAS" in s_src and s_src != p_src and s_key != p_key and s_ver != p_ver


LAYOUTS = {
    "c": lambda a: a,
    "transposed": lambda a: np.ascontiguousarray(a.T).T,     # strides (1, n): BLAS's transpose
    "strided": lambda a: np.repeat(a, 2, axis=-1)[..., ::2],  # no unit stride: copied first
}


@pytest.mark.parametrize("share", [True, False], ids=["shared", "package"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_dot_matches_numpy_through_either_library(monkeypatch, share, dtype):
    monkeypatch.setattr(blas, "SHARE_NUMPY_BLAS", share)
    monkeypatch.setattr(dot_c, "USE_BLAS", True)
    lib = blas.library()
    assert lib is not None, blas.why()
    m, v = T.matrix(dtype=dtype), T.vector(dtype=dtype)
    m2 = T.matrix(dtype=dtype)
    f = function([m, m2, v], [T.dot(m, m2), T.dot(m, v), T.dot(v, m2), T.dot(v, v)],
                 mode=Mode(linker="c", optimizer=None))
    assert lib.symbol("dgemm" if dtype == "float64" else "sgemm") + "(" in f.maker.linker.source()
    rng = np.random.default_rng(1)
    a = rng.standard_normal((9, 7)).astype(dtype)
    b = rng.standard_normal((7, 7)).astype(dtype)
    w = rng.standard_normal(7).astype(dtype)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    for la, lay_a in LAYOUTS.items():
        for lb, lay_b in LAYOUTS.items():
            x, y = lay_a(a), lay_b(b)
            vec = w[::-1]    # a negative stride
            got = f(x, y, vec)
            want = [x @ y, x @ vec, vec @ y, vec @ vec]
            for g, wnt in zip(got, want):
                assert g.dtype == np.dtype(dtype)
                np.testing.assert_allclose(g, wnt, err_msg="%s . %s" % (la, lb), **tol)


def test_export_carries_the_package_whatever_the_process_shares():
    from ffigraph.export.bundle import make_plan

    x, y = T.matrix(), T.matrix()
    f = function([x, y], T.dot(x, y), mode=Mode(linker="c", optimizer=None))
    plan = make_plan(f)
    package = blas.package_library()
    assert plan.graph.requirements["libraries"] == [package.link_name]
    assert plan.graph.requirements["lib_dirs"] == [package.lib_dir]
    assert "the scipy-openblas64 package" in plan.graph.source and "numpy's own" not in plan.graph.source


SCRIPT = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, %(root)r)
    import numpy as np
    %(pre)s
    import ffigraph.tensor as T
    from ffigraph import Mode, function
    from ffigraph.tensor import blas
    lib = blas.library()
    print("ORIGIN", lib.origin, lib.path, lib.symbol("dgemm"))
    print("WHY", blas.why())
    if %(compile)s:
        rng = np.random.default_rng(0)
        for dtype in ("float64", "float32"):
            x, y, v = T.matrix(dtype=dtype), T.matrix(dtype=dtype), T.vector(dtype=dtype)
            f = function([x, y, v], [T.dot(x, y), T.dot(x, v), T.dot(v, y), T.dot(v, v)],
                         mode=Mode(linker="c", optimizer=None))
            a = rng.standard_normal((30, 20)).astype(dtype)
            b = rng.standard_normal((20, 20)).astype(dtype)
            w = rng.standard_normal(20).astype(dtype)
            for got, want in zip(f(a, b, w), [a @ b, a @ w, w @ b, w @ w]):
                np.testing.assert_allclose(got, want, rtol=1e-4)
    with open("/proc/self/maps") as fh:
        mapped = {line.split()[-1] for line in fh if "/" in line}
    for path in sorted(p for p in mapped if "openblas" in os.path.basename(p).lower()):
        print("MAPPED", os.path.realpath(path))
""")

BINDING = re.compile(r"binding file (\S+) \[\d+\] to (\S+) \[\d+\]: normal symbol `(\w*cblas_\w+)'")


def _run(tmp_path, pre="", compile=True, debug=True):
    env = dict(os.environ)
    if debug:
        env["LD_DEBUG"] = "bindings"
        env["LD_DEBUG_OUTPUT"] = str(tmp_path / "ld")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", SCRIPT % dict(root=root, pre=pre, compile=compile)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    origin = [ln.split()[1:] for ln in lines if ln.startswith("ORIGIN")][0]
    mapped = [ln.split(None, 1)[1] for ln in lines if ln.startswith("MAPPED")]
    bindings = []
    for name in os.listdir(tmp_path) if debug else ():
        if name.startswith("ld."):
            with open(tmp_path / name, errors="replace") as fh:
                bindings += [m.groups() for m in map(BINDING.search, fh) if m]
    return origin, mapped, bindings, out.stdout


@needs_shared
def test_one_openblas_in_a_fresh_process(tmp_path):
    """After numpy's and ffigraph's dots, one OpenBLAS is mapped, and the graph libraries' CBLAS
    calls were bound to it by the dynamic loader (LD_DEBUG=bindings)."""
    (origin, path, dgemm), mapped, bindings, stdout = _run(tmp_path)
    assert origin == "numpy", stdout
    assert mapped == [os.path.realpath(path)], stdout
    graph = [(src, dst, sym) for src, dst, sym in bindings if "numpy" not in src]
    assert {sym for _, _, sym in graph} >= {dgemm.replace("dgemm", f) for f in blas.CBLAS_FUNCTIONS}, graph
    assert {os.path.realpath(dst) for _, dst, _ in graph} == {os.path.realpath(path)}, graph


@needs_shared
def test_package_imported_first_is_not_shadowed_silently(tmp_path):
    """``import scipy_openblas64`` puts its library in the global scope, where every later lookup
    of its names finds it: ffigraph then says so and links against the package (no compile here)."""
    (origin, path, _), mapped, _, stdout = _run(tmp_path, pre="import scipy_openblas64", compile=False,
                                                debug=False)
    if blas.library().prefix != "scipy_":   # numpy 1.26's names (cblas_dgemm64_) are not the package's
        assert origin == "numpy", stdout
    else:
        assert origin == "scipy-openblas64" and "defined in the global scope" in stdout, stdout
