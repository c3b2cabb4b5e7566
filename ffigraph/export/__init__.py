"""Export a compiled function as a self-contained C library folder (no Python needed to use it).

``f.export(directory)`` or ``function(..., mode=Mode(linker=CLinker(c_callable=True)))``
write the library, its headers, a Makefile, an example ``main.c``, a ``.npy``
file per shared variable and a README. See ``bundle.py`` for the steps.
"""
from ffigraph.compile.function import set_exporter
# (``name as name``: a re-export, to type checkers too)
from ffigraph.export.bundle import ExportBundle as ExportBundle, export_function as export_function  # noqa: F401
from ffigraph.export.bundle import export_to_cache as export_to_cache, undefined_symbols as undefined_symbols  # noqa

# f.export() and CLinker(c_callable=True) reach this layer through the compile layer's plug
set_exporter(export_function, export_to_cache)
