"""The C contracts of Types and Ops (Theano's names and meaning, moved to the plain-C ABI).

A Type that mixes in ``CType`` says how its values live in C locals:
``c_declare`` (the locals), ``c_init`` (a computed value's starting state),
``c_extract`` (fill them from an input slot), ``c_sync`` (hand them to an
output slot) and ``c_cleanup`` (free what init/extract allocated).

An Op that mixes in ``COp`` gives ``c_code`` (compute outputs from inputs)
and, optionally, support, init and cleanup code at three levels: global
(once per library), apply (once per node) and struct (per created state).

Keys of ``sub``, the dictionary every method receives::

  fail        a C statement that reports failure and jumps to the enclosing cleanup;
              set the reason first with ``ffg_set_error(%(err)s, FFG_ERR_..., -1, "fmt", ...)``
  err         the ``FfgError *`` of the call
  allocator   the ``const FfgAllocator *`` outputs and temporaries come from
  struct      the state pointer; members from c_support_code_struct are ``%(struct)s->member``
  context     the C name of the node's context (``get_context``), when the op has one
  node_index  the node's position in execution order
  inner_graphs  for an op with graphs of its own (``c_inner_graphs``): one dict per graph, ``prefix``
              (its static C functions are ``<prefix>_run``, ``_create``, ``_destroy``, shaped like
              the exported ones) and ``state`` (a C expression of its state pointer)

c_extract also gets: input (an ``const FfgTensor *`` expression), input_index, input_name.
c_sync also gets: output (an ``FfgOutput *`` expression), out_shape, out_strides (int64
storage that outlives the call), alias_of (the input slot the value may view, or -1).
"""
from __future__ import annotations


class MethodNotDefined(NotImplementedError):
    """An optional C method is absent, so the object has no C implementation for this case."""


class CLinkerObject:
    """Headers, libraries, flags and support code, common to Types and Ops."""

    def c_headers(self, **kwargs):
        return []

    def c_header_dirs(self, **kwargs):
        return []

    def c_libraries(self, **kwargs):
        return []

    def c_lib_dirs(self, **kwargs):
        return []

    def c_compile_args(self, **kwargs):
        return []

    def c_no_compile_args(self, **kwargs):
        return []

    def c_support_code(self, **kwargs):
        return ""

    def c_init_code(self, **kwargs):
        """Statements run once when a state is created (the library's module-init time)."""
        return []

    def c_compiler(self):
        return None

    def c_code_cache_version(self):
        """A tuple to change whenever the C code changes; () means "never cache"."""
        return ()


class CType(CLinkerObject):
    """The C side of a Type. Every method returns C source text."""

    def c_declare(self, name, sub, check_input=True):
        raise MethodNotDefined("%s has no c_declare" % type(self).__name__)

    def c_init(self, name, sub):
        raise MethodNotDefined("%s has no c_init" % type(self).__name__)

    def c_extract(self, name, sub, check_input=True):
        raise MethodNotDefined("%s has no c_extract" % type(self).__name__)

    def c_sync(self, name, sub):
        raise MethodNotDefined("%s has no c_sync" % type(self).__name__)

    def c_cleanup(self, name, sub):
        return ""

    def c_offer_output(self, name, sub):
        """C run before the nodes for a computed output: it may take the host's offered block
        (``%(output)s->host_buffer``). Optional; the default ignores the offer."""
        return ""

    def c_profile_value(self, name, sub):
        """C run in a profiled library after the node computing ``name`` succeeded: it fills the
        ``FfgValueProfile *`` ``%(record)s`` (ndim, shape, nbytes). Optional; without it the
        record keeps ndim -1 and the profile shows no shape for the value."""
        return ""

    def c_literal(self, name, data):
        """C initialising ``name`` (already declared) to the constant ``data``, and
        global definitions it needs: returns (globals, statements). None: not supported."""
        return None

    # ---- how values cross the boundary on the Python side

    def c_abi_dtype(self):
        """The numpy dtype of the ABI slot holding a value of this type."""
        raise MethodNotDefined("%s has no c_abi_dtype" % type(self).__name__)

    def to_c_value(self, value):
        """The numpy array passed in the ABI slot for ``value`` (a filtered value)."""
        return value

    def from_c_value(self, array):
        """The Python value of this type for the array that came out of an ABI slot."""
        return array


class COp(CLinkerObject):
    """The C side of an Op."""

    def c_code(self, node, name, inputs, outputs, sub):
        raise MethodNotDefined("%s has no c_code" % self)

    def c_code_cleanup(self, node, name, inputs, outputs, sub):
        return ""

    def c_support_code_apply(self, node, name):
        return ""

    def c_support_code_struct(self, node, name):
        return ""

    def c_init_code_apply(self, node, name):
        return ""

    def c_init_code_struct(self, node, name, sub):
        return ""

    def c_cleanup_code_struct(self, node, name):
        return ""

    def c_code_cache_version_apply(self, node):
        return self.c_code_cache_version()

    def get_context(self, node):
        return None

    def c_inner_graphs(self, node):
        """FunctionGraphs the node runs itself (scan's loop body), compiled into the same library:
        the C linker generates each as static functions (its ``run`` takes the ABI's inputs and
        outputs, as a host would call it) with a state the node's state owns, and hands the op
        ``sub['inner_graphs']``. The node has C code only when every node of them has. Optional."""
        return []

    def c_lazy_condition(self, node, name):
        """For an op with lazy branches (``Op.lazy_branches``): a C expression, nonzero when the
        condition held in the C local ``name`` selects the then branch. The C linker puts each
        branch's node calls under ``if`` / ``else`` on it."""
        raise MethodNotDefined("%s has no c_lazy_condition" % self)


def call_c_method(obj, method, *args, **kwargs):
    """Call a C-contract method that may be missing on plain (non-C) objects."""
    fn = getattr(obj, method, None)
    if fn is None:
        raise MethodNotDefined("%s has no %s" % (obj, method))
    return fn(*args, **kwargs)


class DelegatedCOp(COp):
    """An op whose C methods live in a separate module (codegen kept apart from the graph op).

    ``c_impl`` names the module; it defines ``c_code(op, node, name, inputs, outputs, sub)`` and
    may define ``c_support_code(op)``, ``c_support_code_apply(op, node, name)``, ``c_headers(op)``,
    ``c_libraries(op)``, ``c_lib_dirs(op)``, ``c_header_dirs(op)``, ``c_compile_args(op)``,
    ``c_code_cleanup(op, node, name, inputs, outputs, sub)`` and ``c_code_cache_version(op)``.
    """

    c_impl: str = None

    def _c_function(self, fname):
        import importlib

        if self.c_impl is None:
            return None
        try:
            module = importlib.import_module(self.c_impl)
        except ImportError as err:
            if err.name != self.c_impl:
                raise  # the module exists but is broken: say so rather than fall back quietly
            return None
        return getattr(module, fname, None)

    def _delegate(self, fname, default, *args):
        fn = self._c_function(fname)
        return default if fn is None else fn(self, *args)

    def c_code(self, node, name, inputs, outputs, sub):
        fn = self._c_function("c_code")
        if fn is None:
            raise MethodNotDefined("%s has no C implementation" % self)
        return fn(self, node, name, inputs, outputs, sub)

    def c_code_cleanup(self, node, name, inputs, outputs, sub):
        return self._delegate("c_code_cleanup", "", node, name, inputs, outputs, sub)

    def c_support_code(self, **kwargs):
        return self._delegate("c_support_code", "")

    def c_support_code_apply(self, node, name):
        return self._delegate("c_support_code_apply", "", node, name)

    def c_headers(self, **kwargs):
        return self._delegate("c_headers", [])

    def c_header_dirs(self, **kwargs):
        return self._delegate("c_header_dirs", [])

    def c_libraries(self, **kwargs):
        return self._delegate("c_libraries", [])

    def c_lib_dirs(self, **kwargs):
        return self._delegate("c_lib_dirs", [])

    def c_compile_args(self, **kwargs):
        return self._delegate("c_compile_args", [])

    def c_code_cache_version(self):
        return self._delegate("c_code_cache_version", ())


def c_format_text(text):
    """``text`` for the inside of a C string literal that is a printf format (an error message):
    quotes, backslashes and trigraph question marks escaped, ``%`` doubled, newlines as spaces."""
    return (str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ").replace("%", "%%")
            .replace("?", "\\?"))


def c_string(text):
    """A C string literal for any text: printable ASCII kept, everything else as octal escapes
    (so a name can hold quotes, newlines or non-ASCII without breaking or changing the source)."""
    out = []
    for byte in str(text).encode("utf-8", "backslashreplace"):
        ch = chr(byte)
        if ch in '"\\?':
            out.append("\\" + ch)
        elif 32 <= byte < 127:
            out.append(ch)
        else:
            out.append("\\%03o" % byte)
    # the source's placeholders are replaced after generation: never spell one in a literal
    return '"%s"' % "".join(out).replace("FFG_PREFIX", "FFG\\137PREFIX").replace("FFG_SOURCE", "FFG\\137SOURCE")
