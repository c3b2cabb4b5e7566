"""Facts the documentation states, kept true: the GPU run it reports is in the project's history,
the README's docs command is a ./dev command, every name of ffigraph.tensor has an entry to link
to (and the build's check finds one without a link), and measured figures come from the build
(docs/_ext/ffg_figures.py), not from numbers typed into a page."""
import os
import re
import shutil
import subprocess
import sys

import pytest

import ffigraph
import ffigraph.tensor as T

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "docs", "_ext"))
GPU_COMMIT = "9a3a0a5"


def _read(*parts):
    with open(os.path.join(ROOT, *parts)) as fh:
        return fh.read()


def _pages():
    docs = os.path.join(ROOT, "docs")
    for folder, dirs, files in os.walk(docs):
        dirs[:] = [d for d in dirs if d not in ("_build", "api", "_ext")]
        for name in files:
            if name.endswith(".rst"):
                yield os.path.join(folder, name)


def test_the_gpu_run_is_reported_as_the_history_has_it():
    readme, cuda = _read("README.md"), _read("docs", "tutorial", "cuda.rst")
    for text in (readme, cuda):
        assert "H100" in text and "CUDA 13.0" in text and "driver 580" in text
        assert "390 passed" in text and GPU_COMMIT in text and "2026-11-24" in text
        assert "no GPU has run" not in text.replace("\n", " ")
    assert "390 passed, 58 skipped, 0 failed" in cuda
    if shutil.which("git") is None or not os.path.isdir(os.path.join(ROOT, ".git")):
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", "-C", ROOT, "log", "-1", "--format=%ad%n%B", "--date=short", GPU_COMMIT],
                         capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("commit %s is not in this clone's history (a shallow clone)" % GPU_COMMIT)
    assert out.stdout.startswith("2026-11-24\n")
    assert "first run on a GPU (H100, CUDA 13.0)" in out.stdout
    assert "--exclude-libs,ALL" in out.stdout


def test_the_readme_docs_command_is_a_dev_command():
    block = re.search(r"## Documentation\n.*?```\n(.*?)```", _read("README.md"), re.S).group(1)
    assert block.split("#")[0].strip() == "./dev docs"
    dev = _read("dev")
    assert "    docs) shift; cmd_docs" in dev
    body = dev.split("cmd_docs() {")[1].split("\n}\n")[0]
    assert "ensure_venv python3 \"$CPY_VENV\" base" in body and "import sphinx" in body
    assert "sphinx-build\" -W --keep-going" in body and "docs docs/_build/html" in body


def test_every_tensor_name_has_an_entry_on_the_package_page():
    import ffg_api_pages as api

    page = api.page("ffigraph.tensor")
    for name in T.__all__:
        target = api.entry_target("ffigraph.tensor", name)
        if target == "ffigraph.tensor." + name:
            assert re.search(r"^\.\. (autofunction|autoclass):: ffigraph\.tensor\.%s$|^\.\. py:data:: %s\n"
                             r"   :module: ffigraph\.tensor$" % (re.escape(name), re.escape(name)), page, re.M), name
        else:   # a name that is also a submodule's links to its definition
            obj = getattr(T, name)
            assert target == "%s.%s" % (obj.__module__, obj.__qualname__), name
    assert api.entry_target("ffigraph.tensor", "sort") == "ffigraph.tensor.sort.sort"
    assert ".. autofunction:: ffigraph.tensor.sort\n   :no-index:" in page
    assert "A ``float``: ``3.141592653589793``." in page
    top = api.page("ffigraph")
    for name in ffigraph.__all__:
        if not name.startswith("__"):
            assert re.search(r"ffigraph\.%s$|:: %s\n   :module: ffigraph$" % (name, name), top, re.M), name


def test_the_build_check_finds_a_name_without_a_link():
    pytest.importorskip("docutils", reason="Sphinx (with docutils) is in the CPython test extras only")
    from docutils import nodes

    import ffg_tensor_names as names

    box = nodes.container(classes=[names.CLASS])
    linked = nodes.reference()
    linked += nodes.literal("exp", "exp", classes=["xref", "py", "py-obj"])
    box += linked
    box += nodes.literal("pi", "pi", classes=["xref", "py", "py-obj"])   # a reference that found no target
    box += nodes.literal("plain", "plain")                              # not a cross-reference
    doc = nodes.section()
    doc += box
    doc += nodes.literal("elsewhere", "elsewhere", classes=["xref"])     # outside the table
    assert names.unlinked_names(doc) == ["pi"]


def test_figures_are_measured_not_typed():
    """Sizes and times of ffigraph's own work are :ffg-figure: roles; a page that states one as a
    typed number ("about 42 ms", "80 KB", "0.80x numpy's time") fails here."""
    typed = re.compile(r"(about|some|took|takes|measured)\s+\d[\d.,]*\s*(µs|ns|ms|s|KB|MB|kB|x)\b"
                       r"|\d[\d.]*\s*x\s+(numpy|CPython|PyTensor)|\d[\d.]*\s*µs per")
    found = []
    for path in _pages():
        with open(path) as fh:
            for number, line in enumerate(fh, 1):
                if typed.search(line) and not line.lstrip().startswith((">>>", "...")):
                    found.append("%s:%d: %s" % (os.path.relpath(path, ROOT), number, line.strip()))
    assert not found, "\n".join(found)
    for page, keys in (("scaling.rst", ["scaling.pickle_kb", "scaling.pickle_nolib_kb", "scaling.unpickle_ms"]),
                       ("cache.rst", ["cache.mlp20_warm_ms", "cache.mlp20_cold_s", "cache.mlp50_cold_s"]),
                       ("pypy.rst", ["call.add_us", "call.sum50_trusted_us"])):
        text = _read("docs", "tutorial", page)
        for key in keys:
            assert ":ffg-figure:`%s`" % key in text, (page, key)


def test_an_unknown_figure_is_an_error_naming_it():
    pytest.importorskip("docutils", reason="Sphinx (with docutils) is in the CPython test extras only")
    import ffg_figures

    with pytest.raises(KeyError, match="no figure group 'sizes' \\(known: cache, call, scaling\\)"):
        ffg_figures.value("sizes.pickle_kb")
