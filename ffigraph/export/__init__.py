"""Export a compiled function as a self-contained C library folder (no Python needed to use it).

``f.export(directory)`` or ``function(..., mode=Mode(linker=CLinker(c_callable=True)))``
write the library, its headers, a Makefile, an example ``main.c``, a ``.npy``
file per shared variable and a README. See ``bundle.py`` for the steps.
"""
from ffigraph.compile.function import set_exporter
from ffigraph.export.bundle import ExportBundle, export_function, export_to_cache, undefined_symbols  # noqa: F401

# f.export() and CLinker(c_callable=True) reach this layer through the compile layer's plug
set_exporter(export_function, export_to_cache)
