"""Node-creation traces: ``node.tag.trace`` / ``var.tag.trace`` name the user's line that built a
node (``config.traceback__limit``), runtime errors of every linker show it, rewrites carry it."""
import os
import sys
import threading

import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph import Mode, function
from ffigraph.config import Config, config
from ffigraph.graph import Apply, Op
from ffigraph.graph.utils import add_tag_trace, creation_site, get_trace
from ffigraph.linkers.c import COp

HERE = os.path.abspath(__file__)
ALL_LINKERS = ["py", "c", "c|py", "cvm"]


def line_above():
    """The line number just above the caller's current line."""
    return sys._getframe(1).f_lineno - 1


def innermost(thing):
    return tuple(get_trace(thing)[-1])


# ------------------------------------------------------------------ what is recorded


def test_a_node_and_its_outputs_record_the_building_line():
    x = T.dvector("x")
    z = T.exp(x) * 2
    line = line_above()
    node = z.owner
    assert node.tag.trace and len(node.tag.trace) == 1  # PyTensor's form: a list holding one stack
    filename, lineno, name, source = node.tag.trace[0][-1]
    assert (filename, lineno, name) == (HERE, line, "test_a_node_and_its_outputs_record_the_building_line")
    assert source is None  # read lazily, when shown
    assert z.tag.trace is node.tag.trace
    # the exp node feeding it was built on the same line; ffigraph's own frames are skipped
    assert innermost(z.owner.inputs[0].owner)[:2] == (HERE, line)
    assert creation_site(node) == "%s:%d (in %s)" % (HERE, line, name)


class AddOne(Op):
    """An op defined outside ffigraph: its own make_node is not the building line either."""

    __props__ = ()

    def make_node(self, x):
        x = T.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, out):
        out[0][0] = inputs[0] + 1


def test_a_user_op_points_at_the_line_calling_it_not_its_make_node():
    x = T.dvector("x")
    y = AddOne()(x)
    assert innermost(y.owner)[:2] == (HERE, line_above())
    # make_node called directly (no Op.__call__), and a bare Apply, record their own lines too
    node = AddOne().make_node(x)
    assert innermost(node)[:2] == (HERE, line_above())
    bare = Apply(AddOne(), [x], [x.type()])
    assert innermost(bare)[:2] == (HERE, line_above())


def test_gradient_nodes_point_at_the_grad_call():
    x = T.dvector("x")
    cost = (T.exp(x) ** 2).sum()
    g = ffigraph.grad(cost, x)
    line = line_above()
    nodes = ffigraph.graph.basic.io_toposort([x], [g])
    new = [n for n in nodes if innermost(n)[1] == line]
    assert new and all(innermost(n)[0] == HERE for n in nodes)


def _nested(depth, build):
    return _nested(depth - 1, build) if depth else build()


def test_limit_bounds_the_frames_kept_and_minus_one_keeps_all():
    x = T.dvector("x")
    with config.change_flags(traceback__limit=2):
        z = _nested(5, lambda: x + 1)
    stack = z.owner.tag.trace[0]
    assert len(stack) == 2 and [f[2] for f in stack] == ["_nested", "<lambda>"]
    with config.change_flags(traceback__limit=-1):
        z = _nested(5, lambda: x + 1)
    stack = z.owner.tag.trace[0]
    assert len(stack) > 8 and stack[-1][2] == "<lambda>"
    assert sum(f[2] == "_nested" for f in stack) == 6


def test_limit_zero_records_nothing_and_errors_say_how_to_turn_it_on():
    x, y = T.dvector("x"), T.dvector("y")
    with config.change_flags(traceback__limit=0):
        z = T.exp(x) + y
        assert "trace" not in z.owner.tag.__dict__ and "trace" not in z.tag.__dict__
        assert get_trace(z) == [] and creation_site(z.owner) is None
        f = function([x, y], z, mode=Mode(linker="py"))
        with pytest.raises(ValueError) as info:
            f(np.ones(2), np.ones(3))
    text = str(info.value)
    assert "created at" not in text and "traceback__limit" in text


def test_the_flag_is_read_from_ffigraph_flags_and_validated():
    assert config.traceback__limit == 8  # PyTensor's default
    assert Config("traceback__limit=0").traceback__limit == 0
    assert Config("traceback__limit=-1").traceback__limit == -1
    with pytest.raises(ValueError, match="traceback__limit"):
        Config("traceback__limit=many")
    with pytest.raises(ValueError, match="traceback__limit"):
        config.traceback__limit = -2


def test_threads_record_their_own_lines():
    x = T.dvector("x")
    results = {}

    def build(key):
        for _ in range(50):
            results[key] = (T.exp(x) + 1, sys._getframe().f_lineno)

    threads = [threading.Thread(target=build, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for z, line in results.values():
        assert innermost(z.owner)[1:3] == (line, "build")
        assert innermost(z.owner.inputs[0].owner)[1:3] == (line, "build")


def test_add_tag_trace_is_pytensors_helper():
    x = T.dvector("x")
    add_tag_trace(x)
    assert innermost(x)[:2] == (HERE, line_above())
    add_tag_trace(x, user_line=0)  # nothing recorded: the old trace stays
    assert innermost(x)[:2] == (HERE, line_above() - 2)


# ------------------------------------------------------------------ through compilation


def test_rewritten_nodes_keep_the_user_lines_and_compiler_nodes_get_none():
    x, y = T.dvector("x"), T.dvector("y")
    a = T.exp(x) * y
    line_a = line_above()
    b = T.log(a + 1)
    line_b = line_above()
    f = function([x, y], [b, a])
    function_line = line_above()
    lines = set()
    for node in f.maker.fgraph.apply_nodes:
        site = get_trace(node)
        if site:
            assert site[-1][0] == HERE
            lines.add(site[-1][1])
    assert lines and lines <= {line_a, line_b}
    assert function_line not in lines  # nodes the compiler made are never blamed on function()
    # each output of a fused node remembers what it replaced
    assert {innermost(v)[1] for v in f.maker.fgraph.outputs} == {line_a, line_b}


# ------------------------------------------------------------------ runtime errors, every linker


@pytest.mark.parametrize("linker", ALL_LINKERS)
def test_a_runtime_shape_error_names_the_building_line(linker):
    x, y = T.dmatrix("x"), T.dmatrix("y")
    h = T.dot(x, y) + 1
    line = line_above()
    f = function([x, y], h, mode=Mode(linker=linker))
    with pytest.raises(ValueError, match="not aligned") as info:
        f(np.ones((2, 3)), np.ones((2, 3)))
    text = str(info.value)
    name = "test_a_runtime_shape_error_names_the_building_line"
    assert "Apply node created at: %s:%d (in %s)" % (HERE, line, name) in text
    assert "h = T.dot(x, y) + 1" in text  # the backtrace shows the source line


@pytest.mark.parametrize("linker", ALL_LINKERS)
def test_a_fused_broadcast_error_names_the_building_line(linker):
    x, y = T.dvector("x"), T.dvector("y")
    z = T.exp(x) * y + x  # fused into one loop by the default rewrites
    line = line_above()
    f = function([x, y], z, mode=Mode(linker=linker))
    with pytest.raises(ValueError) as info:
        f(np.ones(3), np.ones(4))
    assert "Apply node created at: %s:%d " % (HERE, line) in str(info.value)


class FailsInC(COp, Op):
    """Fails from its C code (through the error record) on a negative element; perform likewise."""

    __props__ = ()

    def make_node(self, x):
        x = T.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, out):
        if (inputs[0] < 0).any():
            raise ValueError("negative input (perform)")
        out[0][0] = inputs[0] * 1.0

    def c_code(self, node, name, inputs, outputs, sub):
        (x,), (z,) = inputs, outputs
        return """
        int64_t i, n = %(x)s.shape[0];
        if (ffg_alloc_array(&%(z)s, 1, &n, sizeof(double), %(allocator)s, %(err)s))
            %(fail)s
        for (i = 0; i < n; ++i) {
            double v = ((double *)%(x)s.data)[i * %(x)s.strides[0]];
            if (v < 0) {
                ffg_set_error(%(err)s, FFG_ERR_VALUE, -1, "negative input from C at %%lld", (long long)i);
                %(fail)s
            }
            ((double *)%(z)s.data)[i] = v;
        }
        """ % dict(sub, x=x, z=z)

    def c_code_cache_version(self):
        return (1,)


@pytest.mark.parametrize("linker", ALL_LINKERS)
def test_an_error_from_the_c_library_names_the_building_line(linker):
    x = T.dvector("x")
    z = FailsInC()(x * 2) + 1
    line = line_above()
    f = function([x], z, mode=Mode(linker=linker))
    with pytest.raises(ValueError) as info:
        f(np.array([1.0, -1.0]))
    text = str(info.value)
    assert ("negative input (perform)" if linker == "py" else "negative input from C at 1") in text
    assert "Apply node that caused the error" in text and "FailsInC" in text
    assert "Apply node created at: %s:%d " % (HERE, line) in text


def test_an_input_variable_records_where_it_was_made():
    x = T.dvector("x")
    assert innermost(x)[:2] == (HERE, line_above())
    y = x + 1
    assert innermost(y)[:2] == (HERE, line_above())  # an output has its node's trace
    with config.change_flags(traceback__limit=0):
        v = T.dmatrix("v")
    assert "trace" not in v.tag.__dict__
