"""The device registry (ffigraph/linkers/devices.py): CPU graphs never load a device package, and
Mode(device='cuda') loads CUDA (and its GPU rewrite) through the loader the package root registers."""
import subprocess
import sys

import pytest

from ffigraph.linkers import devices


def _run(code):
    # in a child process: this one may have imported ffigraph.cuda already, which would hide a load
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_cpu_functions_never_import_the_cuda_package(tmp_path):
    """Compiling (default mode, the whole-graph C linker), calling, printing and exporting a CPU graph."""
    code = ("import io, sys, numpy as np, ffigraph, ffigraph.tensor as T\n"
            "from ffigraph.compile.mode import Mode\n"
            "x = T.dvector('x')\n"
            "v = np.array([0.5, -1.0, 2.0])\n"
            "for mode in (None, Mode(linker='c')):\n"
            "    f = ffigraph.function([x], T.exp(x) * 2 + x, mode=mode)\n"
            "    assert np.allclose(f(v), np.exp(v) * 2 + v), mode\n"
            "ffigraph.printing.debugprint(f, file=io.StringIO())\n"
            "f.export(%r)\n"
            "print(sorted(m for m in sys.modules if m.startswith('ffigraph.cuda')) or 'none')\n"
            % str(tmp_path / "export"))
    assert _run(code) == ["none"]


@pytest.mark.parametrize("how", ["Mode(device='cuda')", "config.device"])
def test_asking_for_cuda_loads_it_and_its_gpu_rewrite(how):
    # building a Mode needs no GPU (nor nvcc): only compiling a GPU graph does
    make = "ffigraph.Mode(device='cuda')" if how != "config.device" else "set_device('cuda') or ffigraph.Mode()"
    code = ("import sys, ffigraph\n"
            "from ffigraph.graph.rewriting import optdb\n"
            "from ffigraph.linkers import devices\n"
            "set_device = lambda name: setattr(ffigraph.config, 'device', name)\n"
            "before = ('ffigraph.cuda' in sys.modules, 'gpu' in optdb, devices.registered())\n"
            "mode = %s\n"
            "print(before == (False, False, []), 'ffigraph.cuda' in sys.modules, devices.registered(),\n"
            "      'gpu' in [name for name, _ in mode.rewrites()])\n" % make)
    assert _run(code) == ["True", "True", "['cuda']", "True"]


@pytest.fixture
def registry(monkeypatch):
    """The registry's state, restored after the test (the real CUDA entries stay as they were)."""
    for name in ("_devices", "_loaders"):
        monkeypatch.setattr(devices, name, dict(getattr(devices, name)))
    monkeypatch.setattr(devices, "_loaded", set(devices._loaded))
    return devices


class FakeDevice(devices.Device):
    name = "fakedev"

    def prelude(self):
        return "/* fakedev */"


def test_get_of_an_unknown_device_names_it_and_its_package(registry):
    with pytest.raises(LookupError, match=r"'nodev'.*ffigraph\.nodev"):
        registry.get("nodev")
    registry.register_loader("nodev", lambda: None, package="some.package")
    with pytest.raises(LookupError, match=r"'nodev'.*some\.package"):
        registry.require("nodev")   # a loader that registers nothing still ends in the clear error


def test_require_runs_the_loader_once(registry):
    calls = []

    def load():
        calls.append(1)
        registry.register(FakeDevice())

    registry.register_loader("fakedev", load)
    assert "fakedev" not in registry.registered()
    first = registry.require("fakedev")
    assert registry.require("fakedev") is first and registry.get("fakedev") is first
    assert calls == [1] and "fakedev" in registry.registered()
    assert first.prelude() == "/* fakedev */"


def test_a_failed_loader_is_retried(registry):
    calls = []

    def load():
        calls.append(1)
        if len(calls) == 1:
            raise ImportError("not yet")
        registry.register(FakeDevice())

    registry.register_loader("fakedev", load)
    with pytest.raises(ImportError, match="not yet"):
        registry.require("fakedev")
    assert registry.require("fakedev").name == "fakedev" and len(calls) == 2


def test_the_interface_says_what_a_device_left_out(registry):
    device = FakeDevice()
    with pytest.raises(NotImplementedError, match=r"'fakedev'.*free_block"):
        device.free_block(None)
    with pytest.raises(TypeError):
        registry.register(object())
