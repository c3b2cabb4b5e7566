"""Sphinx extension: the configuration keys, read from ``ffigraph.config`` at build time.

``.. ffg-config-keys::`` expands to one entry per key of ``ffigraph.config._SPEC``, in its order:
the key, its default (the value where it is fixed, the rule that computes it where it depends on
the machine) and its description. ``config_keys_rst`` is what tests/tools/test_docs_reference.py
checks against the keys ``ffigraph.config`` accepts.
"""
from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective


def _default_text(factory):
    """A fixed default as a literal; a computed one (a named function) by its docstring."""
    if getattr(factory, "__name__", "") == "<lambda>":
        return "``%r``" % (factory(),)
    doc = (factory.__doc__ or "").strip().splitlines()
    return "computed: %s" % (doc[0] if doc else factory.__name__)


def config_keys_rst():
    import importlib

    config_module = importlib.import_module("ffigraph.config")   # the module; ffigraph.config is the object

    spec = config_module._SPEC
    out = ["Set in ``FFIGRAPH_FLAGS`` (``key=value`` items separated by commas), as an attribute of "
           "``ffigraph.config``, or for a block with ``ffigraph.config.change_flags(key=value)``. "
           "Every value is checked when it is set. %d keys:" % len(spec), ""]
    for key, (factory, _check, doc) in spec.items():
        out += [".. py:data:: ffigraph.config.%s" % key, ""]
        out += ["   %s" % doc[0].upper() + doc[1:] + ".", "",
                "   Default: %s" % _default_text(factory), ""]
    return "\n".join(out) + "\n"


class ConfigKeys(SphinxDirective):
    has_content = False

    def run(self):
        import importlib

        self.env.note_dependency(importlib.import_module("ffigraph.config").__file__)
        container = nodes.container()
        self.state.nested_parse(StringList(config_keys_rst().splitlines(), source="ffigraph/config.py"),
                                self.content_offset, container)
        return container.children


def setup(app):
    app.add_directive("ffg-config-keys", ConfigKeys)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
