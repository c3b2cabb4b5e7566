"""Writing the export folder of a compiled function (``f.export(directory)``).

Plan first (names, slots, files), then build the library into a private
folder next to the target, write every file there, and swap it into place:
a reader sees the old folder or the new one, never half of one.
"""
from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from ffigraph.abi import ABI_VERSION, HEADER_NAME, HEADER_PATH
from ffigraph.export import example_shapes, handle_c, header_c, example_c, files_text
from ffigraph.export.names import UniqueNames, c_identifier, file_stem
from ffigraph.linkers import devices
from ffigraph.linkers.c.build import build_library, compiler_command, cuda_link_flags, cuda_source_text, nvcc_command
from ffigraph.linkers.c.codegen import unique_slot_names
from ffigraph.linkers.c.linker import nodes_without_c_code, whole_graph_source
from ffigraph.tensor import blas

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ffigraph.compile.function import Function

    StrPath = Union[str, "os.PathLike[str]"]

C_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "c")
NPY_FILES = ("ffg_npy.h", "ffg_npy.c")
DLPACK_FILES = ("ffg_dlpack.h", "ffg_dlpack.c")   # outputs handed on, inputs taken in, as DLPack
MANIFEST = "ffigraph-export.json"


class SlotPlan:
    """One graph variable as the export shows it: label, type, macro name, data file.

    ``on_device`` is True for a GPU-typed slot (its values live in CUDA memory)."""

    def __init__(self, label, var_type, ident=None, file=None, value=None):
        self.label, self.type, self.ident, self.file, self.value = label, var_type, ident, file, value
        self.on_device = is_gpu_type(var_type)


def is_gpu_type(var_type):
    """True for a type whose values live on a CUDA device (GpuArrayType)."""
    return getattr(var_type, "device", None) == "cuda"


class ExportPlan:
    """Everything the generated files need to know about one function."""

    graph: Any       # the whole-graph source (set by make_plan)
    profiled: bool   # the function was compiled with profile=True (set by make_plan)

    def __init__(self, name, prefix, inputs, shared, outputs, updates):
        self.name, self.prefix = name, prefix
        self.inputs, self.shared, self.outputs = inputs, shared, outputs
        self.updates = updates   # [(shared index, label of the update expression)]
        self.cuda = False        # the library has an nvcc-compiled part (set by make_plan)
        # main.c's fill of the inputs without an example file: a shape per input (None: shipped),
        # and None when the function ran on them, else why no shapes tried fit (set by make_plan)
        self.fill_shapes: List[Optional[Tuple[int, ...]]] = [None] * len(inputs)
        self.fill_shapes_problem: Optional[str] = None

    @property
    def cuda_source_name(self):
        """The .cu file of a GPU graph, shipped beside the C source."""
        return self.name + "_cuda.cu"

    @property
    def example_uses_cuda(self):
        """main.c calls the CUDA runtime itself: some input or output lives on the device."""
        return any(s.on_device for s in self.inputs + self.outputs)


class ExportBundle:
    """The paths of an export folder (returned by ``Function.export``)."""

    def __init__(self, directory: str, plan: ExportPlan) -> None:
        self.directory = directory
        self.name: str = plan.name
        path = lambda f: os.path.join(directory, f)  # noqa: E731
        self.library = path("lib%s.so" % plan.name)
        self.header = path("%s.h" % plan.name)
        self.source = path("%s.c" % plan.name)
        self.example_source = path("main.c")
        self.makefile = path("Makefile")
        self.readme = path("README.md")
        self.shared_files: Dict[str, str] = {s.label: path(s.file) for s in plan.shared}
        self.input_files: Dict[str, str] = {s.label: path(s.file) for s in plan.inputs if s.file}
        # the shape main.c fills each input without a file in (0, 1, 2, ... in C order), by label
        self.fill_shapes: Dict[str, Tuple[int, ...]] = {
            s.label: tuple(shape) for s, shape in zip(plan.inputs, plan.fill_shapes) if shape is not None}
        self.fill_shapes_problem: Optional[str] = plan.fill_shapes_problem
        self.cuda_source: Optional[str] = path(plan.cuda_source_name) if plan.cuda else None

    def __repr__(self) -> str:
        return "<ExportBundle %s in %s>" % (self.name, self.directory)


# ------------------------------------------------------------------ planning


def _check_c_code(fgraph):
    missing = nodes_without_c_code(fgraph)
    if missing:
        raise NotImplementedError("export needs C code for every node of the compiled graph; these have none: %s"
                                  % ", ".join(missing))


def _c_value(var_type, value, what):
    array = np.asarray(var_type.to_c_value(value))
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    if array.dtype != var_type.c_abi_dtype() or array.ndim != var_type.ndim:
        raise TypeError("%s: expected a %d-d %s value, got %d-d %s"
                        % (what, var_type.ndim, var_type.c_abi_dtype(), array.ndim, array.dtype))
    return np.require(array, requirements="C")   # not ascontiguousarray: that makes 0-d values 1-d


def _check_no_gpu_shared(fgraph, n_in):
    gpu = [str(var) for var in fgraph.inputs[n_in:] if is_gpu_type(var.type)]
    if gpu:
        raise NotImplementedError(
            "export does not support shared variables on the GPU yet (%s): the export's handle layer keeps "
            "shared variables in host memory and loads them from .npy files. Keep them on the host "
            "(an ordinary ffigraph.shared) and transfer them in the graph with gpu_from_host" % ", ".join(gpu))


def _example_value(var, value, what):
    """An example input as the host array main.c loads (GPU inputs: their host copy)."""
    if is_gpu_type(var.type):
        host_type = var.type.host_type()
        return _c_value(host_type, host_type.filter(devices.get("cuda").to_host(value)), what)
    return _c_value(var.type, value, what)


# names the folder's other files and symbols already use: main.c, ffg_npy.[ch], ffigraph_abi.h, ./example,
# and the ffg_ prefix of the runtime's and the ABI's own functions and macros
_CLASHING_NAMES = ("main", "example", "ffg_npy", "ffg_dlpack", "ffigraph_abi", "makefile", "readme", "ffigraph-export")


def export_name(name):
    """The export's C prefix and file stem for a user-chosen ``name`` (see names.c_identifier): one
    that would overwrite a file of the folder or clash with a runtime symbol gets a ``graph_`` prefix."""
    ident = c_identifier(name, "graph")
    if ident.lower() in _CLASHING_NAMES or ident.lower().startswith("ffg"):
        ident = "graph_" + ident
    return ident


def make_plan(f: Function, name: Optional[str] = None,
              example_inputs: Optional[Sequence[ArrayLike]] = None) -> ExportPlan:
    """Name every slot and data file of ``f``'s export."""
    fgraph = f.maker.fgraph
    n_in, n_out = len(f.maker.inputs), len(f.maker.outputs)
    _check_no_gpu_shared(fgraph, n_in)
    _check_c_code(fgraph)
    name = export_name(name or f.name)
    files = UniqueNames(["lib%s.so" % name, name + ".h", name + ".c", name + "_cuda.cu", name + "_cuda.o",
                         "main.c", "Makefile", "README.md", "example", MANIFEST, HEADER_NAME, "libcudart.so"]
                        + list(NPY_FILES))
    idents = {kind: UniqueNames() for kind in ("in", "sh", "out")}
    if example_inputs is not None and len(example_inputs) != n_in:
        raise ValueError("example_inputs: expected %d values (one per input), got %d" % (n_in, len(example_inputs)))

    inputs = []
    for k, var in enumerate(fgraph.inputs[:n_in]):
        label = str(f.maker.inputs[k].name or var)
        slot = SlotPlan(label, var.type, idents["in"](c_identifier(label, "input%d" % k)))
        if example_inputs is not None:
            what = "example input %d (%s)" % (k, label)
            if slot.on_device:
                slot.value = _example_value(var, example_inputs[k], what)
            else:
                slot.value = _c_value(var.type, f._filters[k](example_inputs[k]), what)
            slot.file = files("input_" + file_stem(label, "input%d" % k), ".npy")
        inputs.append(slot)
    shared = []
    for j, var in enumerate(fgraph.inputs[n_in:]):
        label = str(var)
        value = _c_value(var.type, f._shared_cells[j][0], "shared variable %s" % label)
        shared.append(SlotPlan(label, var.type, idents["sh"](c_identifier(label, "shared%d" % j)),
                               files(file_stem(label, "shared%d" % j), ".npy"), value))
    # outputs and updates are labelled with the names the library's description gives their slots
    # (the user's names, "output<k>", "<shared>.update"), not the rewritten graph's variables
    _, out_names = unique_slot_names(
        fgraph.inputs, [0] * n_in + [1] * (len(fgraph.inputs) - n_in),
        fgraph.outputs, [2] * n_out + [3] * (len(fgraph.outputs) - n_out),
        list(getattr(fgraph, "update_inputs", None) or []), list(getattr(fgraph, "output_names", None) or []))
    outputs = [SlotPlan(out_names[k], var.type, idents["out"]("out%d" % k))
               for k, var in enumerate(fgraph.outputs[:n_out])]
    updates = [(t, out_names[n_out + i]) for i, t in enumerate(f._update_targets)]

    with blas.standalone():   # numpy's own OpenBLAS is not there for a C host: link the package's, and carry it
        # a profiled function exports a profiled library: P_profile and its counters
        graph = whole_graph_source(fgraph, profile=bool(getattr(f, "profile", None)))
    plan = ExportPlan(name, graph.prefix, inputs, shared, outputs, updates)
    plan.graph = graph
    plan.profiled = bool(getattr(f, "profile", None))
    plan.cuda = cuda_source_text(graph.requirements) is not None
    # shapes for main.c's fill that the graph accepts, checked by running f once (not for a GPU
    # graph: the machine exporting it need not have a GPU)
    shapes, problem = example_shapes.default_input_shapes(
        f, [s.value if s.file else None for s in inputs], check=not plan.cuda)
    plan.fill_shapes = [None if s.file else shape for s, shape in zip(inputs, shapes)]
    plan.fill_shapes_problem = problem
    return plan


# ------------------------------------------------------------------ building and writing


def _bundled_libraries(requirements, folder):
    """Copy libraries found in the graph's library folders into ``folder`` (the bundle then
    needs nothing outside itself); the requirements to link against the copies."""
    req = {k: list(v) if isinstance(v, (list, tuple)) else copy.deepcopy(v) for k, v in requirements.items()}
    for lib in requirements.get("libraries", ()):
        for lib_dir in requirements.get("lib_dirs", ()):
            src = os.path.join(lib_dir, "lib%s.so" % lib)
            if os.path.isfile(src):
                _link_or_copy(src, os.path.join(folder, os.path.basename(src)))   # no copy of a 25 MB BLAS
                break
    req["lib_dirs"] = [folder]
    req["rpath"] = ["$ORIGIN"]   # the bundle can move: the library looks beside itself
    if "cuda" in req:
        _bundle_cudart(req["cuda"]["cudart_dir"], folder)
        req["cuda"]["cudart_dir"] = folder   # link against the copy (cuda_link_flags: -L, rpath $ORIGIN)
    return req


def _link_or_copy(src, dst):
    try:
        os.link(src, dst)   # same file system: no copy
    except OSError:
        shutil.copy2(src, dst)


def _soname(path):
    """The ELF SONAME of a shared library (readelf -d), or None."""
    try:
        out = subprocess.run(["readelf", "-d", path], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             universal_newlines=True).stdout
    except OSError:
        return None
    found = re.search(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", out)
    return found.group(1) if found else None


def cudart_files(cudart_dir):
    """(real file, soname) of the toolkit's libcudart.so: the file the link resolves to, and the
    name (libcudart.so.13) a library linked with -lcudart asks for at load time."""
    real = os.path.realpath(os.path.join(cudart_dir, "libcudart.so"))
    soname = _soname(real)
    if soname is None:
        major = re.match(r"(libcudart\.so\.\d+)", os.path.basename(real))
        soname = major.group(1) if major else os.path.basename(real)
    return real, soname


def _bundle_cudart(cudart_dir, folder):
    """The CUDA runtime beside the library: the real file, its soname and libcudart.so (for -lcudart)
    as relative links to it. The driver (libcuda.so) is the machine's own and is not bundled."""
    real, soname = cudart_files(cudart_dir)
    base = os.path.basename(real)
    shutil.copy2(real, os.path.join(folder, base))   # 0.7 MB: a copy, never a hard link into the toolkit
    for alias in (soname, "libcudart.so"):
        if alias != base and not os.path.lexists(os.path.join(folder, alias)):
            os.symlink(soname if alias == "libcudart.so" and soname != base else base,
                       os.path.join(folder, alias))


def _library_source(plan):
    return plan.graph.source + handle_c.handle_source(
        plan.name, plan.prefix, len(plan.inputs), len(plan.shared), len(plan.outputs),
        [t for t, _ in plan.updates], cuda=plan.cuda)


def _build(plan, folder, compiler):
    """Build the library in ``folder``; the commands that rebuild it there (``make library``):
    [C compiler argv] or, for a GPU graph, [nvcc argv, C compiler argv]."""
    requirements = dict(_bundled_libraries(plan.graph.requirements, folder))
    # one unit, as the Makefile's `make library` builds it: the handle code appended below is
    # outside the parts' guards (codegen.plan_parts), so the unit must hold every part
    requirements.pop("parts", None)
    source = _library_source(plan)
    stem = "lib" + plan.name
    lib = build_library(source, stem, requirements, compiler, directory=folder)
    os.rename(os.path.join(folder, stem + ".c"), os.path.join(folder, plan.name + ".c"))
    head, libs = compiler_command(requirements, compiler)
    commands = []
    if plan.cuda:
        os.rename(os.path.join(folder, stem + ".cu"), os.path.join(folder, plan.cuda_source_name))
        os.remove(os.path.join(folder, stem + ".cu.o"))   # `make library` makes it again
        obj = plan.name + "_cuda.o"
        commands.append(nvcc_command(requirements, plan.cuda_source_name, obj))
        libs = [obj] + libs + cuda_link_flags(requirements)
    commands.append(head + ["-o", os.path.basename(lib), plan.name + ".c"] + libs)
    return [[_portable_flag(arg, folder) for arg in command] for command in commands]


def _portable_flag(arg, folder):
    """Build flags as the Makefile writes them: the bundle's own folder is '.'."""
    abi_dir = os.path.dirname(HEADER_PATH)
    for path in (folder, abi_dir):
        if arg in ("-I" + path, "-L" + path):
            return arg[:2] + "."
    return arg


def _write(folder, filename, text):
    with open(os.path.join(folder, filename), "w") as fh:
        fh.write(text)


def _write_files(plan, folder, build_commands):
    shutil.copyfile(HEADER_PATH, os.path.join(folder, HEADER_NAME))
    for filename in NPY_FILES + DLPACK_FILES:
        shutil.copyfile(os.path.join(C_DIR, filename), os.path.join(folder, filename))
    for slot in plan.shared + [s for s in plan.inputs if s.file]:
        np.save(os.path.join(folder, slot.file), slot.value, allow_pickle=False)
    _write(folder, "main.c", example_c.main_source(plan))
    _write(folder, "Makefile", files_text.makefile(plan, build_commands))
    _write(folder, "README.md", files_text.readme(plan))
    manifest = dict(name=plan.name, prefix=plan.prefix, abi_version=ABI_VERSION,
                    source_sha256=hashlib.sha256(_library_source(plan).encode()).hexdigest(),
                    files=sorted(os.listdir(folder)) + [MANIFEST])
    if plan.cuda:
        cuda = plan.graph.requirements["cuda"]
        manifest["cuda"] = dict(source_sha256=hashlib.sha256(cuda_source_text(plan.graph.requirements).encode())
                                .hexdigest(), nvcc_version=cuda.get("nvcc_version"),
                                nvcc_flags=list(cuda.get("nvcc_flags", ())))
    with open(os.path.join(folder, MANIFEST), "w") as fh:
        json.dump(manifest, fh, indent=1, sort_keys=True)


def _check_target(directory):
    """An export may replace an earlier export, never a folder of other files."""
    if os.path.lexists(directory):
        if os.path.islink(directory) or not os.path.isdir(directory):
            raise FileExistsError("export directory %s exists and is not a folder" % directory)
        if os.listdir(directory) and not os.path.isfile(os.path.join(directory, MANIFEST)):
            raise FileExistsError("export directory %s is not empty and holds no earlier ffigraph export; "
                                  "choose an empty or new folder" % directory)


def _swap_in(tmp, directory):
    if os.path.lexists(directory):
        trash = tmp + ".old"
        os.rename(directory, trash)
        os.rename(tmp, directory)
        shutil.rmtree(trash, ignore_errors=True)
    else:
        os.rename(tmp, directory)


def write_bundle(plan: ExportPlan, directory: StrPath, compiler: Optional[str] = None) -> ExportBundle:
    """Build and write the export folder; returns an ExportBundle."""
    directory = os.path.abspath(directory)
    _check_target(directory)
    parent = os.path.dirname(directory)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".ffigraph-export-", dir=parent)
    try:
        _write(tmp, plan.name + ".h", header_c.header_source(plan))   # the library's source includes it
        commands = _build(plan, tmp, compiler)
        _write_files(plan, tmp, commands)
        os.chmod(tmp, 0o755)
        _swap_in(tmp, directory)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return ExportBundle(directory, plan)


def export_function(f: Function, directory: StrPath, name: Optional[str] = None,
                    example_inputs: Optional[Sequence[ArrayLike]] = None,
                    compiler: Optional[str] = None) -> ExportBundle:
    """Write ``f`` as a self-contained C library folder (see ``Function.export``)."""
    plan = make_plan(f, name, example_inputs)
    return write_bundle(plan, directory, compiler)


def export_to_cache(f: Function, directory: Optional[StrPath] = None) -> ExportBundle:
    """The export of ``CLinker(c_callable=True)``: into ``directory``, or into the compile
    cache's ``exports/<name>-<digest>`` folder, built once however many processes ask."""
    compiler = getattr(f.maker.linker, "compiler", None)
    plan = make_plan(f)
    if directory is not None:
        return write_bundle(plan, directory, compiler)
    from filelock import FileLock

    from ffigraph.linkers.c import cache

    exports = cache.private_subdir("exports")
    folder = "%s-%s" % (plan.name, content_digest(plan)[:20])
    target = os.path.join(exports, folder)
    with FileLock(os.path.join(cache.private_subdir("locks"), "export-%s.lock" % folder)):
        if not _is_complete(target):
            write_bundle(plan, target, compiler)
    return ExportBundle(target, plan)


def _is_complete(directory):
    """True when ``directory`` holds a whole export (its manifest, written last, lists every file)."""
    try:
        with open(os.path.join(directory, MANIFEST)) as fh:
            listed = json.load(fh)["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return all(os.path.isfile(os.path.join(directory, name)) for name in listed)


def content_digest(plan):
    """A digest of everything an export folder holds: same digest, same folder."""
    h = hashlib.sha256(_library_source(plan).encode())
    if plan.cuda:   # the kernels and how nvcc compiled them are part of the folder too
        cuda = plan.graph.requirements["cuda"]
        h.update(b"\0cuda\0" + cuda_source_text(plan.graph.requirements).encode())
        h.update(repr((cuda.get("nvcc_version"), list(cuda.get("nvcc_flags", ())))).encode())
    for slot in plan.inputs + plan.shared:
        if slot.value is not None:
            h.update(slot.label.encode("utf-8", "surrogatepass") + b"\0" + str(slot.value.dtype).encode()
                     + repr(slot.value.shape).encode())
            h.update(slot.value.tobytes())
    return h.hexdigest()


def undefined_symbols(library: StrPath) -> List[str]:
    """The dynamic symbols ``library`` needs from elsewhere (``nm -D --undefined-only``)."""
    out = subprocess.run(["nm", "-D", "--undefined-only", library], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True, check=True).stdout
    return [line.split()[-1] for line in out.splitlines() if line.strip()]
