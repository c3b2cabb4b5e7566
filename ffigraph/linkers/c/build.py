"""The compiler driver: C source + requirements -> a shared library file."""
from __future__ import annotations

import atexit
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from ffigraph.abi import HEADER_PATH
from ffigraph.config import config
from ffigraph.linkers.c.private_files import (CacheNoSpaceError, CacheSecurityError, is_no_space, private_dir,
                                             write_private_file)
from ffigraph.linkers.c.sanitize import check_sanitizer_runtime, sanitize_flags
from ffigraph.linkers.c.tool import run_tool, signal_name

# -fwrapv: integer arithmetic wraps, as numpy's does (signed overflow would otherwise be undefined)
BASE_FLAGS = ["-O3", "-std=gnu11", "-fPIC", "-shared", "-fvisibility=hidden", "-fno-strict-aliasing", "-fwrapv"]
BASE_LIBS = ["m"]

# the cache's logger: one switch shows every compile, cached or private
_log = logging.getLogger("ffigraph.cache")
# "compiling 353 nodes (cache miss, key ...)" at INFO before the compiler starts: the linkers' logger
_start_log = logging.getLogger("ffigraph.linkers")

# A compile still running after PROGRESS_AFTER seconds shows a line on stderr, when stderr is a
# terminal: what is being compiled and the seconds so far, redrawn every PROGRESS_EVERY seconds
# and cleared when the compiler is done. Nothing is drawn otherwise (a pipe, a file, a notebook).
PROGRESS_AFTER = 2.0
PROGRESS_EVERY = 0.25


class CompileError(RuntimeError):
    """The C compiler failed; carries its message and the path of the source it was given."""

    def __init__(self, message, source_path, command, returncode=None):
        super().__init__("%s\nsource: %s\ncommand: %s" % (message, source_path, " ".join(command)))
        self.source_path = source_path
        self.command = command
        self.compiler_output = message
        self.returncode = returncode   # the compiler's exit status (negative: the signal that killed it)


class CompileTimeout(CompileError):
    """The compiler ran longer than ``config.compile_timeout`` seconds and was killed (with its children)."""


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
    """The argv prefix (compiler and flags) and the trailing library flags for these requirements.

    With config.sanitize set the flags add the sanitizers (so the cache key, which hashes every
    flag, differs), after checking that an ASan-built library could be loaded here."""
    cc = compiler or config.cxx
    flags = [f for f in BASE_FLAGS if f not in requirements.get("no_compile_args", ())]
    if config.sanitize:
        check_sanitizer_runtime()
        flags = ["-O0" if f == "-O3" else f for f in flags] + sanitize_flags()
    flags += [f for f in requirements.get("compile_args", ()) if f not in flags]
    flags += ["-I" + os.path.dirname(HEADER_PATH)]
    flags += ["-I" + d for d in requirements.get("header_dirs", ())]
    libs = ["-L" + d for d in requirements.get("lib_dirs", ())]
    # where the library looks for those at load time: the same folders unless told ("$ORIGIN")
    rpath = ["-Wl,-rpath," + d for d in requirements.get("rpath", requirements.get("lib_dirs", ()))]
    # DT_RPATH, not DT_RUNPATH: the loader also searches it for what those libraries need in turn
    # (numpy 1.x's OpenBLAS finds its libgfortran only so), so a C host with no Python loads it
    libs += rpath + (["-Wl,--disable-new-dtags"] if rpath else [])
    libs += ["-l" + lib for lib in list(requirements.get("libraries", ())) + BASE_LIBS]
    return [cc] + flags, libs


def cuda_source_text(requirements):
    """The one .cu file of a graph with GPU nodes (its launchers and kernels), or None."""
    sources = requirements.get("cuda_sources")
    return "\n\n".join(sources) if sources else None


def cuda_link_flags(requirements):
    """Linking the nvcc object: the CUDA runtime (shared, found again at load time) and C++'s library.

    ``--exclude-libs,ALL`` keeps what static archives bring in out of the library's exports: where the
    toolkit links parts of C++'s runtime statically (seen with CUDA 13 on an H100 machine), their
    symbols (``__cxa_throw``, ...) would otherwise become exports beside the ABI's entry points."""
    cuda = requirements["cuda"]
    rpath = requirements.get("rpath")
    return ["-L" + cuda["cudart_dir"], "-Wl,-rpath," + (rpath[0] if rpath else cuda["cudart_dir"]),
            "-Wl,--exclude-libs,ALL", "-lcudart", "-lstdc++"]


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
    """Run one compiler command; CompileError (CompileTimeout past config.compile_timeout) on failure."""
    label = "nvcc" if what == "nvcc" else "the C compiler"
    timeout = config.compile_timeout
    try:
        returncode, output = run_tool(command, timeout)
    except OSError as err:
        raise CompileError("could not run the %s %r: %s (set ffigraph.config.%s)"
                           % (what, command[0], err, "nvcc" if what == "nvcc" else "cxx or $CC"),
                           _keep_failed(src_path, keep_name), command) from None
    except subprocess.TimeoutExpired as exc:
        output = (exc.output or "").strip()
        raise CompileTimeout("%s did not finish within %g s and was killed (raise ffigraph.config.compile_timeout, "
                             "e.g. FFIGRAPH_FLAGS=compile_timeout=%g, if it only needs longer)%s"
                             % (label, timeout, max(2 * timeout, 600), ":\n" + output if output else ""),
                             _keep_failed(src_path, keep_name), command, -signal.SIGKILL) from None
    if returncode < 0:
        output = output.strip()
        raise CompileError("%s crashed (signal %s)%s"
                           % (label, signal_name(-returncode), ":\n" + output if output else ""),
                           _keep_failed(src_path, keep_name), command, returncode)
    if returncode != 0:
        raise CompileError("%s failed (exit %d):\n%s%s" % ("C compilation" if what != "nvcc" else "nvcc",
                                                           returncode, output.strip(), _no_space_hint(output, src_path)),
                           _keep_failed(src_path, keep_name), command, returncode)


def room_needed(source_size):
    """About how many bytes a build of a source of ``source_size`` bytes writes beside it (the
    source, the objects of its parts, the library): what a "no space" message says it needs."""
    return 3 * source_size + (1 << 20)


def _no_space_hint(output, src_path):
    """What to add to a compiler failure caused by a full disk (the compiler says "No space left on
    device" about a file of its own): where it was writing and how much room the build needs."""
    if "No space left on device" not in output and "Disk quota exceeded" not in output:
        return ""
    folder = os.path.dirname(src_path)
    try:
        size = os.path.getsize(src_path)
        free = ", %s free" % _size_text(shutil.disk_usage(folder).free)
    except OSError:
        size, free = 0, ""
    return ("\nthe disk holding %s is full: this build needs about %s there%s; free some space, or point "
            "ffigraph.config.compiledir at a disk with room" % (folder, _size_text(room_needed(size)), free))


def _size_text(n):
    return "%.1f MB" % (n / 1e6)


_LIBRARY_MAGIC = {"linux": b"\x7fELF"}


def _check_library_file(lib_path, src_path, keep_name, command):
    """The compiler said it succeeded: make sure it wrote something that can be a shared library."""
    try:
        with open(lib_path, "rb") as fh:
            head = fh.read(4)
    except OSError:
        raise CompileError("the C compiler exited 0 but wrote no library at %s" % lib_path,
                           _keep_failed(src_path, keep_name), command, 0) from None
    magic = next((m for plat, m in _LIBRARY_MAGIC.items() if sys.platform.startswith(plat)), None)
    if not head or (magic is not None and head != magic):
        raise CompileError("the C compiler exited 0 but %s is not a shared library (%s)"
                           % (lib_path, "empty" if not head else "starts with %r" % head),
                           _keep_failed(src_path, keep_name), command, 0)


def build_library(source, name, requirements, compiler=None, directory=None, nodes=None, key=None,
                  runtime_object=None):
    """Compile ``source`` into ``<directory>/<name>.so`` and return its path.

    When the requirements carry CUDA sources, nvcc compiles them into an object
    that is linked into the same library. On failure the source is kept in
    ``config.compiledir/failed/`` and CompileError says where.

    ``nodes`` (the graph's node count) and ``key`` (the cache key being filled) only describe the
    build: in the INFO line logged before the compiler starts, and in the progress line a
    terminal shows while a long compile runs.

    ``runtime_object``: the runtime's functions compiled for this compiler and flags (the compile
    cache's ``runtime_object``), linked into the library instead of compiled in it again
    (``-DFFG_RUNTIME_LINKED``: the source then reads only their declarations). None: the source is
    built alone, as an export's ``make library`` builds it.
    """
    private = directory is None   # the cache and exports pass their own folder
    directory = directory or _private_workdir()
    start = time.perf_counter()
    src_path = os.path.join(directory, name + ".c")
    lib_path = os.path.join(directory, name + ".so")
    try:
        with open(src_path, "w") as fh:
            fh.write(source)
    except OSError as err:
        if is_no_space(err):
            raise CacheNoSpaceError("the C source %s.c (%d kB)" % (name, len(source) // 1000), directory,
                                    room_needed(len(source))) from None
        raise
    try:
        os.unlink(lib_path)   # a stale file must not pass for the output of a compiler that wrote none
    except OSError:
        pass
    what = _describe(name, source, nodes, key, private)
    _start_log.info("compiling %s", what)
    with CompileProgress(what):
        cuda_obj = _compile_cuda(requirements, directory, name)
        head, libs = compiler_command(requirements, compiler)
        if runtime_object is not None:
            head, libs = head + ["-DFFG_RUNTIME_LINKED=1"], [runtime_object] + libs
        if cuda_obj is not None:
            libs = [cuda_obj] + libs + cuda_link_flags(requirements)
        masks = part_masks(requirements.get("parts"), build_jobs())
        if masks is None:
            command = head + ["-o", lib_path, src_path] + libs
            _run(command, src_path, name + ".c", "C compiler")
        else:
            command = _build_in_parts(head, libs, masks, src_path, lib_path, name)
    _check_library_file(lib_path, src_path, name + ".c", command)
    # the cache reports its own builds at INFO (as a miss); only say more here when asked
    _log.log(logging.INFO if private else logging.DEBUG, "built %s%s in %.2f s", lib_path,
             " privately (not cached)" if private else "", time.perf_counter() - start)
    return lib_path


def compile_runtime_object(source, directory, compiler=None):
    """Compile the runtime object's ``source`` (runtime.RUNTIME_OBJECT_C) into
    ``<directory>/runtime.o`` with the flags every library is built with; its path."""
    head, _ = compiler_command({}, compiler)
    src_path = os.path.join(directory, "runtime.c")
    obj_path = os.path.join(directory, "runtime.o")
    with open(src_path, "w") as fh:
        fh.write(source)
    command = [f for f in head if f != "-shared"] + ["-c", "-o", obj_path, src_path]
    _run(command, src_path, "runtime.c", "C compiler")
    _check_object_file(obj_path, src_path, command)
    os.unlink(src_path)
    return obj_path


def _check_object_file(obj_path, src_path, command):
    """The compiler said it succeeded: make sure it wrote a relocatable object (ELF type 1), which
    every library of the cache will link."""
    try:
        with open(obj_path, "rb") as fh:
            head = fh.read(18)
    except OSError:
        raise CompileError("the C compiler exited 0 but wrote no object file at %s (the runtime's functions, "
                           "which the cache's libraries link)" % obj_path,
                           _keep_failed(src_path, "runtime.c"), command, 0) from None
    if sys.platform.startswith("linux") and (head[:4] != b"\x7fELF" or head[16:18] not in (b"\x01\x00", b"\x00\x01")):
        raise CompileError("the C compiler exited 0 but %s is not a relocatable object (%s)"
                           % (obj_path, "empty" if not head else "starts with %r" % head[:18]),
                           _keep_failed(src_path, "runtime.c"), command, 0)


def build_jobs():
    """How many compilers may run side by side for one library: the CPUs this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def part_masks(part_weights, jobs):
    """The ``-DFFG_PART_MASK`` of each translation unit for a source cut into parts (codegen's
    requirements["parts"]: the parts' weights), at most ``jobs`` units: part 0 (the entry points)
    opens the first, the other parts go, heaviest first, to the lightest unit. None: one unit, the
    file as it is (no parts, or one CPU)."""
    if not part_weights or len(part_weights) < 2 or jobs < 2:
        return None
    n = min(len(part_weights), jobs)
    loads, masks = [0] * n, [0] * n
    loads[0], masks[0] = part_weights[0], 1
    for k in sorted(range(1, len(part_weights)), key=lambda k: -part_weights[k]):
        unit = min(range(n), key=lambda u: loads[u])
        loads[unit] += part_weights[k]
        masks[unit] |= 1 << k
    return [m for m in masks if m]


def _build_in_parts(head, libs, masks, src_path, lib_path, name):
    """Compile the parts of ``src_path`` (one unit per mask) side by side, each on a thread of its
    own waiting on its compiler, then link them into ``lib_path``; the objects are removed after.
    The first failure (in unit order) is raised once every compiler has ended. Returns the link
    command."""
    directory = os.path.dirname(lib_path)
    compile_head = [f for f in head if f != "-shared"] + ["-c"]
    objects = [os.path.join(directory, "%s.part%d.o" % (name, u)) for u in range(len(masks))]
    failures = [None] * len(masks)

    def compile_unit(u):
        try:
            _run(compile_head + ["-DFFG_PART_MASK=0x%x" % masks[u], "-o", objects[u], src_path],
                 src_path, name + ".c", "C compiler")
        except BaseException as exc:   # re-raised on the calling thread
            failures[u] = exc

    threads = [threading.Thread(target=compile_unit, args=(u,), name="ffigraph-compile-part%d" % u, daemon=True)
               for u in range(1, len(masks))]
    try:
        for thread in threads:
            thread.start()
        compile_unit(0)
        for thread in threads:
            thread.join()
        for exc in failures:
            if exc is not None:
                raise exc
        command = head + ["-o", lib_path] + objects + libs
        _run(command, src_path, name + ".c", "C compiler")
        return command
    finally:
        for path in objects:
            try:
                os.unlink(path)
            except OSError:
                pass


def _describe(name, source, nodes, key, private):
    """What a build is, for its log and progress lines: ``"353 nodes (cache miss, key 1a2b3c4d5e6f)"``,
    ``"lib.c (34 kB of C)"`` where the caller did not say."""
    what = "%d node%s" % (nodes, "" if nodes == 1 else "s") if nodes is not None else \
        "%s.c (%d kB of C)" % (name, (len(source) + 1023) // 1024)
    if key:
        return "%s (cache miss, key %s)" % (what, key[:12])
    return "%s (not cached)" % what if private else what


_progress_lock = threading.Lock()
_progress_active = [False]   # one progress line at a time (concurrent compiles: the first one shows)


def _is_terminal(stream):
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):   # no isatty, or closed
        return False


class CompileProgress:
    """``with CompileProgress(what):`` around a compile. If it is still running after
    PROGRESS_AFTER seconds and ``sys.stderr`` (looked up on entry) is a terminal, a daemon thread
    draws ``ffigraph: compiling <what> ... 3 s`` on one line, redrawn every PROGRESS_EVERY
    seconds, and the line is erased when the block ends. No thread, and no output, otherwise."""

    def __init__(self, what, stream=None):
        self.what = what
        self.stream = stream
        self.drawn = 0            # how many times the line was drawn (tests read it)
        self._stop = threading.Event()
        self._thread = None
        self._width = 0

    def __enter__(self):
        stream = self.stream if self.stream is not None else sys.stderr
        if stream is None or not _is_terminal(stream):
            return self
        with _progress_lock:
            if _progress_active[0]:
                return self
            _progress_active[0] = True
        self.stream = stream
        self._thread = threading.Thread(target=self._loop, args=(time.perf_counter(),),
                                        name="ffigraph-compile-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        if self._thread is None:
            return False
        self._stop.set()
        self._thread.join()
        self._thread = None
        with _progress_lock:
            _progress_active[0] = False
        if self._width:
            self._write("\r" + " " * self._width + "\r")
        return False

    def _write(self, text):
        try:
            self.stream.write(text)
            self.stream.flush()
            return True
        except (ValueError, OSError):   # the stream was closed or broke: stop drawing
            return False

    def _loop(self, start):
        if self._stop.wait(PROGRESS_AFTER):
            return
        spinner = "|/-\\"
        while not self._stop.is_set():
            text = "ffigraph: compiling %s ... %d s %s" % (self.what, time.perf_counter() - start,
                                                          spinner[self.drawn % len(spinner)])
            if not self._write("\r" + text + " " * max(0, self._width - len(text))):
                return
            self._width = max(self._width, len(text))
            self.drawn += 1
            self._stop.wait(PROGRESS_EVERY)


def _keep_failed(src_path, keep_name):
    """Copy a source the compiler failed on into ``<compiledir>/failed/`` and return where it is
    now; the path it had when that folder cannot be written or is not private. Written as the
    cache writes (a new file renamed over the old: a link planted there is replaced, never
    written through)."""
    base = os.path.abspath(os.path.expanduser(config.compiledir))
    try:
        with open(src_path, "rb") as fh:
            data = fh.read()
        os.makedirs(base, mode=0o700, exist_ok=True)
        private_dir(base)
        target = os.path.join(private_dir(os.path.join(base, "failed")), keep_name)
        write_private_file(target, data)
        return target
    except (OSError, CacheSecurityError):
        return src_path
