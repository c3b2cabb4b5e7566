"""function(..., profile=True): per-node calls, times, shapes and bytes, on every linker."""
import re
import shutil
import subprocess
import threading
import time

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import Mode, config, function
from ffigraph.compile.profiling import PHASES, ProfileStats
from helpers import C_HOSTS

LINKERS = ["c", "cvm", "c|py", "py"]


def _graph():
    x = T.dmatrix("x")
    y = T.dvector("y")
    return [x, y], [T.exp(x) * y + x, (x * 2).sum(axis=0)]


def _compile(linker, profile=True, **kw):
    ins, outs = _graph()
    return function(ins, outs, mode=Mode(linker=linker), profile=profile, name="g", **kw)


def _data(rows=200, cols=300):
    rng = np.random.default_rng(0)
    return rng.standard_normal((rows, cols)), rng.standard_normal(cols)


@pytest.mark.parametrize("linker", LINKERS)
def test_every_node_is_listed_with_its_calls(linker):
    f = _compile(linker)
    a, b = _data()
    for _ in range(7):
        f(a, b)
    stats = f.profile.nodes()
    order = f.maker.fgraph.toposort()
    assert [s.node for s in stats] == order
    assert [s.index for s in stats] == list(range(len(order)))
    assert all(s.calls == 7 for s in stats)
    # >= 0, not > 0: a node that does almost nothing may read 0 on a coarse clock; the nodes
    # together (7 calls of exp over 200 x 300 values) were measured
    assert all(s.seconds >= 0 for s in stats)
    assert f.profile.node_seconds > 0
    assert f.profile.calls == 7
    text = f.profile.summary_text(n_nodes=None)
    for s in stats:
        assert "#%d %s" % (s.index, str(s.node)[:40]) in text


@pytest.mark.parametrize("linker", LINKERS)
def test_totals_nest_inside_wall_time(linker):
    """Structure only, never a ratio: the node times lie inside the calls' times, which lie inside
    the wall time measured around the calls (the same monotonic clock, nested intervals), so no
    load on the machine can break it. How much of the wall time the nodes take is a measurement:
    ``python bench/bench_profile.py`` prints it."""
    f = _compile(linker)
    a, b = _data(60, 80)
    f(a, b)
    f.profile.reset()
    n = 10
    start = time.perf_counter()
    for _ in range(n):
        f(a, b)
    wall = time.perf_counter() - start
    prof = f.profile
    assert prof.calls == n and all(s.calls == n for s in prof.nodes())
    assert 0 <= prof.node_seconds <= prof.seconds <= wall
    shares = sum(s.share for s in prof.nodes())
    assert 0 <= shares <= 1.0 + 1e-12   # node_seconds / seconds, summed in floats


@pytest.mark.parametrize("linker", LINKERS)
def test_output_shapes_and_bytes_match_the_results(linker):
    f = _compile(linker)
    a, b = _data(5, 3)
    out, total = f(a, b)
    by_node = {s.node: s for s in f.profile.nodes()}
    final = [o.owner.inputs[0].owner if o.owner.op.__class__.__name__ == "DeepCopyOp" else o.owner
             for o in f.maker.fgraph.outputs]
    assert by_node[final[0]].shapes == [out.shape] and by_node[final[0]].nbytes == [out.nbytes]
    assert by_node[final[1]].shapes == [total.shape] and by_node[final[1]].nbytes == [total.nbytes]


@pytest.mark.parametrize("linker", ["c", "py"])
def test_empty_and_0d_values(linker):
    x = T.dmatrix("x")
    f = function([x], [T.exp(x), T.sum(x)], mode=Mode(linker=linker), profile=True)
    e, s = f(np.zeros((0, 4)))
    assert e.shape == (0, 4) and s == 0
    shapes = [shape for st in f.profile.nodes() for shape in st.shapes]
    nbytes = [n for st in f.profile.nodes() for n in st.nbytes]
    assert (0, 4) in shapes and () in shapes
    assert 0 in nbytes and 8 in nbytes


@pytest.mark.parametrize("linker", ["c", "c|py", "py"])
def test_a_failing_call_counts_and_keeps_the_last_good_shapes(linker):
    x = T.dvector("x")
    y = T.dvector("y")
    f = function([x, y], x * y + 1, mode=Mode(linker=linker, optimizer=None), profile=True)
    f(np.ones(3), np.ones(3))
    with pytest.raises(ValueError):
        f(np.ones(3), np.ones(4))
    stats = f.profile.nodes()
    assert f.profile.calls == 2
    assert stats[0].calls == 2          # the multiplication ran and failed
    assert stats[0].shapes == [(3,)]    # its last successful run
    assert stats[-1].calls == 1         # the addition never ran the second time


def test_summary_is_sorted_by_time_and_has_the_compile_breakdown():
    f = _compile("c")
    a, b = _data()
    for _ in range(5):
        f(a, b)
    text = f.profile.summary_text()
    for phase in PHASES:
        assert phase in text
    times = [s.seconds for s in sorted(f.profile.nodes(), key=lambda s: -s.seconds)]
    rows = [line for line in text.splitlines() if re.match(r"\s+\d+\.\d%", line)]
    assert len(rows) == len(times)
    shares = [float(r.split("%")[0]) for r in rows]
    assert shares == sorted(shares, reverse=True)
    cut = f.profile.summary_text(n_nodes=1)
    assert "more node(s)" in cut


def test_summary_units_and_runs_of_equal_outputs(capsys):
    # The formatting is the same code on every linker; one profiled call feeds it, the rest
    # are NodeStats made by hand so every unit (s, ms, us; GiB .. B, unknown) is seen.
    from ffigraph.compile.profiling import NodeStats, _outputs_text, _seconds

    assert [_seconds(t) for t in (2.5, 0.0125, 3e-6)] == ["2.500 s", "12.50 ms", "3.00 us"]
    node = NodeStats(0, "n", 4, 2.0, 1.0, [(2, 3), (2, 3), (2, 3), None, (5,), ()],
                     [48, 48, 48, None, 3 << 20, None], "c")
    assert _outputs_text(node) == "3 x (2,3) 48 B; ?; (5) 3.0 MiB; () ? B"
    big = NodeStats(1, "m", 1, 0.0, 0.0, [(1 << 28,)], [2 << 30], "python")
    assert _outputs_text(big) == "(268435456) 2.0 GiB"
    assert repr(node) == "<NodeStats #0 n: 4 calls, 2.000 s>" and node.mean == 0.5
    f = _compile("c")
    f(*_data())
    assert repr(f.profile).startswith("<ProfileStats g: 1 calls, ")
    f.profile.summary(n_nodes=1)
    assert capsys.readouterr().out == f.profile.summary_text(n_nodes=1)


def test_compile_times_are_broken_down():
    f = _compile("c", profile=False)
    times = f.maker.compile_times
    assert set(times) == set(PHASES)
    assert all(t >= 0 for t in times.values())
    assert times["rewrite"] > 0 and times["codegen"] > 0
    assert times.total == pytest.approx(sum(times.values()))
    fp = _compile("py")
    assert fp.profile.compile_times["codegen"] == 0 and fp.profile.compile_times["compiler"] == 0


def test_profiling_off_leaves_no_trace_in_the_c():
    off = _compile("c", profile=False)
    on = _compile("c", profile=True)
    assert off.profile is None and isinstance(on.profile, ProfileStats)
    assert type(off).__call__ is not type(on).__call__
    src_off, src_on = off.c_source(), on.c_source()
    for marker in ("ffg_now_ns", "prof_nodes", "_profile(", "clock_gettime"):
        assert marker not in src_off
        assert marker in src_on
    assert "Python.h" not in src_on and "PyObject" not in src_on
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm (binutils) is not installed")

    def exported(f):
        lib = f.maker.linker.compiled.library.path
        out = subprocess.run([nm, "-D", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
        return {line.split()[-1] for line in out.splitlines() if line.strip()}

    assert not any(s.endswith("_profile") for s in exported(off))
    assert any(s.endswith("_profile") for s in exported(on))


def test_config_flag_profiles_every_function():
    with config.change_flags(profile=True):
        f = _compile("c", profile=None)
        g = _compile("c", profile=False)
    assert isinstance(f.profile, ProfileStats) and g.profile is None
    with config.change_flags(profile="0"):
        assert _compile("py", profile=None).profile is None
    with pytest.raises(ValueError, match="profile"):
        config.profile = "sometimes"
    with pytest.raises(TypeError, match="profile"):
        _compile("c", profile="yes")


def test_reset_counts_from_zero():
    f = _compile("c")
    a, b = _data(4, 3)
    for _ in range(3):
        f(a, b)
    f.profile.reset()
    assert f.profile.calls == 0 and all(s.calls == 0 for s in f.profile.nodes())
    f(a, b)
    assert f.profile.calls == 1 and all(s.calls == 1 for s in f.profile.nodes())


def test_profiled_results_equal_unprofiled_ones():
    a, b = _data(6, 5)
    for linker in LINKERS:
        want = _compile(linker, profile=False)(a, b)
        got = _compile(linker, profile=True)(a, b)
        for w, g in zip(want, got):
            np.testing.assert_array_equal(w, g)


def test_threads_calling_one_profiled_function():
    f = _compile("c")
    a, b = _data(20, 10)

    def work():
        for _ in range(50):
            f(a, b)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert f.profile.calls == 200
    assert all(s.calls == 200 for s in f.profile.nodes())


def test_debugmode_profile_lists_nodes():
    from ffigraph import DebugMode

    ins, outs = _graph()
    f = function(ins, outs, mode=DebugMode(), profile=True)
    a, b = _data(3, 2)
    f(a, b)
    assert [s.calls for s in f.profile.nodes()] == [1] * len(f.maker.fgraph.toposort())


def test_c_source_and_library_dir():
    f = _compile("c", profile=False)
    src = f.c_source()
    assert "FFG_EXPORT" in src and "Python.h" not in src
    import os

    assert os.path.isdir(f.library_dir)
    assert any(name.endswith(".so") for name in os.listdir(f.library_dir))
    assert any(name.endswith(".c") for name in os.listdir(f.library_dir))
    opwise = _compile("c|py", profile=False)
    assert opwise.c_source().count("==== node #") == len(opwise.maker.fgraph.toposort())
    with pytest.raises(ValueError, match="generates no C"):
        _compile("py", profile=False).c_source()


def test_a_c_host_reads_the_profile_through_the_abi(tmp_path):
    """No Python: a C program dlopens the profiled library, runs it and reads P_profile."""
    import os

    from ffigraph.abi import HEADER_PATH

    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    x = T.dvector("x")
    y = T.dvector("y")
    f = function([x, y], x + y, mode=Mode(linker="c", optimizer=None), profile=True)
    library = f.maker.linker.compiled.library
    host = os.path.join(C_HOSTS, "profile_host.c")
    exe = str(tmp_path / "profile_host")
    subprocess.run(["gcc", "-O1", "-std=c99", "-Wall", "-Werror", "-I", os.path.dirname(HEADER_PATH), "-o", exe,
                    host, "-ldl"], check=True, capture_output=True)
    out = subprocess.run([exe, library.path, library.prefix, "7", "25"], check=True, capture_output=True,
                         text=True, timeout=60).stdout
    lines = out.splitlines()
    runs, total = re.match(r"runs (\d+) total_ns (\d+)", lines[0]).groups()
    assert int(runs) == 25 and int(total) > 0
    nodes = [re.match(r"node (\d+) calls (\d+) total_ns (\d+)", l).groups() for l in lines if l.startswith("node")]
    assert [int(c) for _, c, _ in nodes] == [25] * len(f.maker.fgraph.toposort())
    assert sum(int(t) for _, _, t in nodes) <= int(total)
    values = [l for l in lines if l.startswith("value")]
    assert values[-1].endswith("ndim 1 nbytes 56 shape 7")
