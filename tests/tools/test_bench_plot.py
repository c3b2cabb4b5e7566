"""bench/plot.py: the --plot chart of the bench scripts (matplotlib is optional)."""
import importlib.util
import os
import sys

import pytest

from helpers import REPO_ROOT

PLOT_PY = os.path.join(REPO_ROOT, "bench", "plot.py")

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

# "pytensor" is missing from the second workload and only numpy/ffigraph c time the third:
# each should get bars for what it has and no more.
FAKE_RESULTS = {
    "x + y (call)": {"numpy": 3.2e-7, "ffigraph c": 6.0e-6, "ffigraph py": 8.6e-6, "pytensor": 2.0e-5},
    "exp(x)*y n=1e5": {"numpy": 3.3e-4, "ffigraph c": 2.1e-4, "ffigraph py": 2.7e-3},
    "dot n=128": {"numpy": 1.3e-4, "ffigraph c": 1.2e-4},
}


def load_plot():
    # bench/ is not a package: load the file under a private name so nothing else can clash.
    spec = importlib.util.spec_from_file_location("_ffigraph_bench_plot", PLOT_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bar_chart_writes_png(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib not installed (optional: pip install matplotlib)")
    plot = load_plot()
    path = tmp_path / "chart.png"
    fig = plot.bar_chart(FAKE_RESULTS, str(path), title="fake")
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert 5000 < len(data) < 5000000
    expected = sum(len(t) for t in FAKE_RESULTS.values())
    assert plot.bar_count(fig) == expected == 9
    heights = sorted(round(p.get_height(), 6) for ax in fig.axes for c in ax.containers for p in c)
    assert heights.count(1.0) == 3  # numpy is the unit in every group
    assert fig.axes[0].get_title() == "fake"


def test_bar_chart_without_matplotlib(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    plot = load_plot()  # loading the module must not need matplotlib
    with pytest.raises(ImportError, match="pip install matplotlib"):
        plot.bar_chart(FAKE_RESULTS, str(tmp_path / "chart.png"))
    assert not (tmp_path / "chart.png").exists()
