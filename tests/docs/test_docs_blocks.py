"""Every code block of the tutorial and the guides runs, so no example drifts.

The Docs phase of ``./dev test`` runs every ``>>>`` block of docs/ as a doctest. This test keeps
the pages to blocks that run: on the tutorial pages and docs/extending.rst, Python appears only as
doctest blocks; a C or C++ source is a ``literalinclude`` of a file that a doctest of the same
page compiles (its file name appears on a ``>>>`` line), or of a repository file that a test
runs; ``code-block:: text`` shows output only. Console blocks are allowed on docs/install.rst (its
commands are the ones tests/packaging/test_wheel.py runs) and docs/develop.rst (the test suite's
own commands). It also checks every tutorial page has doctests and is in the tutorial's toctree.
"""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = os.path.join(ROOT, "docs")
TUTORIAL = os.path.join(DOCS, "tutorial")
CONSOLE_ALLOWED = {"install.rst", "develop.rst"}
# repository files a page may show because a test runs them
RUN_BY_TESTS = {
    "examples/dask_map.py": "tests/examples/test_dask_map.py",
    "examples/double_op.py": "tests/examples/test_double.py",
    "examples/mlp_digits.py": "tests/examples/test_mlp_digits.py",
    "examples/logistic_regression.py": "tests/examples/test_logistic_regression.py",
    "examples/gaussian_process.py": "tests/examples/test_gaussian_process.py",
}


def _pages():
    pages = [os.path.join(TUTORIAL, n) for n in sorted(os.listdir(TUTORIAL)) if n.endswith(".rst")]
    return pages + [os.path.join(DOCS, "extending.rst")]


def _directives(text):
    """(directive name, argument, line number) of every ``.. name:: arg`` in text."""
    return [(m.group(1), m.group(2).strip(), text[:m.start()].count("\n") + 1)
            for m in re.finditer(r"^\s*\.\. ([\w-]+)::[ \t]*(.*)$", text, re.M)]


def test_tutorial_and_guide_pages_hold_only_blocks_that_run():
    problems = []
    for page in _pages():
        with open(page) as fh:
            text = fh.read()
        name = os.path.relpath(page, DOCS)
        doctest_lines = "\n".join(l for l in text.splitlines() if l.lstrip().startswith((">>>", "...")))
        for directive, arg, line in _directives(text):
            if directive in ("code-block", "code", "sourcecode"):
                if arg not in ("text", "none") and not (arg == "console" and os.path.basename(page) in CONSOLE_ALLOWED):
                    problems.append("%s:%d: a %r code block runs nowhere (use a doctest)" % (name, line, arg))
            elif directive == "literalinclude":
                target = os.path.normpath(os.path.join(os.path.dirname(page), arg))
                rel = os.path.relpath(target, ROOT)
                if not os.path.exists(target):
                    problems.append("%s:%d: includes %s, which does not exist" % (name, line, rel))
                elif rel in RUN_BY_TESTS:
                    if not os.path.exists(os.path.join(ROOT, RUN_BY_TESTS[rel])):
                        problems.append("%s:%d: %s's test %s is gone" % (name, line, rel, RUN_BY_TESTS[rel]))
                elif os.path.basename(target) not in doctest_lines:
                    problems.append("%s:%d: %s is shown but no doctest of the page uses it" % (name, line, rel))
        # a paragraph ending in "::" starts a literal block, which runs nowhere
        for m in re.finditer(r"^(?!\s*\.\.)(.*\S)::\s*$", text, re.M):
            problems.append("%s:%d: a literal block (%r) runs nowhere" % (name, text[:m.start()].count("\n") + 1,
                                                                          m.group(1)[-40:]))
        if ">>> " not in text:
            problems.append("%s: no doctest at all" % name)
    assert not problems, "\n".join(problems)


def test_every_tutorial_page_is_in_the_toctree():
    with open(os.path.join(TUTORIAL, "index.rst")) as fh:
        index = fh.read()
    listed = re.findall(r"^   (\w+)$", index, re.M)
    pages = sorted(n[:-4] for n in os.listdir(TUTORIAL) if n.endswith(".rst") and n != "index.rst")
    assert sorted(listed) == pages
