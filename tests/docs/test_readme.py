"""The README is an overview: its Status items each link to the documentation page that shows
the feature (a page whose doctests run), its example runs, and it names no package index that
ffigraph is not published on."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _readme():
    with open(os.path.join(ROOT, "README.md")) as fh:
        return fh.read()


def test_every_status_item_links_to_a_tested_docs_page():
    text = _readme()
    status = text.split("\n## Status\n")[1].split("\n## ")[0]
    items = re.split(r"\n- ", "\n" + status.split("\n- ", 1)[1])[1:]
    assert len(items) >= 15
    for item in items:
        links = re.findall(r"\]\((docs/[^)]+\.rst)\)", item)
        assert links, "a Status item links to no documentation page: %r" % item[:80]
        for link in links:
            path = os.path.join(ROOT, link)
            assert os.path.exists(path), link
            with open(path) as fh:
                page = fh.read()
            assert ">>> " in page or ".. ffg-" in page, "%s has no doctest (and is not generated)" % link


def test_every_docs_link_of_the_readme_exists():
    for link in re.findall(r"\]\((docs/[^)#]+)\)", _readme()):
        assert os.path.exists(os.path.join(ROOT, link)), link


def test_no_install_from_an_index():
    text = _readme()
    assert not re.search(r"pip install (-U )?ffigraph\b", text)
    with open(os.path.join(ROOT, "docs", "install.rst")) as fh:
        install = fh.read()
    for line in install.splitlines():
        if re.search(r"\$ .*pip install (-U )?ffigraph\b", line):
            raise AssertionError("docs/install.rst installs from an index: %r" % line)


def test_the_readme_example_runs(tmp_path):
    block = re.search(r"```python\n(.*?)```", _readme(), re.S).group(1)
    out = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True, cwd=str(tmp_path),
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == "[[1. 3.71828183 6.43656366] [1. 3.71828183 6.43656366]]".split()


def test_the_readme_installs_as_the_install_page_does():
    """The README's install commands are the ones docs/install.rst gives (and test_wheel.py runs)."""
    commands = re.search(r"## Installing\n.*?```\n(.*?)```", _readme(), re.S).group(1)
    commands = [line.split("#")[0].strip() for line in commands.splitlines() if line.strip()]
    assert commands == ["pip install .", "python -m build", "pip install dist/ffigraph-0.1.0-py3-none-any.whl"]
    with open(os.path.join(ROOT, "docs", "install.rst")) as fh:
        install = fh.read()
    for command in commands:
        assert "   $ %s\n" % command in install, command
