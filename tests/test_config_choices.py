"""config.linker, config.optimizer and config.mode are checked when they are set, as every other key
is: an unknown name raises ValueError at once, naming the key, the value and the accepted names,
from Python and from FFIGRAPH_FLAGS, instead of at the next function()."""
import os
import subprocess
import sys

import pytest

import ffigraph
import ffigraph.tensor as pt
from ffigraph import config
from ffigraph.compile import mode as mode_module
from ffigraph.config import _CHOICES, Config, register_choice


@pytest.mark.parametrize("key, bad, accepted", [
    ("linker", "cvmm", ["'cvm'", "'c|py'", "'py'", "'vm_nogc'"]),
    ("optimizer", "fast", ["'fast_run'", "'fast_compile'", "'o4'", "'None'"]),
    ("mode", "FAST", ["'Mode'", "'FAST_RUN'", "'DebugMode'", "'NanGuardMode'", "'py'"]),
])
def test_an_unknown_name_raises_when_set(key, bad, accepted):
    before = getattr(config, key)
    with pytest.raises(ValueError) as err:
        setattr(config, key, bad)
    message = str(err.value)
    assert message.startswith("ffigraph.config.%s must be " % key)
    assert message.endswith("got %r" % bad)
    for name in accepted:
        assert name in message, name
    assert getattr(config, key) == before          # the old value stays
    with pytest.raises(ValueError, match="config.%s" % key):
        with config.change_flags(**{key: bad}):
            pass
    assert getattr(config, key) == before
    for wrong in (None if key != "optimizer" else 3, 3.5, ""):
        with pytest.raises(ValueError, match="config.%s" % key):
            setattr(config, key, wrong)


def test_flags_are_checked_when_read():
    with pytest.raises(ValueError, match=r"^FFIGRAPH_FLAGS: ffigraph.config.linker must be .*got 'cvmm'$"):
        Config("floatX=float32,linker=cvmm")
    with pytest.raises(ValueError, match=r"^FFIGRAPH_FLAGS: ffigraph.config.optimizer .*got 'o5'$"):
        Config("optimizer=o5")
    with pytest.raises(ValueError, match=r"^FFIGRAPH_FLAGS: ffigraph.config.mode .*got 'FASTRUN'$"):
        Config("mode=FASTRUN")
    cfg = Config("linker=c|py,optimizer=None,mode=fast_compile")
    assert (cfg.linker, cfg.optimizer, cfg.mode) == ("c|py", "None", "fast_compile")


def test_the_environment_variable_fails_at_import():
    env = dict(os.environ, FFIGRAPH_FLAGS="linker=cvmm")
    out = subprocess.run([sys.executable, "-c", "import ffigraph"], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode != 0
    assert "ValueError: FFIGRAPH_FLAGS: ffigraph.config.linker must be a linker name" in out.stderr
    assert "got 'cvmm'" in out.stderr


def test_the_built_in_names_are_the_registries_names():
    """config cannot import compile.mode (a later layer), so it holds the names itself; they must be
    exactly what function() and Mode() accept."""
    assert sorted(_CHOICES["linker"]) == sorted(mode_module.predefined_linkers)
    assert sorted(_CHOICES["optimizer"]) == sorted(k for k in mode_module.predefined_optimizers if k is not None)
    assert sorted(_CHOICES["mode"]) == sorted(mode_module.predefined_modes)
    assert "DebugMode" in _CHOICES["mode"] and "vm_nogc" in _CHOICES["linker"]


def test_every_accepted_value_compiles():
    """What config accepts, function() accepts: each linker and mode name, a mode in another case,
    a linker name as the mode, and every optimizer (on a one-node graph, with the py linker where
    the name allows it, so nothing here runs a C compiler)."""
    x = pt.dvector("x")
    for name in _CHOICES["optimizer"] + [None]:
        with config.change_flags(optimizer=name, linker="py"):
            assert ffigraph.function([x], x * 2)([1.5]).tolist() == [3.0]
    for name in ("fast_compile", "FAST_COMPILE", "perform", "py"):
        with config.change_flags(mode=name):
            f = ffigraph.function([x], x * 2)
            assert f.info().startswith("function: linker py"), name
            assert f([1.5]).tolist() == [3.0]
    for name in _CHOICES["linker"]:
        with config.change_flags(linker=name):
            assert config.linker == name


def test_a_registered_linker_and_mode_are_accepted_from_then_on():
    with pytest.raises(ValueError, match="'my_py'"):
        config.linker = "my_py"
    mode_module.register_linker("my_py", mode_module.predefined_linkers["py"])
    mode_module.register_mode("MY_MODE", lambda: mode_module.Mode(linker="my_py", optimizer="fast_compile"))
    try:
        x = pt.dvector("x")
        with config.change_flags(linker="my_py", mode="my_mode"):
            f = ffigraph.function([x], x + 1)
            assert f.info().startswith("function: linker py")
            assert f([1.0, -2.0]).tolist() == [2.0, -1.0]
    finally:
        del mode_module.predefined_linkers["my_py"], mode_module.predefined_modes["MY_MODE"]
        _CHOICES["linker"].remove("my_py")
        _CHOICES["mode"].remove("MY_MODE")
    with pytest.raises(ValueError, match="register_choice: key must be 'linker' or 'mode', got 'optimizer'"):
        register_choice("optimizer", "o9")
    with pytest.raises(ValueError, match="register_choice: the mode name must be a non-empty string"):
        register_choice("mode", "")
