"""Grouped bar chart of benchmark timings, relative to numpy, written as a PNG.

``bar_chart(results, path)`` takes an ordered mapping ``workload -> {implementation: seconds}``
(the per-workload dicts the bench scripts already print) and draws one group of bars per
workload, one bar per implementation, with y = time / numpy's time for that workload (so numpy
is 1.0 and lower is faster); each bar carries its absolute time. An implementation missing from
a workload simply has no bar there.

matplotlib is optional for ffigraph, so it is imported only when a chart is drawn. Python 3.9+.
"""
import os
import platform
import sys

# Above this max/min ratio a linear axis squashes the fast bars into the baseline.
LOG_SPREAD = 20.0


def fmt_time(t):
    if t < 1e-3:
        return "%.3g \u00b5s" % (t * 1e6)
    if t < 1.0:
        return "%.3g ms" % (t * 1e3)
    return "%.3g s" % t


def machine_line():
    impl = platform.python_implementation()
    try:
        import numpy
        np_version = numpy.__version__
    except ImportError:  # only the footer needs it
        np_version = "?"
    return "%s; %s %s; numpy %s" % (platform.platform(), impl, platform.python_version(), np_version)


def _implementations(results, order=()):
    """The names in ``order``, then every other implementation in ``results`` in order of first
    appearance (so colours and legend follow the printed table)."""
    seen = dict.fromkeys(order)
    for timings in results.values():
        for name in timings:
            seen.setdefault(name, None)
    return list(seen)


def _drawable(timings, name, reference):
    t, ref = timings.get(name), timings.get(reference)
    return t is not None and t > 0 and bool(ref)


def bar_chart(results, path, title="ffigraph benchmark", reference="numpy", note=None, order=()):
    """Write a grouped bar chart of ``results`` to ``path`` (PNG) and return the matplotlib Figure.

    ``results``: ordered mapping workload -> {implementation: seconds}. Heights are relative to
    ``reference``; a workload without a ``reference`` time gets no bars (nothing to scale by)
    and its label says so. ``note`` is appended to the machine footer (e.g. which clock was used).
    ``order`` fixes the legend/bar order of the names it lists (the rest follow as they appear).
    """
    try:
        # matplotlib itself first: with only ``matplotlib.figure`` cached, a broken or blocked
        # parent package would otherwise go unnoticed.
        import matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError("bench/plot.py needs matplotlib to draw charts: pip install matplotlib "
                          "(or pip install ffigraph[bench]); %s" % exc) from exc

    workloads = list(results)
    if not workloads:
        raise ValueError("bar_chart: no results to plot")
    impls = [name for name in _implementations(results, order)
             if any(_drawable(results[w], name, reference) for w in workloads)]
    n_impl = max(1, len(impls))
    bar_width = 0.8 / n_impl

    ratios = [t / results[w][reference] for w in workloads if results[w].get(reference)
              for t in results[w].values() if t and t > 0]
    spread = max(ratios) / min(ratios) if ratios else 1.0
    log = spread > LOG_SPREAD

    # Pyplot is avoided on purpose: a bare Figure on an Agg canvas needs no display and leaves
    # no global figure state behind in the calling process.
    width = min(40.0, max(6.0, 1.5 + len(workloads) * (0.3 * n_impl + 0.5)))
    fig = Figure(figsize=(width, 5.0), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    # One colour per implementation across all groups, so the legend reads the same everywhere.
    cycle = [c["color"] for c in matplotlib.rcParams["axes.prop_cycle"]]
    colours = [cycle[i % len(cycle)] for i in range(len(impls))]

    labels = []
    for w in workloads:
        ref = results[w].get(reference)
        labels.append(w if ref else "%s\n(no %s time)" % (w, reference))
    # Bars of each group are centred on its tick: a workload with fewer implementations
    # gets no holes where the missing ones would be.
    present = [[name for name in impls if _drawable(results[w], name, reference)] for w in workloads]
    for i, name in enumerate(impls):
        xs, heights, times = [], [], []
        for g, w in enumerate(workloads):
            if name not in present[g]:
                continue
            t, ref = results[w][name], results[w][reference]
            xs.append(g + (present[g].index(name) + 0.5 - len(present[g]) / 2) * bar_width)
            heights.append(t / ref)
            times.append(t)
        bars = ax.bar(xs, heights, bar_width, label=name, color=colours[i])
        for bar, t in zip(bars, times):
            ax.annotate(fmt_time(t), (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                        xytext=(0, 2), textcoords="offset points", ha="center", va="bottom",
                        rotation=90, fontsize=6)

    ax.axhline(1.0, color="0.3", linewidth=0.8, linestyle="--", zorder=0)
    if log:
        ax.set_yscale("log")
    if ratios:
        # Headroom for the rotated time labels above the tallest bar.
        ax.set_ylim(top=max(ratios) * (4.0 if log else 1.3))
        if log:
            ax.set_ylim(bottom=min(ratios) / 2)
    ax.set_xticks(range(len(workloads)))
    long_labels = any(len(line) > 14 for lab in labels for line in lab.splitlines())
    ax.set_xticklabels(labels, fontsize=7, rotation=20 if long_labels else 0,
                       ha="right" if long_labels else "center")
    ax.set_xlim(-0.6, len(workloads) - 0.4)
    ax.set_ylabel("time / %s time (lower is faster)%s" % (reference, ", log scale" if log else ""))
    ax.set_title(title)
    # Outside the axes: inside, it would hide the tallest bars' time labels.
    if impls:  # an empty legend only earns a matplotlib warning
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.005, 1.0), borderaxespad=0.0)
    footer = machine_line() if note is None else "%s; %s" % (machine_line(), note)
    fig.text(0.01, 0.01, footer, fontsize=6, color="0.4", ha="left", va="bottom")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, format="png")
    return fig


def bar_count(fig):
    """Bars drawn on ``fig`` (what a test can check against the results it passed)."""
    return sum(len(c) for ax in fig.axes for c in ax.containers)


def check_path(parser, path):
    """argparse error now if ``path``'s folder is missing, rather than after the whole run."""
    if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        parser.error("--plot: the folder of %r does not exist" % path)


def save_or_exit(results, path, title, note=None, order=()):
    """``bar_chart`` for a bench script's --plot, called once its table is printed: on success one
    line says where the chart is; without matplotlib (or on a write error) one line says why and
    the script exits with status 1, the timings already on screen.
    """
    prog = os.path.basename(sys.argv[0]) or "bench"
    try:
        bar_chart(results, path, title=title, note=note, order=order)
    except ImportError as exc:
        raise SystemExit("%s: no chart written: %s" % (prog, exc))
    except OSError as exc:
        raise SystemExit("%s: could not write the chart to %s: %s" % (prog, path, exc))
    print("chart written to %s" % path)
