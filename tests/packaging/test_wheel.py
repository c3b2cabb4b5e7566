"""The install story of docs/install.rst, run end to end.

``python -m build`` makes the sdist and, from the sdist, the wheel. The wheel must hold every file
of ffigraph/ (the .py files, the ABI header, the C files exports copy, py.typed) and nothing else.
The sdist must hold what builds the wheel and what runs the tests and examples. The wheel then
goes into a fresh venv, and that venv's python runs examples/demo.py from a folder outside the
checkout, with a compile cache of its own. The test checks that ffigraph was imported from the
venv's site-packages, that the header was installed, and that the ``ffigraph-cache`` command
works. The build and install commands come from the page's wheel block, so the page and this test
cannot drift apart.

To keep it cheap, the test makes one build (``--no-isolation``, using the venv's setuptools and
wheel, which the test extra installs) and makes the venv without pip: the running pip (22.3 or
later) installs into it with ``--python``, and ``--no-compile``. Dependencies come from pip's configured index, mirror
or find-links. CPython only: the wheel is pure Python (py3-none-any) and the same file installs on
PyPy, so a PyPy run would add nothing but a second numpy install.
"""
import configparser
import importlib.util
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # the repository
PAGE = os.path.join(ROOT, "docs", "install.rst")
PACKAGE = os.path.join(ROOT, "ffigraph")
# Files in the source tree that are build products, never sources. The wheel and sdist leave them out.
BUILD_PRODUCTS = (".pyc", ".pyo", ".so", ".o")

pytestmark = pytest.mark.skipif(
    platform.python_implementation() != "CPython",
    reason="the wheel is pure Python (py3-none-any), the same file on PyPy: CPython's run covers it, "
           "and a PyPy run would only add a second numpy install")


def _console_blocks(text):
    """The ``$ `` commands of each ``.. code-block:: console`` block of an rst page, in order."""
    blocks, current, indent = [], None, None
    for line in text.splitlines():
        if current is not None:
            if not line.strip():
                continue
            lead = len(line) - len(line.lstrip())
            if indent is None:
                indent = lead
            if lead >= indent and lead > 0:
                if line.strip().startswith("$ "):
                    current.append(line.strip()[2:])
                continue
            blocks.append(current)
            current = None
        if line.strip() == ".. code-block:: console":
            current, indent = [], None
    if current is not None:
        blocks.append(current)
    return blocks


def _page_wheel_commands():
    """(the arguments the page gives ``python -m build``, the wheel's file name) from the page's
    wheel block, which must hold exactly those two commands: build, then pip install the wheel."""
    with open(PAGE) as fh:
        blocks = _console_blocks(fh.read())
    found = [b for b in blocks if any(cmd.startswith("python -m build") for cmd in b)]
    assert len(found) == 1, "docs/install.rst should have one console block with `python -m build`: %r" % found
    block = found[0]
    assert len(block) == 2, "the wheel block should be `python -m build`, then `pip install dist/...whl`: %r" % block
    build, install = (shlex.split(cmd) for cmd in block)
    assert build[:3] == ["python", "-m", "build"], block
    assert install[:2] == ["pip", "install"] and len(install) == 3, block
    wheel = install[2]
    assert wheel.startswith("dist/") and wheel.endswith("-py3-none-any.whl"), block
    return build[3:], wheel[len("dist/"):]


def _run(argv, what, **kwargs):
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          **kwargs)
    assert proc.returncode == 0, "%s failed (exit %d): %s\n%s" % (what, proc.returncode, argv, proc.stdout[-4000:])
    return proc.stdout


def _package_files():
    """Every file of ffigraph/ in the source tree (repository-relative, '/'-separated), build
    products left out."""
    files = set()
    for dirpath, dirnames, filenames in os.walk(PACKAGE):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for name in filenames:
            if not name.endswith(BUILD_PRODUCTS):
                files.add(os.path.relpath(os.path.join(dirpath, name), ROOT).replace(os.sep, "/"))
    return files


def _check_sdist(path, package_files):
    with tarfile.open(path) as tar:
        top = os.path.basename(path)[:-len(".tar.gz")] + "/"
        names = {n[len(top):] for n in tar.getnames() if n.startswith(top)}
    needed = {"PKG-INFO", "README.md", "setup.cfg", "pyproject.toml", "MANIFEST.in", "conftest.py",
              "ffigraph/abi/ffigraph_abi.h", "examples/demo.py", "tests/packaging/test_wheel.py",
              "docs/install.rst"}
    assert not needed - names, "the sdist lacks %s" % sorted(needed - names)
    assert not package_files - names, "the sdist lacks package files %s" % sorted(package_files - names)
    junk = sorted(n for n in names if n.endswith(BUILD_PRODUCTS) or "__pycache__" in n.split("/"))
    assert not junk, "the sdist holds build products %s" % junk


def _check_wheel(path, package_files, version):
    dist_info = "ffigraph-%s.dist-info/" % version
    with zipfile.ZipFile(path) as whl:
        names = set(whl.namelist())
        metadata = whl.read(dist_info + "METADATA").decode("utf-8")
        entry_points = whl.read(dist_info + "entry_points.txt").decode("utf-8")
    in_package = {n for n in names if not n.startswith(dist_info)}
    assert in_package == package_files, ("the wheel and ffigraph/ differ: missing from the wheel %s, only in the "
                                         "wheel %s (setup.cfg's package_data?)"
                                         % (sorted(package_files - in_package), sorted(in_package - package_files)))
    assert "ffigraph/abi/ffigraph_abi.h" in in_package
    assert re.search(r"^ffigraph-cache\s*=\s*ffigraph\.cache:main$", entry_points, re.M), entry_points
    assert "Description-Content-Type: text/markdown" in metadata
    # docs/install.rst names what pip installs with ffigraph: the wheel's unconditional requirements
    requires = re.findall(r"^Requires-Dist: ([A-Za-z0-9_.-]+)[^;\n]*$", metadata, re.M)
    assert {"numpy", "cffi"} <= set(requires), requires
    with open(PAGE) as fh:
        page = fh.read()
    unnamed = [r for r in requires if r not in page]
    assert not unnamed, "docs/install.rst's requirements do not name %s" % unnamed


def test_build_install_and_run_the_wheel():
    for module in ("build", "setuptools", "wheel"):
        assert importlib.util.find_spec(module), ("%s is missing from this venv: "
                                                  "pip install -e '.[test]' installs it" % module)
    build_args, wheel_name = _page_wheel_commands()
    parser = configparser.ConfigParser()
    parser.read(os.path.join(ROOT, "setup.cfg"))
    version = parser["metadata"]["version"]
    assert wheel_name == "ffigraph-%s-py3-none-any.whl" % version, "docs/install.rst names %s" % wheel_name
    sdist_name = "ffigraph-%s.tar.gz" % version
    package_files = _package_files()

    with tempfile.TemporaryDirectory(prefix="ffigraph-wheel-test-") as tmp:
        tmp = os.path.realpath(tmp)
        assert not (tmp + os.sep).startswith(os.path.realpath(ROOT) + os.sep), \
            "the temporary folder %s lies inside the checkout: set TMPDIR elsewhere" % tmp
        dist, venv, work = (os.path.join(tmp, name) for name in ("dist", "venv", "work"))
        compiledir = os.path.join(tmp, "compiledir")
        os.mkdir(work)

        # the page's `python -m build`: the sdist, then the wheel built from the unpacked sdist
        _run([sys.executable, "-m", "build", *build_args, "--no-isolation", "--outdir", dist, ROOT],
             "python -m build", cwd=ROOT, timeout=600)
        assert sorted(os.listdir(dist)) == sorted([sdist_name, wheel_name])
        _check_sdist(os.path.join(dist, sdist_name), package_files)
        _check_wheel(os.path.join(dist, wheel_name), package_files, version)

        # the page's `pip install dist/<wheel>`, into a fresh venv of the running interpreter
        _run([sys.executable, "-m", "venv", "--without-pip", venv], "python -m venv", timeout=300)
        python = os.path.join(venv, "bin", "python")
        # nothing may point this venv's python at the checkout or at a user site-packages
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "VIRTUAL_ENV",
                            "FFIGRAPH_COMPILEDIR")}
        env.update(PYTHONNOUSERSITE="1", FFIGRAPH_COMPILEDIR=compiledir)
        # --no-compile: byte-compiling numpy's files at install would double the install's time, and
        # nothing here needs the .pyc files
        _run([sys.executable, "-m", "pip", "--python", python, "install", "--disable-pip-version-check", "-q",
              "--no-compile", os.path.join(dist, wheel_name)], "pip install the wheel", env=env, timeout=600)

        # ffigraph and its header come from the venv's site-packages
        out = _run([python, "-c", "import sysconfig, ffigraph, ffigraph.abi as abi; "
                                  "print(sysconfig.get_paths()['purelib']); print(ffigraph.__file__); "
                                  "print(abi.HEADER_PATH)"],
                   "importing the installed ffigraph", cwd=work, env=env, timeout=300)
        purelib, module, header = (os.path.realpath(p) for p in out.splitlines()[-3:])
        assert module == os.path.join(purelib, "ffigraph", "__init__.py"), (module, purelib)
        assert header == os.path.join(purelib, "ffigraph", "abi", "ffigraph_abi.h") and os.path.isfile(header)

        # examples/demo.py, copied out of the checkout so that nothing of the checkout is on sys.path
        shutil.copy(os.path.join(ROOT, "examples", "demo.py"), work)
        out = _run([python, "demo.py"], "examples/demo.py under the installed wheel", cwd=work, env=env,
                   timeout=300)
        lines = out.splitlines()
        assert lines[0] == "ffigraph %s" % version, out
        assert "matches numpy: True" in lines, out
        assert "function 'demo': linker cvm, mode Mode(linker=cvm, optimizer=fast_run)" in lines, out
        nodes = [line for line in lines if re.match(r"\s+#\d+ ", line)]
        assert nodes and all(line.endswith("[C (whole-graph library)]") for line in nodes), out

        # the console script reads the compile cache the demo filled
        out = _run([os.path.join(venv, "bin", "ffigraph-cache"), "info"], "ffigraph-cache info", cwd=work,
                   env=env, timeout=300)
        location = re.search(r"^location: (.*)$", out, re.M)
        assert location and os.path.realpath(location.group(1)).startswith(compiledir + os.sep), out
        entries = re.search(r"^entries: (\d+)$", out, re.M)
        assert entries and int(entries.group(1)) >= 1, out
