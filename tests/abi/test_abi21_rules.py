"""ABI 2.1: what a host written from the header alone found (issue 44, item 5), and the rules the
header now writes down where it was silent, probed by one C host (tests/abi/c/abi_rules.c, built
once, run once over four libraries; under ASan+UBSan where they work).

Defects of 2.0 (each check failed on 641989e): create read FfgCreateOptions fields past
struct_size (and crashed on 8-byte options at the end of a page); of several overlapping offers
the first was used; a failing scan body put its inner node's "in node #0" line in the message, an
index that is not the node's in FfgDescription.nodes; NULL pointers inside an FfgTensor were
FFG_ERR_VALUE; a failed run left FFG_OUT_OWNED with base NULL in the slots. Decisions written in
ffigraph_abi.h and checked here: the error record's reset values, how slot names are made unique
and what "shared<k>" counts, views do not take offers, which calls FfgProfile.runs counts.
"""
from __future__ import annotations

import os
import re
import subprocess

import numpy as np
import pytest

import ffigraph as fg
import ffigraph.tensor as T
from ffigraph import In, Out
from ffigraph.abi import HEADER_PATH
from ffigraph.compile.mode import Mode

from test_abi_host import ABI_DIR, HERE, _build, _sanitizers_work, pytestmark  # noqa: F401 (pytestmark: Linux + cc)

C_MODE = Mode(linker="c")


def _scan_graph():
    """[sum of scan(dot(xs[t], W)), sum of scan over zs of scan over z_t's rows of dot(row, V)]."""
    xs, W, zs, V = T.dmatrix("xs"), T.dmatrix("W"), T.dtensor3("zs"), T.dmatrix("V")
    flat, _ = fg.scan(lambda x_t, W: T.dot(x_t, W), sequences=[xs], non_sequences=[W])

    def rows_times_v(z_t, V):
        inner, _ = fg.scan(lambda row, V: T.dot(row, V), sequences=[z_t], non_sequences=[V])
        return inner

    nested, _ = fg.scan(rows_times_v, sequences=[zs], non_sequences=[V])
    return fg.function([xs, W, zs, V], [flat.sum(), nested.sum()], mode=C_MODE)


def _names_graph():
    """Clashing and missing names: three inputs called x (one asks for x_1), an unnamed input, an
    unnamed shared variable and one called x, an output called x, an unnamed one, two updates."""
    a, b, c, d = T.dvector("x"), T.dvector("x"), T.dvector("x_1"), T.dvector()
    s0 = fg.shared(np.zeros(2))
    s1 = fg.shared(np.zeros(2), name="x")
    total = a + b + c + d
    total.name = "x"
    return fg.function([a, b, c, d], [total, a * 2], updates=[(s0, s0 + a), (s1, s1 * 2)], mode=C_MODE)


@pytest.fixture(scope="module")
def probed(tmp_path_factory):
    """(the host's stdout, {check: 'ok' or the reason it failed}, {fact: text}, the functions)."""
    tmp = str(tmp_path_factory.mktemp("abi_rules"))
    x, y = T.dmatrix("x"), T.dmatrix("y")
    u, v = T.dvector("x"), T.dvector("y")
    functions = dict(
        multi=fg.function([In(x, borrow=True), y], [x + y, x * y, x - y, Out(x.T, borrow=True)], mode=C_MODE),
        scan=_scan_graph(),
        profiled=fg.function([u, v], u * v + 1, mode=C_MODE, profile=True),
        names=_names_graph())
    flags = ["-O1"]
    if _sanitizers_work(tmp):
        flags += ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]
    host = _build(os.path.join(tmp, "abi_rules"), [os.path.join(HERE, "c", "abi_rules.c")], [ABI_DIR], flags)
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0", UBSAN_OPTIONS="halt_on_error=1")
    env.pop("LD_PRELOAD", None)   # the sanitizer phase preloads libasan for Python; the host has its own
    done = subprocess.run([host] + [functions[k].library_path for k in ("multi", "scan", "profiled", "names")],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=env,
                          timeout=300)
    assert "all checks passed" in done.stdout or "some checks failed" in done.stdout, done.stdout + done.stderr
    checks = dict(re.findall(r"^check (\S+) (ok|FAIL: .*)$", done.stdout, re.M))
    facts = dict(re.findall(r"^fact (\S+) = (.*)$", done.stdout, re.M))
    return done.stdout, checks, facts, functions


def _ok(probed, *names):
    _, checks, _, _ = probed
    bad = {name: checks.get(name, "not run") for name in names if checks.get(name) != "ok"}
    assert not bad, bad


def test_the_libraries_speak_abi_2_1(probed):
    _ok(probed, "library_speaks_abi_2_1")


def test_create_reads_no_options_field_past_struct_size(probed):
    """2.0 used the allocator of 8-byte options, refused a NULL-function device allocator lying
    past struct_size 16, and crashed reading past 8-byte options at the end of a page."""
    _ok(probed, "create_size8_uses_no_field_past_it", "create_size12_ignores_a_half_covered_field",
        "create_size16_uses_the_allocator_not_the_device_allocator", "create_size8_at_a_page_end")


def test_create_checks_the_fields_it_reads_and_ignores_unknown_ones(probed):
    _ok(probed, "create_full_size_refuses_a_null_function_device_allocator",
        "create_larger_size_ignores_unknown_fields", "create_size4_is_refused")


def test_every_offer_of_an_overlapping_set_is_declined(probed):
    """2.0 let output 0 use a block offered to outputs 0, 1 and 2."""
    _ok(probed, "one_block_offered_to_three_outputs_is_declined_by_all",
        "overlapping_offers_are_both_declined_a_separate_one_used")


def test_a_view_result_is_not_copied_into_a_good_offer(probed):
    _ok(probed, "a_view_result_ignores_a_good_offer")


def test_a_failed_run_leaves_every_slot_holding_no_value(probed):
    """2.0 left alias_of FFG_OUT_OWNED with base NULL (and the rest of the tensor as it was)."""
    _ok(probed, "failed_run_leaves_every_slot_none", "failed_input_record_and_slots",
        "null_state_still_writes_every_slot", "reentrant_run_is_busy_and_writes_its_slot", "wrong_count_touches_no_slot")


def test_the_error_record_is_reset_to_the_documented_values(probed):
    _ok(probed, "create_resets_every_error_field", "run_success_resets_every_error_field", "failed_node_record")


def test_null_pointers_inside_a_tensor_are_a_misused_call(probed):
    """2.0 returned FFG_ERR_VALUE for them; the header lists NULL pointers under FFG_ERR_ABI."""
    _ok(probed, "null_shape_is_err_abi", "null_data_is_err_abi", "null_data_of_an_empty_array_is_fine")


def test_a_failing_scan_body_is_reported_at_the_scan_node_of_the_table(probed):
    """2.0's message carried the body's own "in node #0: Dot(xs[t], W)" line before the Scan's."""
    _ok(probed, "scan_body_failure_points_at_the_scan_node", "nested_scan_failure_points_at_the_outer_scan_node")
    _, _, facts, functions = probed
    one = "scan_body_failure_points_at_the_scan_node"
    two = "nested_scan_failure_points_at_the_outer_scan_node"
    assert (facts[one + ".in_node_lines"], facts[one + ".inner_lines"]) == ("1", "1")
    assert (facts[two + ".in_node_lines"], facts[two + ".inner_lines"]) == ("1", "2")
    cause, inner, node = facts[one + ".message"].split("\\n")
    assert "dot: shapes (4,) and (5, 2) not aligned" in cause and inner == "  in inner node: Gemv(xs[t], W)"   # the BLAS name (issue 46)
    assert node.startswith("  in node #%s: Scan{" % facts[one + ".node"])
    lines = facts[two + ".message"].split("\\n")
    assert len(lines) == 4 and "(4,) and (5, 2) not aligned" in lines[0], lines
    assert lines[1].startswith("  in inner node: Gemv(") and lines[2].startswith("  in inner node: Scan{"), lines
    assert lines[3].startswith("  in node #%s: Scan{" % facts[two + ".node"]), lines
    assert facts[one + ".node"] != facts[two + ".node"]   # each scan is its own node of the table
    # and with shapes that fit, the values are numpy's
    rng = np.random.default_rng(5)
    xs, w, zs, v = rng.standard_normal((3, 4)), rng.standard_normal((4, 2)), rng.standard_normal((2, 3, 4)), \
        rng.standard_normal((4, 2))
    flat, nested = functions["scan"](xs, w, zs, v)
    np.testing.assert_allclose(flat, (xs @ w).sum(), rtol=1e-12)
    np.testing.assert_allclose(nested, sum((z @ v).sum() for z in zs), rtol=1e-12)


def test_the_python_error_of_a_failing_scan_body_names_both_nodes(probed):
    """Python annotates the Scan node (the record's index) and keeps the body's line naming Dot;
    2.0's message lost the body's node (its line was taken for the node line)."""
    f = probed[3]["scan"]
    with pytest.raises(ValueError) as info:
        f(np.ones((3, 4)), np.ones((5, 2)), np.ones((2, 3, 4)), np.ones((4, 2)))
    text = str(info.value)
    nodes = f.maker.linker.chosen.compiled.library.node_table() if hasattr(f.maker.linker, "chosen") \
        else f.maker.linker.compiled.library.node_table()
    assert nodes[info.value.failed_node_index][0].startswith("Scan")
    assert "step 0 of scan: dot: shapes (4,) and (5, 2) not aligned" in text
    assert "in inner node: Gemv(xs[t], W)" in text and "in node #0" not in text
    assert "Apply node that caused the error: #%d Scan{" % info.value.failed_node_index in text


def test_profile_runs_counts_the_calls_past_the_argument_and_busy_checks(probed):
    _ok(probed, "profiled_values", "profiled_node_failure", "profiled_input_failure",
        "profile_runs_counts_calls_past_the_argument_and_busy_checks")
    assert probed[2]["profile.runs"] == "4"


def test_slot_names_are_made_unique_in_slot_order_and_shared_k_counts_shared_slots(probed):
    out = probed[0]
    ins = re.findall(r"^fact slot\.in\.(\d+) = role (\d+) name (.*)$", out, re.M)
    outs = re.findall(r"^fact slot\.out\.(\d+) = role (\d+) updates (-?\d+) name (.*)$", out, re.M)
    assert [(int(r), n) for _, r, n in ins] == [(0, "x"), (0, "x_1"), (0, "x_1_1"), (0, "input3"), (1, "shared0"),
                                                (1, "x_2")]
    assert [(int(r), int(u), n) for _, r, u, n in outs] == [(2, -1, "x_3"), (2, -1, "output1"),
                                                            (3, 4, "shared0.update"), (3, 5, "x_2.update")]


def test_the_header_writes_the_decisions_down():
    text = open(HEADER_PATH).read()
    for rule in ("FFG_OUT_NONE = -3", "reads only the fields that size covers", "every offer of the overlapping ones",
                 "is not copied into an offer", "code FFG_OK, node -1, input -1, detail 0, message \"\"",
                 "in inner node: <text>", "k counts the shared", "the smallest from 1",
                 "found the state free", "FFG_ABI_VERSION 2001", "2.1 (over 2.0)"):
        assert rule in text, rule
