"""Sphinx extension: the configuration keys, read from ``ffigraph.config`` at build time.

``.. ffg-config-keys::`` expands to one entry per key of ``ffigraph.config._SPEC``, in its order:
the key, its default (the value where it is fixed, the rule that computes it where it depends on
the machine) and its description. ``config_keys_rst`` is what tests/tools/test_docs_reference.py
checks against the keys ``ffigraph.config`` accepts.
"""
import importlib

from ffg_generated import GeneratedRst


def _default_text(factory):
    """A fixed default as a literal; a computed one (a named function) by its docstring."""
    if getattr(factory, "__name__", "") == "<lambda>":
        return "``%r``" % (factory(),)
    doc = (factory.__doc__ or "").strip().splitlines()
    return "computed: %s" % (doc[0] if doc else factory.__name__)


def config_keys_rst():
    spec = importlib.import_module("ffigraph.config")._SPEC   # the module (ffigraph.config is the object)
    out = ["Set in ``FFIGRAPH_FLAGS`` (``key=value`` items separated by commas), as an attribute of "
           "``ffigraph.config``, or for a block with ``ffigraph.config.change_flags(key=value)``. "
           "Every value is checked when it is set. %d keys:" % len(spec), ""]
    for key, (factory, _check, doc) in spec.items():
        out += [".. py:data:: ffigraph.config.%s" % key, ""]
        out += ["   %s" % doc[0].upper() + doc[1:] + ".", "",
                "   Default: %s" % _default_text(factory), ""]
    return "\n".join(out) + "\n"


class ConfigKeys(GeneratedRst):
    def source(self):
        return importlib.import_module("ffigraph.config").__file__

    def rst(self):
        return config_keys_rst()


def setup(app):
    app.add_directive("ffg-config-keys", ConfigKeys)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
