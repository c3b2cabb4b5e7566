"""Writing the export folder of a compiled function (``f.export(directory)``).

Plan first (names, slots, files), then build the library into a private
folder next to the target, write every file there, and swap it into place:
a reader sees the old folder or the new one, never half of one.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile

import numpy as np

from ffigraph.abi import ABI_VERSION, HEADER_NAME, HEADER_PATH
from ffigraph.export import handle_c, header_c, example_c, files_text
from ffigraph.export.names import UniqueNames, c_identifier, file_stem
from ffigraph.linkers.c.build import build_library, compiler_command
from ffigraph.linkers.c.linker import nodes_without_c_code, whole_graph_source

C_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "c")
NPY_FILES = ("ffg_npy.h", "ffg_npy.c")
MANIFEST = "ffigraph-export.json"


class SlotPlan:
    """One graph variable as the export shows it: label, type, macro name, data file."""

    def __init__(self, label, var_type, ident=None, file=None, value=None):
        self.label, self.type, self.ident, self.file, self.value = label, var_type, ident, file, value


class ExportPlan:
    """Everything the generated files need to know about one function."""

    def __init__(self, name, prefix, inputs, shared, outputs, updates):
        self.name, self.prefix = name, prefix
        self.inputs, self.shared, self.outputs = inputs, shared, outputs
        self.updates = updates   # [(shared index, label of the update expression)]


class ExportBundle:
    """The paths of an export folder (returned by ``Function.export``)."""

    def __init__(self, directory, plan):
        self.directory = directory
        self.name = plan.name
        path = lambda f: os.path.join(directory, f)  # noqa: E731
        self.library = path("lib%s.so" % plan.name)
        self.header = path("%s.h" % plan.name)
        self.source = path("%s.c" % plan.name)
        self.example_source = path("main.c")
        self.makefile = path("Makefile")
        self.readme = path("README.md")
        self.shared_files = {s.label: path(s.file) for s in plan.shared}
        self.input_files = {s.label: path(s.file) for s in plan.inputs if s.file}

    def __repr__(self):
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


def make_plan(f, name=None, example_inputs=None):
    """Name every slot and data file of ``f``'s export."""
    fgraph = f.maker.fgraph
    _check_c_code(fgraph)
    n_in, n_out = len(f.maker.inputs), len(f.maker.outputs)
    name = c_identifier(name or f.name, "graph")
    files = UniqueNames(["lib%s.so" % name, name + ".h", name + ".c", "main.c", "Makefile", "README.md",
                         "example", MANIFEST, HEADER_NAME] + list(NPY_FILES))
    idents = {kind: UniqueNames() for kind in ("in", "sh", "out")}
    if example_inputs is not None and len(example_inputs) != n_in:
        raise ValueError("example_inputs: expected %d values (one per input), got %d" % (n_in, len(example_inputs)))

    inputs = []
    for k, var in enumerate(fgraph.inputs[:n_in]):
        label = str(f.maker.inputs[k].name or var)
        slot = SlotPlan(label, var.type, idents["in"](c_identifier(label, "input%d" % k)))
        if example_inputs is not None:
            value = f._filters[k](example_inputs[k])
            slot.value = _c_value(var.type, value, "example input %d (%s)" % (k, label))
            slot.file = files("input_" + file_stem(label, "input%d" % k), ".npy")
        inputs.append(slot)
    shared = []
    for j, var in enumerate(fgraph.inputs[n_in:]):
        label = str(var)
        value = _c_value(var.type, f._shared_cells[j][0], "shared variable %s" % label)
        shared.append(SlotPlan(label, var.type, idents["sh"](c_identifier(label, "shared%d" % j)),
                               files(file_stem(label, "shared%d" % j), ".npy"), value))
    outputs = [SlotPlan(str(var), var.type, idents["out"]("out%d" % k)) for k, var in enumerate(fgraph.outputs[:n_out])]
    updates = [(t, str(var)) for t, var in zip(f._update_targets, fgraph.outputs[n_out:])]

    graph = whole_graph_source(fgraph)
    plan = ExportPlan(name, graph.prefix, inputs, shared, outputs, updates)
    plan.graph = graph
    return plan


# ------------------------------------------------------------------ building and writing


def _bundled_libraries(requirements, folder):
    """Copy libraries found in the graph's library folders into ``folder`` (the bundle then
    needs nothing outside itself); the requirements to link against the copies."""
    req = {k: list(v) for k, v in requirements.items()}
    for lib in requirements.get("libraries", ()):
        for lib_dir in requirements.get("lib_dirs", ()):
            src = os.path.join(lib_dir, "lib%s.so" % lib)
            if os.path.isfile(src):
                dst = os.path.join(folder, os.path.basename(src))
                try:
                    os.link(src, dst)   # same file system: no copy of a 25 MB BLAS
                except OSError:
                    shutil.copy2(src, dst)
                break
    req["lib_dirs"] = [folder]
    req["rpath"] = ["$ORIGIN"]   # the bundle can move: the library looks beside itself
    return req


def _library_source(plan):
    return plan.graph.source + handle_c.handle_source(
        plan.name, plan.prefix, len(plan.inputs), len(plan.shared), len(plan.outputs),
        [t for t, _ in plan.updates])


def _build(plan, folder, compiler):
    requirements = _bundled_libraries(plan.graph.requirements, folder)
    source = _library_source(plan)
    lib = build_library(source, "lib" + plan.name, requirements, compiler, directory=folder)
    os.rename(os.path.join(folder, "lib%s.c" % plan.name), os.path.join(folder, plan.name + ".c"))
    head, libs = compiler_command(requirements, compiler)
    command = head + ["-o", os.path.basename(lib), plan.name + ".c"] + libs
    return [_portable_flag(arg, folder) for arg in command]


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


def _write_files(plan, folder, build_command):
    shutil.copyfile(HEADER_PATH, os.path.join(folder, HEADER_NAME))
    for filename in NPY_FILES:
        shutil.copyfile(os.path.join(C_DIR, filename), os.path.join(folder, filename))
    for slot in plan.shared + [s for s in plan.inputs if s.file]:
        np.save(os.path.join(folder, slot.file), slot.value, allow_pickle=False)
    _write(folder, "main.c", example_c.main_source(plan))
    _write(folder, "Makefile", files_text.makefile(plan, build_command))
    _write(folder, "README.md", files_text.readme(plan))
    manifest = dict(name=plan.name, prefix=plan.prefix, abi_version=ABI_VERSION,
                    source_sha256=hashlib.sha256(_library_source(plan).encode()).hexdigest(),
                    files=sorted(os.listdir(folder)) + [MANIFEST])
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


def write_bundle(plan, directory, compiler=None):
    """Build and write the export folder; returns an ExportBundle."""
    directory = os.path.abspath(directory)
    _check_target(directory)
    parent = os.path.dirname(directory)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".ffigraph-export-", dir=parent)
    try:
        _write(tmp, plan.name + ".h", header_c.header_source(plan))   # the library's source includes it
        command = _build(plan, tmp, compiler)
        _write_files(plan, tmp, command)
        os.chmod(tmp, 0o755)
        _swap_in(tmp, directory)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return ExportBundle(directory, plan)


def export_function(f, directory, name=None, example_inputs=None, compiler=None):
    """Write ``f`` as a self-contained C library folder (see ``Function.export``)."""
    plan = make_plan(f, name, example_inputs)
    return write_bundle(plan, directory, compiler)


def export_to_cache(f, directory=None):
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
    for slot in plan.inputs + plan.shared:
        if slot.value is not None:
            h.update(slot.label.encode() + b"\0" + str(slot.value.dtype).encode() + repr(slot.value.shape).encode())
            h.update(slot.value.tobytes())
    return h.hexdigest()


def undefined_symbols(library):
    """The dynamic symbols ``library`` needs from elsewhere (``nm -D --undefined-only``)."""
    out = subprocess.run(["nm", "-D", "--undefined-only", library], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True, check=True).stdout
    return [line.split()[-1] for line in out.splitlines() if line.strip()]
