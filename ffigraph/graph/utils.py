"""Identity from a declared ``__props__`` tuple, shared by Types and Ops; where nodes were created."""
from __future__ import annotations

import os
import sys
import traceback

from ffigraph.config import config


class PropsIdentity:
    """Equality, hash and printing follow the attributes named in ``__props__``.

    A class that declares no ``__props__`` keeps object identity, as PyTensor
    does, so an op with hidden state is never merged by mistake.
    """

    __props__: tuple = None  # type: ignore[assignment]

    def _props(self):
        return tuple(getattr(self, name) for name in self.__props__)

    def _props_dict(self):
        return {name: getattr(self, name) for name in self.__props__}

    def __eq__(self, other):
        if self.__props__ is None:
            return self is other
        return type(self) is type(other) and self._props() == other._props()

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        if self.__props__ is None:
            return object.__hash__(self)
        return hash((type(self), self._props()))

    def __str__(self):
        name = type(self).__name__
        if not self.__props__:
            return name
        return "%s{%s}" % (name, ", ".join("%s=%s" % (k, _short(v)) for k, v in self._props_dict().items()))

    def __repr__(self):
        return str(self)


def _short(value):
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."


# ----------------------------------------------------------------- where nodes were created
#
# Each Apply records the frames of the user's code that created it, in ``node.tag.trace`` (and
# its outputs' ``var.tag.trace``), in PyTensor's form: a list holding one stack, a list of
# ``(filename, lineno, function, line)`` tuples, outermost first. Frames inside the ffigraph
# package are skipped, and so is an op's ``make_node`` wherever it is defined. Recording is a walk
# up ``sys._getframe`` reading three attributes per kept frame; the source line is left None
# (``traceback.format_list`` reads it from linecache when shown), and equal frame tuples are shared.
# Op.__call__ records once for the nodes its make_node makes; Apply.__init__ records a node made any
# other way. A node made while compiling (by a rewrite, a linker, ``function``) records nothing: the
# rewrite that made it copies the trace of the node it replaces (``copy_stack_trace``).

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

# Where nodes are made only while compiling: a walk reaching one of these records no trace.
_COMPILING = tuple(
    os.path.join(*parts) for parts in (
        ("compile", ""), ("linkers", ""), ("rewriting", ""), ("export", ""),
        ("graph", "rewriting.py"), ("graph", "fg.py"), ("graph", "destroyhandler.py"), ("cuda", "rewrite.py"),
    )
)

_USER, _INSIDE, _COMPILE = 0, 1, 2
_frame_kinds = {}  # co_filename -> one of the three kinds
_frames = {}  # each (filename, lineno, function, None) recorded, once: as many as there are source lines


def _classify(filename):
    path = filename if os.path.isabs(filename) else os.path.abspath(filename)
    if filename.startswith("<frozen"):  # import machinery: never the user's line
        kind = _INSIDE
    elif not path.startswith(_PACKAGE_DIR):
        kind = _USER
    elif path[len(_PACKAGE_DIR):].startswith(_COMPILING):
        kind = _COMPILE
    else:
        kind = _INSIDE
    _frame_kinds[filename] = kind
    return kind


def user_stack(limit, frame=None):
    """The innermost ``limit`` frames (-1: all) of the user's code calling into ffigraph
    (the first frame kept is the first outside ffigraph that is not an op's ``make_node``).

    A list of ``(filename, lineno, function, None)``, outermost first; None when the call comes
    from ffigraph's compiler (a rewrite), [] when there is no user frame.
    """
    f = sys._getframe(1) if frame is None else frame
    kinds = _frame_kinds
    while f is not None:
        code = f.f_code
        kind = kinds.get(code.co_filename)
        if kind is None:
            kind = _classify(code.co_filename)
        if kind == _USER:
            # an op's own make_node, wherever it is defined, is not where the graph was built
            if code.co_name != "make_node":
                break
        elif kind == _COMPILE:
            return None
        f = f.f_back
    stack = []
    intern = _frames.setdefault  # nodes built from the same lines share their frame tuples
    while f is not None and limit:
        code = f.f_code
        frame = (code.co_filename, f.f_lineno, code.co_name, None)
        stack.append(intern(frame, frame))
        f = f.f_back
        limit -= 1
    stack.reverse()
    return stack


def user_stacklevel():
    """The ``stacklevel`` that makes ``warnings.warn``, called by the caller of this function,
    point at the first frame of the user's code (as user_stack chooses it)."""
    f, level = sys._getframe(1), 1
    while f is not None:
        code = f.f_code
        kind = _frame_kinds.get(code.co_filename)
        if kind is None:
            kind = _classify(code.co_filename)
        if kind == _USER and code.co_name != "make_node":
            return level
        f, level = f.f_back, level + 1
    return 1


def add_tag_trace(thing, user_line=None):
    """Set ``thing.tag.trace`` (a node or a variable) to where the user's code created it.

    PyTensor's function: ``user_line`` defaults to ``config.traceback__limit`` (-1: all frames;
    0: record nothing). Returns ``thing``.
    """
    limit = config.traceback__limit if user_line is None else user_line
    if limit:
        stack = user_stack(limit, sys._getframe(1))
        if stack is not None:
            thing.tag.trace = [stack] if stack else []
    return thing


def get_trace(thing):
    """The recorded stack of a node or variable (a list of frame tuples), or [] if none.

    A node without one of its own has its first output's, a variable without one its owner's;
    a trace may also be a string.
    """
    related = getattr(thing, "outputs", None) or ()
    if not related and getattr(thing, "owner", None) is not None:
        related = (thing.owner,)
    for obj in (thing, *related[:1]):
        trace = getattr(getattr(obj, "tag", None), "trace", None)
        if trace:
            if isinstance(trace, str):
                return trace
            first = trace[0]
            if isinstance(first, list) or (isinstance(first, tuple) and not isinstance(first[0], str)):
                return [frame for stack in trace for frame in stack]  # PyTensor's list of stacks
            return list(trace)
    return []


def creation_site(thing):
    """``"file:line"`` of the innermost recorded frame of ``thing`` (``"file:line (in fn)"``), or None."""
    stack = get_trace(thing)
    if not stack or isinstance(stack, str):
        return None
    filename, lineno, name = tuple(stack[-1])[:3]
    return "%s:%s (in %s)" % (filename, lineno, name)


def format_trace(thing, indent=""):
    """The recorded stack of ``thing`` as ``traceback.format_list`` lines (source included), or ''."""
    stack = get_trace(thing)
    if not stack:
        return ""
    if isinstance(stack, str):
        text = stack.rstrip("\n")
    else:
        text = "".join(traceback.format_list([tuple(frame)[:4] for frame in stack])).rstrip("\n")
    return "\n".join(indent + line for line in text.split("\n"))


def get_variable_trace_string(v):
    """PyTensor's helper: the backtrace of where ``v`` (a node or variable) was created, or ''."""
    text = format_trace(v, "  ")
    return "\nBacktrace when that variable is created:\n%s\n" % text if text else ""


def copy_stack_trace(from_var, to_var, stop=()):
    """Give ``to_var`` (a variable or list), its owner and the new nodes feeding it the trace of
    ``from_var`` where they have none. The walk stops at variables in ``stop`` (a graph's existing
    variables), so only what a rewrite made is filled in. PyTensor's name."""
    sources = from_var if isinstance(from_var, (list, tuple)) else [from_var]
    trace = None
    for src in sources:
        trace = getattr(src.tag, "trace", None) or (
            getattr(src.owner.tag, "trace", None) if getattr(src, "owner", None) is not None else None)
        if trace:
            break
    if not trace:
        return
    targets = list(to_var) if isinstance(to_var, (list, tuple)) else [to_var]
    for var in targets:  # the computed replacements themselves (which may already be in the graph)
        if var.owner is not None and not getattr(var.tag, "trace", None):
            var.tag.trace = trace
    seen = set()
    while targets:
        var = targets.pop()
        if var in seen or var in stop:
            continue
        seen.add(var)
        node = var.owner
        if node is None:
            continue
        if not getattr(node.tag, "trace", None):
            node.tag.trace = trace
        targets.extend(node.inputs)


class TestValueError(Exception):
    """A variable has no test value (``tag.test_value``) where one was needed."""

    __test__ = False  # not a pytest test class


def char_from_number(number):
    """0 -> 'A', 25 -> 'Z', 26 -> 'BA' (base 26 with A as the zero digit, as PyTensor)."""
    if number < 0:
        raise ValueError("char_from_number: %d is negative" % number)
    digits = []
    while True:
        number, rem = divmod(number, 26)
        digits.append(chr(ord("A") + rem))
        if number == 0:
            break
    return "".join(reversed(digits))
