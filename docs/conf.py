"""Sphinx configuration of ffigraph's documentation.

Build:  sphinx-build -W -b html docs docs/_build/html   (./dev test runs it as its Docs phase)
Every ``>>>`` block of the pages runs as a doctest: pytest --doctest-glob='*.rst' docs
"""
import os
import socket
import sys

DOCS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(DOCS)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(DOCS, "_ext"))

import ffigraph  # noqa: E402  (after the path set-up)

project = "ffigraph"
author = "the ffigraph developers"
copyright = "2026, the ffigraph developers"
release = version = ffigraph.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.intersphinx",
    "sphinx.ext.viewcode",
    "ffg_api_pages",          # one page per module of the package (docs/reference/api/)
    "ffg_aliases",            # ffigraph.function and other re-exported names link to their definition
    "ffg_abi_reference",      # the ABI reference, read from ffigraph/abi/ffigraph_abi.h
    "ffg_config_reference",   # the configuration keys, read from ffigraph.config
    "ffg_tensor_names",       # the table of ffigraph.tensor's names (tools/tensor_table.py)
    "ffg_figures",            # :ffg-figure:`group.name`: sizes and times measured at build time
]

exclude_patterns = ["_build", "layers.md", "**/c/*.c", "**/c/*.cpp"]
templates_path = []
html_theme = "alabaster"
html_static_path = []
html_theme_options = {"description": "Theano-style graphs, compiled to plain C"}
pygments_style = "sphinx"
highlight_language = "none"   # docstrings' indented tables are plain text; >>> blocks are pycon

# API reference: one page per module (ffg_api_pages), its members documented by autodoc
autodoc_default_options = {
    "members": True,
    "show-inheritance": True,
    # a name is documented in the module that defines it, not in each package that re-exports it
    "ignore-module-all": True,
}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_mock_imports = ["pycuda"]          # the optional CUDA extra; its ops still document
napoleon_google_docstring = False
napoleon_numpy_docstring = True


def _online(host="numpy.org", port=443, timeout=3.0):
    """True when the inventories of the projects below can be fetched (CI machines may be offline)."""
    try:
        socket.create_connection((host, port), timeout=timeout).close()
        return True
    except OSError:
        return False


# Links into numpy's, cffi's and Dask's references. Offline (no route to their sites), the
# mapping is left empty so that -W does not fail on an unreachable inventory: such names are
# then plain text.
intersphinx_mapping = {
    "python": ("https://docs.python.org/3", None),
    "numpy": ("https://numpy.org/doc/stable", None),
    "cffi": ("https://cffi.readthedocs.io/en/stable", None),
    "dask": ("https://docs.dask.org/en/stable", None),
    "distributed": ("https://distributed.dask.org/en/stable", None),
}
if os.environ.get("FFIGRAPH_DOCS_OFFLINE") == "1" or not _online():
    print("conf.py: no network: intersphinx links to numpy, cffi and Dask are off in this build")
    intersphinx_mapping = {}
