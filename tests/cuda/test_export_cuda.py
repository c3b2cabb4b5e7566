"""Exported GPU graphs: the folder ships the .cu source and the toolkit's libcudart, builds with
make (the example needs only the C compiler), loads from wherever the folder is moved, and,
with no GPU, reports CUDA's own error and exits non-zero instead of crashing.

Two exports (each one nvcc compile) serve the whole module:
  transfer   host inputs and outputs, with host_from_gpu(gpu_from_host(x)) inside: main.c needs no CUDA;
  gpu_input  a GPU-typed input and a GPU-typed output: main.c copies to and from the device.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph.compile.mode import Mode
from ffigraph.cuda import toolchain

if toolchain.find_nvcc() is None:
    pytest.skip("nvcc not found (set CUDA_HOME or put nvcc on PATH): GPU graphs cannot be exported here",
                allow_module_level=True)
if any(shutil.which(t) is None for t in ("make", "gcc", "nm", "ldd")):
    pytest.skip("exports are built with make and gcc, checked with nm and ldd; one is missing",
                allow_module_level=True)

from ffigraph.cuda import GpuArrayType, gpu_from_host, host_from_gpu  # noqa: E402
from ffigraph.export import undefined_symbols  # noqa: E402
from ffigraph.export.bundle import cudart_files, make_plan  # noqa: E402
from export_helpers import no_python_env, parse_printed, run  # noqa: E402

X = np.arange(12.0).reshape(3, 4)   # what main.c fills a (?, ?) float64 input with
NO_GPU_WORDS = re.compile(r"CUDA driver version is insufficient|no CUDA-capable device", re.I)


def _gpu_usable():
    try:
        from ffigraph.cuda.runtime import gpu_status

        return bool(gpu_status()[0])
    except Exception:
        return False


def transfer_function():
    x = T.dmatrix("x")
    y = host_from_gpu(gpu_from_host(x))
    return ffigraph.function([x], [y * 2, (y * 2).sum()], name="transfer", mode=Mode(linker="c"))


def gpu_input_function():
    g = GpuArrayType("float64", (None, None))("g")
    back = host_from_gpu(g)
    return ffigraph.function([g], [back, gpu_from_host(back * 2)], name="gpuin", mode=Mode(linker="c"))


def _export(factory, tmp_path_factory, tag):
    root = tmp_path_factory.mktemp(tag)
    f = factory()
    bundle = f.export(str(root / tag))
    env = no_python_env(root)
    run(["make", "-s"], bundle.directory, env)
    return f, bundle, env


@pytest.fixture(scope="module")
def transfer(tmp_path_factory):
    return _export(transfer_function, tmp_path_factory, "transfer")


@pytest.fixture(scope="module")
def gpu_input(tmp_path_factory):
    return _export(gpu_input_function, tmp_path_factory, "gpuin")


@pytest.fixture(params=["transfer", "gpu_input"])
def exported(request):
    return request.getfixturevalue(request.param)


def _ldd(path):
    return subprocess.run(["ldd", path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True).stdout


def _cudart_resolved(ldd_text):
    found = re.search(r"libcudart\.so\S*\s+=>\s+(\S+)", ldd_text)
    assert found, "ldd shows no libcudart:\n" + ldd_text
    return os.path.realpath(found.group(1))


def _check_no_gpu_failure(proc, bundle):
    assert proc.returncode > 0, "example ended by signal %d or succeeded:\n%s\n%s" % (
        -proc.returncode if proc.returncode < 0 else 0, proc.stdout, proc.stderr)
    assert NO_GPU_WORDS.search(proc.stderr), proc.stderr
    assert "run(s) succeeded" not in proc.stdout


# ------------------------------------------------------------------ what the folder holds


def test_folder_ships_cuda_source_and_cudart(exported):
    f, bundle, _ = exported
    name = bundle.name
    files = set(os.listdir(bundle.directory))
    for item in ("lib%s.so" % name, "%s.c" % name, "%s_cuda.cu" % name, "%s.h" % name, "main.c", "Makefile",
                 "README.md", "example", "libcudart.so"):
        assert item in files, item
    assert bundle.cuda_source == os.path.join(bundle.directory, name + "_cuda.cu")
    cu = open(bundle.cuda_source).read()
    assert "ffigraph CUDA prelude" in cu and "cudaMemcpy" in cu
    assert "Python.h" not in cu and "Python.h" not in open(bundle.source).read()

    cuda = make_plan(f).graph.requirements["cuda"]
    real, soname = cudart_files(cuda["cudart_dir"])
    copied = os.path.join(bundle.directory, os.path.basename(real))
    assert os.path.isfile(copied) and not os.path.islink(copied)
    assert os.path.getsize(copied) == os.path.getsize(real)
    assert os.path.realpath(os.path.join(bundle.directory, soname)) == os.path.realpath(copied)
    assert os.path.realpath(os.path.join(bundle.directory, "libcudart.so")) == os.path.realpath(copied)

    makefile = open(bundle.makefile).read()
    assert "-lcudart" in makefile and "$(NVCC)" in makefile and "%s_cuda.cu" % name in makefile
    assert "NVCC = %s" % cuda["nvcc"] in makefile
    assert "NVCCFLAGS = %s" % " ".join(cuda["nvcc_flags"]) in makefile   # the flags ffigraph compiled with
    readme = open(bundle.readme).read()
    assert "CUDA driver" in readme and "libcudart" in readme and "toolkit" in readme
    manifest = json.load(open(os.path.join(bundle.directory, "ffigraph-export.json")))
    assert manifest["cuda"]["nvcc_flags"] == list(cuda["nvcc_flags"])
    assert soname in manifest["files"] and name + "_cuda.cu" in manifest["files"]


def test_main_c_uses_cuda_only_when_values_live_on_the_device(transfer, gpu_input):
    _, host_bundle, _ = transfer
    _, dev_bundle, _ = gpu_input
    host_main = open(host_bundle.example_source).read()
    dev_main = open(dev_bundle.example_source).read()
    assert "cuda_runtime_api.h" not in host_main and "cudaMalloc" not in host_main
    assert "#include <cuda_runtime_api.h>" in dev_main
    for call in ("cudaMalloc", "cudaMemcpyHostToDevice", "cudaMemcpyDeviceToHost", "cudaFree",
                 "cudaGetErrorString", "FFG_DEVICE_CUDA"):
        assert call in dev_main, call
    assert "input_on_device[1] = {1}" in dev_main
    host_make = open(host_bundle.makefile).read()
    example_rule = host_make.split("example: ")[1].split("\n\n")[0]
    assert "-lcudart" not in example_rule and "CUDA_INC" not in host_make.split("main.o: ")[1].split("\n\n")[0]
    dev_make = open(dev_bundle.makefile).read()
    assert "-lcudart" in dev_make.split("example: ")[1].split("\n\n")[0]
    assert "-I$(CUDA_INC)" in dev_make.split("main.o: ")[1].split("\n\n")[0]
    assert "device: cuda" in open(dev_bundle.header).read()


def test_make_flags_name_cudart(gpu_input):
    _, bundle, env = gpu_input
    out = run(["make", "-s", "flags"], bundle.directory, env).stdout
    assert "-lcudart" in out and "-l%s" % bundle.name in out and "-I" in out


# ------------------------------------------------------------------ linking and loading


def test_library_loads_cudart_from_its_folder_and_no_python(exported):
    _, bundle, _ = exported
    ldd = _ldd(bundle.library)
    assert "libpython" not in ldd and "not found" not in ldd, ldd
    assert os.path.dirname(_cudart_resolved(ldd)) == os.path.realpath(bundle.directory), ldd
    example_ldd = _ldd(os.path.join(bundle.directory, "example"))
    assert "not found" not in example_ldd and "libpython" not in example_ldd, example_ldd
    assert os.path.dirname(_cudart_resolved(example_ldd)) == os.path.realpath(bundle.directory)
    undefined = undefined_symbols(bundle.library)
    assert any(s.startswith("cudaMalloc") for s in undefined), undefined
    assert [s for s in undefined if s.startswith("Py") or s.startswith("_Py")] == []
    needed = subprocess.run(["readelf", "-d", bundle.library], stdout=subprocess.PIPE,
                            universal_newlines=True).stdout if shutil.which("readelf") else ""
    if needed:
        assert "$ORIGIN" in needed and "/usr/local/cuda" not in needed, needed


def test_moved_folder_still_loads(transfer, tmp_path):
    _, bundle, env = transfer
    moved = str(tmp_path / "elsewhere" / "moved")
    shutil.copytree(bundle.directory, moved, symlinks=True)
    away = bundle.directory + ".away"
    os.rename(bundle.directory, away)   # the original is gone while the copy runs
    try:
        ldd = _ldd(os.path.join(moved, "lib%s.so" % bundle.name))
        assert "not found" not in ldd, ldd
        assert os.path.dirname(_cudart_resolved(ldd)) == os.path.realpath(moved), ldd
        proc = run([os.path.join(moved, "example")], str(tmp_path), env, check=False)
        if not _gpu_usable():
            _check_no_gpu_failure(proc, bundle)
        else:
            assert proc.returncode == 0, proc.stderr
    finally:
        os.rename(away, bundle.directory)


# ------------------------------------------------------------------ running without a GPU


@pytest.mark.skipif(_gpu_usable(), reason="a GPU is usable here: the example succeeds (see the gpu test)")
def test_example_reports_cuda_error_without_gpu(exported):
    _, bundle, env = exported
    proc = run(["./example"], bundle.directory, env, check=False)
    _check_no_gpu_failure(proc, bundle)
    if bundle.name == "transfer":   # the library's own report: FFG_ERR_CUDA through the error record
        assert "transfer_run failed: error 7" in proc.stderr, proc.stderr
        assert "cudaErrorInsufficientDriver" in proc.stderr or "cudaErrorNoDevice" in proc.stderr
    else:                           # main.c's copy to the device, with cudaGetErrorString's words
        assert "copying input 0 to the GPU" in proc.stderr, proc.stderr


def test_make_library_rebuilds_it_with_nvcc(gpu_input, tmp_path):
    _, bundle, env = gpu_input
    copy = tmp_path / "copy"
    shutil.copytree(bundle.directory, str(copy), symlinks=True)
    os.remove(str(copy / ("lib%s.so" % bundle.name)))
    run(["make", "-s", "library"], copy, env)   # nvcc by the Makefile's absolute NVCC; no python on PATH
    assert (copy / ("%s_cuda.o" % bundle.name)).is_file()
    run(["make", "-s", "clean"], copy, env)
    run(["make", "-s"], copy, env)
    ldd = _ldd(str(copy / ("lib%s.so" % bundle.name)))
    assert os.path.dirname(_cudart_resolved(ldd)) == os.path.realpath(str(copy)), ldd
    assert [s for s in undefined_symbols(str(copy / ("lib%s.so" % bundle.name))) if s.startswith("Py")] == []
    proc = run([str(copy / "example")], tmp_path, env, check=False)
    if _gpu_usable():
        assert proc.returncode == 0, proc.stderr
    else:
        _check_no_gpu_failure(proc, bundle)


# ------------------------------------------------------------------ refusals and plans (no compile)


def test_gpu_shared_variables_are_refused(tmp_path):
    from ffigraph.compile.sharedvalue import SharedVariable
    from ffigraph.cuda import DeviceArray

    gs = SharedVariable(GpuArrayType("float64", (None,)), DeviceArray(1 << 30, (4,), np.float64), name="w")
    x = T.dvector("x")
    f = ffigraph.function([x], host_from_gpu(gs) + x, mode=Mode(linker="py"))   # nothing compiled
    with pytest.raises(NotImplementedError, match="shared variables on the GPU"):
        f.export(str(tmp_path / "w"))
    assert not os.path.exists(str(tmp_path / "w"))


def test_gpu_example_inputs_are_host_arrays(gpu_input):
    f, _, _ = gpu_input
    value = np.array([[1.0, 2.0], [3.0, 4.5]])
    plan = make_plan(f, example_inputs=[value])
    slot = plan.inputs[0]
    assert slot.on_device and slot.file == "input_g.npy"
    np.testing.assert_array_equal(slot.value, value)
    assert plan.cuda and plan.example_uses_cuda
    with pytest.raises(TypeError):
        make_plan(f, example_inputs=[np.zeros(3)])   # wrong ndim for the (?, ?) GPU input


# ------------------------------------------------------------------ on a real GPU


def _assert_same(got, want):
    """Equal values, dtype and shape (what the example prints is exact: %.17g)."""
    got, want = np.asarray(got), np.asarray(want)
    assert (got.dtype, got.shape) == (want.dtype, want.shape), (got.dtype, got.shape, want.dtype, want.shape)
    np.testing.assert_array_equal(got, want)


@pytest.mark.gpu
def test_examples_print_what_numpy_computes(transfer, gpu_input):
    """Each example (no Python) and the Python function print/return numpy's answers: X * 2 and its
    sum for ``transfer``; X and X * 2 for ``gpu_input`` (a device input, a device output)."""
    from ffigraph.cuda import DeviceArray, to_host

    f, bundle, env = transfer
    printed = parse_printed(run(["./example"], bundle.directory, env).stdout)
    names = [str(v) for v in f.maker.fgraph.outputs]
    want = [X * 2, np.asarray((X * 2).sum())]
    for name, got, w in zip(names, f(X), want):
        _assert_same(printed[("output", name)], w)
        _assert_same(got, w)

    f, bundle, env = gpu_input
    printed = parse_printed(run(["./example"], bundle.directory, env).stdout)
    names = [str(v) for v in f.maker.fgraph.outputs]
    want = [X, X * 2]
    for name, got, w in zip(names, f(DeviceArray.from_host(X)), want):
        _assert_same(printed[("output", name)], w)
        _assert_same(to_host(got), w)
