"""The names mypy sees equal the names Python makes.

``ffigraph.tensor.basic`` makes its constructors (``dmatrix``, ``fvectors``, ...) and part of its
``__all__`` in loops, which mypy does not run: an ``if TYPE_CHECKING:`` block declares them again
for it. These tests fail when the two drift apart (mypy.ini, tests/typecheck/public_api_usage.py).
"""
import ast
import inspect

import ffigraph.tensor as pt
from ffigraph.tensor import basic


def _module_tree(module):
    return ast.parse(inspect.getsource(module))


def _is_type_checking_block(node):
    return isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def _literal_all(statements):
    """The names of ``__all__ = [...]`` and ``__all__ += [...]`` with literal lists: what mypy reads."""
    names = []
    for node in statements:
        target = value = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add):
            target, value = node.target, node.value
        if isinstance(target, ast.Name) and target.id == "__all__" and isinstance(value, (ast.List, ast.Tuple)):
            names += [ast.literal_eval(e) for e in value.elts]
    return names


def _type_checking_statements(tree):
    return [stmt for node in tree.body if _is_type_checking_block(node) for stmt in node.body]


def _assigned_names(statements):
    names = set()
    for node in statements:
        if isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def test_mypy_reads_the_same_all_as_python():
    tree = _module_tree(basic)
    seen_by_mypy = _literal_all(tree.body) + _literal_all(_type_checking_statements(tree))
    assert sorted(seen_by_mypy) == sorted(basic.__all__)
    assert len(seen_by_mypy) == len(set(seen_by_mypy))


def test_every_generated_constructor_is_declared_for_mypy():
    statements = _type_checking_statements(_module_tree(basic))
    declared = _assigned_names(statements)
    generated = set(_literal_all(statements))   # the names only the loops make
    # what the blocks declare beside them are aliases for annotations (TensorLike, ...), unknown at run time
    assert {name for name in declared if hasattr(basic, name)} == generated
    for name in generated:
        assert callable(getattr(basic, name)), name
        assert getattr(pt, name) is getattr(basic, name), name


def test_declared_kinds_make_what_they_say():
    # the declarations chain each generated name to a constructor of the same kind: check a few
    assert pt.dmatrix("x").type.ndim == 2 and pt.dmatrix("x").dtype == "float64"
    assert pt.zcol().type.shape == (None, 1) and pt.zcol().dtype == "complex128"
    assert pt.btensor7().type.ndim == 7 and pt.btensor7().dtype == "int8"
    assert [v.dtype for v in pt.ltensor3s(2)] == ["int64", "int64"]
    assert [v.type.shape for v in pt.frows("a", "b")] == [(1, None), (1, None)]
