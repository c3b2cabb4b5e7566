"""Sphinx extension: a reference to a re-exported name links to where the name is defined.

The pages write names as users import them (:func:`ffigraph.function`, :class:`ffigraph.RandomStream`,
:func:`ffigraph.tensor.inc_subtensor`); the API reference documents each object once, in the
module that defines it (``ffigraph.compile.function.function``). When Python's reference
domain finds no target, this looks the name up in the package, and tries the object's own
module and qualified name instead.
"""
import pydoc


def _canonical(target):
    obj = pydoc.locate(target)
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if obj is None or not module or not qualname or "<" in qualname:
        return None
    name = "%s.%s" % (module, qualname)
    return name if name != target else None


def resolve_alias(app, env, node, contnode):
    if node.get("refdomain") != "py" or not node.get("reftarget", "").startswith("ffigraph."):
        return None
    canonical = _canonical(node["reftarget"])
    if canonical is None:
        return None
    domain = env.get_domain("py")
    return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], canonical, node, contnode)


def setup(app):
    app.connect("missing-reference", resolve_alias)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
