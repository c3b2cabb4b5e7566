"""pytest option ``--one-per-test``: keep one case of every test function and op, the C backend's if it has one.

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

LINKER_PARAMS = ("mode", "cmode", "linker")
OP_PARAMS = ("name", "kind", "op", "fn", "label", "case", "build")
RANK = {"c": 0, "c|py": 1, None: 2}


def pytest_addoption(parser):
    parser.addoption("--one-per-test", action="store_true", default=False,
                     help="run one case of every test function (the C linker's when there is one)")


def _params(item):
    return getattr(getattr(item, "callspec", None), "params", {})


def _op_of(item):
    params = _params(item)
    return tuple((name, repr(params[name])) for name in OP_PARAMS if name in params)


def _rank(item):
    params = _params(item)
    linker = None
    for name in LINKER_PARAMS:
        value = params.get(name)
        if value is not None:
            linker = value if isinstance(value, str) else getattr(value, "linker_name", str(value))
            break
    return RANK.get(linker, 3)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    if not config.getoption("one_per_test"):
        return
    best = {}   # (file, class, function, op) -> (rank, index) of the case kept for it
    for index, item in enumerate(items):
        key = (item.nodeid.split("::")[0], getattr(item, "cls", None) and item.cls.__name__,
               getattr(item, "originalname", None) or item.name, _op_of(item))
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
    deselected = [item for k, item in enumerate(items) if k not in keep]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for k, item in enumerate(items) if k in keep]
