"""``debugprint(..., print_trace=True)``: under each node, the user's line that created it."""
import os
import sys

import ffigraph
import ffigraph.tensor as T
from ffigraph.config import config
from ffigraph.printing import debugprint

HERE = os.path.abspath(__file__)


def test_print_trace_shows_each_nodes_building_line():
    x, y = T.dvector("x"), T.dvector("y")
    z = T.exp(x) * y
    line_z = sys._getframe().f_lineno - 1
    w = z + x
    line_w = sys._getframe().f_lineno - 1
    name = "test_print_trace_shows_each_nodes_building_line"
    text = debugprint(w, file="str", print_trace=True)
    assert text == (
        "Elemwise{add} [id A]\n"
        " │  created at %s:%d (in %s): w = z + x\n"
        " ├─ Elemwise{mul} [id B]\n"
        " │  │  created at %s:%d (in %s): z = T.exp(x) * y\n"
        " │  ├─ Elemwise{exp} [id C]\n"
        " │  │  │  created at %s:%d (in %s): z = T.exp(x) * y\n"
        " │  │  └─ x [id D]\n"
        " │  └─ y [id E]\n"
        " └─ x [id D]\n"
    ) % (HERE, line_w, name, HERE, line_z, name, HERE, line_z, name)
    # off by default; a leaf node's line continues with spaces, not a bar
    assert "created at" not in debugprint(w, file="str")
    assert debugprint(w, file="str", print_trace=True, depth=1).splitlines()[1] == (
        "    created at %s:%d (in %s): w = z + x" % (HERE, line_w, name))


def test_print_trace_of_a_compiled_function_shows_the_user_lines():
    x, y = T.dvector("x"), T.dvector("y")
    a = T.exp(x) * y
    line_a = sys._getframe().f_lineno - 1
    b = a + x
    line_b = sys._getframe().f_lineno - 1
    f = ffigraph.function([x, y], [b, a])
    text = debugprint(f, file="str", print_trace=True)
    # one fused node computes both; each output line says what it replaced
    assert "created at %s:%d" % (HERE, line_b) in text and "created at %s:%d" % (HERE, line_a) in text


def test_nothing_is_shown_when_nothing_was_recorded():
    x = T.dvector("x")
    with config.change_flags(traceback__limit=0):
        z = T.exp(x) + 1
    assert "created at" not in debugprint(z, file="str", print_trace=True)
