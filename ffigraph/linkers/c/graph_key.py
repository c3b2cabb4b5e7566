"""Structural keys: name a graph's cache entry without generating its C.

A warm ``function()`` used to generate the whole translation unit only to hash it into the cache
key. The structural key hashes what the generator reads instead, so equal keys mean equal sources
(and equal builds):

* the environment, computed once per process: the key format, the ABI version, a fingerprint of
  ffigraph's own files (path, size and mtime of each: a stat per file, no reads), the interpreter
  (executable, prefix, cache tag) and numpy's version;
* per call: every config value (``config.describe()``: conservative, a flag the C or the build may
  read today or later cannot be missed), the compiler's identity and base command (flags of a
  graph with no requirements: BASE_FLAGS, sanitizers, the ABI header folder), and the files of
  any class from outside ffigraph that the graph uses (a user's op: its C code changes with its
  file, bumped version or not);
* the graph, in the linker's execution order: each variable (numbered in first-seen order) with
  its type (class, ``__props__``, C cache version, text) and name, and its text where that is
  not its op's (an input's or constant's: slot tables, comments and messages name it); constants
  by a hash of their dtype, shape and bytes; each node's op (class, ``__props__``, view and destroy maps, text), its
  ``c_code_cache_version_apply`` and the variables it reads and writes; the input and output
  slots with their roles and alias slots; the profile flag.

Anything that cannot be written down stably gives no key (``None``), and the caller generates
the source and hashes it as before: a ``__props__`` value whose kind is not known here (an object
without ``__props__``, a function), an op or type without ``__props__`` (identity equality), an
empty C cache version, inner graphs (scan), GPU types or CUDA sources, a class from outside
ffigraph without a source file, a class made inside a function (its closure is not written
down), a text that names an object's address.

What it relies on, as the source key relies on ``c_code_cache_version`` for reuse across
processes today: an op's or type's C follows from its class, its ``__props__`` (the identity merge
uses too), the node's variables and the config; a module-level switch that changes the C shows
in the version (as ``dot_c.USE_BLAS`` and ``blas.SHARE_NUMPY_BLAS`` do in Dot's). Tests keep it
honest: a hit's source, generated when asked for, must carry the library's prefix.
"""
from __future__ import annotations

import hashlib
import os
import sys
import threading

import numpy as np

from ffigraph.abi import ABI_VERSION
from ffigraph.config import config
from ffigraph.graph.basic import Constant, Variable
from ffigraph.graph.utils import PropsIdentity
from ffigraph.linkers import lazy
from ffigraph.linkers.c.build import compiler_command
from ffigraph.linkers.c.cache import compiler_identity
from ffigraph.linkers.c.interface import MethodNotDefined

KEY_FORMAT = 1   # bump when what the key covers changes
_PACKAGE = "ffigraph"
# the folder that holds the ffigraph package (this file is ffigraph/linkers/c/graph_key.py)
_PACKAGE_DIR = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
_FILE_SUFFIXES = (".py", ".c", ".h")


class _NoKey(Exception):
    """The graph cannot be keyed structurally (the message says why)."""


def _class_path(cls):
    return "%s.%s" % (cls.__module__, cls.__qualname__)


def _key_class_path(cls):
    """A class's path for a key: one made inside a function may differ by what its closure holds,
    under one name, so it gives no key."""
    if "<locals>" in cls.__qualname__:
        raise _NoKey("%s was made inside a function" % _class_path(cls))
    return _class_path(cls)


# ------------------------------------------------------------------ values, stably written down


def _encode(value, classes):
    """A stable text for a ``__props__`` value (or a version, a constant's data); raises _NoKey
    for anything whose text could hide a difference."""
    t = type(value)
    if t is bool or t is int or t is str or value is None or value is Ellipsis:
        return repr(value)
    if t is float or t is complex:
        return "%s(%r)" % (t.__name__, value)   # repr round-trips every float (nan, -0.0 included)
    if t is bytes:
        return "b'%s'" % value.hex()
    if t is tuple or t is list:
        return "%s[%s]" % ("t" if t is tuple else "l", ",".join(_encode(v, classes) for v in value))
    if t is frozenset or t is set:
        return "s{%s}" % ",".join(sorted(_encode(v, classes) for v in value))
    if t is dict:
        return "d{%s}" % ",".join(sorted("%s:%s" % (_encode(k, classes), _encode(v, classes))
                                         for k, v in value.items()))
    if t is slice:
        return "slice(%s,%s,%s)" % (_encode(value.start, classes), _encode(value.stop, classes),
                                    _encode(value.step, classes))
    if t is type:
        classes.add(value)
        return "class(%s)" % _key_class_path(value)
    if isinstance(value, np.dtype):
        if value.hasobject or value.fields is not None:
            raise _NoKey("a dtype with objects or fields: %s" % (value,))
        return "dtype(%s)" % value.str
    if isinstance(value, np.generic):
        return "np(%s,%s)" % (_encode(value.dtype, classes), np.asarray(value).tobytes().hex())
    if isinstance(value, np.ndarray):
        return _array_text(value)
    if isinstance(value, PropsIdentity):
        return _props_text(value, classes)
    raise _NoKey("a value of kind %s (%s)" % (_class_path(t), _short_repr(value)))


def _short_repr(value):
    try:
        text = repr(value)
    except Exception:   # noqa: BLE001 - only for the message
        text = "?"
    return text if len(text) <= 60 else text[:57] + "..."


def _array_text(value):
    if value.dtype.hasobject or value.dtype.fields is not None:
        raise _NoKey("an array of dtype %s" % (value.dtype,))
    data = np.ascontiguousarray(value)
    return "array(%s,%s,%s)" % (value.dtype.str, value.shape, hashlib.sha256(data.tobytes()).hexdigest())


class _Seen(set):
    """The classes a key met, and the texts of the objects with props it wrote (by id: many nodes
    share one scalar op or type; the objects are kept so that their ids stay theirs)."""

    def __init__(self):
        super().__init__()
        self.texts = {}


def _props_text(obj, classes):
    texts = getattr(classes, "texts", None)
    if texts is not None:
        found = texts.get(id(obj))
        if found is not None:
            return found[1]
    cls = type(obj)
    if cls.__props__ is None:
        raise _NoKey("%s has no __props__ (compared by identity)" % _class_path(cls))
    classes.add(cls)
    text = "%s{%s}" % (_key_class_path(cls), ",".join("%s=%s" % (name, _encode(getattr(obj, name), classes))
                                                     for name in cls.__props__))
    if texts is not None:
        texts[id(obj)] = (obj, text)
    return text


def _text(obj):
    try:
        text = str(obj)
    except Exception as err:   # noqa: BLE001 - an object that cannot print gives no key
        raise _NoKey("str() of %s failed: %s" % (type(obj).__name__, err)) from None
    if " at 0x" in text:   # an object's address: another process would write another text
        raise _NoKey("the text of %s names an address: %s" % (type(obj).__name__, text))
    return repr(text)


def _optional(obj, method, *args):
    fn = getattr(obj, method, None)
    if fn is None:
        return None
    try:
        return fn(*args)
    except MethodNotDefined:
        return None


# ------------------------------------------------------------------ what the graph does not show


_env_lock = threading.Lock()
_environment = None
_file_digests = {}    # path -> (mtime_ns, size, sha256 of the contents)


def package_fingerprint():
    """A hash of ffigraph's own files by path, size and mtime (one stat each, computed once per
    process): any edit to the generator, an op's C or the build gives new keys. None when no file
    is found (then nothing is keyed structurally)."""
    entries = []
    cut = len(_PACKAGE_DIR) + 1
    folders = [os.path.join(_PACKAGE_DIR, _PACKAGE)]
    while folders:
        try:
            listing = os.scandir(folders.pop())
        except OSError:
            continue
        with listing:
            for entry in listing:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        folders.append(entry.path)
                elif entry.name.endswith(_FILE_SUFFIXES):
                    try:
                        st = entry.stat()
                    except OSError:
                        continue
                    entries.append("%s:%d:%d" % (entry.path[cut:], st.st_size, st.st_mtime_ns))
    entries.sort()
    if not any(e.startswith(os.path.join(_PACKAGE, "linkers", "c", "graph_key.py:")) for e in entries):
        return None   # not the package's folder: its code cannot be fingerprinted
    return hashlib.sha256("\n".join(entries).encode()).hexdigest()


def environment():
    """What a process cannot change after start: computed once. Raises _NoKey when ffigraph's
    files cannot be fingerprinted."""
    global _environment
    with _env_lock:
        if _environment is None:
            fingerprint = package_fingerprint()
            _environment = False if fingerprint is None else "\n".join([
                "format=%d" % KEY_FORMAT, "abi=%d" % ABI_VERSION, "package=" + fingerprint,
                "package_dir=" + _PACKAGE_DIR, "python=%s|%s|%s" % (sys.executable, sys.prefix,
                                                                    sys.implementation.cache_tag),
                "numpy=" + np.__version__])
        if _environment is False:
            raise _NoKey("ffigraph's files were not found under %s" % _PACKAGE_DIR)
        return _environment


def _file_digest(path):
    st = os.stat(path)
    memo = _file_digests.get(path)
    if memo is None or memo[:2] != (st.st_mtime_ns, st.st_size):
        with open(path, "rb") as fh:
            memo = _file_digests[path] = (st.st_mtime_ns, st.st_size, hashlib.sha256(fh.read()).hexdigest())
    return memo[2]


def foreign_code(classes):
    """The files of the classes (and their bases) from outside ffigraph: their contents' hashes."""
    files = {}
    for cls in classes:
        for base in cls.__mro__:
            _key_class_path(base)
            module_name = base.__module__
            if module_name == "builtins" or module_name == _PACKAGE or module_name.startswith(_PACKAGE + "."):
                continue
            module = sys.modules.get(module_name)
            path = getattr(module, "__file__", None)
            if not path or not os.path.isfile(path):
                raise _NoKey("%s comes from %s, which has no source file" % (_class_path(base), module_name))
            files[os.path.abspath(path)] = None
    return "\n".join("%s=%s" % (path, _file_digest(path)) for path in sorted(files))


def compiler_part(compiler):
    cc = compiler or config.cxx
    head, libs = compiler_command({}, cc)
    return "compiler=%s\ncommand=%s\nlibs=%s" % (compiler_identity(cc), " ".join(head), " ".join(libs))


# ------------------------------------------------------------------ the graph


def _graph_text(fgraph, input_roles, output_roles, output_alias, profile, classes, order=None):
    lines = []
    numbers = {}       # variable -> its number, in first-seen order (the generator's V<n>)
    op_texts = {}      # id(op) -> its text (many nodes share one op)
    type_texts = {}    # id(type) -> its text
    keep = []          # the objects whose ids are used, alive until done

    def type_text(t):
        text = type_texts.get(id(t))
        if text is None:
            if getattr(t, "device", "cpu") != "cpu":
                raise _NoKey("a value on %s" % (t.device,))
            version = _optional(t, "c_code_cache_version")
            if not version:
                raise _NoKey("type %s has no C cache version" % (t,))
            text = type_texts[id(t)] = "%s v%s %s" % (_props_text(t, classes), _encode(version, classes), _text(t))
            keep.append(t)
        return text

    def variable(var, kind):
        number = numbers[var] = len(numbers)
        line = "V%d %s %s name=%s" % (number, kind, type_text(var.type), _encode(var.name, classes))
        if isinstance(var, Constant):   # a constant, or one a node's own graph takes as an input
            data = var.data
            line += " data=" + (_array_text(data) if isinstance(data, np.ndarray) else _encode(data, classes))
        if var.owner is None or type(var).__str__ is not Variable.__str__:
            # its text names it in the source (slot tables, comments, messages); a computed value's
            # default text is its op's and position's, already written down
            line += " text=" + _text(var)
        lines.append(line)

    def op_text(op):
        text = op_texts.get(id(op))
        if text is None:
            if getattr(op, "c_cuda_source_apply", None) is not None:
                raise _NoKey("%s has CUDA sources" % (op,))
            text = op_texts[id(op)] = "%s view=%s destroy=%s %s" % (
                _props_text(op, classes), _encode(dict(op.view_map), classes),
                _encode(dict(op.destroy_map), classes), _text(op))
            keep.append(op)
        return text

    inputs = list(fgraph.inputs)
    for var in inputs:
        if var in numbers:
            raise _NoKey("%s is an input twice" % (var,))
        variable(var, "input")
    for index, node in enumerate(lazy.execution_order(fgraph) if order is None else order):
        op = node.op
        for var in node.inputs:
            if var not in numbers:
                if not isinstance(var, Constant):
                    raise _NoKey("%s is read before it is computed" % (var,))
                variable(var, "constant")
        if _optional(op, "c_inner_graphs", node):
            raise _NoKey("%s has inner graphs" % (op,))
        version = _optional(op, "c_code_cache_version_apply", node)
        if version is None:
            version = _optional(op, "c_code_cache_version")
        if not version:
            raise _NoKey("%s has no C cache version" % (op,))
        for var in node.outputs:
            variable(var, "computed")
        lines.append("node%d %s v%s in=%s out=%s" % (
            index, op_text(op), _encode(version, classes), [numbers[v] for v in node.inputs],
            [numbers[v] for v in node.outputs]))
    outputs = list(fgraph.outputs)
    for var in outputs:
        if var not in numbers:
            raise _NoKey("output %s is neither computed nor an input" % (var,))
    n_in, n_out = len(inputs), len(outputs)
    lines.append("input_roles=%s" % _encode(list(input_roles or [0] * n_in), classes))
    lines.append("outputs=%s roles=%s alias=%s" % ([numbers[v] for v in outputs],
                                                   _encode(list(output_roles or [2] * n_out), classes),
                                                   _encode(list(output_alias or [-1] * n_out), classes)))
    lines.append("updates=%s" % _encode(list(getattr(fgraph, "update_inputs", None) or []), classes))
    lines.append("output_names=%s" % _encode(list(getattr(fgraph, "output_names", None) or []), classes))
    lines.append("profile=%d" % bool(profile))
    return "\n".join(lines)


def structural_key(fgraph, input_roles=None, output_roles=None, output_alias=None, profile=False,
                   compiler=None, order=None):
    """The structural key of what ``codegen.generate`` would make of these arguments (and the
    build of it with ``compiler``), or None when the graph must be keyed by its source.
    ``order``: the graph's execution order (``lazy.execution_order``), if the caller has it."""
    classes = _Seen()
    try:
        env = environment()
        graph = _graph_text(fgraph, input_roles, output_roles, output_alias, profile, classes, order)
        foreign = foreign_code(classes)
    except _NoKey:
        return None
    parts = [env, "config:\n" + config.describe(), compiler_part(compiler),
"foreign:\n" + foreign, "graph:\n" + graph]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def why_no_key(fgraph, input_roles=None, output_roles=None, output_alias=None, profile=False):
    """Why ``structural_key`` gives None for this graph (for tests and debugging), or None."""
    classes = _Seen()
    try:
        _graph_text(fgraph, input_roles, output_roles, output_alias, profile, classes)
        foreign_code(classes)
    except _NoKey as why:
        return str(why)
    return None
