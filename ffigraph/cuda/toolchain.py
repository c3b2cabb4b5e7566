"""Finding nvcc and the CUDA runtime, and the flags a ``.cu`` file is compiled with.

nvcc is looked up in this order: ``ffigraph.config.nvcc`` (or ``nvcc=`` in
FFIGRAPH_FLAGS), ``$CUDA_HOME/bin``, ``$CUDA_PATH/bin``, ``PATH``, then
``/usr/local/cuda/bin``. Target architectures come from ``config.cuda_arch``
(``"sm_80,sm_90"``, ``"native"`` or ``"auto"``); ``auto``, the default, means
the device's own architecture when a GPU is present, else sm_80 and sm_90 plus
PTX for later chips.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading

from ffigraph.config import config

DEFAULT_ARCHS = ("sm_80", "sm_90")


class CudaToolkitError(RuntimeError):
    """nvcc or the CUDA runtime library cannot be found or run."""


_lock = threading.Lock()
_found = {}


def find_nvcc():
    """The nvcc command to use, or None when there is none."""
    configured = config.nvcc
    if configured:
        return configured if os.path.sep in configured or shutil.which(configured) is None \
            else shutil.which(configured)
    for var in ("CUDA_HOME", "CUDA_PATH"):
        root = os.environ.get(var)
        if root and os.access(os.path.join(root, "bin", "nvcc"), os.X_OK):
            return os.path.join(root, "bin", "nvcc")
    on_path = shutil.which("nvcc")
    if on_path:
        return on_path
    default = "/usr/local/cuda/bin/nvcc"
    return default if os.access(default, os.X_OK) else None


def require_nvcc():
    nvcc = find_nvcc()
    if nvcc is None:
        raise CudaToolkitError("nvcc was not found: set ffigraph.config.nvcc, $CUDA_HOME or $CUDA_PATH, "
                               "or put nvcc on PATH (GPU graphs are compiled by the CUDA toolkit)")
    return nvcc


def cuda_root(nvcc=None):
    """The toolkit folder holding include/cuda_runtime.h and the runtime library.

    nvcc's own folder's parent first; nvcc may be a wrapper script, so then
    $CUDA_HOME, $CUDA_PATH and /usr/local/cuda.
    """
    nvcc = nvcc or require_nvcc()
    candidates = [os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))]
    candidates += [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH")] + ["/usr/local/cuda"]
    for root in candidates:
        if root and os.path.exists(os.path.join(root, "include", "cuda_runtime.h")):
            return root
    raise CudaToolkitError("no CUDA toolkit (include/cuda_runtime.h) next to %s, in $CUDA_HOME, $CUDA_PATH or "
                           "/usr/local/cuda" % nvcc)


def nvcc_version(nvcc=None):
    """nvcc's release line, e.g. 'Cuda compilation tools, release 13.0, V13.0.88' (memoised)."""
    nvcc = nvcc or require_nvcc()
    with _lock:
        if ("version", nvcc) in _found:
            return _found[("version", nvcc)]
    try:
        out = subprocess.run([nvcc, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             universal_newlines=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired) as err:
        raise CudaToolkitError("could not run %s --version: %s" % (nvcc, err)) from None
    lines = [ln.strip() for ln in out.splitlines() if "release" in ln or ln.startswith("Build")]
    version = " | ".join(lines) or out.strip()
    with _lock:
        _found[("version", nvcc)] = version
    return version


def runtime_lib_dir(nvcc=None):
    """The folder holding libcudart.so (lib64, or lib on some installs)."""
    root = cuda_root(nvcc)
    for sub in ("lib64", "lib", os.path.join("targets", "x86_64-linux", "lib")):
        folder = os.path.join(root, sub)
        if os.path.exists(os.path.join(folder, "libcudart.so")):
            return folder
    raise CudaToolkitError("libcudart.so was not found under %s (lib64 or lib)" % root)


def cublas_available(nvcc=None):
    """True when the toolkit has cuBLAS (header and library); GPU dot then uses it."""
    try:
        root = cuda_root(nvcc)
        lib = runtime_lib_dir(nvcc)
    except CudaToolkitError:
        return False
    return os.path.exists(os.path.join(root, "include", "cublas_v2.h")) and \
        os.path.exists(os.path.join(lib, "libcublas.so"))


_ARCH_RE = re.compile(r"^(sm|compute)_(\d+)[a-z]?$")


def target_archs():
    """The list of sm_XY architectures to build for, from config.cuda_arch."""
    setting = config.cuda_arch.strip()
    if setting in ("auto", ""):
        from ffigraph.cuda import runtime

        own = runtime.device_arch()
        return ["sm_%d" % own] if own else list(DEFAULT_ARCHS)
    archs = [a.strip() for a in setting.split(",") if a.strip()]
    for a in archs:
        if not _ARCH_RE.match(a) or a.startswith("compute"):
            raise ValueError("config.cuda_arch: %r is not an architecture like sm_90" % a)
    return archs


def arch_flags(archs=None):
    """-gencode flags: SASS for each architecture, plus PTX of the newest for later chips."""
    archs = list(archs or target_archs())
    flags = []
    for a in archs:
        num = _ARCH_RE.match(a).group(2)
        flags += ["-gencode", "arch=compute_%s,code=%s" % (num, a)]
    newest = max(archs, key=lambda a: int(_ARCH_RE.match(a).group(2)))
    num = _ARCH_RE.match(newest).group(2)
    flags += ["-gencode", "arch=compute_%s,code=compute_%s" % (num, num)]
    return flags


def cuda_requirements(archs=None):
    """What build.py needs to compile and link .cu sources (part of the cache key)."""
    nvcc = require_nvcc()
    return dict(nvcc=nvcc, nvcc_version=nvcc_version(nvcc), nvcc_flags=arch_flags(archs),
                cudart_dir=runtime_lib_dir(nvcc))
