"""``Mode``: Theano's and PyTensor's optimizer and linker names, mode names, and the config flags
that a function compiled without a mode follows."""
import os
import subprocess
import sys

import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph import Mode, function
from ffigraph.compile.mode import get_mode
from ffigraph.linkers.basic import PerformLinker
from ffigraph.linkers.c import CLinker, CVMLinker, OpWiseCLinker

FAST_RUN = ["merge", "canonicalize", "stabilize", "specialize", "merge_again", "fusion", "inplace"]
FAST_COMPILE = ["merge", "canonicalize", "merge_again"]


@pytest.mark.parametrize("name,expected", [
    ("fast_run", FAST_RUN),
    ("o4", FAST_RUN),                                                  # PyTensor's default: fast_run
    ("o3", [r for r in FAST_RUN if r != "inplace"]),                   # fast_run without inplace
    ("unsafe", [r for r in FAST_RUN if r != "inplace"]),               # o3 + 'unsafe' (no such rewrite here)
    ("o2", ["merge", "canonicalize", "merge_again", "fusion"]),        # fast_compile + fusion
    ("o1", FAST_COMPILE),
    ("fast_compile", FAST_COMPILE),
    ("merge", ["merge", "merge_again"]),
    ("stabilize", ["merge", "canonicalize", "stabilize"]),             # fast_run up to stabilize
    (None, []),
    ("None", []),
])
def test_optimizer_names_select_their_rewrites(name, expected):
    assert [n for n, _ in Mode(linker="py", optimizer=name).rewrites()] == expected


@pytest.mark.parametrize("name", ["FAST_RUN", "fast-run", "canonicalize", "O4", ""])
def test_unknown_optimizer_name_raises_listing_the_valid_ones(name):
    with pytest.raises(ValueError, match=r"unknown optimizer.*'fast_run'.*'o1'.*'unsafe'"):
        Mode(linker="py", optimizer=name)


def test_mode_name_as_optimizer_says_which_to_use():
    with pytest.raises(ValueError, match=r"'FAST_RUN' is a mode name.*optimizer='fast_run'"):
        Mode(optimizer="FAST_RUN")


def test_including_and_excluding_keep_the_named_set():
    names = [n for n, _ in Mode(linker="py", optimizer="o1").including("fusion").excluding("merge_again").rewrites()]
    assert names == ["merge", "canonicalize", "fusion"]


@pytest.mark.parametrize("name,cls", [
    ("py", PerformLinker), ("c", CLinker), ("c|py", OpWiseCLinker), ("cvm", CVMLinker),
    ("vm", OpWiseCLinker), ("vm_nogc", OpWiseCLinker), ("c|py_nogc", OpWiseCLinker), ("cvm_nogc", CVMLinker),
])
def test_theano_linker_names(name, cls):
    mode = Mode(linker=name, optimizer=None)
    assert type(mode.linker) is cls and type(mode.new_linker()) is cls


def test_vm_linker_runs_a_function():
    x = T.dvector("x")
    f = function([x], T.exp(x) + 1, mode=Mode(linker="vm", optimizer=None))
    assert f([0.0]).tolist() == [2.0]


@pytest.mark.parametrize("name", ["fast_run", "Fast_Compile", "debugmode", "mode", "MODE"])
def test_mode_names_are_case_insensitive(name):
    assert isinstance(get_mode(name), Mode)


def test_mode_name_mode_follows_config_linker_and_optimizer():
    with ffigraph.config.change_flags(linker="c|py", optimizer="o1"):
        mode = get_mode("Mode")
        assert (type(mode.linker), mode.optimizer) == (OpWiseCLinker, "o1")
    assert get_mode("FAST_COMPILE").optimizer == "fast_compile"


def test_default_function_follows_config_optimizer_and_linker():
    x = T.dvector("x")
    with ffigraph.config.change_flags(optimizer="None", linker="py"):
        f = function([x], x * 1)       # FAST_RUN's canonicalize would remove the multiplication by one
    assert f.maker.linker.name == "py"
    assert "Elemwise{mul}" in [str(n.op) for n in f.maker.fgraph.toposort()]
    with ffigraph.config.change_flags(optimizer="fast_run", linker="py"):
        g = function([x], x * 1)
    assert "Elemwise{mul}" not in [str(n.op) for n in g.maker.fgraph.toposort()]


def test_bad_config_optimizer_is_named_when_it_is_set():
    """(It was named at the next function(); config now checks the name when it is set,
    tests/test_config_choices.py.)"""
    x = T.dvector("x")
    with pytest.raises(ValueError, match=r"config.optimizer.*'fastrun'"):
        with ffigraph.config.change_flags(optimizer="fastrun"):
            pass
    assert function([x], x + 1)([1.0]).tolist() == [2.0]


def test_flags_from_the_environment_reach_default_functions():
    code = ("import ffigraph, ffigraph.tensor as T\n"
            "x = T.dvector('x')\n"
            "f = ffigraph.function([x], x * 1)\n"
            "print(f.maker.linker.name, 'Elemwise{mul}' in [str(n.op) for n in f.maker.fgraph.toposort()])\n")
    env = dict(os.environ, FFIGRAPH_FLAGS="optimizer=None,linker=py")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["py", "True"]
