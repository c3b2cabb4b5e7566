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


def build_library(source, name, requirements, compiler=None, directory=None):
    """Compile ``source`` into ``<directory>/<name>.so`` and return its path.

    On failure the source is kept in ``config.compiledir/failed/`` and CompileError says where.
    """
    directory = directory or _private_workdir()
    src_path = os.path.join(directory, name + ".c")
    lib_path = os.path.join(directory, name + ".so")
    with open(src_path, "w") as fh:
        fh.write(source)
    head, libs = compiler_command(requirements, compiler)
    command = head + ["-o", lib_path, src_path] + libs
    try:
        proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    except OSError as err:
        raise CompileError("could not run the C compiler %r: %s (set ffigraph.config.cxx or $CC)"
                           % (command[0], err), _keep_failed(src_path, name), command) from None
    if proc.returncode != 0:
        raise CompileError("C compilation failed (exit %d):\n%s" % (proc.returncode, proc.stdout.strip()),
                           _keep_failed(src_path, name), command)
    return lib_path


def _keep_failed(src_path, name):
    target_dir = os.path.join(config.compiledir, "failed")
    try:
        os.makedirs(target_dir, mode=0o700, exist_ok=True)
        target = os.path.join(target_dir, name + ".c")
        shutil.copyfile(src_path, target)
        return target
    except OSError:
        return src_path
