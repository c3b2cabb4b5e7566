"""Hostile names: variable, shared-variable, function, export and op names never reach generated C,
file names, the Makefile or the README unescaped.

Each name below is used for an input, an output, a shared variable (with an update), the function
and the export. The graph must compute what numpy computes; the generated library source must compile
with -Wall -Werror (no comment closed early, no trigraph, no line splice) and carry no payload outside
comments and string literals; the library's describe() table must give the names back exactly; the
export must write only inside its folder, with file names of a small safe alphabet, and (for a few
representative names) build with make and print what numpy computes.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph.abi import HEADER_PATH
from ffigraph.compile.mode import Mode
from ffigraph.graph import Apply
from ffigraph.graph.op import Op
from ffigraph.linkers.c import COp
from export_helpers import no_python_env

HAVE_TOOLS = all(shutil.which(t) is not None for t in ("gcc", "make"))
needs_tools = pytest.mark.skipif(not HAVE_TOOLS, reason="needs gcc and make")

HOSTILE = {
    "semicolon_abort": "x; abort(); //",
    "close_comment": "*/ abort(); /*",
    "dotdot_path": "../../etc/passwd",
    "abs_path": "/abs/path",
    "newline": "a\nb",
    "quoted": '"quoted"',
    "backslash": "back\\slash",
    "make_shell": "$(shell touch PWNED)",
    "backticks": "`touch PWNED`",
    "format": "%s%n%x",
    "non_ascii": "\u00fcn\u00ef \u2603",
    "empty": "",
    "long": "n" * 10000,
    "trigraph": "??=",
    "nul": "a\0b",
    "splice": "*\\\n/ abort(); /*",
    "trigraph_splice": "*??/\n/ int evil; /*",
    "crlf_hash": "a\r\n# b\t$$ %",
    "lone_surrogate": "s\udcffx",
    "placeholder": "FFG_PREFIX_FFG_SOURCE_HASH",
    "con": "con",
    "main": "main",
    "ffg": "ffg",
    "abi_header": "ffigraph_abi",
    "npy_helper": "ffg_npy",
}
# built with make and run (the rest: files, headers and sources checked only)
MADE = ("semicolon_abort", "splice", "make_shell", "non_ascii", "main")
PAYLOAD = re.compile(r"abort\s*\(|int\s+evil|touch\s+PWNED|\$\(shell|/etc/passwd>")   # as code, not as letters
SAFE_FILE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,80}$")
XVAL = np.array([3.0, -4.5])
SVAL = np.array([1.0, 2.0])


def build(name, mode=None, function_name=None):
    """An input, a shared variable (updated by each call) and an output, all called ``name``."""
    x = T.dvector(name)
    s = ffigraph.shared(SVAL.copy(), name=name)
    y = x * 2 + s
    y.name = name
    f = ffigraph.function([x], y, updates=[(s, s + 1)], name=name if function_name is None else function_name,
                          mode=mode)
    return f, s


# ------------------------------------------------------------------ C text checks


def code_only(src):
    """``src`` with comments and string/char literals removed, as the compiler sees it (line splices
    joined first; trigraphs are checked for separately)."""
    src = src.replace("\\\n", "")
    out, k, n = [], 0, len(src)
    while k < n:
        if src.startswith("/*", k):
            end = src.find("*/", k + 2)
            assert end >= 0, "unterminated comment"
            out.append(" ")
            k = end + 2
        elif src.startswith("//", k):
            end = src.find("\n", k)
            k = n if end < 0 else end
        elif src[k] in "\"'":
            quote, j = src[k], k + 1
            while src[j] != quote:
                assert src[j] != "\n", "newline inside a literal at %r" % src[k:j]
                j += 2 if src[j] == "\\" else 1
            out.append('""')
            k = j + 1
        else:
            out.append(src[k])
            k += 1
    return "".join(out)


def check_c_text(text, where):
    assert text.isascii(), "%s: non-ASCII text (an unescaped name)" % where
    assert "\0" not in text and "\r" not in text, where
    assert not re.search(r"\?\?[=/'()!<>-]", text), "%s: a trigraph" % where
    code = code_only(text)
    assert not PAYLOAD.search(code), "%s: payload outside comments and strings: %r" % (
        where, code[max(0, PAYLOAD.search(code).start() - 80):PAYLOAD.search(code).start() + 80])


def gcc_syntax(path, include_dirs):
    cmd = ["gcc", "-std=c99", "-Wall", "-Wno-unused", "-Werror", "-fsyntax-only"]
    cmd += ["-I" + d for d in include_dirs] + [path]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    assert proc.returncode == 0, proc.stdout[-3000:]


def decoded(name):
    """The name as the library's describe() table gives it back: C strings stop at NUL; text that
    is not valid Unicode (a lone surrogate) travels backslash-escaped."""
    name = name.split("\0")[0]
    return name.encode("utf-8", "backslashreplace").decode("utf-8")


# ------------------------------------------------------------------ folder checks


def snapshot(folder):
    found = {}
    for root, dirs, files in os.walk(folder):
        for entry in dirs + files:
            path = os.path.join(root, entry)
            st = os.lstat(path)
            found[os.path.relpath(path, folder)] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return found


def check_folder(bundle_dir, tmp_path):
    assert sorted(os.listdir(str(tmp_path))) == ["exp"], os.listdir(str(tmp_path))
    for root, dirs, files in os.walk(bundle_dir):
        assert root == bundle_dir and not dirs, "the export has sub-folders: %s %s" % (root, dirs)
        for entry in files:
            assert SAFE_FILE.match(entry), "unsafe file name %r" % entry
            assert not os.path.islink(os.path.join(root, entry)) or entry.startswith("lib")
    assert not any(os.path.basename(p) == "PWNED" for p in snapshot(str(tmp_path)))


def run(argv, cwd, env):
    proc = subprocess.run(argv, cwd=str(cwd), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = proc.stdout.decode("utf-8", "replace")
    assert proc.returncode == 0, "%s exited %d\n%s\n%s" % (argv, proc.returncode, out[-3000:],
                                                           proc.stderr.decode("utf-8", "replace")[-3000:])
    return out


_PRINTED = re.compile(r": float64, shape \((\d+),\)\n\[([^\]]*)\]")


def printed_vectors(text):
    """Every 1-d float64 array the example printed, in order (outputs first, then shared variables)."""
    return [np.array([float(v) for v in body.split()]) for _, body in _PRINTED.findall(text)]


# ------------------------------------------------------------------ the tests


@pytest.mark.parametrize("key", sorted(HOSTILE))
def test_hostile_name_compiles_and_runs(key):
    name = HOSTILE[key]
    for mode in (Mode(linker="c"), None):
        f, s = build(name, mode)
        np.testing.assert_array_equal(f(XVAL), XVAL * 2 + SVAL)
        np.testing.assert_array_equal(s.get_value(), SVAL + 1)
        np.testing.assert_array_equal(f(XVAL), XVAL * 2 + SVAL + 1)
    f, s = build(name, Mode(linker="c"))
    linker = f.maker.linker
    ins, outs = linker.compiled.library.slots()
    # the input, then the shared variable: one name twice, so the second is made unique
    first = name.split("\0")[0]
    expected = [decoded(first), decoded(first + "_1")] if first else ["input0", "shared0"]
    assert [slot[0] for slot in ins] == expected


@needs_tools
@pytest.mark.parametrize("key", sorted(HOSTILE))
def test_hostile_name_generated_source_is_inert(key, tmp_path):
    f, _ = build(HOSTILE[key], Mode(linker="c"))
    src = f.maker.linker.source()
    check_c_text(src, "library source")
    path = tmp_path / "lib.c"
    path.write_text(src)
    gcc_syntax(str(path), [os.path.dirname(HEADER_PATH)])


def check_export_texts(folder, plan):
    """The header, main.c, README and Makefile of ``plan`` in ``folder``: escaped, and main.c
    (which includes the header with the slot map) compiles with -Wall -Werror."""
    for filename in (plan.name + ".h", "main.c"):
        with open(os.path.join(folder, filename)) as fh:
            check_c_text(fh.read(), filename)
    gcc_syntax(os.path.join(folder, "main.c"), [folder])
    with open(os.path.join(folder, "Makefile")) as fh:
        makefile = fh.read()
    assert makefile.isascii() and not PAYLOAD.search(makefile) and "`touch" not in makefile
    with open(os.path.join(folder, "README.md")) as fh:
        readme = fh.read()
    assert readme.isascii()
    rows = [line for line in readme.splitlines() if "the value of shared variable" in line
            or "the example value of input" in line]
    assert len(rows) == len(plan.shared) + len([s for s in plan.inputs if s.file]), rows   # one line each
    for line in rows:
        assert line.count("|") == 3 and line.count("`") == 4, line   # the cells and code spans intact


@needs_tools
@pytest.mark.parametrize("key", sorted(HOSTILE))
def test_hostile_name_export_files_are_safe(key, tmp_path):
    """Every name as export name, function name, input and shared name: the plan's names and the
    texts of the folder (written without building the library, which the tests below do)."""
    from ffigraph.abi import HEADER_NAME
    from ffigraph.export import bundle as bundle_mod
    from ffigraph.export import example_c, files_text, header_c

    name = HOSTILE[key]
    f, _ = build(name, Mode(linker="c"))
    for plan in (bundle_mod.make_plan(f, name=name, example_inputs=[XVAL]), bundle_mod.make_plan(f)):
        assert re.match(r"^[A-Za-z][A-Za-z0-9_]{0,60}$", plan.name), plan.name
        assert plan.name.lower() not in ("main", "ffg_npy", "ffigraph_abi", "example")
        assert not plan.name.lower().startswith("ffg")
        files = [s.file for s in plan.shared + plan.inputs if s.file]
        assert all(SAFE_FILE.match(fn) for fn in files), files
        assert len({fn.lower() for fn in files}) == len(files)
        assert [s.label for s in plan.inputs + plan.shared] == [name, name]
    folder = tmp_path / "texts"
    folder.mkdir()
    shutil.copy(HEADER_PATH, str(folder / HEADER_NAME))
    shutil.copy(os.path.join(bundle_mod.C_DIR, "ffg_npy.h"), str(folder / "ffg_npy.h"))
    build_commands = [["cc", "-O2", "-shared", "-o", "lib%s.so" % plan.name, plan.name + ".c"]]
    for filename, text in ((plan.name + ".h", header_c.header_source(plan)), ("main.c", example_c.main_source(plan)),
                           ("Makefile", files_text.makefile(plan, build_commands)),
                           ("README.md", files_text.readme(plan))):
        (folder / filename).write_text(text)
    check_export_texts(str(folder), plan)


# every name as an input, shared variable, export and function name, five to an export
GROUPS = [sorted(HOSTILE)[k::5] for k in range(5)]


@needs_tools
@pytest.mark.parametrize("group", GROUPS, ids=["group%d" % k for k in range(5)])
def test_hostile_names_export_stays_inside_its_folder(group, tmp_path):
    names = [HOSTILE[key] for key in group]
    xs = [T.dvector(n) for n in names]
    shared = [ffigraph.shared(SVAL * (k + 1), name=n) for k, n in enumerate(names)]
    outs = []
    for k, (x, sv) in enumerate(zip(xs, shared)):
        outs.append(x * 2 + sv)
        outs[-1].name = names[-1 - k]
    f = ffigraph.function(xs, outs, updates=[(sv, sv + 1) for sv in shared], name=names[1], mode=Mode(linker="c"))
    xvals = [XVAL + k for k in range(len(names))]
    parent = os.path.dirname(str(tmp_path))
    before = set(os.listdir(parent))
    cwd_before = set(os.listdir(os.getcwd()))
    for export_name in ([names[0]] if len(group[0]) % 2 else [None]):   # export name given, or the function's
        bundle = f.export(str(tmp_path / "exp"), name=export_name, example_inputs=xvals)
        d = bundle.directory
        check_folder(d, tmp_path)
        assert set(os.listdir(parent)) - before <= set(), "the export wrote beside tmp_path"
        assert set(os.listdir(os.getcwd())) == cwd_before
        for path in [bundle.library, bundle.header, bundle.source, bundle.example_source, bundle.makefile,
                     bundle.readme] + list(bundle.shared_files.values()) + list(bundle.input_files.values()):
            assert os.path.dirname(path) == d and os.path.isfile(path), path
        # labels repeat across kinds, not within: one file each
        assert len(bundle.shared_files) == len(bundle.input_files) == len(set(names))
        for k, n in enumerate(names):
            assert np.array_equal(np.load(bundle.shared_files[n]), SVAL * (k + 1))
            assert np.array_equal(np.load(bundle.input_files[n]), xvals[k])
        with open(bundle.source) as fh:
            check_c_text(fh.read(), bundle.source)
        check_export_texts(d, bundle_plan(f, export_name, xvals))
        with open(os.path.join(d, "ffigraph-export.json")) as fh:
            manifest = json.load(fh)
        assert sorted(manifest["files"]) == sorted(os.listdir(d))


def bundle_plan(f, name, example_inputs):
    from ffigraph.export.bundle import make_plan

    return make_plan(f, name, example_inputs)


@needs_tools
@pytest.mark.parametrize("key", MADE)
def test_hostile_name_export_builds_with_make(key, tmp_path):
    name = HOSTILE[key]
    f, s = build(name, Mode(linker="c"), function_name=name)
    bundle = f.export(str(tmp_path / "exp"), example_inputs=[XVAL])   # name=None: the function's name
    env = no_python_env(tmp_path / "tools")
    run(["make", "-s", "CFLAGS=-O2 -std=c99 -Wall -Werror"], bundle.directory, env)
    out = run(["./example", "-n", "2"], bundle.directory, env)
    shutil.rmtree(str(tmp_path / "tools"))
    got = printed_vectors(out)
    assert len(got) == 2, out
    # two runs from the export-time value of s: the output of the second, then s after two updates
    np.testing.assert_array_equal(got[0], XVAL * 2 + SVAL + 1)
    np.testing.assert_array_equal(got[1], SVAL + 2)
    np.testing.assert_array_equal(f(XVAL), XVAL * 2 + SVAL)   # and the Python call agrees
    np.testing.assert_array_equal(f(XVAL), XVAL * 2 + SVAL + 1)
    assert not any(os.path.basename(p) == "PWNED" for p in snapshot(str(tmp_path)))
    assert not os.path.exists("PWNED")


@needs_tools
def test_names_that_collide_once_escaped_are_made_unique(tmp_path):
    xs = [T.dvector(n) for n in ("p q", "p_q", "P_Q", "p\nq")]
    shared = [ffigraph.shared(np.full(2, float(k + 1)), name=n) for k, n in enumerate(("w w", "w_w", "W_W", "w\0w"))]
    total = xs[0] + xs[1] * 2 + xs[2] * 3 + xs[3] * 4
    for k, sv in enumerate(shared):
        total = total + sv * (10 ** (k + 1))
    f = ffigraph.function(xs, total, name="col lide", mode=Mode(linker="c"))
    vals = [np.array([1.0, 2.0]) * (k + 1) for k in range(4)]
    # numpy: x0 + 2 x1 + 3 x2 + 4 x3 + sum_k s_k 10**(k+1), with s_k = k + 1 everywhere
    expected = vals[0] + vals[1] * 2 + vals[2] * 3 + vals[3] * 4
    for k in range(4):
        expected = expected + np.full(2, float(k + 1)) * (10 ** (k + 1))
    np.testing.assert_array_equal(expected, [43240.0, 43270.0])
    bundle = f.export(str(tmp_path / "exp"), example_inputs=vals)
    check_folder(bundle.directory, tmp_path)
    files = list(bundle.shared_files.values()) + list(bundle.input_files.values())
    assert len({p.lower() for p in files}) == 8   # unique even on a case-blind file system
    with open(bundle.header) as fh:
        header = fh.read()
    macros = re.findall(r"^#define (\w+) ", header, re.M)
    assert len({m.lower() for m in macros}) == len(macros)
    env = no_python_env(tmp_path / "tools")
    run(["make", "-s", "CFLAGS=-O2 -std=c99 -Wall -Werror"], bundle.directory, env)
    got = printed_vectors(run(["./example"], bundle.directory, env))
    np.testing.assert_array_equal(got[0], expected)
    np.testing.assert_array_equal(got[1:], [np.full(2, float(k + 1)) for k in range(4)])


HOSTILE_OP_STR = "Evil*/ abort(); /*\n#include </etc/passwd>\n??/\n*\\\n/ %s%n \"q\" \u2603"


class _EvilBase(COp, Op):
    """Doubles a float64 vector; fails (without a message) on an empty one."""

    __props__ = ()

    def make_node(self, x):
        x = T.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        if inputs[0].size == 0:
            raise ValueError("empty")
        outputs[0][0] = inputs[0] * 2

    def c_code(self, node, name, inputs, outputs, sub):
        (x,), (z,) = inputs, outputs
        return """
        int64_t i, n = %(x)s.shape[0];
        if (n == 0)
            %(fail)s
        if (ffg_alloc_array(&%(z)s, 1, &n, sizeof(double), %(allocator)s, %(err)s))
            %(fail)s
        for (i = 0; i < n; ++i)
            ((double *)%(z)s.data)[i] = 2 * *(double *)((char *)%(x)s.data + i * %(x)s.strides[0] * 8);
        """ % dict(sub, x=x, z=z)

    def c_code_cache_version(self):
        return (1,)

    def __str__(self):
        return HOSTILE_OP_STR


EvilOp = type("Evil*/ abort(); /*", (_EvilBase,), {"__module__": __name__})


@needs_tools
def test_op_names_reach_c_only_escaped(tmp_path):
    x = T.dvector("x\n*/ abort();")
    f = ffigraph.function([x], EvilOp()(x), mode=Mode(linker="c"))
    np.testing.assert_array_equal(f(XVAL), XVAL * 2)
    src = f.maker.linker.source()
    check_c_text(src, "library source")
    (tmp_path / "src").mkdir()
    path = tmp_path / "src" / "lib.c"
    path.write_text(src)
    gcc_syntax(str(path), [os.path.dirname(HEADER_PATH)])
    shutil.rmtree(str(tmp_path / "src"))
    with pytest.raises(Exception) as info:   # the failing node's name comes back intact
        f(np.zeros(0))
    assert "Evil*/ abort(); /*" in str(info.value)
    bundle = f.export(str(tmp_path / "exp"), name=str(EvilOp()))
    check_folder(bundle.directory, tmp_path)
    for text_file in (bundle.header, bundle.source, bundle.example_source):
        with open(text_file) as fh:
            check_c_text(fh.read(), os.path.basename(text_file))
    gcc_syntax(bundle.example_source, [bundle.directory])
