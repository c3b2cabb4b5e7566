"""The shapes the example program (``main.c``) fills its inputs in when the export ships no value.

The graph constrains its inputs' shapes: an elementwise op wants equal lengths (or 1) on each axis,
``dot`` wants the inner axes equal, a shared variable has the length of its value, a reshape to a
constant shape fixes the number of elements. A small unification over the axes of every variable
(union-find) collects those constraints; each axis left free then gets a length of its own, 3, 4,
5, ... in the order the inputs' axes come. Ops without a rule here give their outputs fresh axes,
so the answer is checked: the export runs the function once on the very values ``main.c`` will
fill in (its shared variables restored afterwards). When that fails for every candidate, the
example says so and takes the shapes from its command line (``-d K=3x4``).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ffigraph.graph.basic import Constant

_DOT_NAMES = ("Dot", "Dot22", "Dot22Scalar", "CDot", "BatchedMatMul")
# BLAS-named products: with two operands a plain dot; with Theano's operand lists, their own rule
_BLAS_NAMES = ("Gemm", "CGemm", "GpuGemm", "Gemv", "CGemv", "GpuGemv", "Ger", "CGer", "Dot22", "Dot22Scalar")
_IDENTITY_NAMES = ("DeepCopyOp", "ViewOp", "OutputGuard", "Rebroadcast", "Unbroadcast", "Assert", "CheckAndRaise",
                   "GpuFromHost", "HostFromGpu", "Contiguous")


class _Dim:
    """One axis length: free, a known int, or computed from other axes (``compute``)."""

    __slots__ = ("parent", "value", "compute")

    def __init__(self, value: Optional[int] = None, compute: Optional[Callable[[], Optional[int]]] = None):
        self.parent: _Dim = self
        self.value, self.compute = value, compute


def _find(d: _Dim) -> _Dim:
    while d.parent is not d:
        d.parent = d.parent.parent
        d = d.parent
    return d


def _fixed(d: _Dim) -> bool:
    return d.value is not None or d.compute is not None


class _Solver:
    def __init__(self) -> None:
        self.conflicts: List[Tuple[_Dim, _Dim]] = []   # both sides known: checked by the run
        self.products: List[Tuple[List[_Dim], int]] = []   # prod(dims) == n (a reshape to a constant shape)
        self.shapes: Dict[Any, Optional[List[_Dim]]] = {}

    def unify(self, a: _Dim, b: _Dim) -> None:
        ra, rb = _find(a), _find(b)
        if ra is rb:
            return
        if _fixed(ra) and _fixed(rb):
            if ra.value is not None and ra.value == rb.value:
                rb.parent = ra
            else:
                self.conflicts.append((ra, rb))
            return
        if _fixed(rb):
            ra, rb = rb, ra
        rb.parent = ra

    def value(self, d: _Dim) -> Optional[int]:
        r = _find(d)
        if r.value is None and r.compute is not None:
            compute, r.compute = r.compute, None   # (no cycle can loop)
            r.value = compute()
            if r.value is None:
                r.compute = compute
        return r.value

    def shape(self, var: Any) -> Optional[List[_Dim]]:
        if var in self.shapes:
            return self.shapes[var]
        if isinstance(var, Constant):
            data = np.asarray(var.data) if hasattr(var.data, "shape") or np.isscalar(var.data) else None
            found = None if data is None else [_Dim(int(s)) for s in data.shape]
        else:
            found = self.fresh(var)
        self.shapes[var] = found
        return found

    def fresh(self, var: Any) -> Optional[List[_Dim]]:
        """Axes of a variable nothing derives: its type's static lengths, the rest free."""
        static = getattr(var.type, "shape", None)
        if static is None:
            return None
        return [_Dim(int(s)) if s is not None else _Dim() for s in static]


def _const(var: Any) -> Any:
    return np.asarray(var.data) if isinstance(var, Constant) else None


def _broadcastable(var: Any, axis: int) -> bool:
    shape = getattr(var.type, "shape", None)
    return shape is not None and shape[axis] == 1


def _elementwise(solver: _Solver, inputs: Sequence[Any], ndim: int) -> Optional[List[_Dim]]:
    """Right-aligned axes of ``inputs``: the ones not fixed to 1 by their type are unified."""
    out: List[Optional[_Dim]] = [None] * ndim
    for var in inputs:
        shape = solver.shape(var)
        if shape is None or len(shape) > ndim:
            continue
        offset = ndim - len(shape)
        for axis, d in enumerate(shape):
            if _broadcastable(var, axis):
                continue
            if out[offset + axis] is None:
                out[offset + axis] = d
            else:
                solver.unify(out[offset + axis], d)  # type: ignore[arg-type]
    return [d if d is not None else _Dim(1) for d in out]


def _axes(op: Any, ndim: int) -> List[int]:
    axis = getattr(op, "axis", None)
    if axis is None:
        return list(range(ndim))
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    return sorted(int(a) % ndim if ndim else 0 for a in axes)


def _reduced(shape: List[_Dim], op: Any, out_ndim: int) -> List[_Dim]:
    axes = _axes(op, len(shape))
    if out_ndim == len(shape):   # keepdims
        return [_Dim(1) if a in axes else d for a, d in enumerate(shape)]
    return [d for a, d in enumerate(shape) if a not in axes]


def _dot(solver: _Solver, x: List[_Dim], y: List[_Dim]) -> Optional[List[_Dim]]:
    if not x or not y:
        return x + y
    solver.unify(x[-1], y[0] if len(y) == 1 else y[-2])
    if len(x) > 2 and len(y) > 2 and len(x) == len(y):   # batched: leading axes pair up
        for a, b in zip(x[:-2], y[:-2]):
            solver.unify(a, b)
        return x[:-1] + [y[-1]]
    return x[:-1] + y[:-2] + y[-1:]


def _product(solver: _Solver, dims: Sequence[_Dim]) -> Optional[int]:
    total = 1
    for d in dims:
        v = solver.value(d)
        if v is None:
            return None
        total *= v
    return total


def _node_rule(solver: _Solver, node: Any) -> Optional[List[Optional[List[_Dim]]]]:
    """The output axes of ``node`` from its inputs' (constraints recorded on the way), or None."""
    op, name = node.op, type(node.op).__name__
    if name.startswith("Gpu") and name not in ("GpuFromHost",):   # a GPU op follows its host twin's rule
        name = name[3:]
    outs = node.outputs
    ins: List[Any] = [solver.shape(v) for v in node.inputs]   # (a list of _Dim, or None, each)
    out_ndim = [len(getattr(o.type, "shape", ()) or ()) for o in outs]
    if name in _IDENTITY_NAMES and ins and ins[0] is not None:
        return [ins[0]] + [None] * (len(outs) - 1)
    if name in ("Elemwise", "FusedElemwise") or (name.startswith("Elemwise") and hasattr(op, "scalar_op")):
        shape = _elementwise(solver, node.inputs, out_ndim[0])
        return [shape for _ in outs]
    if name in ("Reduce", "ArgReduce", "FusedReduce", "CAReduce", "Sum", "Prod", "MaxAndArgmax") \
            and len(node.inputs) >= 1:
        ndim = len(getattr(node.inputs[0].type, "shape", ()))
        shape = _elementwise(solver, node.inputs, ndim) if name == "FusedReduce" else ins[0]
        if shape is None:
            return None
        return [_reduced(shape, op, n) for n in out_ndim]
    if name == "DimShuffle" and ins[0] is not None:
        return [[_Dim(1) if a == "x" else ins[0][a] for a in op.new_order]]
    if (name in _DOT_NAMES or (name in _BLAS_NAMES and len(ins) == 2)) and len(ins) >= 2 \
            and ins[0] is not None and ins[1] is not None:
        return [_dot(solver, ins[0], ins[1])]
    if name in ("Gemm", "CGemm") and len(ins) == 5 and None not in ins:   # z <- b z + a x y
        z, x, y = ins[0], ins[2], ins[3]
        solver.unify(x[1], y[0])
        solver.unify(z[0], x[0])
        solver.unify(z[1], y[1])
        return [z]
    if name in ("Gemv", "CGemv") and len(ins) == 5 and None not in ins:   # z <- b z + a A x
        z, a, x = ins[0], ins[2], ins[3]
        solver.unify(a[1], x[0])
        solver.unify(z[0], a[0])
        return [z]
    if name in ("Ger", "CGer") and len(ins) == 4 and None not in ins:   # A <- A + a x y^T
        a, x, y = ins[0], ins[2], ins[3]
        solver.unify(a[0], x[0])
        solver.unify(a[1], y[0])
        return [a]
    if name == "SpecifyShape" and ins[0] is not None:
        shape = list(ins[0])
        for a, size in zip(getattr(op, "checked", ()), node.inputs[1:]):
            value = _const(size)
            if value is not None:
                solver.unify(shape[a], _Dim(int(value)))
        return [shape]
    if name == "Reshape" and ins[0] is not None:
        target = _const(node.inputs[1])
        if target is None:
            return None
        source = ins[0]
        known = [int(s) for s in target if s >= 0]
        if len(known) == len(target):
            solver.products.append((source, int(np.prod(known, dtype=np.int64))))
            return [[_Dim(s) for s in known]]
        rest = int(np.prod(known, dtype=np.int64)) if known else 1

        def inferred() -> Optional[int]:
            total = _product(solver, source)
            return None if total is None or rest == 0 else total // rest

        return [[_Dim(int(s)) if s >= 0 else _Dim(compute=inferred) for s in target]]
    if name == "Alloc":
        dims = []
        for size in node.inputs[1:]:
            value = _const(size)
            dims.append(_Dim(int(value)) if value is not None else _Dim())
        if ins[0] is not None and len(ins[0]) <= len(dims):
            offset = len(dims) - len(ins[0])
            for axis, d in enumerate(ins[0]):
                if not _broadcastable(node.inputs[0], axis):
                    solver.unify(dims[offset + axis], d)
        return [dims]
    if name == "Join" and None not in ins and ins:
        axis = int(getattr(op, "axis", 0)) % len(ins[0])
        for shape in ins[1:]:
            for a, (d, e) in enumerate(zip(ins[0], shape)):
                if a != axis:
                    solver.unify(d, e)
        parts = [shape[axis] for shape in ins]
        out = list(ins[0])
        out[axis] = _Dim(compute=lambda: _product_sum(solver, parts))
        return [out]
    return None


def _product_sum(solver: _Solver, parts: Sequence[_Dim]) -> Optional[int]:
    values = [solver.value(d) for d in parts]
    return None if None in values else sum(values)  # type: ignore[arg-type]


def solve(fgraph: Any, n_inputs: int, shared_values: Sequence[Any],
          given: Sequence[Optional[Tuple[int, ...]]]) -> Tuple[List[Optional[List[_Dim]]], _Solver]:
    """The axes of each input of ``fgraph`` after unifying what its nodes ask (``given``: the shape
    of an input whose value is shipped, or None)."""
    solver = _Solver()
    for k, var in enumerate(fgraph.inputs):
        if k < n_inputs and given[k] is not None:
            solver.shapes[var] = [_Dim(int(s)) for s in given[k]]  # type: ignore[union-attr]
        elif k >= n_inputs:
            shape = getattr(shared_values[k - n_inputs], "shape", None)
            solver.shapes[var] = None if shape is None else [_Dim(int(s)) for s in shape]
        else:
            solver.shapes[var] = solver.fresh(var)
    for node in fgraph.toposort():
        try:
            outs = _node_rule(solver, node)
        except (TypeError, ValueError, IndexError, AttributeError):
            outs = None   # (a rule that does not fit this node: its outputs are free)
        for k, out in enumerate(node.outputs):
            shape = outs[k] if outs is not None and k < len(outs) else None
            ndim = len(getattr(out.type, "shape", ()) or ())
            if shape is None or len(shape) != ndim:
                shape = solver.fresh(out)
            else:   # the output's own static lengths hold too
                for axis, s in enumerate(getattr(out.type, "shape", ())):
                    if s is not None:
                        solver.unify(shape[axis], _Dim(int(s)))
            solver.shapes[out] = shape
    return [solver.shapes.get(v) for v in fgraph.inputs[:n_inputs]], solver


def _assign(solver: _Solver, dims: List[Optional[List[_Dim]]], sizes: Callable[[int], int]) -> None:
    """Give every free axis a length: first the reshapes' element counts, then ``sizes(k)`` for the
    k-th free axis met in input order."""
    for source, total in solver.products:
        free = [d for d in {id(_find(d)): _find(d) for d in source}.values() if not _fixed(d)]
        known = 1
        for d in source:
            if _fixed(_find(d)):
                v = solver.value(d)
                known *= v if v is not None else 1
        if not free or known == 0 or total % known:
            continue
        rest = total // known
        for d in free[:-1]:
            d.value = 1
        free[-1].value = rest
    k = 0
    for shape in dims:
        for d in shape or ():
            r = _find(d)
            if not _fixed(r):
                r.value = sizes(k)
                k += 1


def candidate_shapes(fgraph: Any, n_inputs: int, shared_values: Sequence[Any],
                     given: Sequence[Optional[Tuple[int, ...]]]) -> List[List[Optional[Tuple[int, ...]]]]:
    """Shapes to try for the inputs, best first: the solved ones with free axes of lengths 3, 4, 5,
    ...; the solved ones with every free axis 3; the former fill (axis d of length 3 + d)."""
    found = []
    for sizes in (lambda k: 3 + k, lambda k: 3):
        dims, solver = solve(fgraph, n_inputs, shared_values, given)
        _assign(solver, dims, sizes)
        shapes: List[Optional[Tuple[int, ...]]] = []
        for k, shape in enumerate(dims):
            if given[k] is not None or shape is None:
                shapes.append(given[k])
                continue
            values = [solver.value(d) for d in shape]
            shapes.append(tuple(v if v is not None and v >= 0 else 3 + a for a, v in enumerate(values)))
        found.append(shapes)
    legacy = []
    for k, var in enumerate(fgraph.inputs[:n_inputs]):
        static = getattr(var.type, "shape", None)
        legacy.append(given[k] if given[k] is not None or static is None else
                      tuple(s if s is not None else 3 + d for d, s in enumerate(static)))
    found.append(legacy)
    unique = []
    for shapes in found:
        if shapes not in unique:
            unique.append(shapes)
    return unique


def fill_value(shape: Tuple[int, ...], dtype: Any) -> np.ndarray:
    """What ``main.c`` fills an input with: 0, 1, 2, ... in C order (bools: k % 2; integers: the low
    bytes of k)."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    k = np.arange(n, dtype=np.int64)
    if dtype.kind == "b":
        values = (k % 2).astype(np.bool_)
    elif dtype.kind in "iu":
        values = k.astype(np.uint64).astype(dtype)   # (wraps: the low bytes)
    else:
        values = k.astype(dtype)
    return values.reshape(shape)


def check_shapes(f: Any, shapes: Sequence[Optional[Tuple[int, ...]]],
                 values: Sequence[Optional[np.ndarray]]) -> Optional[str]:
    """Run ``f`` once on ``main.c``'s fill in ``shapes`` (``values``: the shipped example inputs);
    None when it runs, else the error. Its shared variables get copies of their values for the run
    and their own values back afterwards, so the run changes no state."""
    args = []
    for k, spec in enumerate(f.maker.inputs):
        if values[k] is not None:
            args.append(values[k])
            continue
        vtype = spec.variable.type
        dtype = getattr(vtype, "numpy_dtype", None)
        if dtype is None or shapes[k] is None:
            return "input %d has no array type to fill" % k
        args.append(fill_value(shapes[k], dtype))  # type: ignore[arg-type]
    cells = list(f._shared_cells)
    saved = [cell[0] for cell in cells]
    try:
        for cell, var in zip(cells, f._shared_vars):
            copy_value = getattr(var.type, "copy_value", None)
            if copy_value is not None and cell[0] is not None:
                cell[0] = copy_value(cell[0])
        f._call_generic(args, {})
    except Exception as err:   # (any failure means: not these shapes)
        return "%s: %s" % (type(err).__name__, str(err).split("\n")[0])
    finally:
        for cell, value in zip(cells, saved):
            cell[0] = value
    return None


def default_input_shapes(f: Any, example_values: Sequence[Optional[np.ndarray]],
                         check: bool = True) -> Tuple[List[Optional[Tuple[int, ...]]], Optional[str]]:
    """(shape per input, None) with shapes the graph accepts for ``main.c``'s fill, checked by a
    run of ``f``; when no candidate runs, (the first candidate, why it failed)."""
    fgraph = f.maker.fgraph
    n_in = len(f.maker.inputs)
    given = [None if v is None else tuple(np.shape(v)) for v in example_values]
    shared_values = [cell[0] for cell in f._shared_cells]
    candidates = candidate_shapes(fgraph, n_in, shared_values, given)
    if not check or all(v is not None for v in example_values):
        return candidates[0], None
    first_error = None
    for shapes in candidates:
        error = check_shapes(f, shapes, example_values)
        if error is None:
            return shapes, None
        if first_error is None:
            first_error = error
    return candidates[0], first_error
