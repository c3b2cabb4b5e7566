"""Doctest set-up of the documentation: every page's ``>>>`` blocks run in a fresh folder.

``pytest --doctest-glob='*.rst' docs`` (the Docs phase of ``./dev test``) runs each page as one
doctest: its blocks share one namespace, in order. Files a page writes (pictures, exports) land in
a temporary folder that is the working directory while the page runs.
"""
import pytest


@pytest.fixture(autouse=True)
def _page_in_tmp_folder(tmp_path, monkeypatch):
    # the files a page writes land here, not in the checkout; the pages' expected numbers are
    # compared as text (setup.cfg's doctest_optionflags has no NUMBER)
    monkeypatch.chdir(tmp_path)
