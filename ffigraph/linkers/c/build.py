"""The compiler driver: C source + requirements -> a shared library file."""
from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
import threading

from ffigraph.abi import HEADER_PATH
from ffigraph.config import config

BASE_FLAGS = ["-O3", "-std=gnu11", "-fPIC", "-shared", "-fvisibility=hidden", "-fno-strict-aliasing"]
BASE_LIBS = ["m"]


class CompileError(RuntimeError):
    """The C compiler failed; carries its message and the path of the source it was given."""

    def __init__(self, message, source_path, command):
        super().__init__("%s\nsource: %s\ncommand: %s" % (message, source_path, " ".join(command)))
        self.source_path = source_path
        self.command = command
        self.compiler_output = message


_workdir = None
_workdir_lock = threading.Lock()


def _private_workdir():
    """A per-process directory for builds, removed at exit (libraries stay mapped once loaded)."""
    global _workdir
    with _workdir_lock:
        if _workdir is None:
            _workdir = tempfile.mkdtemp(prefix="ffigraph-build-")
            atexit.register(shutil.rmtree, _workdir, True)
        return _workdir


def compiler_command(requirements, compiler=None):
    """The argv prefix (compiler and flags) and the trailing library flags for these requirements."""
    cc = compiler or config.cxx
    flags = [f for f in BASE_FLAGS if f not in requirements.get("no_compile_args", ())]
    flags += [f for f in requirements.get("compile_args", ()) if f not in flags]
    flags += ["-I" + os.path.dirname(HEADER_PATH)]
    flags += ["-I" + d for d in requirements.get("header_dirs", ())]
    libs = ["-L" + d for d in requirements.get("lib_dirs", ())]
    # where the library looks for those at load time: the same folders unless told ("$ORIGIN")
    libs += ["-Wl,-rpath," + d for d in requirements.get("rpath", requirements.get("lib_dirs", ()))]
    libs += ["-l" + lib for lib in list(requirements.get("libraries", ())) + BASE_LIBS]
    return [cc] + flags, libs


def cuda_source_text(requirements):
    """The one .cu file of a graph with GPU nodes (its launchers and kernels), or None."""
    sources = requirements.get("cuda_sources")
    return "\n\n".join(sources) if sources else None


def cuda_link_flags(requirements):
    """Linking the nvcc object: the CUDA runtime (shared, found again at load time) and C++'s library."""
    cuda = requirements["cuda"]
    rpath = requirements.get("rpath")
    return ["-L" + cuda["cudart_dir"], "-Wl,-rpath," + (rpath[0] if rpath else cuda["cudart_dir"]),
            "-lcudart", "-lstdc++"]


def nvcc_command(requirements, cu_path, obj_path):
    cuda = requirements["cuda"]
    return [cuda["nvcc"], "-c", "-O3", "-std=c++14", "-Xcompiler", "-fPIC,-fvisibility=hidden",
            "-I" + os.path.dirname(HEADER_PATH)] + list(cuda["nvcc_flags"]) + ["-o", obj_path, cu_path]


def _compile_cuda(requirements, directory, name):
    """nvcc the graph's .cu into an object beside the C source; its path, or None when there is none."""
    text = cuda_source_text(requirements)
    if text is None:
        return None
    cu_path = os.path.join(directory, name + ".cu")
    obj_path = os.path.join(directory, name + ".cu.o")
    with open(cu_path, "w") as fh:
        fh.write(text)
    _run(nvcc_command(requirements, cu_path, obj_path), cu_path, name + ".cu", "nvcc")
    return obj_path


def _run(command, src_path, keep_name, what):
    try:
        proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    except OSError as err:
        raise CompileError("could not run the %s %r: %s (set ffigraph.config.%s)"
                           % (what, command[0], err, "nvcc" if what == "nvcc" else "cxx or $CC"),
                           _keep_failed(src_path, keep_name), command) from None
    if proc.returncode != 0:
        raise CompileError("%s failed (exit %d):\n%s" % ("C compilation" if what != "nvcc" else "nvcc",
                                                         proc.returncode, proc.stdout.strip()),
                           _keep_failed(src_path, keep_name), command)


def build_library(source, name, requirements, compiler=None, directory=None):
    """Compile ``source`` into ``<directory>/<name>.so`` and return its path.

    When the requirements carry CUDA sources, nvcc compiles them into an object
    that is linked into the same library. On failure the source is kept in
    ``config.compiledir/failed/`` and CompileError says where.
    """
    directory = directory or _private_workdir()
    src_path = os.path.join(directory, name + ".c")
    lib_path = os.path.join(directory, name + ".so")
    with open(src_path, "w") as fh:
        fh.write(source)
    cuda_obj = _compile_cuda(requirements, directory, name)
    head, libs = compiler_command(requirements, compiler)
    if cuda_obj is not None:
        libs = [cuda_obj] + libs + cuda_link_flags(requirements)
    command = head + ["-o", lib_path, src_path] + libs
    _run(command, src_path, name + ".c", "C compiler")
    return lib_path


def _keep_failed(src_path, keep_name):
    target_dir = os.path.join(config.compiledir, "failed")
    try:
        os.makedirs(target_dir, mode=0o700, exist_ok=True)
        target = os.path.join(target_dir, keep_name)
        shutil.copyfile(src_path, target)
        return target
    except OSError:
        return src_path
