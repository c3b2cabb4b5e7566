"""The table of what ``ffigraph.tensor`` offers, from ``ffigraph.tensor.__all__``.

Every public name, grouped by the module that defines it. The documentation's page
docs/reference/tensor_names.rst is built from ``table_rst()`` (the ``ffg-tensor-names`` directive
of docs/_ext/ffg_tensor_names.py), so the table is never typed by hand and never out of date;
tests/tools/test_tensor_table.py checks that it lists every name.

Run:  python tools/tensor_table.py      (prints the table's reStructuredText)
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

# module -> the table's group (modules not named here go to "Other")
GROUPS = [
    ("ffigraph.tensor.basic", "Types, constructors, building"),
    ("ffigraph.tensor.type", "Types, constructors, building"),
    ("ffigraph.tensor.variable", "Types, constructors, building"),
    ("ffigraph.tensor.elemwise", "Types, constructors, building"),
    ("ffigraph.tensor.construct", "Construction"),
    ("ffigraph.tensor.math", "Elementwise, reductions, dot"),
    ("ffigraph.tensor.special", "Elementwise, reductions, dot"),
    ("ffigraph.tensor.statistics", "Statistics"),
    ("ffigraph.tensor.extra_ops", "Cumulative, counting, searching"),
    ("ffigraph.tensor.sort", "Sorting"),
    ("ffigraph.tensor.products", "Products"),
    ("ffigraph.tensor.shapes", "Shape and layout"),
    ("ffigraph.tensor.layout", "Shape and layout"),
    ("ffigraph.tensor.sum_to_shape", "Shape and layout"),
    ("ffigraph.tensor.subtensor", "Indexing"),
    ("ffigraph.tensor.advanced_subtensor", "Indexing"),
    ("ffigraph.tensor.gradient", "Gradients"),
]


def _module_of(tensor, name):
    obj = getattr(tensor, name)
    module = getattr(obj, "__module__", None) if callable(obj) else None
    return module


def groups():
    """[(group, [(name, defining module or None), ...]), ...] in the table's order."""
    import ffigraph.tensor as T

    order = []
    for _, group in GROUPS:
        if group not in order:
            order.append(group)
    order.append("Other")
    group_of = dict(GROUPS)
    names = {group: [] for group in order}
    for name in dict.fromkeys(T.__all__):   # (no repeats, first place kept)
        module = _module_of(T, name)
        names[group_of.get(module, "Other")].append((name, module))
    return [(group, names[group]) for group in order if names[group]]


def table_rst(target=None):
    """The reStructuredText of the table: one row per group, each name linked to its entry in the
    API reference, in ``__all__``'s order. ``target(name)`` names the Python object a name links
    to (the docs pass the entries of the ``ffigraph.tensor`` page, docs/_ext/ffg_api_pages.py);
    without it, a name links to the module that defines it."""
    rows = groups()
    count = sum(len(names) for _, names in rows)
    out = ["%d names in ``ffigraph.tensor.__all__``, grouped by the module that defines them:" % count, "",
           ".. list-table::", "   :header-rows: 1", "   :widths: 20 80", "", "   * - group", "     - names"]
    for group, names in rows:
        cells = []
        for name, module in names:
            if target is not None:
                cells.append(":py:obj:`%s <%s>`" % (name, target(name)))
            elif module and module.startswith("ffigraph"):
                cells.append(":py:obj:`%s <%s.%s>`" % (name, module, name))
            else:
                cells.append("``%s``" % name)
        out += ["   * - %s" % group, "     - %s" % ", ".join(cells)]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    print(table_rst())
