"""``function``: from symbolic inputs and outputs to a Python callable.

The pipeline, in order:
  1. normalise inputs (In), outputs (Out), updates and givens;
  2. find the shared variables the graph reads, as implicit inputs, and their default updates;
  3. build a FunctionGraph (a private copy of the graph);
  4. rewrite it (mode.optimizer);
  5. insert DeepCopyOp where an output could alias an input not lent to it, a constant or another output;
  6. link it (mode.linker) into a thunk and storage cells;
  7. wrap it in a ``Function`` that filters arguments, runs, returns outputs, applies updates.
"""
from __future__ import annotations

import functools
import linecache
import os
import sys
from time import perf_counter as _perf_counter
from typing import (TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Literal, Mapping, Optional, Protocol,
                    Sequence, Set, Tuple, TypeVar, Union)

import numpy as np

from ffigraph.compile.calllock import OwnedLock, give_back, held_lines, holding, reentered, take, update_lock_of
from ffigraph.compile.io import In, Out, type_mismatch
from ffigraph.compile.mode import Mode, get_mode
from ffigraph.tensor.generic_ops import deep_copy_op
from ffigraph.tensor.scalar_graph import as_tensor_graph
from ffigraph.compile.builders import inline_graphs, put_in_place
from ffigraph.scalar.type import ScalarType
from ffigraph.compile.profiling import CompileTimes, ProfileStats, compile_phase, print_at_exit, \
    recording_compile_times
from ffigraph.compile.sharedvalue import SharedVariable
from ffigraph.linkers.basic import Container
from ffigraph.graph.basic import Constant, Variable, clone_get_equiv, clone_replace, debug_print, graph_inputs, \
    set_function_builder
from ffigraph.config import config
from ffigraph.graph.fg import FunctionGraph, MissingInputError

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ffigraph.graph.basic import Apply
    from ffigraph.linkers.basic import Linker

    # the keys of updates and givens: a TypeVar, since a dict's key type is invariant (a
    # {TensorSharedVariable: ...} is no Mapping[SharedVariable, ...])
    _S = TypeVar("_S", bound=SharedVariable)
    _V = TypeVar("_V", bound=Variable)
    Cell = List[Any]   # a storage cell: a one-element list
    StrPath = Union[str, "os.PathLike[str]"]

    class ExportedLibrary(Protocol):
        """What ``Function.export`` returns (``ffigraph.export.ExportBundle``, from the layer above
        this one): the absolute paths of the export folder's files."""

        @property
        def directory(self) -> str: ...
        @property
        def name(self) -> str: ...
        @property
        def library(self) -> str: ...
        @property
        def header(self) -> str: ...
        @property
        def source(self) -> str: ...
        @property
        def example_source(self) -> str: ...
        @property
        def makefile(self) -> str: ...
        @property
        def readme(self) -> str: ...
        @property
        def shared_files(self) -> Mapping[str, str]: ...
        @property
        def input_files(self) -> Mapping[str, str]: ...
        @property
        def cuda_source(self) -> Optional[str]: ...
        @property
        def fill_shapes(self) -> Mapping[str, Tuple[int, ...]]: ...
        @property
        def fill_shapes_problem(self) -> Optional[str]: ...


def function(inputs: Optional[Sequence[Union[Variable, In]]],
             outputs: Union[Variable, Out, Sequence[Union[Variable, Out]], None] = None,
             updates: Union[Mapping[_S, Any], Iterable[Tuple[SharedVariable, Any]], None] = None,
             givens: Union[Mapping[_V, Any], Iterable[Tuple[Variable, Any]], None] = None,
             mode: Union[Mode, str, None] = None,
             name: Optional[str] = None, trust_input: bool = False, allow_input_downcast: Optional[bool] = None,
             on_unused_input: str = "raise", profile: Optional[bool] = None,
             no_default_updates: Union[bool, Iterable[SharedVariable]] = False,
             rebuild_strict: bool = True, accept_inplace: bool = False) -> Function:
    """Compile a callable computing ``outputs`` from ``inputs``.

    The third positional argument may also be the mode, in Theano's and PyTensor's order
    ``function(inputs, outputs, mode, updates, givens)`` (a Mode or a mode name is never updates).
    rebuild_strict: as PyTensor's, whether a ``givens`` replacement must have the type of what it
    replaces (False: the nodes that read it are made again, with the types that follow).
    accept_inplace: accepted for PyTensor's signature (graphs with inplace nodes are always taken).

    inputs: free variables or In specs; an input may also be an intermediate variable of the
    graph, which cuts the graph there, as in Theano and PyTensor: its value is given, and what
    only feeds it is neither computed nor read (nor are its shared variables' default updates
    applied).

    outputs: a Variable (the call returns one value), a list (returns a list),
    or None. updates: (shared, new_value) pairs applied after each call.
    givens: (variable, replacement) pairs substituted before compiling.
    mode: a Mode or a mode name; None follows ``config.mode`` (by default ``'Mode'``:
    ``config.linker`` and ``config.optimizer``).
    profile: True records every call and node (``f.profile``, a ProfileStats);
    None follows ``config.profile``. Off, the function and its C carry no timing code.
    no_default_updates: as in PyTensor, the ``default_update`` of every shared
    variable the graph reads is applied after each call, unless ``updates`` has
    one for it; True applies none, a list of shared variables skips those.
    """
    if isinstance(updates, (Mode, str)):   # function(inputs, outputs, mode, updates, givens)
        updates, givens, mode = givens, mode, updates
    if profile is None:
        profile, from_config = config.profile, config.profile
    elif isinstance(profile, bool):
        from_config = False
    else:
        raise TypeError("function(profile=...) must be True, False or None, got %r" % (profile,))
    times = CompileTimes()
    with recording_compile_times(times):
        f = _compile(inputs, outputs, updates, givens, mode, name, trust_input, allow_input_downcast,
                     on_unused_input, profile, no_default_updates, rebuild_strict)
    f.maker.compile_times = times
    f.maker.settings = config.snapshot()   # the settings it was compiled under (a pickle carries them)
    # what pickling the function keeps: the arguments, to compile it again where it is unpickled
    f._recipe = dict(inputs=inputs, outputs=outputs, updates=updates, givens=givens, mode=mode, name=name,
                     trust_input=trust_input, allow_input_downcast=allow_input_downcast,
                     on_unused_input=on_unused_input, profile=bool(profile), no_default_updates=no_default_updates,
                     rebuild_strict=rebuild_strict)
    if profile:
        f.profile.compile_times = times  # type: ignore[union-attr]  # a ProfiledFunction's
        if from_config:
            print_at_exit(f.profile)
    return f


def _compile(inputs: Any, outputs: Any, updates: Any, givens: Any, mode: Any, name: Optional[str],
             trust_input: bool, allow_input_downcast: Optional[bool], on_unused_input: str, profile: bool,
             no_default_updates: Any = False, rebuild_strict: bool = True) -> Function:
    ins = _normalise_inputs(inputs, allow_input_downcast)
    outs, single = _normalise_outputs(outputs)
    upd = _normalise_updates(updates)
    if upd:
        _note_update_site([s for s, _ in upd])
    # An input computed by the graph cuts it there, as in Theano and PyTensor: the variable is
    # given, and what only feeds it is not computed (nor are its shared variables read).
    cut = [i.variable for i in ins]
    skip_defaults = _normalise_no_default_updates(no_default_updates)
    out_vars = [o.variable for o in outs]
    upd_values = [v for _, v in upd]
    # In(x, value=..., update=...): the function keeps x's new value; computed as outputs after the
    # shared variables' updates
    in_upd = _normalise_input_updates(ins)
    in_upd_values = [v for _, v in in_upd]
    given_pairs = _normalise_givens(givens, cut, rebuild_strict) if givens else []
    if given_pairs:   # an intermediate input stays itself in the copy givens make: still cut there
        given_pairs += [(v, v) for v in cut if v.owner is not None]
    if given_pairs:
        replaced = clone_replace(out_vars + upd_values + in_upd_values, given_pairs, strict=rebuild_strict)
        n_out, n_upd = len(out_vars), len(upd_values)
        out_vars, upd_values = replaced[:n_out], replaced[n_out:n_out + n_upd]
        in_upd_values = replaced[n_out + n_upd:]
    if skip_defaults is not True:
        upd += _default_updates(out_vars + upd_values + in_upd_values, [s for s, _ in upd], skip_defaults,
                                given_pairs, cut)
        upd_values += [v for _, v in upd[len(upd_values):]]

    computed = out_vars + upd_values + in_upd_values
    shared_vars = _implicit_shared(computed, [s for s, _ in upd], cut)
    _check_inputs_cover_graph(ins, shared_vars, computed, on_unused_input)
    # (Any: the compile layer adds attributes that the linkers read: mutable_inputs, update_slots, ...)
    # OpFromGraph(inline=True) nodes are their inner graphs from here on; and a scalar variable is a
    # 0-d slot: scalar graphs compile as graphs of 0-d tensors
    free_inputs: List[Variable] = [i.variable for i in ins]
    graph_inputs, computed = inline_graphs(free_inputs + list(shared_vars), computed)
    graph_inputs, computed = as_tensor_graph(graph_inputs, computed)
    fgraph: Any = FunctionGraph(graph_inputs, computed)
    fgraph.mutable_inputs = {fgraph.inputs[k] for k, spec in enumerate(ins) if spec.mutable}
    mode = get_mode(mode)
    with compile_phase("rewrite"):
        mode.optimize(fgraph)
        put_in_place(fgraph, mode, _rewrite_graph_to_place)
        _prepare_inner_graphs(fgraph, mode)
        # a function owns its shared variables' storage: to the aliasing rule they are lent inputs,
        # as PyTensor's implicit In(shared, borrow=True)
        _insert_deepcopy(fgraph, [o.borrow for o in outs] + [False] * (len(upd) + len(in_upd)),
                         [spec.borrow for spec in ins] + [True] * len(shared_vars))
    fgraph.update_slots = list(range(len(outs), len(outs) + len(upd)))
    # per output slot, the input slot whose next value it is (a shared variable's update), or -1:
    # what a compiled library's description tells a C host
    fgraph.update_inputs = [-1] * len(outs) + [len(ins) + shared_vars.index(s) for s, _ in upd] \
        + [-1] * len(in_upd)
    # the names the user gave the outputs (rewriting may put an unnamed copy in a named one's place)
    fgraph.output_names = [o.variable.name for o in outs] + [None] * (len(upd) + len(in_upd))
    first = len(outs) + len(upd)
    return _link(name, ins, outs, single, fgraph, mode, shared_vars, [shared_vars.index(s) for s, _ in upd],
                 [(pos, first + k) for k, (pos, _) in enumerate(in_upd)], trust_input, profile)


def _link(name: Optional[str], ins: List[In], outs: List[Out], single: bool, fgraph: FunctionGraph, mode: Mode,
          shared_vars: List[SharedVariable], update_targets: List[int], input_updates: List[Tuple[int, int]],
          trust_input: bool, profile: bool, default_cells: Optional[List[Optional[Cell]]] = None) -> Function:
    """Link a rewritten graph with ``mode``'s linker and wrap it in a Function (``function`` and
    ``Function.copy``). A C library built before is loaded from the process's memo or the cache."""
    # what an error in a node says of the function's inputs: arguments by position, shared variables
    # by name, and where an update changed a shared variable's shape (read by linkers.basic)
    fgraph.describe_error_inputs = _ErrorInputs(  # type: ignore[attr-defined]
        [spec.name if spec.name is not None else str(spec.variable) for spec in ins], len(ins))
    linker = mode.new_linker().accept(fgraph)
    if profile:
        linker.profile = True
    input_cells = [[None] for _ in ins] + [s.container.storage for s in shared_vars]
    thunk, in_cells, out_cells = linker.make_thunk(input_storage=input_cells)
    f = (ProfiledFunction if profile else Function)(
        name=name, inputs=ins, outputs=outs, single=single, fgraph=fgraph, mode=mode, linker=linker,
        thunk=thunk, input_cells=in_cells[:len(ins)], output_cells=out_cells,
        shared=shared_vars, update_targets=update_targets, trust_input=trust_input,
        input_updates=input_updates, default_cells=default_cells,
    )
    if profile:
        f.profile.attach(getattr(thunk, "nodes", None) or fgraph.toposort(),  # type: ignore[union-attr]
                         [how for _, how in linker.describe_nodes()], getattr(thunk, "profile_recorder", None),
                         _linker_label(linker))
    if getattr(linker, "c_callable", False):  # Theano's CLinker(c_callable=True): export as it compiles
        f._check_exportable()
        thunk.filename = _exporter("export_to_cache")(f, linker.export_dir).directory
    return f


# ------------------------------------------------------------------ where updates come from

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _user_site() -> Optional[str]:
    """``"file:line (in fn)"`` and the source line of the innermost frame outside ffigraph: the line
    of the user's code that called ``function`` (None when ffigraph itself compiled it). (Not
    graph.utils.user_stack, which reads frames of the compile layer as "made while compiling".)"""
    frame: Any = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        path = filename if os.path.isabs(filename) else os.path.abspath(filename)
        if not path.startswith(_PACKAGE_DIR) and not filename.startswith("<frozen"):
            break
        frame = frame.f_back
    if frame is None:
        return None
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    site = "%s:%d (in %s)" % (frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)
    return site + (": " + line if line else "")


def _note_update_site(targets: List[SharedVariable]) -> None:
    """Record, on each updated shared variable's container, the user's line that gave the update
    (once per function, not per call), for the error that an update changed its shape."""
    site = _user_site()
    if site is None:
        return
    for target in targets:
        sites = getattr(target.container, "update_sites", None)
        if sites is None:
            sites = {}
            setattr(target.container, "update_sites", sites)   # (a Container has no slot for it)
        sites.pop(site, None)
        sites[site] = None   # the latest last
        while len(sites) > 8:   # (a loop making functions keeps a few, not all)
            del sites[next(iter(sites))]


class _ErrorInputs:
    """What an error in a node of a function's graph says of the inputs it depends on (the linkers
    call it with the graph inputs that feed the node): the function's arguments by name and position,
    its shared variables by name and shape, and, for a shared variable whose shape an update changed
    since the user last set it, which update it was and where it was made."""

    def __init__(self, labels: List[str], n_inputs: int) -> None:
        self.labels, self.n_inputs = labels, n_inputs

    def __call__(self, fgraph: FunctionGraph, feeding: Set[Variable]) -> str:
        args = ["%s (position %d)" % (label, pos) for pos, (label, var)
                in enumerate(zip(self.labels, fgraph.inputs)) if var in feeding]
        shared, notes = [], []
        for var in fgraph.inputs[self.n_inputs:]:
            if var not in feeding:
                continue
            container = getattr(var, "container", None)
            value = container.storage[0] if container is not None else None
            shape = getattr(value, "shape", None)
            shared.append("%s%s" % (var, "" if shape is None else " (shape %s)" % (tuple(shape),)))
            note = _update_note(var, container, shape)
            if note:
                notes.append(note)
        text = ""
        if args:
            text += "\nFunction inputs it depends on: %s" % ", ".join(args)
        if shared:
            text += "\nShared variables it reads (not arguments of the function): %s" % ", ".join(shared)
        for note in notes:
            text += "\n" + note
        return text


def _update_note(var: Variable, container: Any, shape: Any) -> Optional[str]:
    """The note for a shared variable whose value an update gave a shape other than the user's."""
    sites = getattr(container, "update_sites", None)
    before = getattr(container, "user_shape", None)
    if container is None or shape is None or before is None or tuple(before) == tuple(shape):
        return None
    if sites:
        where = list(sites)
        made = ("the update of %s made at %s" % (var, where[-1]) if len(where) == 1 else
                "an update of %s; updates of it were made at: %s" % (var, "; ".join(where)))
    else:
        made = "an update of %s (a default_update, or one made inside ffigraph)" % (var,)
    return ("Shared variable %s: expected shape %s (its value when created or last set with set_value), got "
            "shape %s: its value came from %s, which changed its shape. Make the update keep the shape, or "
            "set_value a value of the shape the graph needs." % (var, tuple(before), tuple(shape), made))


# ------------------------------------------------------------------ the export layer's plug

# ``f.export`` and ``CLinker(c_callable=True)`` write C library folders with ``ffigraph.export``, the
# layer above this one: it hands its two entry points here when imported (``import ffigraph`` does),
# so compile never imports it.
_export_entry_points: Dict[str, Callable[..., Any]] = {}


def set_exporter(export_function: Callable[..., ExportedLibrary],
                 export_to_cache: Callable[..., ExportedLibrary]) -> None:
    """Plug in the export layer: ``export_function(f, directory, name, example_inputs)`` and
    ``export_to_cache(f, directory)``."""
    _export_entry_points.update(export_function=export_function, export_to_cache=export_to_cache)


def _exporter(name: str) -> Callable[..., Any]:
    try:
        return _export_entry_points[name]
    except KeyError:
        raise RuntimeError("exporting needs the export layer, which plugs itself in when imported: "
                           "import ffigraph.export (import ffigraph does) first") from None


# ------------------------------------------------------------------ normalising


class UnusedInputError(ValueError):
    """PyTensor's: an input of ``function`` that no output depends on (on_unused_input='raise')."""


def _normalise_inputs(inputs: Any, allow_input_downcast: Optional[bool]) -> List[In]:
    if inputs is None:
        inputs = []
    if isinstance(inputs, (Variable, In)):
        raise TypeError("function() inputs must be a list, e.g. function([x], ...), not a single %s"
                        % type(inputs).__name__)
    ins = []
    for pos, i in enumerate(inputs):
        if isinstance(i, In):
            spec = i
        elif isinstance(i, Variable):
            spec = In(i, allow_downcast=allow_input_downcast)
        else:
            raise TypeError("function() input %d is %r, not a symbolic Variable or In" % (pos, i))
        if isinstance(spec.variable, SharedVariable):
            raise TypeError("input %d (%s) is a shared variable; shared variables are implicit inputs "
                            "(use givens= to substitute one)" % (pos, spec.variable))
        if isinstance(spec.variable, Constant):
            raise TypeError("input %d (%s) is a constant and cannot be an input" % (pos, spec.variable))
        if allow_input_downcast is not None and spec.allow_downcast is None:
            spec.allow_downcast = allow_input_downcast
        ins.append(spec)
    seen = set()
    for pos, spec in enumerate(ins):
        if spec.variable in seen:
            raise ValueError("input %d (%s) is given more than once" % (pos, spec.variable))
        seen.add(spec.variable)
    return ins


def _normalise_outputs(outputs: Any) -> Tuple[List[Out], bool]:
    if outputs is None:
        return [], False
    single = not isinstance(outputs, (list, tuple))
    items = [outputs] if single else list(outputs)
    outs = []
    for pos, o in enumerate(items):
        if isinstance(o, Out):
            outs.append(o)
        elif isinstance(o, Variable):
            outs.append(Out(o))
        else:
            outs.append(Out(_as_variable(o, "output %d" % pos)))
    return outs, single


def _as_variable(value: Any, what: str) -> Variable:
    from ffigraph.tensor.basic import as_tensor_variable

    try:
        return as_tensor_variable(value)
    except TypeError:
        raise TypeError("%s is %r, not a symbolic Variable" % (what, value)) from None


def _normalise_updates(updates: Any) -> List[Tuple[SharedVariable, Variable]]:
    if not updates:
        return []
    pairs = list(updates.items()) if isinstance(updates, dict) else list(updates)
    out, seen = [], set()
    for pos, pair in enumerate(pairs):
        try:
            target, value = pair
        except (TypeError, ValueError):
            raise TypeError("update %d must be a (shared_variable, new_value) pair, got %r" % (pos, pair)) from None
        if not isinstance(target, SharedVariable):
            raise TypeError("update %d: %s is not a shared variable; only shared variables can be updated"
                            % (pos, target))
        if target in seen:
            raise ValueError("shared variable %s is updated more than once" % (target,))
        seen.add(target)
        if not isinstance(value, Variable):
            value = _as_variable(value, "update value for %s" % (target,))
        converted = target.type.convert_variable(value)
        if converted is None:
            raise TypeError("update for shared variable %s: %s"
                            % (target, type_mismatch(target.type, value, "shared variable %s" % (target,))))
        out.append((target, converted))
    return out


def _normalise_input_updates(ins: List[In]) -> List[Tuple[int, Variable]]:
    """(position, update expression) for each In with an update, its type checked against the input's."""
    found = []
    for pos, spec in enumerate(ins):
        if spec.update is None:
            continue
        value = spec.update
        if not isinstance(value, Variable):
            value = _as_variable(value, "update of input %d (%s)" % (pos, spec.variable))
        converted = spec.variable.type.convert_variable(value)
        if converted is None:
            raise TypeError("update of input %d (%s): %s"
                            % (pos, spec.variable, type_mismatch(spec.variable.type, value,
                                                                 "input %s" % (spec.variable,))))
        found.append((pos, converted))
    return found


def _normalise_no_default_updates(value: Any) -> Union[Literal[True], Set[Variable]]:
    """True (apply no default update), or the set of shared variables whose default update to skip."""
    if isinstance(value, bool):
        return True if value else set()
    if isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            if not isinstance(item, Variable):
                raise TypeError("no_default_updates must be True, False or a list of shared variables; "
                                "it holds %r" % (item,))
        return set(value)
    raise TypeError("no_default_updates must be True, False or a list of shared variables, got %r" % (value,))


def _default_updates(variables: List[Variable], explicit: List[SharedVariable], skip: Set[Variable],
                     given_pairs: List[Tuple[Variable, Variable]],
                     cut: Sequence[Variable] = ()) -> List[Tuple[SharedVariable, Variable]]:
    """(shared, default_update) for every shared variable that ``variables`` read, with a default update,
    and neither updated explicitly nor in ``skip``; the expressions are searched in turn, since a default
    update may read other shared variables with default updates (PyTensor's rebuild_collect_shared).
    givens apply inside them too; a shared variable that givens replaced is no longer read."""
    done = set(explicit) | set(skip)
    found, frontier = [], list(variables)
    while frontier:
        new = []
        for v in _inputs_output_by_output(frontier, cut):
            if isinstance(v, SharedVariable) and v not in done and v.default_update is not None:
                done.add(v)
                new.append((v, v.default_update))
        if given_pairs and new:
            exprs = clone_replace([e for _, e in new], given_pairs)
            new = [(s, e) for (s, _), e in zip(new, exprs)]
        found += new
        frontier = [e for _, e in new]
    return found


def _normalise_givens(givens: Any, inputs: Sequence[Variable] = (),
                      strict: bool = True) -> List[Tuple[Variable, Variable]]:
    pairs = list(givens.items()) if isinstance(givens, dict) else list(givens)
    out = []
    for old, new in pairs:
        if not isinstance(old, Variable):
            raise TypeError("givens: %r is not a Variable" % (old,))
        if any(old is v for v in inputs):   # Theano's and PyTensor's rule (pfunc): it would have no effect
            raise RuntimeError("givens replaces %s, which is an input of the function; replacing an input "
                               "has no effect, so it is refused. To compute f(g(y)) from a new input y, write "
                               "function([y], f(x), givens={x: g(y)}), or clone the graph: "
                               "function([x], clone_replace(f(x), {x: g(x)}))" % (old,))
        if not isinstance(new, Variable):
            new = _as_variable(new, "givens replacement for %s" % (old,))
        if strict and old.type.convert_variable(new) is None:
            raise TypeError("givens: %s (type %s) cannot replace %s (type %s) (rebuild_strict=False lets the "
                            "nodes that read it take the types that follow)" % (new, new.type, old, old.type))
        out.append((old, new))
    return out


def _inputs_output_by_output(variables: List[Variable], cut: Sequence[Variable] = ()) -> List[Variable]:
    """The graph inputs of ``variables``, those of the first expression first (Theano's pfunc meets
    shared variables output by output, then update by update; graph_inputs, Theano's
    ``gof.graph.inputs``, walks from the last output): the order of a function's shared slots."""
    return graph_inputs(list(reversed(variables)), blockers=cut)


def _implicit_shared(variables: List[Variable], updated: List[SharedVariable],
                     cut: Sequence[Variable] = ()) -> List[SharedVariable]:
    found = [v for v in _inputs_output_by_output(variables, cut) if isinstance(v, SharedVariable)]
    for s in updated:
        if s not in found:
            found.append(s)
    return found


def _check_inputs_cover_graph(ins: List[In], shared_vars: List[SharedVariable], variables: List[Variable],
                              on_unused_input: str) -> None:
    given = {i.variable for i in ins} | set(shared_vars)
    needed = graph_inputs(variables, blockers=[i.variable for i in ins])
    for v in needed:
        if v not in given and not isinstance(v, Constant):
            raise MissingInputError("%s (type %s) is needed to compute the outputs but is not in the "
                                    "inputs list" % (v, v.type))
    if on_unused_input == "raise":
        used = set(needed)
        for pos, i in enumerate(ins):
            if i.variable not in used:
                raise UnusedInputError("input %d (%s) is not used to compute any output; remove it or pass "
                                       "on_unused_input='ignore'" % (pos, i.variable))
    elif on_unused_input not in ("ignore", "warn"):
        raise ValueError("on_unused_input must be 'raise', 'warn' or 'ignore', got %r" % (on_unused_input,))


# ------------------------------------------------------------------ aliasing


def _shared_memory_inputs(node: Optional[Apply], index: Optional[int]) -> Optional[List[int]]:
    """Input positions whose memory output ``index`` of ``node`` may be: the inputs it views, and
    overwritten graph inputs. (An overwritten intermediate is handed over whole: nothing else sees it.)"""
    if node is None:
        return None
    destroyed = [i for i in node.op.destroy_map.get(index, ()) if node.inputs[i].owner is None]
    return list(node.op.view_map.get(index, ())) + destroyed


def _alias_roots(var: Variable) -> Set[Variable]:
    """The variables whose memory ``var`` may share, following every op's view_map."""
    roots, stack = set(), [var]
    while stack:
        v = stack.pop()
        node = v.owner
        viewed = _shared_memory_inputs(node, v.index)
        if viewed:
            stack.extend(node.inputs[i] for i in viewed)
        else:
            roots.add(v)
    return roots


def _prepare_inner_graphs(fgraph: FunctionGraph, mode: Mode) -> None:
    """Ops with a graph of their own (scan's loop body) rewrite a copy of it with this function's
    mode, before the linker compiles them (``op.prepare_inner(mode, rewrite)``)."""
    for node in fgraph.toposort():
        hook = getattr(node.op, "prepare_inner", None)
        if hook is not None:
            hook(mode, _rewrite_inner_graph)


def _rewrite_inner_graph(fgraph: FunctionGraph, mode: Union[Mode, str, None]) -> None:
    """An inner graph rewritten like a function's: the mode's rewrites, then the copies that keep
    its outputs from sharing memory with each other, constants or freed intermediates."""
    get_mode(mode).optimize(fgraph)
    put_in_place(fgraph, mode, _rewrite_graph_to_place)
    _insert_deepcopy(fgraph, [True] * len(fgraph.outputs))


def _rewrite_graph_to_place(fgraph: FunctionGraph, mode: Union[Mode, str, None]) -> None:
    """An OpFromGraph's inner graph rewritten to take its node's place in a rewritten graph: the
    mode's rewrites (its own OpFromGraph nodes put in place), then a copy of each output that could
    share memory with an input, a constant or another output (the graph around the node was
    rewritten taking its outputs for fresh memory)."""
    get_mode(mode).optimize(fgraph)
    put_in_place(fgraph, mode, _rewrite_graph_to_place)
    _insert_deepcopy(fgraph, [False] * len(fgraph.outputs), [False] * len(fgraph.inputs))


def _insert_deepcopy(fgraph: FunctionGraph, borrow_flags: List[bool],
                     input_borrow: Optional[List[bool]] = None) -> None:
    """Copy each output that could share memory with something it must not.

    Always copied: a view of a constant or of an intermediate value (a C
    linker frees intermediates when the call ends), an output sharing memory
    with an earlier output, and an output that is, or views, a graph input the
    caller did not lend (``input_borrow``: In(borrow=...) per graph input; all
    lent when None). Copied unless borrowed (``Out(borrow=True)``): an output
    that is, or views, a lent input. So an output aliases an input only when
    both said borrow=True, PyTensor's rule.
    """
    leaves = set(fgraph.inputs)
    if input_borrow is None:
        input_borrow = [True] * len(fgraph.inputs)
    not_lent = {v for v, lent in zip(fgraph.inputs, input_borrow) if not lent}
    claimed: Set[Variable] = set()
    for pos, (var, borrow) in enumerate(zip(list(fgraph.outputs), borrow_flags)):
        roots = _alias_roots(var)
        views_internal = any(r is not var and r not in leaves for r in roots)
        const = any(isinstance(r, Constant) for r in roots)
        must_copy = views_internal or const or bool(roots & claimed) or bool(roots & not_lent)
        if must_copy or (not borrow and roots & leaves):
            fgraph.change_node_input("output", pos, deep_copy_op(var), reason="insert_deepcopy")
        else:
            claimed |= roots


# ------------------------------------------------------------------ the callable


class FunctionMaker:
    """What ``function`` built, kept for introspection (``f.maker.fgraph``)."""

    compile_times: CompileTimes   # set by function() and Function.copy
    settings: Any                 # the config snapshot it was compiled under

    def __init__(self, fgraph: FunctionGraph, mode: Mode, linker: Linker, inputs: List[In],
                 outputs: List[Out]) -> None:
        self.fgraph, self.mode, self.linker = fgraph, mode, linker
        self.inputs, self.outputs = inputs, outputs


class Function:
    """A compiled graph. Call it with the inputs' values (by position or by name)."""

    _recipe: Dict[str, Any]   # function()'s arguments, which a pickle keeps (set by function and copy)

    def __init__(self, name: Optional[str], inputs: List[In], outputs: List[Out], single: bool,
                 fgraph: FunctionGraph, mode: Mode, linker: Linker, thunk: Any, input_cells: List[Cell],
                 output_cells: List[Cell], shared: List[SharedVariable], update_targets: List[int],
                 trust_input: bool, input_updates: Sequence[Tuple[int, int]] = (),
                 default_cells: Optional[List[Optional[Cell]]] = None, lock: Optional[OwnedLock] = None) -> None:
        """``input_updates``: (input position, output index) per In with an update. ``default_cells``:
        the cell holding each input's stored value (None: no value), made from the In specs when not
        given. ``lock``: the call lock of a function whose compiled state this one shares (copy)."""
        self.name = name
        self.maker = FunctionMaker(fgraph, mode, linker, inputs, outputs)
        self._single = single
        self._thunk = thunk
        self._input_cells = input_cells
        self._n_outputs = len(outputs)
        # outputs of a scalar type: computed in 0-d slots, returned as numpy scalars (PyTensor's values)
        self._scalar_outputs = [(k, o.variable.type.numpy_dtype.type) for k, o in enumerate(outputs)
                                if isinstance(o.variable.type, ScalarType)]
        self._output_cells = output_cells
        self._update_pairs = [(shared[t].container.storage, output_cells[self._n_outputs + k])
                              for k, t in enumerate(update_targets)]
        self._specs = inputs
        self._filters = [_input_filter(i) for i in inputs]
        self._names: Dict[str, int] = {}
        for pos, spec in enumerate(inputs):
            if spec.name is not None:
                self._names.setdefault(spec.name, pos)
        # one cell per input with a value (a Container's own storage): In(update=...) replaces its content
        self._default_cells = list(default_cells) if default_cells is not None else \
            [_default_cell(spec) for spec in inputs]
        self._state_outs: List[Tuple[Any, int]] = [(self._default_cells[pos], j) for pos, j in input_updates]
        self._input_updates = list(input_updates)
        self._implicit = [pos for pos, spec in enumerate(inputs) if spec.implicit]
        self._shared_vars = list(shared)
        # A linker that can take values directly (the whole-graph C linker) skips the cells.
        self._direct: Any = getattr(linker, "direct_call", None)
        self._shared_cells = [s.container.storage for s in shared]
        self._update_cells = [shared[t].container.storage for t in update_targets]
        self._update_targets = list(update_targets)
        self._n_inputs = len(inputs)
        # what a call of all the inputs by position may skip: no shared values, no kept state
        self._plain = not shared and not input_updates and not self._implicit
        self.trust_input = trust_input
        self.profile: Optional[ProfileStats] = None   # a ProfiledFunction's ProfileStats
        # one call at a time per function (and its copies that share its compiled state); updated
        # shared variables locked in one global order
        self._lock = lock if lock is not None else OwnedLock(self._label())
        locks = {id(lock): lock for lock in (update_lock_of(shared[t].container) for t in update_targets)}
        self._update_locks = sorted(locks.values(), key=lambda lock: lock.serial)
        self._arity_call = getattr(linker, "arity_call", None)
        renew = getattr(linker, "renew_after_fork", None)
        if renew is not None:   # a child forked while a thread was inside this function gets new states
            self._lock.on_fork.append(renew)
        self._install_entry()

    @property
    def trust_input(self) -> bool:
        return self._trust_input

    @trust_input.setter
    def trust_input(self, value: bool) -> None:
        self._trust_input = bool(value)
        self._trusted_plain = self._trust_input and getattr(self, "_plain", False)
        if hasattr(self, "_entry"):
            self._install_entry()

    def _install_entry(self) -> None:
        """Make ``self(...)`` run the entry written for this function (``_make_entry``) with no
        Python frame in between: the instance gets its own subclass whose ``__call__`` is the entry
        (a ``__call__(self, *args, **kwargs)`` that unpacks and forwards costs about 90 ns a call
        on CPython). A subclass with its own ``__call__`` (ProfiledFunction) keeps it."""
        entry = self._entry = self._make_entry()
        if entry is not None:   # (how the locks recognise a call of this function that is inside)
            for owned in [self._lock] + list(self._update_locks):
                owned.entries.add(entry.__code__)
        cls = type(self)
        base = cls.__bases__[0] if cls.__dict__.get("_own_entry_class") else cls
        if entry is None or base.__call__ is not Function.__call__:
            self.__class__ = base
            return
        self.__class__ = type(base.__name__, (base,), {
            "__call__": entry, "_own_entry_class": True, "__slots__": (),
            "__module__": base.__module__, "__qualname__": base.__qualname__,
            "__doc__": base.__doc__})

    def _make_entry(self) -> Optional[Callable[..., Any]]:
        """The call written out for this function's arity, or None: ``entry(self, v0, ..., v{n-1})``.

        For a whole-graph C library: the lock's fast path (and the updated shared variables'
        locks), then per input a check that costs three comparisons when the value already is an
        ndarray of the input's dtype and rank (anything else goes through the input's filter, which
        casts or explains), the shared variables' values after the inputs, the library's own arity
        call (``CallBlock.arity_call``), and the updates stored. ``trust_input=True`` drops the
        checks (an input that is the very array passed last call is not read again). Calls with
        keywords, defaults or another number of arguments go on to ``_call_generic``."""
        if self._arity_call is None or self._state_outs or self._implicit or self._scalar_outputs:
            return None   # (kept input state and implicit inputs take the generic path)
        n_in, n_out = self._n_inputs, self._n_outputs
        namespace = dict(owned=self._lock, reentered=reentered, check=self._filter_one,
                         NOT_GIVEN=_NOT_GIVEN, generic=Function._call_generic)
        # positional-only parameters, so that keywords (inputs by name) all land in ``kw``
        params = ["_self"] + ["v%d=NOT_GIVEN" % i for i in range(n_in)] + ["/", "*more", "**kw"]
        given = "(%s)" % "".join("v%d, " % i for i in range(n_in))
        enter = ["if kw or more%s:" % (" or v%d is NOT_GIVEN" % (n_in - 1) if n_in else ""),
                 "    return generic(_self, tuple([v for v in %s if v is not NOT_GIVEN]) + more, kw)" % given]
        # the function's lock, then its updated variables' locks in their global order, held so that
        # no interrupt at any step leaves one taken (see ffigraph.compile.calllock)
        namespace.update(update_locks=self._update_locks, all_locks=[self._lock] + self._update_locks,
                         owned_only=[self._lock], take=take, give_back=give_back)
        layers = [functools.partial(held_lines, updates=bool(self._update_locks))]
        checks, input_checks = [], {}
        if not self._trust_input:   # (an input passed and checked last call, unchanged since, skips them)
            for i, spec in enumerate(self._specs):
                vtype = spec.variable.type
                dtype, ndim = getattr(vtype, "numpy_dtype", None), getattr(vtype, "ndim", None)
                static = any(d is not None for d in getattr(vtype, "shape", ()) or ())
                if dtype is None or ndim is None or static or spec.strict:
                    input_checks[i] = ["v{i} = check({i}, v{i})".format(i=i)]
                    continue
                namespace["D%d" % i] = dtype
                input_checks[i] = ["if v{i}.__class__ is not ndarray or v{i}.dtype is not D{i} or v{i}.ndim != {nd}:"
                                   .format(i=i, nd=ndim),
                                   "    v{i} = check({i}, v{i})".format(i=i)]
        for k, cell in enumerate(self._shared_cells):   # shared values follow the inputs
            namespace["shared%d" % k] = cell
            checks.append("v{i} = shared{k}[0]".format(i=n_in + k, k=k))
        after = []
        for k, cell in enumerate(self._update_cells):   # updates follow the outputs
            namespace["update%d" % k] = cell
            after.append("update{k}[0] = out{j}".format(k=k, j=n_out + k))
        result = "out0" if self._single else "[%s]" % ", ".join("out%d" % k for k in range(n_out))
        guard = dict(params=params, enter=enter, layers=layers, checks=checks, input_checks=input_checks,
                     after=after, result=result, namespace=namespace)
        return self._arity_call(guard, trust_same=self._trust_input)

    # ---- kept input values (In(value=..., update=...)) and copies

    def _input_position(self, key: Union[Variable, str, int]) -> int:
        """The position of the input named by ``key``: its variable, its name or its position."""
        if isinstance(key, int) and not isinstance(key, bool):
            if 0 <= key < len(self._specs):
                return key
        elif isinstance(key, str):
            if key in self._names:
                return self._names[key]
        else:
            for pos, spec in enumerate(self._specs):
                if spec.variable is key:
                    return pos
        raise KeyError("%s has no input %r (inputs: %s)"
                       % (self._label(), key, ", ".join(str(s.name or s.variable) for s in self._specs) or "none"))

    def _value_cell(self, key: Union[Variable, str, int]) -> Tuple[int, Cell]:
        pos = self._input_position(key)
        cell = self._default_cells[pos]
        if cell is None:
            raise KeyError("%s: input %s has no stored value (give it one with In(..., value=...))"
                           % (self._label(), self._describe_input(pos)))
        return pos, cell

    def __getitem__(self, key: Union[Variable, str, int]) -> Any:
        """PyTensor's ``f[x]``: the value the function keeps for input ``x`` (variable, name or
        position), which In(..., update=...) replaces after each call."""
        return self._value_cell(key)[1][0]

    def __setitem__(self, key: Union[Variable, str, int], value: Any) -> None:
        """``f[x] = v``: set the value kept for input ``x`` (filtered to its type); it sticks."""
        pos, cell = self._value_cell(key)
        cell[0] = self._filter_one(pos, value)

    def __contains__(self, key: Any) -> bool:
        try:
            self._value_cell(key)
        except KeyError:
            return False
        return True

    @property
    def container(self) -> _ContainerView:
        """PyTensor's ``f.container[x]``: the Container holding input ``x``'s kept value; pass it as
        another function's ``In(x, value=container)`` to share the state."""
        return _ContainerView(self)

    def copy(self, share_memory: bool = False, swap: Optional[Mapping[Any, SharedVariable]] = None,
             delete_updates: bool = False, name: Optional[str] = None, profile: Optional[bool] = None) -> Function:
        """A new function computing the same graph, as PyTensor's ``Function.copy``.

        The copy has its own input specs and kept input values: an input whose value is a Container
        keeps sharing it; a mutable input (one with an update, by default) starts again from its
        In's value, any other from the original's current value (PyTensor's rules). Shared variables
        stay the same shared variables, so the copy's updates change them for the original too,
        unless ``swap`` ({old shared: new shared}, each new one of the same type) replaces them in
        the copy (only there: the user's graph is untouched; in the copy's rewritten graph the new
        variable's input keeps the old one's name, so that the compiled library is reused).

        share_memory: True shares the original's compiled state (PyTensor's intermediate storage):
        the copy runs the same library state and thunk, and the two take turns on one call lock. False
        gives the copy storage of its own: the rewritten graph is linked again, and a C library built
        before is reused (loaded once per process, or found in the compile cache), never rebuilt.
        A swap of a function that runs its graph through storage cells, or a profiled copy or
        original, links again even when share_memory is True.
        delete_updates: the copy applies no update (neither shared variables' nor In's). It runs the
        same compiled graph (so nothing is rebuilt): the update expressions are still computed, and
        their values dropped.
        name: defaults to the original's name + " copy" (None when it has none).
        profile: as ``function(profile=...)``; None follows ``config.profile``.
        """
        import copy as _copy

        if not isinstance(share_memory, bool) or not isinstance(delete_updates, bool):
            raise TypeError("copy(): share_memory and delete_updates must be True or False, got %r and %r"
                            % (share_memory, delete_updates))
        if profile is None:
            profile = config.profile
        elif not isinstance(profile, bool):
            raise TypeError("copy(profile=...) must be True, False or None, got %r" % (profile,))
        swap = self._check_swap(swap)
        if name is None and self.name:
            name = self.name + " copy"
        maker = self.maker
        specs = [_copy.copy(spec) for spec in maker.inputs]
        default_cells = [_copied_default_cell(spec, cell) for spec, cell in zip(specs, self._default_cells)]
        shared = [swap.get(v, v) for v in self._shared_vars]
        update_targets = [] if delete_updates else self._update_targets
        input_updates = [] if delete_updates else self._input_updates
        # a thunk that reads the shared variables through cells was bound to the original's
        reads_cells = self._direct is None and bool(swap)
        if share_memory and not reads_cells and not profile and self.profile is None:
            f = Function(name=name, inputs=specs, outputs=maker.outputs, single=self._single, fgraph=maker.fgraph,
                         mode=maker.mode, linker=maker.linker, thunk=self._thunk, input_cells=self._input_cells,
                         output_cells=self._output_cells, shared=shared, update_targets=update_targets,
                         trust_input=self.trust_input, input_updates=input_updates, default_cells=default_cells,
                         lock=self._lock)
            f.maker.compile_times = CompileTimes()
            return self._copy_recipe(f, swap, delete_updates, name, profile)
        fgraph = _copy_fgraph(maker.fgraph, len(specs), swap)
        times = CompileTimes()
        with recording_compile_times(times):
            f = _link(name, specs, maker.outputs, self._single, fgraph, maker.mode, shared, update_targets,
                      input_updates, self.trust_input, profile, default_cells=default_cells)
        f.maker.compile_times = times
        if profile:
            f.profile.compile_times = times  # type: ignore[union-attr]  # a ProfiledFunction's
        return self._copy_recipe(f, swap, delete_updates, name, profile)

    def _copy_recipe(self, f: Function, swap: Mapping[SharedVariable, SharedVariable], delete_updates: bool,
                     name: Optional[str], profile: bool) -> Function:
        """A copy computes what ``function()`` would with the original's arguments (so it pickles the
        same way), unless it swaps shared variables or drops updates."""
        recipe = getattr(self, "_recipe", None)
        if recipe is not None and not swap and not delete_updates:
            f._recipe = dict(recipe, name=name, profile=bool(profile))
            f.maker.settings = getattr(self.maker, "settings", None)
        return f

    def __reduce__(self) -> Tuple[Any, ...]:
        """Pickled as its graph plus its compiled libraries (ffigraph.compile.pickling)."""
        from ffigraph.compile import pickling

        return pickling.rebuild_function, pickling.function_state(self)

    def _check_swap(self, swap: Any) -> Dict[SharedVariable, SharedVariable]:
        """``swap`` as a dict {shared variable this function reads: one of the same type}."""
        if swap is None:
            return {}
        if not isinstance(swap, dict):
            raise TypeError("copy(swap=...) must be a dict {old shared variable: new shared variable}, got %r"
                            % (swap,))
        for old, new in swap.items():
            if not isinstance(old, SharedVariable) or not isinstance(new, SharedVariable):
                raise TypeError("copy(swap=...): %r -> %r: both must be shared variables" % (old, new))
            if old not in self._shared_vars:
                raise ValueError("copy(swap=...): shared variable %s is not one that %s reads"
                                 % (old, self._label()))
            if new.type != old.type:
                raise TypeError("copy(swap=...): shared variable %s has type %s, but %s, which it replaces, "
                                "has type %s" % (new, new.type, old, old.type))
        after = [swap.get(v, v) for v in self._shared_vars]
        if len(set(after)) != len(after):
            raise ValueError("copy(swap=...): a new shared variable is one the copy reads already")
        return swap

    # ---- calling

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        entry = self._entry
        if entry is not None:
            return entry(self, *args, **kwargs)   # written out for this arity (see _make_entry)
        if self._scalar_outputs:
            return self._as_scalars(self._call_generic(args, kwargs))
        return self._call_generic(args, kwargs)

    def _as_scalars(self, result: Any) -> Any:
        """The call's result with each scalar-typed output's 0-d array as a numpy scalar."""
        if self._single:
            return self._scalar_outputs[0][1](result[()])
        result = list(result)
        for k, make in self._scalar_outputs:
            result[k] = make(result[k][()])
        return result

    def _call_generic(self, args: Sequence[Any], kwargs: Dict[str, Any]) -> Any:
        """A call with any arguments, through the input specs (keywords, defaults, filters)."""
        # Calls of one function take turns, and hold its updated variables' locks (see
        # ffigraph.compile.calllock: held so that no interrupt leaves one taken).
        direct = self._direct
        if direct is not None and self._trusted_plain and not kwargs and len(args) == self._n_inputs:
            def call() -> Any:
                outs = direct(args)  # the hot path: no filtering, no shared state, no updates
                return outs[0] if self._single else outs
            return holding([self._lock], call)
        return holding([self._lock] + self._update_locks, self._call, args, kwargs)

    def _call(self, args: Sequence[Any], kwargs: Dict[str, Any]) -> Any:
        """One call, with this function's lock (and its updated variables' locks) held."""
        if self._direct is not None:
            return self._call_direct(args, kwargs)
        try:
            if self.trust_input and not kwargs and not self._implicit:
                cells = self._input_cells
                if len(args) != len(cells):
                    raise TypeError("%s takes %d inputs, got %d" % (self._label(), len(cells), len(args)))
                for cell, value in zip(cells, args):
                    cell[0] = value
            else:
                self._fill_inputs(args, kwargs)
            self._thunk()
        finally:
            for cell in self._input_cells:
                cell[0] = None  # do not keep the caller's arrays alive between calls
        outs = [cell[0] for cell in self._output_cells[:self._n_outputs]]
        for target, source in self._update_pairs:
            target[0] = source[0]
        out_cells = self._output_cells
        for cell, j in self._state_outs:
            cell[0] = out_cells[j][0]
        for cell in self._output_cells:
            cell[0] = None
        if self._single:
            return outs[0]
        return outs

    def _call_direct(self, args: Sequence[Any], kwargs: Dict[str, Any]) -> Any:
        if self.trust_input and not kwargs and not self._implicit:
            if len(args) != len(self._specs):
                raise TypeError("%s takes %d inputs, got %d" % (self._label(), len(self._specs), len(args)))
            values = args
        else:
            values = self._filtered_values(args, kwargs)
        if self._shared_cells:
            values = list(values) + [cell[0] for cell in self._shared_cells]
        outs = self._direct(values)
        n = self._n_outputs
        for k, cell in enumerate(self._update_cells):
            cell[0] = outs[n + k]
        for cell, j in self._state_outs:
            cell[0] = outs[j]
        if self._single:
            return outs[0]
        return outs[:n] if len(outs) != n else outs

    def _filtered_values(self, args: Sequence[Any], kwargs: Dict[str, Any]) -> List[Any]:
        n = len(self._specs)
        if not kwargs and len(args) == n and not self._implicit:
            values = list(args)
        else:
            values = self._bind(args, kwargs)
        for pos, value in enumerate(values):
            values[pos] = self._filter_one(pos, value)
        return values

    def _filter_one(self, pos: int, value: Any) -> Any:
        """Input ``pos``'s value through its type's filter; a refusal names the function and input."""
        try:
            return self._filters[pos](value)
        except (TypeError, ValueError) as err:
            raise type(err)("%s: bad value for input %s: %s"
                            % (self._label(), self._describe_input(pos), err)) from None

    def _bind(self, args: Sequence[Any], kwargs: Dict[str, Any]) -> List[Any]:
        """Positional and keyword arguments, with defaults, as one list in input order."""
        n = len(self._specs)
        if len(args) > n:
            raise TypeError("%s takes at most %d inputs, got %d" % (self._label(), n, len(args)))
        values = list(args) + [_MISSING] * (n - len(args))
        for key, value in kwargs.items():
            pos = self._names.get(key)
            if pos is None:
                raise TypeError("%s got an unexpected keyword argument %r (inputs: %s)"
                                % (self._label(), key, ", ".join(map(str, self._names)) or "none named"))
            if values[pos] is not _MISSING:
                raise TypeError("%s got input %r twice (by position and by name)" % (self._label(), key))
            values[pos] = value
        for pos in self._implicit:   # PyTensor's rule: an implicit input's value is the function's
            if values[pos] is not _MISSING:
                raise TypeError("%s: input %s is implicit: its value cannot be passed"
                                % (self._label(), self._describe_input(pos)))
        for pos, value in enumerate(values):
            if value is _MISSING:
                cell = self._default_cells[pos]
                if cell is None:
                    raise TypeError("%s: missing input %s" % (self._label(), self._describe_input(pos)))
                values[pos] = cell[0]
        return values

    def _fill_inputs(self, args: Sequence[Any], kwargs: Dict[str, Any]) -> None:
        for cell, value in zip(self._input_cells, self._filtered_values(args, kwargs)):
            cell[0] = value

    def _describe_input(self, pos: int) -> str:
        spec = self._specs[pos]
        name = spec.name if spec.name is not None else str(spec.variable)
        return "%r (position %d, type %s)" % (name, pos, spec.variable.type)

    def _label(self) -> str:
        return "function %r" % self.name if self.name else "function"

    # ---- introspection

    @property
    def fgraph(self) -> FunctionGraph:
        return self.maker.fgraph

    @property
    def fn(self) -> Any:
        """What runs the graph (Theano's ``f.fn``). Its ``filename`` is the folder of the built
        library, as in Theano's c_callable export; None when no whole-graph library was built."""
        thunk = self._thunk
        if getattr(thunk, "filename", None) is None:
            thunk.filename = _library_dir(self.maker.linker)
        return thunk

    @property
    def library_dir(self) -> Optional[str]:
        """The folder holding this function's built artifacts: the export folder when it was
        compiled with ``CLinker(c_callable=True)``, else the compile-cache entry of its
        whole-graph library; None for linkers that build no single library (py, c|py)."""
        return self.fn.filename

    @property
    def library_path(self) -> Optional[str]:
        """The path of the whole-graph shared library this function runs (a compile-cache entry's
        ``lib.so``, or an export's library), which a C host loads with ``dlopen`` and enters through
        ``ffg_library_api``; None for linkers that build no single library (py, c|py)."""
        linker = getattr(self.maker.linker, "chosen", None) or self.maker.linker
        compiled = getattr(linker, "compiled", None)
        return None if compiled is None else compiled.library.path

    def c_source(self) -> str:
        """The C this function runs, as generated: the whole-graph library's translation unit
        (linker c, or cvm when every node has C code), or each node's own unit in order (c|py).
        The built artifacts are in ``library_dir``."""
        linker = self.maker.linker
        source = getattr(linker, "source", None)
        if source is None:
            raise ValueError("%s was compiled with linker %r, which generates no C; compile it with "
                             "mode=Mode(linker='cvm') (or 'c', 'c|py') to see its C"
                             % (self._label(), getattr(linker, "name", linker)))
        return source()

    def export(self, directory: StrPath, name: Optional[str] = None,
               example_inputs: Optional[Sequence[ArrayLike]] = None) -> ExportedLibrary:
        """Write this function as a self-contained C library folder and return its paths.

        The folder holds ``lib<name>.so``, ``<name>.h`` (typed prototypes and the slot
        map), ``ffigraph_abi.h``, a Makefile, an example ``main.c`` with a strict ``.npy``
        reader, one ``.npy`` per shared variable (its current value) and a README.
        Shared variables live inside the library's handle, and updates run there.
        ``make && ./example`` then needs no Python. ``name`` becomes the C prefix. It
        defaults to the function's name, else ``graph``. ``example_inputs`` are input
        values shipped as ``.npy`` files for the example to use. ``directory`` must be
        new, empty, or an earlier export, which is replaced.

        Without ``example_inputs`` the example fills each input with 0, 1, 2, ... in shapes
        that satisfy the graph (``bundle.fill_shapes``; ``./example -d INPUT=SHAPE`` changes
        one): the export solves the graph's shape constraints and checks the answer by
        calling this function once on those values, then gives its shared variables their
        values back (so do not export while another thread updates them).
        ``bundle.fill_shapes_problem`` says why, when no shapes it tried fit.
        """
        self._check_exportable()
        return _exporter("export_function")(self, directory, name=name, example_inputs=example_inputs)

    def _check_exportable(self) -> None:
        # the library's slot map knows shared variables' updates, not values an In(update=) keeps
        if self._input_updates:
            raise NotImplementedError("%s keeps input values updated with In(..., update=...), which an "
                                      "exported library cannot hold; use shared variables and updates="
                                      % self._label())

    def dprint(self, **kwargs: Any) -> Any:
        """``ffigraph.printing.debugprint(self, **kwargs)``: the rewritten graph, as PyTensor's."""
        return debug_print(self, **kwargs)

    # ---- PyTensor's Function attributes

    def get_shared(self) -> List[SharedVariable]:
        """The shared variables this function reads or updates (PyTensor's ``get_shared``)."""
        return list(self._shared_vars)

    def free(self) -> None:
        """PyTensor's ``free`` (drop the intermediate values a function kept with allow_gc=False):
        nothing to do, since no value outlives a call here (the outputs' cells are emptied too)."""
        for cell in self._output_cells:
            cell[0] = None

    @property
    def vm(self) -> Any:
        """What runs the compiled graph (PyTensor's ``Function.vm``): the linker's thunk."""
        return self._thunk

    @property
    def unpack_single(self) -> bool:
        """True when the function returns its one output alone, not in a list (``function(i, x)``)."""
        return self._single

    def info(self) -> str:
        """Which linker ran, and how each node runs."""
        linker = self.maker.linker
        lines = ["%s: linker %s, mode %s" % (self._label(), getattr(linker, "name", linker), self.maker.mode)]
        for pos, (node, how) in enumerate(linker.describe_nodes()):
            lines.append("  #%d %s  [%s]" % (pos, node, how))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return "<Function %s: %s>" % (self.name or "", ", ".join(map(str, self.fgraph.outputs)))


class ProfiledFunction(Function):
    """A Function compiled with profile=True: each call is timed into ``self.profile``.
    A subclass, so that a function without profiling runs Function.__call__ untouched."""

    profile: ProfileStats

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.profile = ProfileStats(self.name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        start = _perf_counter()
        try:
            return Function.__call__(self, *args, **kwargs)
        finally:
            self.profile.add_call(_perf_counter() - start)


def _linker_label(linker: Linker) -> str:
    chosen = getattr(linker, "chosen", None)
    name = getattr(linker, "name", type(linker).__name__)
    if chosen is not None:
        return "%s (chose %s)" % (name, getattr(chosen, "name", chosen))
    return name


_MISSING = object()
_NOT_GIVEN = object()   # a parameter of a written-out entry that the call left out


def _library_dir(linker: Linker) -> Optional[str]:
    """The folder of the whole-graph library a linker built, or None."""
    linker = getattr(linker, "chosen", None) or linker
    compiled = getattr(linker, "compiled", None)
    if compiled is None:
        return None
    return os.path.dirname(compiled.library.path)


def _default_cell(spec: In) -> Optional[Cell]:
    """The cell of an input's stored value: a Container value's own storage (shared with whoever holds
    it), else a new cell; None without a value. A value that updates replace is filtered and copied
    now, since the function may then overwrite it in place (mutable), and the caller's array must not
    change."""
    if not spec.has_default:
        return None
    value = spec.value
    if isinstance(value, Container):
        return value.storage
    if spec.update is None:
        return [value]   # (filtered on each call, as any argument)
    vtype = spec.variable.type
    filtered = vtype.filter(value, strict=spec.strict, allow_downcast=spec.allow_downcast)
    copy_value = getattr(vtype, "copy_value", None)
    return [copy_value(filtered) if copy_value is not None and filtered is value else filtered]


def _copied_default_cell(spec: In, cell: Optional[Cell]) -> Optional[Cell]:
    """A copy's cell for an input's stored value (PyTensor's Function.copy): a Container is shared, a
    mutable input starts again from its In value, any other from the original's current value."""
    if cell is None or isinstance(spec.value, Container):
        return cell
    if spec.mutable:
        return _default_cell(spec)
    return [cell[0]]


def _copy_fgraph(fgraph: FunctionGraph, n_inputs: int,
                 swap: Mapping[SharedVariable, SharedVariable]) -> FunctionGraph:
    """A private copy of a rewritten graph (the same ops, so the same C library), with each shared
    variable in ``swap`` replaced by the new one (a clone, as shared graph inputs are). The clone keeps
    the name of the input it replaces: a C library names its slots after the graph's inputs, so a new
    name would be a new library to build."""
    memo = {}
    for var in fgraph.inputs[n_inputs:]:
        for old, new in swap.items():
            if var.container is old.container:
                memo[var] = clone = new.clone()
                clone.name = var.name
    equiv = clone_get_equiv(fgraph.inputs, fgraph.outputs, copy_inputs=True, memo=memo)
    copied: Any = FunctionGraph([equiv[v] for v in fgraph.inputs], [equiv[v] for v in fgraph.outputs], clone=False)
    copied.mutable_inputs = {equiv[v] for v in getattr(fgraph, "mutable_inputs", ())}
    copied.update_slots = list(getattr(fgraph, "update_slots", ()))
    for attribute in ("update_inputs", "output_names"):
        if getattr(fgraph, attribute, None) is not None:
            setattr(copied, attribute, list(getattr(fgraph, attribute)))
    return copied


class _ContainerView:
    """``f.container[x]``: a Container over the cell that holds input ``x``'s kept value."""

    def __init__(self, function: Function) -> None:
        self._function = function

    def __getitem__(self, key: Union[Variable, str, int]) -> Container:
        f = self._function
        pos, cell = f._value_cell(key)
        spec = f._specs[pos]
        if isinstance(spec.value, Container):
            return spec.value
        return Container(spec.variable.type, storage=cell, name=spec.name, strict=spec.strict,
                         allow_downcast=spec.allow_downcast)


def _input_filter(spec: In) -> Callable[[Any], Any]:
    vtype, strict, downcast = spec.variable.type, spec.strict, spec.allow_downcast
    if isinstance(vtype, ScalarType):   # (a scalar's slot is a 0-d tensor's: as_tensor_graph)
        def filt_scalar(value: Any) -> Any:
            return np.asarray(vtype.filter(value, strict=strict, allow_downcast=downcast))
        return filt_scalar

    def filt(value: Any) -> Any:
        return vtype.filter(value, strict=strict, allow_downcast=downcast)

    return filt


def _build_for_lower_layers(inputs: Sequence[Variable], outputs: Any, linker: Union[str, Linker, None] = None,
                            optimizer: Any = "default", **kwargs: Any) -> Function:
    """How the graph and rewriting layers compile (``Variable.eval``; constant folding of an op that
    folds through its own C code): the default mode, or the linker and optimizer asked for; ``kwargs``
    (``Variable.eval``'s: ``mode=`` among them) go to ``function``."""
    if linker is not None or optimizer != "default":
        kwargs["mode"] = Mode(linker=linker, optimizer=optimizer)
    return function(inputs, outputs, **kwargs)


# the layers below compile through ``ffigraph.graph.basic.compile_graph``, which calls this layer
set_function_builder(_build_for_lower_layers)
