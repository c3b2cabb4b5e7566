"""Generate one C translation unit for a FunctionGraph over the ffigraph ABI.

The seed's layout, with each scope made explicit::

  1. every variable's locals (``c_declare``) are members of one frame struct;
     ``run`` sets them up in order: inputs extracted, constants written,
     computed values initialised;
  2. each node is a static function: its ``c_code``, then a label, then its
     ``c_code_cleanup`` (which sees c_code's locals); ``sub['fail']`` jumps to
     that label, so the node's cleanup runs on success and on failure;
  3. ``run`` calls the nodes in order and stops at the first failure;
  4. outputs are synced to their slots (on success only);
  5. every variable is cleaned up, in reverse order; a failure while setting
     up variable k jumps to k's cleanup, so exactly the cleanups due run.

Generated code names variables V<n>; macros map them to the frame, so every
contract method sees plain names, as in Theano. One function per node (not
one nested function for the graph, as Theano did) keeps compile time linear:
a 3000-node graph as a single function took 100 s at -O3.

Shared node functions: nodes whose code differs only in which variables they use (the layers of
a deep network) share one function, so gcc compiles that code once. Each node's code is first
generated with canonical names (``_canonical_node``: its variables ``ffg_in<i>``/``ffg_out<j>``,
macros over pointer parameters; its name SHARED_NAME; its failure record taking the node index
and description from parameters); nodes with the same text form a group, whose first node
defines ``<prefix>_fn<k>`` and every node calls it with pointers to its own frame variables,
under a comment naming the node. The frame still owns the variables. A node whose text is
unique keeps its own ``<prefix>_node<i>``, as does any node that cannot share (per-state
members, inner graphs, a context, CUDA sources, locals that are not one declaration).

Nested graphs: an op whose node has graphs of its own (scan's loop body) offers
``c_inner_graphs(node)``, a list of FunctionGraphs. Each one is generated into
the same translation unit, by the same code, as static functions and types
named ``<prefix>_n<node>_g<k>`` (frame, state, node functions, create, destroy
and run with the exported shapes), its variables named ``n<node>_g<k>_V<n>``.
The outer state holds a pointer to each inner state, made in create and freed
in destroy; the op's ``c_code`` gets ``sub['inner_graphs']``, one dict per
graph: ``prefix`` (of its C functions) and ``state`` (a C expression of its
state pointer), and calls ``<prefix>_run(<state>, ...)`` as a host would.

Parts: gcc spends most of a build optimising the node functions' loops, and a machine has several
CPUs. So the exported graph's node functions are spread over parts (``plan_parts``, by a rough
measure of each function's code, ``compile_weight``), each wrapped in ``#if FFG_PART_HAS(k)``, the
entry points in part 0; declarations of every node function come first. The builder compiles the
file once per CPU, each time with ``-DFFG_PART_MASK`` naming the parts that unit holds
(``build.part_masks``), and links the objects: node functions are then hidden (not static) symbols,
and the support code each unit uses is compiled in that unit (static; the thread pool, the one
piece of state the library must have once, is defined by the unit with part 0). Compiled without
FFG_PART_MASK (one CPU, an export, a user's own build) the file is the whole library, every node
function static, as before. Inner graphs are never cut.
"""
from __future__ import annotations

import hashlib
import re
import textwrap

from ffigraph.abi import HEADER_NAME, dtype_code
from ffigraph.graph.basic import Constant
from ffigraph.linkers import devices, lazy
from ffigraph.linkers.c import profile_c
from ffigraph.linkers.c.interface import MethodNotDefined
from ffigraph.graph.c_interface import c_string
from ffigraph.linkers.c.runtime import RUNTIME_C

PREFIX_TOKEN = "FFG_PREFIX"
# "<C type> <name>;": a variable whose locals are one declaration (one pattern for every name:
# a pattern per name, compiled per node, cost a large graph a third of its code generation)
_ONE_DECLARATION = re.compile(r"^([A-Za-z_][\w \t*]*?)\s*\b([A-Za-z_]\w*)\s*;$")
SHARED_NAME = "ffg_SHARED_NAME"   # a node's name while its code is generated for sharing (replaced)
LARGE_GRAPH = 64   # nodes; above this, compile time matters more than inlining the node calls
NODE_LINKAGE = "FFG_NODE_LINKAGE_TOKEN"   # a node function's linkage, settled per graph (_graph_section)

# Building in parts (see the module's docstring): up to MAX_PARTS parts of at least PART_WEIGHT
# (compile_weight) each.
MAX_PARTS = 8
PART_WEIGHT = 250    # compile_weight units: some 0.15 s of gcc -O3
GLUE_WEIGHT = 200    # the first part's run/create/destroy and the runtime they use, beside run's body


class _NodeFunction:
    """One node function's C (``text``), its declaration (``signature``), a rough measure of the
    compiler's work on it and its support code (``weight``, compile_weight) and whether it must be
    in the first part (``first_part``: it uses inner graphs, which create sets up)."""

    def __init__(self, text, signature, weight, first_part=False):
        self.text = text
        self.signature = signature
        self.weight = weight
        self.first_part = first_part


def compile_weight(*texts):
    """A rough measure of gcc's work on some C: its statements, and five times its loops, which
    the optimiser unrolls and vectorises."""
    text = "".join(texts)
    return text.count(";") + 5 * text.count("for (")


def plan_parts(functions, glue_weight):
    """Each node function's part (a list of ints) and the parts' weights, or (None, None) when the
    graph is better compiled as one unit. Part 0 holds the glue (run, create, ...); the functions
    go, heaviest first, to the lightest part."""
    total = sum(fn.weight for fn in functions) + glue_weight
    n = min(MAX_PARTS, len(functions) + 1, total // PART_WEIGHT)
    if n < 2:
        return None, None
    weights = [glue_weight] + [0] * (n - 1)
    assign = [0] * len(functions)
    for i in sorted(range(len(functions)), key=lambda i: -functions[i].weight):
        k = 0 if functions[i].first_part else min(range(n), key=lambda j: weights[j])
        assign[i] = k
        weights[k] += functions[i].weight
    if sum(1 for w in weights if w) < 2:
        return None, None
    return assign, weights


PARTS_HEAD = r"""
/* ---- built in parts ----
   The node functions are spread over %(n)d parts, so that the builder can compile them as
   translation units side by side: each compile defines FFG_PART_MASK, the parts it holds (bit k:
   part k), and the units are linked into one library. Part 0 holds run, create and the other
   entry points. Compiled without FFG_PART_MASK, this file is the whole library, as usual. */
#ifdef FFG_PART_MASK
#define FFG_PART_HAS(k) ((FFG_PART_MASK >> (k)) & 1)
#define FFG_NODE_LINKAGE __attribute__((visibility("hidden")))
#else
#define FFG_PART_HAS(k) 1
#define FFG_NODE_LINKAGE static
#endif
"""


class GraphSource:
    """A generated library: its source, symbol prefix and build requirements."""

    def __init__(self, source, prefix, requirements, cacheable, input_vars, output_vars, nodes):
        self.source = source
        self.prefix = prefix
        self.requirements = requirements  # dict: headers, header_dirs, libraries, lib_dirs, compile_args, ...
        self.cacheable = cacheable
        self.input_vars = input_vars
        self.output_vars = output_vars
        self.nodes = nodes


def _optional(obj, method, *args, **kwargs):
    fn = getattr(obj, method, None)
    if fn is None:
        return None
    try:
        return fn(*args, **kwargs)
    except MethodNotDefined:
        return None


def node_has_c_code(node):
    """True when the node's op and all its variables' types implement the C contracts, and so do
    all the nodes of its inner graphs (``c_inner_graphs``), if it has any."""
    for v in node.inputs + node.outputs:
        if not hasattr(v.type, "c_declare") or _optional(v.type, "c_abi_dtype") is None:
            return False
    if not hasattr(node.op, "c_code"):
        return False
    inner = _optional(node.op, "c_inner_graphs", node) or []
    for fgraph in inner:
        if not all(node_has_c_code(n) for n in lazy.execution_order(fgraph)):
            return False
    names = ["probe_in%d" % i for i in range(len(node.inputs))]
    outs = ["probe_out%d" % i for i in range(len(node.outputs))]
    sub = dict(fail="goto probe;", err="err", allocator="allocator", device_allocator="device_allocator",
               struct="state", node_index=0)
    if inner:
        sub["inner_graphs"] = [dict(prefix="probe_g%d" % k, state="probe_state%d" % k) for k in range(len(inner))]
    try:
        node.op.c_code(node, "probe", names, outs, sub)
    except (MethodNotDefined, NotImplementedError):
        return False
    return True


def _indent(code, level=1):
    return textwrap.indent(textwrap.dedent(code).strip("\n"), "    " * level) if code and code.strip() else ""


def _dedent(code):
    return textwrap.dedent(code or "").strip("\n")


_c_string = c_string


def comment_text(text):
    """``text`` made safe inside a C block comment, on one line: printable ASCII kept, everything
    else (newlines, NUL, non-ASCII) and every backslash as a visible escape, so no line splice
    (``*\\`` + newline + ``/``) and no trigraph (``??/``) can join characters into a ``*/``; ``*/`` and
    ``/*`` themselves are broken up with a space."""
    out, prev = [], ""
    for ch in str(text):
        code = ord(ch)
        if ch == "\\":
            out.append("\\x5c")
        elif ch == "?" and prev == "?":
            out.append("\\x3f")   # no ??x trigraph
        elif 32 <= code < 127:
            out.append(ch)
        elif code < 256:
            out.append("\\x%02x" % code)
        elif code < 0x10000:
            out.append("\\u%04x" % code)
        else:
            out.append("\\U%08x" % code)
        prev = ch
    safe = "".join(out).replace("FFG_PREFIX", "FFG\\x5fPREFIX").replace("FFG_SOURCE", "FFG\\x5fSOURCE")
    while "*/" in safe or "/*" in safe:
        safe = safe.replace("*/", "* /").replace("/*", "/ *")
    return safe


def _comment(text):
    return "/* %s */" % comment_text(text)


OP_LABEL_LIMIT = 60     # characters of an op's text in error messages and the node table
NODE_TEXT_LIMIT = 200   # characters of a node's text in the node table and after an error's cause


def short_text(text, limit):
    """``text`` cut to ``limit`` characters; ``Name{...}`` keeps its closing brace, so a long fused
    expression reads ``Composite{exp((sin(...}``."""
    text = str(text)
    if len(text) <= limit:
        return text
    brace = text.find("{")
    if 0 < brace < limit - 5 and text.endswith("}"):
        return text[:limit - 4] + "...}"
    return text[:limit - 3] + "..."


def _shorten_op_text(op, *codes):
    """The op's code with its full text (a fused op's whole expression, which ops put in their
    messages) replaced by a short label, so an error message has room for its cause."""
    full = str(op)
    if len(full) <= OP_LABEL_LIMIT:
        return codes
    label = short_text(full, OP_LABEL_LIMIT)
    return tuple(c.replace(full, label) if isinstance(c, str) else c for c in codes)


def _operand_text(var, inputs, producers):
    """How a node's text names an operand: a graph input by its name, a constant by its value, a
    computed value by the node that computes it."""
    if var in producers:
        index, k, n_out = producers[var]
        return var.name or ("node%d" % index if n_out == 1 else "node%d.%d" % (index, k))
    if var in inputs:
        return var.name or "input%d" % inputs.index(var)
    return short_text(var, 16)


def _node_texts(order, inputs):
    """Each node's short text for the node table and error records: ``Dot(x, node2)``."""
    producers, texts = {}, []
    for index, node in enumerate(order):
        operands = ", ".join(_operand_text(v, inputs, producers) for v in node.inputs)
        texts.append(short_text("%s(%s)" % (short_text(node.op, OP_LABEL_LIMIT), operands), NODE_TEXT_LIMIT))
        for k, var in enumerate(node.outputs):
            producers[var] = (index, k, len(node.outputs))
    return texts


def _fault_inputs(order, inputs):
    """Per node, the one input slot whose value it depends on, or -1 when it depends on none or on
    several: a value error in such a node can only come from that input."""
    depends = {var: frozenset((slot,)) for slot, var in enumerate(inputs)}
    empty, faults = frozenset(), []
    for node in order:
        mine = empty.union(*[depends.get(v, empty) for v in node.inputs])
        for var in node.outputs:
            depends[var] = mine
        faults.append(next(iter(mine)) if len(mine) == 1 else -1)
    return faults


def unique_slot_names(inputs, input_roles, outputs, output_roles, update_inputs, output_names=()):
    """The slots' names as a host sees them: the user's variable names (``output_names``: the names
    the user gave the outputs, where the graph's own variables lost them), "input<k>", "shared<k>",
    "output<k>" for unnamed ones, "<shared name>.update" for an update; a repeated name gets
    "_<n>" (the first free n), so every name is unique."""
    def named(var, given=None):   # a C string stops at NUL: compare names as the host will read them
        name = given if given is not None else var.name
        return str(name).split("\0")[0] if name is not None else ""

    wanted, count = [], {0: 0, 1: 0}
    for var, role in zip(inputs, input_roles):
        kind = 1 if role == 1 else 0
        wanted.append(named(var) or ("shared%d" % count[1] if kind else "input%d" % count[0]))
        count[kind] += 1
    taken, names = set(), []

    def claim(name):
        name = str(name)
        if name in taken:
            n = 1
            while "%s_%d" % (name, n) in taken:
                n += 1
            name = "%s_%d" % (name, n)
        taken.add(name)
        names.append(name)

    for name in wanted:
        claim(name)
    for k, (var, role) in enumerate(zip(outputs, output_roles)):
        target = update_inputs[k] if k < len(update_inputs) else -1
        if role == 3 and 0 <= target < len(inputs):
            claim(names[target] + ".update")
        else:
            claim(named(var, output_names[k] if k < len(output_names) else None) or "output%d" % k)
    return names[:len(inputs)], names[len(inputs):]


def _param(name):
    """The pointer parameter behind canonical variable name ``name`` (ffg_in0 -> ffg_p_in0)."""
    return "ffg_p_" + name[len("ffg_"):]


class _Names:
    """C names of a graph's variables: V<n>, or <prefix>V<n> in an inner graph (its macros share
    the translation unit with the outer graph's)."""

    def __init__(self, prefix=""):
        self.prefix = prefix
        self.names = {}

    def __call__(self, var):
        if var not in self.names:
            self.names[var] = "%sV%d" % (self.prefix, len(self.names))
        return self.names[var]


def generate(fgraph, input_roles=None, output_roles=None, output_alias=None, constants_as_inputs=False,
             profile=False):
    """Build the translation unit for ``fgraph``.

    input_roles / output_roles: FFG_ROLE_* per slot (default: plain input/output).
    output_alias: per output slot, the input slot it may view, or -1.
    profile: time every node and record its outputs' shapes, and export ``P_profile``
    (see profile_c); off, the source has no trace of it.
    """
    gen = _Generator(fgraph, input_roles, output_roles, output_alias, profile)
    return gen.build()


class _Generator:
    def __init__(self, fgraph, input_roles, output_roles, output_alias, profile=False, parent=None, tag=None):
        """``parent``/``tag``: an inner graph of ``parent``'s unit, its functions named
        ``<parent prefix>_<tag>``; it shares the parent's globals and build requirements."""
        self.fgraph = fgraph
        self.profile = bool(profile)
        self.prefix = PREFIX_TOKEN if parent is None else "%s_%s" % (parent.prefix, tag)
        self.inner_sections = []   # the code of inner graphs (deepest first), placed before this graph's
        self.plan = lazy.plan(fgraph)         # nodes, and the Branches of lazy ops (linkers.lazy)
        self.order = lazy.flatten(self.plan)  # = fgraph.toposort() when the graph has no lazy op
        self.name = _Names() if parent is None else _Names("%s%s_" % (parent.name.prefix, tag))
        self.inputs = list(fgraph.inputs)
        self.outputs = list(fgraph.outputs)
        self.input_roles = input_roles or [0] * len(self.inputs)
        self.output_roles = output_roles or [2] * len(self.outputs)
        self.output_alias = output_alias or [-1] * len(self.outputs)
        self.globals = []          # support code, in first-seen order, without repeats
        self.struct_members = []
        self.frame_members = []    # the C locals of every variable, gathered in one struct
        self.init_code = []        # statements run by create
        self.struct_cleanup = []
        self.requirements = dict(headers=[], header_dirs=[], libraries=[], lib_dirs=[],
                                 compile_args=[], no_compile_args=[], cuda_sources=[])
        if parent is not None:   # one unit: support code and flags merge (without repeats)
            self.globals = parent.globals
            self.requirements = parent.requirements
        self.cacheable = True
        self.update_inputs = list(getattr(fgraph, "update_inputs", None) or [-1] * len(self.outputs)) \
            if parent is None else [-1] * len(self.outputs)
        self.output_names = list(getattr(fgraph, "output_names", None) or []) if parent is None else []
        self.node_texts = _node_texts(self.order, self.inputs)
        # FfgError.node indexes the exported graph's nodes only: a nested graph's failure names its
        # node by text, and the node running the nested graph is the one the record points at
        self.mark_failure = "ffg_mark_failure" if parent is None else "ffg_mark_inner_failure"
        self.fault_input = _fault_inputs(self.order, self.inputs)

    # ---- collecting what objects ask for

    def _add_unique(self, bucket, items):
        for item in items or ():
            if item and item not in bucket:
                bucket.append(item)

    def _collect(self, obj, check_version=True):
        for key, method in (("headers", "c_headers"), ("header_dirs", "c_header_dirs"),
                            ("libraries", "c_libraries"), ("lib_dirs", "c_lib_dirs"),
                            ("compile_args", "c_compile_args"), ("no_compile_args", "c_no_compile_args")):
            self._add_unique(self.requirements[key], _optional(obj, method))
        self._add_unique(self.globals, [_optional(obj, "c_support_code")])
        self._add_unique(self.init_code, _optional(obj, "c_init_code"))
        if check_version:  # an op's version is checked per node (c_code_cache_version_apply)
            version = _optional(obj, "c_code_cache_version")
            if not version:
                self.cacheable = False

    # ---- scopes

    def build(self):
        body, node_functions, seen = self._graph_body()
        # device values (even without a kernel, e.g. a view) need the CUDA object: it releases their blocks
        on_device = any(getattr(v.type, "device", "cpu") != "cpu" for v in seen)
        if self.requirements["cuda_sources"] or on_device:
            cuda = devices.get("cuda")   # registered by the package whose types and ops put CUDA here

            self.requirements["cuda_sources"].insert(0, cuda.prelude())
            self.requirements["cuda"] = cuda.build_requirements()
        source = self._unit(body, node_functions)
        digest = hashlib.sha256(source.encode()).hexdigest()
        prefix = "ffg_" + digest[:24]
        source = source.replace(PREFIX_TOKEN, prefix).replace("FFG_SOURCE_HASH", digest)
        return GraphSource(source, prefix, self.requirements, self.cacheable, self.inputs, self.outputs,
                           self.order)

    def _graph_body(self):
        """(run's body, the node functions, every variable set up): what the exported graph and
        an inner graph share."""
        setups, cleanups = [], []   # variable set-up in order; their cleanups run in reverse
        seen = set()
        for slot, var in enumerate(self.inputs):
            self._collect(var.type)
            self._add_var(setups, cleanups, *self._input_scope(var, slot))
            seen.add(var)
        for node in self.order:
            for var in node.inputs:
                if var not in seen and isinstance(var, Constant):
                    self._collect(var.type)
                    self._add_var(setups, cleanups, *self._constant_scope(var))
                    seen.add(var)
            for var in node.outputs:
                self._collect(var.type)
                self._add_var(setups, cleanups, *self._computed_scope(var))
                seen.add(var)
        for var in self.outputs:
            if var not in seen:
                raise ValueError("output %s is neither computed nor an input; it must be copied first" % var)
        node_functions, calls = self._nodes()
        first_cleanup = cleanups[-1][0] if cleanups else "__label_end"
        body = "\n".join(setups) + "\n" + self._offers(seen) + calls + "\n" + self._syncs(first_cleanup) + "\n" \
            + "\n".join(code for _, code in reversed(cleanups)) + "\n__label_end:;"
        return body, node_functions, seen

    def build_inner(self, what):
        """This inner graph's code (``what`` names it in a comment): its own inner graphs, then its
        frame, state, node functions and static create/destroy/run."""
        body, node_functions, seen = self._graph_body()
        on_device = [v for v in seen if getattr(v.type, "device", "cpu") != "cpu"]
        if on_device:
            raise MethodNotDefined("%s: inner graphs run on the CPU, but %s lives on %s"
                                   % (what, on_device[0], on_device[0].type.device))
        banner = "/* ==== %s: static functions %s_* ==== */\n" % (comment_text(what), self.prefix)
        return "\n\n".join(self.inner_sections + [banner + self._graph_section(body, node_functions, top=False)])

    def _add_var(self, setups, cleanups, label, declaration, setup, cleanup):
        self.frame_members.append(declaration)
        setups.append(setup)
        cleanups.append((label, cleanup))

    def _sub(self, fail_label, node_index, where, **extra):
        fault = self.fault_input[node_index] if node_index >= 0 else -1
        fail = "{ %s(err, %d, %d, %s); goto %s; }" % (self.mark_failure, node_index, fault, _c_string(where),
                                                      fail_label)
        sub = dict(fail=fail, err="err", allocator="state->allocator", device_allocator="state->device_allocator",
                   struct="state", node_index=node_index)
        sub.update(extra)
        return sub

    # ---- variables: members of the frame, set up in order, cleaned up in reverse

    def _input_scope(self, var, slot):
        name = self.name(var)
        label = "__label_%s" % name
        sub = self._sub(label, -1, "extracting input %s" % (var,), input="(&inputs[%d])" % slot,
                        input_index=slot, input_name=_c_string(var))
        role = "shared variable" if self.input_roles[slot] == 1 else "input"
        setup = "%s\n%s" % (_comment("%s = %s %d: %s (%s)" % (name, role, slot, var, var.type)),
                            _dedent(var.type.c_extract(name, sub)))
        return label, self._declare(var, name, sub), setup, self._close_var(var, name, label, sub)

    def _constant_scope(self, var):
        name = self.name(var)
        label = "__label_%s" % name
        sub = self._sub(label, -1, "constant %s" % (var,))
        literal = var.type.c_literal(name, var.data)
        if literal is None:
            raise MethodNotDefined("%s cannot write constants of type %s in C" % (var.type, var.type))
        glob, stmts = literal
        self._add_unique(self.globals, [glob])
        setup = "%s\n%s" % (_comment("%s = constant %s" % (name, var)), _dedent(stmts))
        return label, self._declare(var, name, sub), setup, self._close_var(var, name, label, sub)

    def _computed_scope(self, var):
        name = self.name(var)
        label = "__label_%s" % name
        sub = self._sub(label, -1, "initialising %s" % (var,))
        setup = "%s\n%s" % (_comment("%s = %s (%s)" % (name, var, var.type)), _dedent(var.type.c_init(name, sub)))
        return label, self._declare(var, name, sub), setup, self._close_var(var, name, label, sub)

    def _declare(self, var, name, sub):
        return "%s  %s" % (_dedent(var.type.c_declare(name, sub)), _comment("%s (%s)" % (var, var.type)))

    def _close_var(self, var, name, label, sub):
        return "%s:;\n%s" % (label, _dedent(var.type.c_cleanup(name, sub)))

    def _offers(self, computed):
        """Computed outputs may be written straight into blocks the host offers. An output computed
        in place over an intermediate (a fused loop that destroys its input) takes that input's
        memory: then the node that first allocates the chain is offered the block as well, so the
        result still lands in the host's array (the destroying node takes the block over, or, when
        it cannot, allocates its own and leaves the block alone)."""
        lines = []
        for slot, var in enumerate(self.outputs):
            if var.owner is not None and var not in self.outputs[:slot]:
                sub = dict(output="(&state->offers[%d])" % slot)
                code = _optional(var.type, "c_offer_output", self.name(var), sub)
                if code:
                    lines.append(code)
                    origin = self._in_place_origin(var)
                    if origin is not None:
                        lines.append("%s  %s" % (_optional(origin.type, "c_offer_output", self.name(origin), sub),
                                                 _comment("%s: %s is computed in place over it" % (origin, var))))
        return "\n".join(lines) + ("\n" if lines else "")

    def _in_place_origin(self, var):
        """The first intermediate of the chain of in-place results ending at output ``var`` (each
        destroying the one before), or None: one of the same type, not itself a graph input or
        output, whose only reader is the node that destroys it."""
        origin, node = None, var.owner
        while node is not None:
            destroyed = node.op.destroy_map.get(node.outputs.index(var)) if getattr(node.op, "destroy_map", None) \
                else None
            if not destroyed:
                break
            source = node.inputs[destroyed[0]]
            if (source.owner is None or source in self.outputs or source.type != var.type
                    or len(self.fgraph.clients.get(source, ())) != 1):
                break
            origin, var, node = source, source, source.owner
        return origin

    def _syncs(self, fail_label):
        """Hand every output to its slot, on success only (after all nodes ran)."""
        lines = []
        for slot, var in enumerate(self.outputs):
            name = self.name(var)
            sub = self._sub(fail_label, -1, "syncing output %d" % slot, output="(&outputs[%d])" % slot,
                            out_shape="state->out_shape[%d]" % slot, out_strides="state->out_strides[%d]" % slot,
                            alias_of=self.output_alias[slot])
            lines.append("    " + _comment("output %d = %s" % (slot, name)))
            lines.append(_indent(var.type.c_sync(name, sub)))
        if not lines:
            return "__label_nodes_end:;"
        return "__label_nodes_end:;\nif (err->code == FFG_OK) {\n%s\n}" % "\n".join(lines)

    # ---- nodes: one static function each (c_code, then its cleanup, which sees c_code's locals)

    def _nodes(self):
        functions, calls = [], []
        # Large graphs keep one function per node: a single huge function makes gcc's
        # optimiser superlinear (3000 nodes: 100 s at -O3 as one function). NODE_LINKAGE becomes
        # "static" or, in a graph built in parts, the macro that makes it visible to every part.
        qualifier = NODE_LINKAGE + (" __attribute__((noinline))" if len(self.order) > LARGE_GRAPH else "")
        shared = self._shared_plan()
        defined = {}   # canonical key -> the name of the shared function that runs it
        values = 0
        for index, node in enumerate(self.order):
            if index in shared:
                call = self._shared_call(index, node, shared[index], defined, functions, qualifier)
            else:
                functions.append(self._node_function(index, node, qualifier))
                call = "%s_node%d(state, f, err)" % (self.prefix, index)
            if self.profile:
                calls.append(self._timed_call(index, node, values, call))
                values += len(node.outputs)
            else:
                calls.append("if (%s)\n    goto __label_nodes_end;" % call)
            if index in shared:   # name the node where it runs: its code lives in a shared function
                calls[-1] = "%s\n%s" % (_comment("node #%d: %s" % (index, node)), calls[-1])
        if any(isinstance(item, lazy.Branch) for item in self.plan):
            calls = self._guarded_calls(self.plan, dict(zip(self.order, calls)))
        return functions, "\n".join(calls)

    def _guarded_calls(self, items, call_of):
        """The node calls of a plan block; a lazy op's Branch becomes ``if (condition) { then
        calls } else { else calls }``, so a node whose value only a skipped branch needs never runs.
        Its values keep their initial state, which their cleanups already handle."""
        calls = []
        for item in items:
            if not isinstance(item, lazy.Branch):
                calls.append(call_of[item])
                continue
            node = item.node
            index = self.order.index(node)
            condition = _optional(node.op, "c_lazy_condition", node, self.name(item.condition))
            if condition is None:
                raise MethodNotDefined("%s has lazy branches but no c_lazy_condition: the C linker cannot "
                                       "test its condition" % (node.op,))
            then_calls = _indent("\n".join(self._guarded_calls(item.then_items, call_of)))
            else_calls = _indent("\n".join(self._guarded_calls(item.else_items, call_of)))
            what = "node #%d %s" % (index, node)
            if not then_calls:
                calls.append("if (!(%s)) {   %s\n%s\n}" % (condition, _comment("else branch of " + what), else_calls))
                continue
            code = "if (%s) {   %s\n%s\n}" % (condition, _comment("then branch of " + what), then_calls)
            if else_calls:
                code += " else {   %s\n%s\n}" % (_comment("else branch of " + what), else_calls)
            calls.append(code)
        return calls

    def _timed_call(self, index, node, first_value, call):
        """A node call (the C expression ``call``) between two clock reads; on success its
        outputs' shapes are recorded."""
        records = []
        for k, var in enumerate(node.outputs):
            sub = dict(record="(&state->prof_values[%d])" % (first_value + k))
            code = _optional(var.type, "c_profile_value", self.name(var), sub)
            if code:
                records.append(_indent(code))
        return profile_c.TIMED_CALL % dict(index=index, call=call, records="\n".join(records))

    def _node_function(self, index, node, qualifier):
        op = node.op
        self._collect(op, check_version=False)
        nname = "%snode%d" % (self.name.prefix, index)   # names support code: unique in the unit
        label = "__label_%s" % nname
        ins = [self.name(v) for v in node.inputs]
        outs = [self.name(v) for v in node.outputs]
        sub = self._sub(label, index, self.node_texts[index])
        context = _optional(op, "get_context", node)
        if context is not None:
            sub["context"] = context
        inner = _optional(op, "c_inner_graphs", node)
        if inner:
            sub["inner_graphs"] = [self._inner_graph(index, node, k, g) for k, g in enumerate(inner)]
        support = _optional(op, "c_support_code_apply", node, nname) or ""
        self._add_unique(self.globals, list(_shorten_op_text(op, support)))
        # GPU nodes: their launchers and kernels, compiled by nvcc into the same library
        self._add_unique(self.requirements["cuda_sources"], [_optional(op, "c_cuda_source_apply", node, nname)])
        self._add_unique(self.init_code, [_optional(op, "c_init_code_apply", node, nname)])
        member = _optional(op, "c_support_code_struct", node, nname)
        if member:
            self.struct_members.append(member)
            init = _optional(op, "c_init_code_struct", node, nname,
                             dict(sub, fail="{ goto __create_fail; }"))
            self._add_unique(self.init_code, [init])
            self.struct_cleanup.append(_optional(op, "c_cleanup_code_struct", node, nname) or "")
        version = _optional(op, "c_code_cache_version_apply", node)
        if version is None:
            version = _optional(op, "c_code_cache_version")
        if not version:
            self.cacheable = False
        code = op.c_code(node, nname, ins, outs, sub)
        cleanup = _optional(op, "c_code_cleanup", node, nname, ins, outs, sub) or ""
        code, cleanup = _shorten_op_text(op, code, cleanup)
        signature = NODE_SIGNATURE % dict(qualifier=qualifier, P=self.prefix, index=index)
        # an op with inner graphs stays with them and with create, in the first part (plan_parts)
        return _NodeFunction(NODE_TEMPLATE % dict(comment=_comment("node #%d: %s" % (index, node)),
                                                  signature=signature, code=_indent(code), label=label,
                                                  cleanup=_indent(cleanup)),
                             signature, compile_weight(code, cleanup, support), first_part=bool(inner))

    # ---- shared node functions: nodes whose C differs only in the frame variables they use

    def _shared_plan(self):
        """{node index: (canonical key, parts)} for the nodes whose code, generated with canonical
        names (_canonical_node), is the same text as another node's: each group runs one shared
        function. A node whose text is unique keeps its own function, exactly as before."""
        canonical = {}
        count = {}
        for index, node in enumerate(self.order):
            parts = self._canonical_node(node)
            if parts is not None:
                canonical[index] = parts
                count[parts["key"]] = count.get(parts["key"], 0) + 1
        return dict((index, dict(parts, uses=count[parts["key"]])) for index, parts in canonical.items()
                    if count[parts["key"]] > 1)

    def _canonical_node(self, node):
        """The node's code generated with names that do not depend on the node: its variables are
        ``ffg_in<i>``/``ffg_out<j>`` (macros over pointer parameters ``ffg_p_...``), its name is
        SHARED_NAME, its failure marks the node index and description the function receives. None
        when the node cannot share code: an op with per-state members, inner graphs, a context or
        CUDA sources, a variable whose locals are not one declaration, or code that cannot be
        generated so."""
        op = node.op
        try:
            if (_optional(op, "c_inner_graphs", node) or _optional(op, "get_context", node) is not None
                    or _optional(op, "c_support_code_struct", node, SHARED_NAME)
                    or _optional(op, "c_init_code_struct", node, SHARED_NAME, {})
                    or _optional(op, "c_init_code_apply", node, SHARED_NAME)
                    or _optional(op, "c_cuda_source_apply", node, SHARED_NAME)):
                return None
            canonical, params, operands = {}, [], []
            for kind, variables in (("in", node.inputs), ("out", node.outputs)):
                for i, var in enumerate(variables):
                    if var in canonical:   # the same variable twice: one parameter, as it was one name
                        continue
                    name = self.name(var)
                    decl = _dedent(var.type.c_declare(name, self._sub("__label_" + name, -1, "")))
                    match = _ONE_DECLARATION.match(decl.strip())
                    if match is None or match.group(2) != name:
                        return None
                    canonical[var] = "ffg_%s%d" % (kind, i)
                    operands.append(var)
                    params.append((match.group(1).strip(), canonical[var]))
            ins = [canonical[v] for v in node.inputs]
            outs = [canonical[v] for v in node.outputs]
            sub = dict(fail="{ %s(err, ffg_node_index, ffg_node_input, ffg_where); "
                            "goto __label_%s; }" % (self.mark_failure, SHARED_NAME),
                       err="err", allocator="state->allocator", device_allocator="state->device_allocator",
                       struct="state", node_index="ffg_node_index")
            support = _optional(op, "c_support_code_apply", node, SHARED_NAME) or ""
            code = op.c_code(node, SHARED_NAME, ins, outs, sub)
            cleanup = _optional(op, "c_code_cleanup", node, SHARED_NAME, ins, outs, sub) or ""
            support, code, cleanup = _shorten_op_text(op, support, code, cleanup)
        except Exception:   # whatever fails here, the node's own generation reports (or works)
            return None
        if not isinstance(code, str) or not isinstance(support, str) or not isinstance(cleanup, str):
            return None
        key = "\0".join([support, repr(params), code, cleanup])
        return dict(key=key, params=params, support=support, code=code, cleanup=cleanup,
                    variables=operands)

    def _shared_call(self, index, node, parts, defined, functions, qualifier):
        """The call running node #index through its group's shared function; the group's first
        node defines the function (appended to ``functions``)."""
        op = node.op
        self._collect(op, check_version=False)
        version = _optional(op, "c_code_cache_version_apply", node)
        if version is None:
            version = _optional(op, "c_code_cache_version")
        if not version:
            self.cacheable = False
        key = parts["key"]
        if key not in defined:
            k = len(defined)
            nname = "%sfn%d" % (self.name.prefix, k)   # names its support code: unique in the unit
            defined[key] = "%s_fn%d" % (self.prefix, k)
            self._add_unique(self.globals, [parts["support"].replace(SHARED_NAME, nname)])
            names = [name for _, name in parts["params"]]
            signature = SHARED_SIGNATURE % dict(
                qualifier=qualifier, name=defined[key], P=self.prefix,
                params="".join(",\n        %s *restrict %s" % (ctype, _param(n)) for ctype, n in parts["params"]))
            functions.append(_NodeFunction(SHARED_NODE_TEMPLATE % dict(
                comment=_comment("shared by %d nodes, first node #%d: %s" % (parts["uses"], index, node)),
                defines="\n".join("#define %s (*%s)" % (n, _param(n)) for n in names),
                undefs="\n".join("#undef %s" % n for n in names), signature=signature,
                code=_indent(parts["code"].replace(SHARED_NAME, nname)), label="__label_%s" % nname,
                cleanup=_indent(parts["cleanup"].replace(SHARED_NAME, nname))),
                signature, compile_weight(parts["code"], parts["cleanup"], parts["support"])))
        args = "".join(", &%s" % self.name(v) for v in parts["variables"])
        return "%s(state, err, %d, %d, %s%s)" % (defined[key], index, self.fault_input[index],
                                                 _c_string(self.node_texts[index]), args)

    def _inner_graph(self, index, node, k, fgraph):
        """Generate inner graph k of node #index into this unit (before this graph's code); this
        graph's state holds its state. Returns what the op's c_code gets in sub['inner_graphs']."""
        from ffigraph.linkers.c.linker import _alias_slot   # the linker imports this module

        tag = "n%d_g%d" % (index, k)
        inputs = list(fgraph.inputs)
        gen = _Generator(fgraph, None, None, [_alias_slot(v, inputs) for v in fgraph.outputs], parent=self, tag=tag)
        self.inner_sections.append(gen.build_inner("inner graph %d of node #%d %s" % (k, index, node)))
        if not gen.cacheable:
            self.cacheable = False
        member = "inner_%s" % tag
        self.struct_members.append("%s_state *%s;  %s" % (gen.prefix, member,
                                                          _comment("inner graph %d of node #%d" % (k, index))))
        self.init_code.append("state->%s = %s_create_state(state->allocator, err);\nif (state->%s == NULL)\n"
                              "    goto __create_fail;" % (member, gen.prefix, member))
        self.struct_cleanup.append("%s_destroy(state->%s);\nstate->%s = NULL;" % (gen.prefix, member, member))
        return dict(prefix=gen.prefix, state="state->%s" % member)

    # ---- the translation unit

    def _place_functions(self, functions, body, top):
        """The node functions' text, and the parts' head and the guards around the entry points:
        the exported graph of a large unit is cut into parts (plan_parts); an inner graph, or a
        small unit, is one piece whose node functions are static."""
        glue = compile_weight(body)
        if len(self.order) > LARGE_GRAPH:
            glue //= 8   # run is built at -O0 then (run_attributes)
        assign, weights = plan_parts(functions, GLUE_WEIGHT + glue) if top else (None, None)
        if assign is None:
            return "\n\n".join(fn.text.replace(NODE_LINKAGE, "static") for fn in functions), "", "", ""
        self.requirements["parts"] = weights
        declarations = "\n".join(fn.signature.replace(NODE_LINKAGE, "FFG_NODE_LINKAGE") + ";" for fn in functions)
        texts = []
        for k in range(len(weights)):
            mine = [fn.text.replace(NODE_LINKAGE, "FFG_NODE_LINKAGE") for fn, a in zip(functions, assign) if a == k]
            if mine:
                texts.append("#if FFG_PART_HAS(%d)   /* ---- part %d ---- */\n%s\n#endif   /* part %d */"
                             % (k, k, "\n\n".join(mine), k))
        head = PARTS_HEAD % dict(n=len(weights)) + "\n/* every node function, for the part that calls it */\n" \
            + declarations + "\n"
        return "\n\n".join(texts), head, "#if FFG_PART_HAS(0)   /* ---- part 0: the entry points ---- */\n", \
            "\n#endif   /* part 0 */\n"

    def _slot_table(self, name, variables, roles, names, updates):
        shapes, slots = [], []
        for i, (var, role) in enumerate(zip(variables, roles)):
            code, bits = dtype_code(var.type.c_abi_dtype())
            static = getattr(var.type, "shape", ())
            dims = ", ".join(str(-1 if s is None else s) for s in static) or "0"
            shapes.append("static const int64_t %s_shape%d[] = {%s};" % (name, i, dims))
            slots.append("    {%s, %d, %d, {%d, %d, 1}, %d, %s_shape%d},   %s" % (
                _c_string(names[i]), role, len(static), code, bits, updates[i] if role == 3 else -1, name, i,
                _comment(var)))
        table = "static const FfgSlot %s[] = {\n%s\n    {0, 0, 0, {0, 0, 0}, -1, 0}\n};" % (name, "\n".join(slots))
        return "\n".join(shapes) + "\n" + table

    def _node_table(self):
        rows = ["    {%s, %s},   /* #%d */" % (_c_string(short_text(node.op, OP_LABEL_LIMIT)),
                                               _c_string(self.node_texts[k]), k)
                for k, node in enumerate(self.order)]
        return "static const FfgNode ffg_nodes[] = {\n%s\n    {0, 0}\n};" % "\n".join(rows)

    def _unit(self, body, node_functions):
        headers = "\n".join(h if h.startswith("#") else "#include %s" % (h if h[0] in "<\"" else "<%s>" % h)
                            for h in self.requirements["headers"])
        head = UNIT_HEAD % dict(
            header=HEADER_NAME, runtime=RUNTIME_C, headers=headers,
            globals="\n\n".join(g for g in self.globals if g),
            profile_runtime=profile_c.PROFILE_RUNTIME_C if self.profile else "")
        inner = "".join(section + "\n\n" for section in self.inner_sections)
        return head + inner + self._graph_section(body, node_functions, top=True)

    def _graph_section(self, body, node_functions, top):
        """GRAPH_TEMPLATE filled for this graph: exported (``top``) or static (an inner graph)."""
        members = "\n".join(_indent(m) for m in self.struct_members)
        n_in, n_out = len(self.inputs), len(self.outputs)
        init_code = list(self.init_code)
        if self.profile:
            init_code.append(profile_c.create_code(self.order))
        init = "\n".join(_indent(c) for c in init_code if c)
        n_values = len(profile_c.value_slots(self.order))
        sizes = dict(n_nodes=max(len(self.order), 1), n_values=max(n_values, 1), P=self.prefix)
        struct_cleanup = "\n".join(_indent(c) for c in reversed(self.struct_cleanup) if c)
        node_functions, parts_head, glue_begin, glue_end = self._place_functions(node_functions, body, top)
        values = dict(
            members=members or "    int unused;",
            n_out_alloc=max(n_out, 1), n_in=n_in, n_out=n_out, body=_indent(body),
            init=init, struct_cleanup=struct_cleanup, P=self.prefix,
            frame="\n".join("    " + m for m in self.frame_members) or "    int unused;",
            var_macros="\n".join("#define %s (f->%s)" % (n, n) for n in self.name.names.values()),
            node_functions=node_functions,
            # run only sets up, calls and cleans up; optimising it for a large graph costs
            # far more compile time than it saves (alias analysis over a big frame)
            run_attributes='__attribute__((optimize("O0")))\n' if len(self.order) > LARGE_GRAPH else "",
            profile_members=profile_c.STATE_MEMBERS % sizes if self.profile else "",
            run_start=("    " + profile_c.RUN_START) if self.profile else "",
            run_end=profile_c.RUN_END if self.profile else "",
            linkage="FFG_EXPORT" if top else "static", interface="", set_allocator="", create_export="",
            parts_head=parts_head, glue_begin=glue_begin, glue_end=glue_end,
        )
        if top:
            in_names, out_names = unique_slot_names(self.inputs, self.input_roles, self.outputs,
                                                    self.output_roles, self.update_inputs, self.output_names)
            values["interface"] = INTERFACE_TEMPLATE % dict(
                values, n_nodes=len(self.order), node_table=self._node_table(),
                flags="FFG_DESCRIBE_PROFILED" if self.profile else "0",
                inputs_table=self._slot_table("ffg_input_slots", self.inputs, self.input_roles, in_names,
                                              [-1] * len(self.inputs)),
                outputs_table=self._slot_table("ffg_output_slots", self.outputs, self.output_roles, out_names,
                                               self.update_inputs),
                profile_function=(profile_c.PROFILE_FUNCTION % dict(sizes, n_nodes=len(self.order),
                                                                    n_values=n_values) if self.profile else ""))
            values["set_allocator"] = SET_ALLOCATOR_TEMPLATE % values
            values["create_export"] = CREATE_EXPORT_TEMPLATE % dict(
                values, profile_entry="%s_profile" % self.prefix if self.profile else "NULL")
        return GRAPH_TEMPLATE % values


# A translation unit: UNIT_HEAD (includes, runtime, every graph's support code), the code of each
# inner graph (GRAPH_TEMPLATE, static), then the exported graph (GRAPH_TEMPLATE with
# INTERFACE_TEMPLATE and SET_ALLOCATOR_TEMPLATE, its functions FFG_EXPORT).
UNIT_HEAD = r"""/* Generated by ffigraph: one compiled graph over the ffigraph ABI (see %(header)s). */
#include "%(header)s"
%(runtime)s%(profile_runtime)s
%(headers)s

/* ---- support code of the graph's types and ops ---- */
%(globals)s

"""

GRAPH_TEMPLATE = r"""/* ---- every variable's C locals, in one frame (kept in the state) ---- */
typedef struct %(P)s_frame {
%(frame)s
} %(P)s_frame;

/* ---- per-state storage ---- */
typedef struct %(P)s_state {
    const FfgAllocator *allocator;    /* NULL: malloc/free */
    FfgAllocator allocator_copy;
    const FfgAllocator *device_allocator;   /* CUDA memory; NULL: cudaMalloc/cudaFree */
    FfgAllocator device_allocator_copy;
    int64_t out_shape[%(n_out_alloc)d][FFG_MAX_NDIM];
    int64_t out_strides[%(n_out_alloc)d][FFG_MAX_NDIM];
    FfgOutput offers[%(n_out_alloc)d];   /* the host's offered blocks, less those run declined */
    int busy;    /* set while a run uses the frame: one state serves one call at a time */
    %(P)s_frame frame;
%(members)s
%(profile_members)s
} %(P)s_state;

/* Generated code names each variable V<n>; it lives in the frame f. */
%(var_macros)s

%(parts_head)s/* ---- one function per node ---- */
%(node_functions)s

%(glue_begin)s%(interface)s%(linkage)s void %(P)s_destroy(void *state_)
{
    %(P)s_state *state = (%(P)s_state *)state_;
    const FfgAllocator *allocator;
    if (state == NULL)
        return;
    allocator = state->allocator;
%(struct_cleanup)s
    if (allocator)
        allocator->release(allocator->ctx, state);
    else
        free(state);
}

%(set_allocator)sstatic void *%(P)s_create_state(const FfgAllocator *allocator, FfgError *err)
{
    %(P)s_state *state;
    ffg_clear_error(err);
    state = (%(P)s_state *)(allocator ? allocator->alloc(allocator->ctx, sizeof *state)
                                      : malloc(sizeof *state));
    if (state == NULL) {
        ffg_set_error(err, FFG_ERR_NOMEM, -1, "could not allocate the state");
        return NULL;
    }
    memset(state, 0, sizeof *state);
    if (allocator) {
        state->allocator_copy = *allocator;
        state->allocator = &state->allocator_copy;
    }
%(init)s
    return state;
__create_fail:
    ffg_mark_failure(err, -1, -1, "creating the state");
    %(P)s_destroy(state);
    return NULL;
}
%(create_export)s
%(run_attributes)s%(linkage)s int32_t %(P)s_run(void *state_, const FfgTensor *inputs, int32_t n_inputs,
                              FfgOutput *outputs, int32_t n_outputs, FfgError *err)
{
    %(P)s_state *state = (%(P)s_state *)state_;
    %(P)s_frame *f;
    if (err == NULL)
        return FFG_ERR_ABI;   /* nowhere to say why; every other mistake is reported in err */
    err->code = FFG_OK;   /* every field reset (the message by its first byte: this runs per call) */
    err->node = -1;
    err->input = -1;
    err->detail = 0;
    err->message[0] = '\0';
    if (outputs != NULL && n_outputs == %(n_out)d)
        ffg_clear_outputs(outputs, n_outputs, 0, NULL);   /* every slot is written, whatever follows */
    if (state == NULL || n_inputs != %(n_in)d || n_outputs != %(n_out)d) {
        ffg_set_error(err, FFG_ERR_ABI, -1, "run: expected a state, %(n_in)d inputs and %(n_out)d outputs, "
                      "got %%s, %%d inputs and %%d outputs", state ? "a state" : "state NULL",
                      (int)n_inputs, (int)n_outputs);
        return err->code;
    }
    if ((inputs == NULL && n_inputs > 0) || (outputs == NULL && n_outputs > 0)) {
        ffg_set_error(err, FFG_ERR_ABI, -1, "run: the %%s array is NULL", inputs ? "outputs" : "inputs");
        return err->code;
    }
    /* The frame lives in the state, so two calls at once would overwrite each other's locals:
       a second thread (or a re-entrant call from an allocator) is refused, not raced. */
    if (__atomic_exchange_n(&state->busy, 1, __ATOMIC_ACQUIRE)) {
        ffg_set_error(err, FFG_ERR_RUNTIME, -1, "run: this state is busy with another call; a state "
                      "serves one call at a time, so create one state per thread");
        return err->code;
    }
%(run_start)s
    f = &state->frame;   /* in the state, not on the stack: a large graph has a large frame */
    /* an offered block that overlaps an input (or another offer) would be written while read */
    ffg_screen_offers(inputs, n_inputs, outputs, n_outputs, state->offers);
%(body)s
    if (err->code != FFG_OK)
        ffg_clear_outputs(outputs, n_outputs, 1, state->allocator);   /* a failed run hands over nothing */
%(run_end)s
    __atomic_store_n(&state->busy, 0, __ATOMIC_RELEASE);
    return err->code;
}
%(glue_end)s"""

INTERFACE_TEMPLATE = r"""/* ---- description: slots, nodes, layout ---- */
%(inputs_table)s
%(outputs_table)s
%(node_table)s
static const int64_t ffg_layout[] = {FFG_LAYOUT_ENTRIES};
static const FfgDescription ffg_description = {
    sizeof(FfgDescription), FFG_ABI_VERSION, %(flags)s, (int32_t)(sizeof ffg_layout / sizeof ffg_layout[0]),
    %(n_in)d, ffg_layout, ffg_input_slots, %(n_out)d, %(n_nodes)d, ffg_output_slots, ffg_nodes,
    "%(P)s", "FFG_SOURCE_HASH"
};

/* An ELF note the loader ignores and ffigraph reads before it loads a file (library_file.py): the
   ABI this library speaks and its symbol prefix, so that a library of another ABI is refused
   before its constructors could run. */
#if defined(__ELF__)
static const struct { uint32_t namesz, descsz, type; char name[12]; uint32_t abi; char prefix[32]; }
ffg_abi_note __attribute__((section(".note.ffigraph"), aligned(4), used)) = {
    9, 36, 1, "ffigraph", FFG_ABI_VERSION, "%(P)s"
};
#endif

FFG_EXPORT uint32_t %(P)s_version(void)
{
    return FFG_ABI_VERSION;
}

FFG_EXPORT const FfgDescription *%(P)s_describe(void)
{
    return &ffg_description;
}
%(profile_function)s
"""

# The exported create: reads the host's options (only the fields their struct_size covers; a host
# of ABI 1 passed an FfgAllocator pointer or NULL here: it is told so), then makes the state; and
# the table ffg_library_api hands a host.
CREATE_EXPORT_TEMPLATE = r"""
FFG_EXPORT int32_t %(P)s_set_allocator(void *state_, int32_t device_type, const FfgAllocator *allocator);
FFG_EXPORT int32_t %(P)s_run(void *state_, const FfgTensor *inputs, int32_t n_inputs,
                             FfgOutput *outputs, int32_t n_outputs, FfgError *err);

FFG_EXPORT void *%(P)s_create(const FfgCreateOptions *options, FfgError *err)
{
    %(P)s_state *state;
    const FfgAllocator *allocator, *device_allocator;
    ffg_clear_error(err);
    if (ffg_read_create_options(options, err, &allocator, &device_allocator))
        return NULL;   /* (only the fields options->struct_size covers were read) */
    state = (%(P)s_state *)%(P)s_create_state(allocator, err);
    if (state != NULL && device_allocator != NULL)
        %(P)s_set_allocator(state, FFG_DEVICE_CUDA, device_allocator);   /* checked above: cannot fail */
    return state;
}

static const FfgLibraryApi ffg_api = {
    sizeof(FfgLibraryApi), FFG_ABI_VERSION, 7, "%(P)s",
    %(P)s_version, %(P)s_describe, %(P)s_create, %(P)s_run, %(P)s_destroy, %(P)s_set_allocator,
    %(profile_entry)s
};

FFG_EXPORT const FfgLibraryApi *%(P)s_library_api(uint32_t abi_major)
{
    return abi_major == FFG_ABI_MAJOR ? &ffg_api : NULL;
}

/* The one fixed-name symbol: dlsym(handle, "ffg_library_api") is all a host needs. */
FFG_EXPORT const FfgLibraryApi *ffg_library_api(uint32_t abi_major)
{
    return %(P)s_library_api(abi_major);
}
"""

SET_ALLOCATOR_TEMPLATE = r"""FFG_EXPORT int32_t %(P)s_set_allocator(void *state_, int32_t device_type, const FfgAllocator *allocator)
{
    %(P)s_state *state = (%(P)s_state *)state_;
    if (state == NULL || device_type != FFG_DEVICE_CUDA)
        return FFG_ERR_ABI;   /* the CPU allocator is P_create's */
    if (allocator != NULL && (allocator->alloc == NULL || allocator->release == NULL))
        return FFG_ERR_ABI;
    if (allocator == NULL) {
        state->device_allocator = NULL;
    } else {
        state->device_allocator_copy = *allocator;
        state->device_allocator = &state->device_allocator_copy;
    }
    return FFG_OK;
}

"""

UNIT_TEMPLATE = UNIT_HEAD + GRAPH_TEMPLATE   # the exported graph (with the interface parts filled in)


# A function shared by nodes whose code differs only in their variables: the frame owns them, the
# function gets pointers to them (named as the op's code knows them by macros, undone after it),
# the node's index and description (for its failure record) from each call.
SHARED_SIGNATURE = r"""%(qualifier)s int32_t %(name)s(%(P)s_state *state, FfgError *err,
        int32_t ffg_node_index, int32_t ffg_node_input, const char *ffg_where%(params)s)"""

SHARED_NODE_TEMPLATE = r"""%(comment)s
%(defines)s
%(signature)s
{
%(code)s
%(label)s:;
%(cleanup)s
    return err->code;
}
%(undefs)s"""

NODE_SIGNATURE = r"""%(qualifier)s int32_t %(P)s_node%(index)d(%(P)s_state *state, %(P)s_frame *f, FfgError *err)"""

NODE_TEMPLATE = r"""%(comment)s
%(signature)s
{
%(code)s
%(label)s:;
%(cleanup)s
    return err->code;
}"""
