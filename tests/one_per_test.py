"""pytest options ``--one-per-test`` and ``--one-per-test-marked MARKER``: keep one case of every test
function and op, the C backend's if it has one (of every test, or of the tests carrying MARKER).

The sanitizer phase of ``./dev test`` runs with it: every test function (so every failure
path and the export example) runs at least once, and every op it is parametrised over (the
parameters in OP_PARAMS: "name", "kind", "op", ...) runs once per file, with its generated C built with
AddressSanitizer and UBSan, in a few minutes instead of the whole parametrised suite (dtypes,
shapes, axes and linkers are what it leaves out). Among the cases of one function and op it
keeps the first whose linker parameter is "c" (then "c|py", then one with no linker
parameter); one whose every case uses the Python linker keeps its first case.
"""
from __future__ import annotations

import pytest

LINKER_PARAMS = ("mode", "cmode", "c_mode", "linker")
OP_PARAMS = ("name", "kind", "op", "fn", "label", "case", "build",
             "path", "level")   # (the last two: Dot's BLAS and blocked kernels, vmath's dispatch levels)
RANK = {"c": 0, "c|py": 1, None: 2}


def pytest_addoption(parser):
    parser.addoption("--one-per-test", action="store_true", default=False,
                     help="run one case of every test function (the C linker's when there is one)")
    parser.addoption("--one-per-test-marked", metavar="MARKER", default=None,
                     help="like --one-per-test, but only for tests carrying MARKER; the others run in full "
                          "(the PyPy phase: --one-per-test-marked op_matrix)")


def _params(item):
    return getattr(getattr(item, "callspec", None), "params", {})


def _op_of(item):
    params = _params(item)
    return tuple((name, repr(params[name])) for name in OP_PARAMS if name in params)


def _linker(item):
    params = _params(item)
    for name in LINKER_PARAMS:
        value = params.get(name)
        if value is not None:
            return value if isinstance(value, str) else getattr(value, "linker_spec", str(value))
    return None


def _rank(item):
    return RANK.get(_linker(item), 3)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    marker = config.getoption("one_per_test_marked")
    if config.getoption("one_per_test"):
        keep = _one_per_test(items)
        chosen = items
    elif marker:
        # (on PyPy: the generated C is the same as on CPython, but the Python linker runs each op's
        # perform with PyPy's numpy, so one case per function, op and linker)
        chosen = [item for item in items if item.get_closest_marker(marker)]
        keep = _one_per_test(chosen, per_linker=True)
    else:
        return
    deselected = [item for k, item in enumerate(chosen) if k not in keep]
    if deselected:
        dropped = set(map(id, deselected))
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if id(item) not in dropped]


def _one_per_test(items, per_linker=False):
    """Indexes into ``items`` of the cases to keep: one per test function and op (and linker)."""
    best = {}   # (file, class, function, op) -> (rank, index) of the case kept for it
    for index, item in enumerate(items):
        op = _op_of(item) + ((("linker", _linker(item)),) if per_linker else ())
        key = (item.nodeid.split("::")[0], getattr(item, "cls", None) and item.cls.__name__,
               getattr(item, "originalname", None) or item.name, op)
        rank = _rank(item)
        if key not in best or rank < best[key][0]:
            best[key] = (rank, index)
    # an op that several functions of a file are parametrised over runs in the first of them only;
    # every function still runs at least once
    keep, ops_seen, functions_seen = set(), set(), set()
    for key, (_, index) in sorted(best.items(), key=lambda kv: kv[1][1]):
        function, op = key[:3], (key[0], key[3])
        if not key[3] or op not in ops_seen or function not in functions_seen:
            keep.add(index)
            ops_seen.add(op)
            functions_seen.add(function)
    return keep
