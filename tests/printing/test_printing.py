"""``ffigraph.printing.debugprint``: the text tree of a graph, PyTensor's format."""
import io
import sys

import pytest

import ffigraph.tensor as T
from ffigraph import function
from ffigraph.compile.mode import Mode
from ffigraph.graph import Apply, FunctionGraph, Op
from helpers import TwoOut
from ffigraph.printing import char_from_number, debugprint, dprint


def _py_mode():
    return Mode(linker="py", optimizer=None)


def _xyz():
    x = T.dvector("x")
    y = T.dvector("y")
    return x, y, T.exp(x) * y + x




class AddInplace(Op):
    """Overwrites its second input: destroy_map {0: [1]}."""

    destroy_map = {0: [1]}

    def make_node(self, a, b):
        return Apply(self, [a, b], [b.type()])

    def perform(self, node, inputs, out):
        inputs[1] += inputs[0]
        out[0][0] = inputs[1]


class Inner(Op):
    """A fake op with an inner graph to show."""

    __props__ = ("tag",)

    def __init__(self, tag):
        self.tag = tag

    def make_node(self, a):
        return Apply(self, [a], [a.type()])

    def inner_debugprint_lines(self):
        return ["inner-of-%s" % self.tag, " └─ i0"]

    def __str__(self):
        return "Inner{%s}" % self.tag


class FakeScalar:
    def inner_debugprint_lines(self):
        return ["scalar body"]

    def __str__(self):
        return "fake_scalar"


class WrapsScalar(Op):
    """Like an Elemwise: the inner graph comes from ``scalar_op``."""

    def __init__(self):
        self.scalar_op = FakeScalar()

    def make_node(self, a):
        return Apply(self, [a], [a.type()])

    def __str__(self):
        return "Wraps{%s}" % self.scalar_op


# ----------------------------------------------------------------- plain graphs


def test_exact_tree_for_exp_x_times_y_plus_x():
    x, y, z = _xyz()
    assert debugprint(z, file="str") == (
        "Elemwise{add} [id A]\n"
        " ├─ Elemwise{mul} [id B]\n"
        " │  ├─ Elemwise{exp} [id C]\n"
        " │  │  └─ x [id D]\n"
        " │  └─ y [id E]\n"
        " └─ x [id D]\n"
    )


def test_names_and_print_type():
    x, y, z = _xyz()
    z.name = "z"
    z.owner.inputs[0].name = "ey"
    text = debugprint(z, file="str", print_type=True)
    assert text.splitlines() == [
        "Elemwise{add} [id A] <dvector> 'z'",
        " ├─ Elemwise{mul} [id B] <dvector> 'ey'",
        " │  ├─ Elemwise{exp} [id C] <dvector>",
        " │  │  └─ x [id D] <dvector>",
        " │  └─ y [id E] <dvector>",
        " └─ x [id D] <dvector>",
    ]
    # without print_type the types go, the names stay
    assert debugprint(z, file="str").splitlines()[:2] == [
        "Elemwise{add} [id A] 'z'", " ├─ Elemwise{mul} [id B] 'ey'"]


def test_shared_subexpression_is_expanded_once():
    x = T.dvector("x")
    e = T.exp(T.log(x))
    z = e * e + e
    lines = debugprint(z, file="str").splitlines()
    assert lines == [
        "Elemwise{add} [id A]",
        " ├─ Elemwise{mul} [id B]",
        " │  ├─ Elemwise{exp} [id C]",
        " │  │  └─ Elemwise{log} [id D]",
        " │  │     └─ x [id E]",
        " │  └─ Elemwise{exp} [id C]",
        " └─ Elemwise{exp} [id C]",
    ]
    assert sum("Elemwise{log}" in line for line in lines) == 1


def test_unnamed_inputs_and_constants_print_their_str():
    x = T.dvector()
    z = x * 2.0
    lines = debugprint(z, file="str").splitlines()
    assert lines == [
        "Elemwise{mul} [id A]",
        " ├─ %s [id B]" % (x,),
        " └─ DimShuffle{x} [id C]",
        "    └─ 2.0 [id D]",
    ]
    assert str(x) == "<dvector>"


def test_depth_limits_expansion():
    x, y, z = _xyz()
    assert debugprint(z, file="str", depth=1) == "Elemwise{add} [id A]\n"
    assert debugprint(z, file="str", depth=2).splitlines() == [
        "Elemwise{add} [id A]",
        " ├─ Elemwise{mul} [id B]",
        " └─ x [id C]",
    ]
    assert debugprint(z, file="str", depth=0) == ""
    assert debugprint(z, file="str", depth=-1) == debugprint(z, file="str")
    with pytest.raises(TypeError):
        debugprint(z, file="str", depth=1.5)


def test_a_node_cut_by_depth_is_expanded_where_depth_allows():
    x = T.dvector("x")
    e = T.exp(x)
    z = T.log(e) + e
    lines = debugprint(z, file="str", depth=3).splitlines()
    # exp is first met at the depth limit (line only), then within reach (expanded).
    assert lines == [
        "Elemwise{add} [id A]",
        " ├─ Elemwise{log} [id B]",
        " │  └─ Elemwise{exp} [id C]",
        " └─ Elemwise{exp} [id C]",
        "    └─ x [id D]",
    ]


def test_id_kinds():
    x, y, z = _xyz()
    assert debugprint(z, file="str", ids="int").splitlines() == [
        "Elemwise{add} [id 0]",
        " ├─ Elemwise{mul} [id 1]",
        " │  ├─ Elemwise{exp} [id 2]",
        " │  │  └─ x [id 3]",
        " │  └─ y [id 4]",
        " └─ x [id 3]",
    ]
    assert debugprint(z, file="str", ids="").splitlines() == [
        "Elemwise{add}",
        " ├─ Elemwise{mul}",
        " │  ├─ Elemwise{exp}",
        " │  │  └─ x",
        " │  └─ y",
        " └─ x",
    ]
    by_id = debugprint(z, file="str", ids="id").splitlines()
    assert by_id[0] == "Elemwise{add} [id %d]" % id(z.owner)
    assert by_id[3] == " │  │  └─ x [id %d]" % id(x)
    assert by_id[5] == " └─ x [id %d]" % id(x)
    with pytest.raises(ValueError, match="ids"):
        debugprint(z, file="str", ids="auto-ish")


def test_char_ids_run_past_z():
    assert [char_from_number(n) for n in (0, 1, 25, 26, 27, 51, 52, 26 * 26)] == [
        "A", "B", "Z", "BA", "BB", "BZ", "CA", "BAA"]
    x = T.dvector("x")
    z = x
    for _ in range(14):  # 14 exp nodes + 14 log nodes + x: 29 ids
        z = T.exp(T.log(z))
    lines = debugprint(z, file="str").splitlines()
    assert len(lines) == 29
    assert lines[0] == "Elemwise{exp} [id A]"
    assert lines[25].endswith("[id Z]")
    assert lines[26].endswith("[id BA]")
    assert lines[28].endswith("x [id BC]")


def test_deep_chain_does_not_hit_the_recursion_limit():
    x = T.dvector("x")
    z = x
    n = sys.getrecursionlimit() + 200
    for _ in range(n):
        z = T.exp(z)
    lines = debugprint(z, file="str").splitlines()
    assert len(lines) == n + 1
    assert lines[-1] == "   " * (n - 1) + " └─ x [id %s]" % char_from_number(n)


# ----------------------------------------------------------------- objects


def test_function_prints_its_rewritten_graph_with_topological_positions():
    x, y, z = _xyz()
    z.name = "z"
    f = function([x, y], [z, x], mode=_py_mode())
    text = debugprint(f, file="str")
    assert text.splitlines() == [
        "Elemwise{add} [id A] 'z' 2",
        " ├─ Elemwise{mul} [id B] 1",
        " │  ├─ Elemwise{exp} [id C] 0",
        " │  │  └─ x [id D]",
        " │  └─ y [id E]",
        " └─ x [id D]",
        "DeepCopyOp [id F] 3",  # the output x is copied: it must not alias the input
        " └─ x [id D]",
    ]
    # the compiled graph is a copy: its variables are not the user's
    fg = f.maker.fgraph
    assert fg.outputs[0] is not z
    assert debugprint(fg, file="str") == text
    assert debugprint(f, file="str", ids="id").splitlines()[0] == (
        "Elemwise{add} [id %d] 'z' 2" % id(fg.outputs[0].owner))


def test_function_graph_and_list_of_objects():
    x, y, z = _xyz()
    fg = FunctionGraph([x, y], [z, T.exp(x)], clone=False)
    assert debugprint(fg, file="str").splitlines() == [
        "Elemwise{add} [id A] 2",
        " ├─ Elemwise{mul} [id B] 1",
        " │  ├─ Elemwise{exp} [id C] 0",
        " │  │  └─ x [id D]",
        " │  └─ y [id E]",
        " └─ x [id D]",
        "Elemwise{exp} [id F] 3",
        " └─ x [id D]",
    ]
    # a list: one tree after the other, ids and expansion shared between them
    e = z.owner.inputs[0].owner.inputs[0]
    assert debugprint([e, z], file="str").splitlines() == [
        "Elemwise{exp} [id A]",
        " └─ x [id B]",
        "Elemwise{add} [id C]",
        " ├─ Elemwise{mul} [id D]",
        " │  ├─ Elemwise{exp} [id A]",
        " │  └─ y [id E]",
        " └─ x [id B]",
    ]
    with pytest.raises(TypeError, match="cannot print"):
        debugprint(42, file="str")


def test_multi_output_node_shows_the_output_index():
    x = T.dvector("x")
    a, b = TwoOut()(x)
    z = a * b
    assert debugprint(z, file="str").splitlines() == [
        "Elemwise{mul} [id A]",
        " ├─ TwoOut.0 [id B]",
        " │  └─ x [id C]",
        " └─ TwoOut.1 [id B]",  # same node, same id, not expanded again
    ]
    # an Apply prints each of its outputs
    assert debugprint(a.owner, file="str", print_type=True).splitlines() == [
        "TwoOut.0 [id A] <dvector>",
        " └─ x [id B] <dvector>",
        "TwoOut.1 [id A] <dvector>",
    ]
    b.name = "minus"
    assert debugprint(b, file="str").splitlines() == ["TwoOut.1 [id A] 'minus'", " └─ x [id B]"]


def test_multi_output_node_in_a_function():
    x = T.dvector("x")
    a, b = TwoOut()(x)
    f = function([x], [a * b], mode=_py_mode())
    assert debugprint(f, file="str").splitlines() == [
        "Elemwise{mul} [id A] 1",
        " ├─ TwoOut.0 [id B] 0",
        " │  └─ x [id C]",
        " └─ TwoOut.1 [id B] 0",
    ]


def test_view_and_destroy_maps():
    m = T.dmatrix("m")
    x = T.dvector("x")
    z = m + x  # x is padded with DimShuffle{x,0}, a view of x
    plain = debugprint(z, file="str")
    assert "v=" not in plain and "d=" not in plain
    assert debugprint(z, file="str", print_view_map=True).splitlines() == [
        "Elemwise{add} [id A]",
        " ├─ m [id B]",
        " └─ DimShuffle{x,0} [id C] v={0: [0]}",
        "    └─ x [id D]",
    ]
    w = AddInplace()(x, T.exp(x))
    w.name = "w"
    assert debugprint(w, file="str", print_destroy_map=True, print_view_map=True,
                      print_type=True).splitlines() == [
        "AddInplace [id A] <dvector> 'w' d={0: [1]}",
        " ├─ x [id B] <dvector>",
        " └─ Elemwise{exp} [id C] <dvector>",
        "    └─ x [id B] <dvector>",
    ]
    assert "d=" not in debugprint(w, file="str", print_view_map=True)


def test_view_map_in_a_compiled_function():
    m = T.dmatrix("m")
    x = T.dvector("x")
    f = function([m, x], m + x, mode=_py_mode())
    lines = debugprint(f, file="str", print_view_map=True).splitlines()
    assert lines == [
        "Elemwise{add} [id A] 1",
        " ├─ m [id B]",
        " └─ DimShuffle{x,0} [id C] v={0: [0]} 0",
        "    └─ x [id D]",
    ]


# ----------------------------------------------------------------- where it goes


def test_file_str_returns_text_and_prints_nothing(capsys):
    x, y, z = _xyz()
    text = debugprint(z, file="str")
    assert isinstance(text, str) and text.endswith("x [id D]\n")
    assert capsys.readouterr().out == ""
    with pytest.raises(ValueError):
        debugprint(z, file="string")


def test_file_none_prints_to_stdout_and_returns_it(capsys):
    x, y, z = _xyz()
    returned = debugprint(z)
    assert returned is sys.stdout
    assert capsys.readouterr().out == debugprint(z, file="str")


def test_file_object_is_written_and_returned():
    x, y, z = _xyz()
    buf = io.StringIO()
    buf.write("before\n")
    assert debugprint(z, file=buf) is buf
    assert buf.getvalue() == "before\n" + debugprint(z, file="str")
    assert dprint is debugprint


def test_done_dict_carries_ids_between_calls():
    x, y, z = _xyz()
    done = {}
    e = z.owner.inputs[0].owner.inputs[0]
    first = debugprint(e, file="str", done=done)
    assert first.splitlines() == ["Elemwise{exp} [id A]", " └─ x [id B]"]
    assert done[e.owner] == " [id A]" and done[x] == " [id B]"
    second = debugprint(z, file="str", done=done)
    assert second.splitlines() == [
        "Elemwise{add} [id C]",
        " ├─ Elemwise{mul} [id D]",
        " │  ├─ Elemwise{exp} [id A]",  # printed by the first call: not expanded again
        " │  └─ y [id E]",
        " └─ x [id B]",
    ]
    with pytest.raises(TypeError):
        debugprint(z, file="str", done=[])


# ----------------------------------------------------------------- inner graphs


def test_inner_graphs_section_one_block_per_distinct_op():
    x = T.dvector("x")
    a = Inner("p")(x)
    b = Inner("p")(a)  # equal op (same props): one block
    c = Inner("q")(x)
    z = b + c
    text = debugprint(z, file="str")
    assert text == (
        "Elemwise{add} [id A]\n"
        " ├─ Inner{p} [id B]\n"
        " │  └─ Inner{p} [id C]\n"
        " │     └─ x [id D]\n"
        " └─ Inner{q} [id E]\n"
        "    └─ x [id D]\n"
        "\n"
        "Inner graphs:\n"
        "\n"
        "Inner{p} [id B]\n"
        "    inner-of-p\n"
        "     └─ i0\n"
        "\n"
        "Inner{q} [id E]\n"
        "    inner-of-q\n"
        "     └─ i0\n"
    )


def test_inner_graph_from_scalar_op_and_none_without_it():
    x = T.dvector("x")
    z = WrapsScalar()(x)
    assert debugprint(z, file="str").splitlines() == [
        "Wraps{fake_scalar} [id A]",
        " └─ x [id B]",
        "",
        "Inner graphs:",
        "",
        "Wraps{fake_scalar} [id A]",
        "    scalar body",
    ]
    x2, y2, z2 = _xyz()
    assert "Inner graphs" not in debugprint(z2, file="str")
