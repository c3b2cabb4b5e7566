"""The Makefile and README of an export folder."""
from __future__ import annotations

import os
import re
import shlex

from ffigraph.export.header_c import slot_map
from ffigraph.linkers import devices

MAKEFILE_TEMPLATE = """\
# Makefile of the ffigraph export "%(N)s" (generated). Needs a C compiler and make, no Python.
#   make            build ./example from main.c, ffg_npy.c and ffg_dlpack.c, linked to lib%(N)s.so
#   make library    rebuild lib%(N)s.so from %(N)s.c%(library_from)s with the flags ffigraph used
#   make flags      print the flags that link lib%(N)s.so into another program
#   make clean      remove what `make` built (the library stays)
CC = cc
CFLAGS ?= -O2 -std=c99 -Wall
%(sanitize_vars)sHERE := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
%(cuda_vars)s
example: main.o ffg_npy.o ffg_dlpack.o lib%(N)s.so
\t$(CC) $(LDFLAGS) -o $@ main.o ffg_npy.o ffg_dlpack.o -L. -l%(N)s%(example_libs)s -Wl,-rpath,'$$ORIGIN'%(rpath_link)s -lm

main.o: main.c %(N)s.h ffigraph_abi.h ffg_npy.h
\t$(CC) $(CFLAGS)%(example_includes)s -c -o $@ main.c

ffg_npy.o: ffg_npy.c ffg_npy.h ffigraph_abi.h
\t$(CC) $(CFLAGS) -c -o $@ ffg_npy.c

ffg_dlpack.o: ffg_dlpack.c ffg_dlpack.h ffigraph_abi.h
\t$(CC) $(CFLAGS) -c -o $@ ffg_dlpack.c

library:
%(build)s

flags:
\t@echo "compile: -I$(HERE)%(flags_includes)s"
\t@echo "link:    -L$(HERE) -l%(N)s%(flags_libs)s -Wl,-rpath,$(HERE)"

clean:
\trm -f example main.o ffg_npy.o ffg_dlpack.o%(clean_extra)s

.PHONY: library flags clean
"""

CUDA_VARS = """
# The library's GPU part: %(cu)s is compiled by nvcc (the toolkit ffigraph used; override with
# `make library NVCC=...`) and linked with the CUDA runtime bundled here (libcudart, rpath $ORIGIN).
# Running needs a CUDA driver (libcuda.so) on the machine; building the example needs only $(CC)%(inc_note)s.
NVCC = %(nvcc)s
NVCCFLAGS = %(nvcc_flags)s
CUDA_INC = %(cuda_inc)s
"""


def _quote(args):
    return " ".join(shlex.quote(arg) for arg in args).replace("$", "$$")


def _cuda_include_dir(plan):
    return os.path.join(devices.get("cuda").toolchain_root(plan.graph.requirements["cuda"]), "include")


SANITIZE_VARS = """\
# lib%(N)s.so was built with sanitizers (ffigraph.config.sanitize), so the example is too: a program
# that loads it must link their runtimes itself (AddressSanitizer's must come first)
CFLAGS += %(compile)s
LDFLAGS += %(link)s
"""


def _sanitize_vars(name, build_commands):
    """The Makefile lines that build the example with the sanitizers the library was built with, or ''."""
    flags = [arg for arg in build_commands[-1] if arg.startswith(("-fsanitize", "-fno-sanitize"))]
    if not any(arg.startswith("-fsanitize=") for arg in flags):
        return ""
    extra = [arg for arg in ("-fno-omit-frame-pointer", "-g") if arg in build_commands[-1]]
    return SANITIZE_VARS % dict(N=name, compile=_quote(flags + extra), link=_quote(flags))


def makefile(plan, build_commands):
    """The Makefile; ``build_commands`` rebuild the library: [C compiler argv] or [nvcc argv, C compiler argv]."""
    # the compiler is make's $(CC), so the rule works where ffigraph's compiler path does not exist
    rules = []
    for command in build_commands:
        if plan.cuda and command is build_commands[0] and len(build_commands) > 1:
            cuda = plan.graph.requirements["cuda"]
            flags = list(cuda["nvcc_flags"])
            rest = [arg for arg in command[1:]]
            # the recorded -gencode flags become $(NVCCFLAGS), so `make library NVCCFLAGS=...` retargets
            for k in range(len(rest) - len(flags) + 1):
                if rest[k:k + len(flags)] == flags:
                    rest = rest[:k] + ["NVCCFLAGS_HERE"] + rest[k + len(flags):]
                    break
            rules.append("$(NVCC) " + _quote(rest).replace("NVCCFLAGS_HERE", "$(NVCCFLAGS)"))
        else:
            rules.append("$(CC) " + _quote(command[1:]))
    values = dict(N=plan.name, build="".join("\t%s\n" % rule for rule in rules).rstrip("\n"),
                  library_from="", cuda_vars="", example_libs="", rpath_link="", example_includes="",
                  flags_includes="", flags_libs="", clean_extra="",
                  sanitize_vars=_sanitize_vars(plan.name, build_commands))
    if plan.cuda:
        cuda = plan.graph.requirements["cuda"]
        uses = plan.example_uses_cuda
        values.update(
            library_from=" and %s (nvcc)" % plan.cuda_source_name,
            cuda_vars=CUDA_VARS % dict(cu=plan.cuda_source_name, nvcc=cuda["nvcc"],
                                       nvcc_flags=_quote(cuda["nvcc_flags"]), cuda_inc=_cuda_include_dir(plan),
                                       inc_note=" and the toolkit's headers (CUDA_INC)" if uses else ""),
            example_libs=" -lcudart" if uses else "",
            rpath_link=" -Wl,-rpath-link,.",   # ld finds the bundled libcudart that lib%s.so needs
            example_includes=" -I$(CUDA_INC)" if uses else "",
            flags_includes=" -I$(CUDA_INC)",
            flags_libs=" -lcudart",
            clean_extra=" %s_cuda.o" % plan.name)
    return MAKEFILE_TEMPLATE % values


README_TEMPLATE = """\
# ffigraph export: `%(N)s`

A compiled ffigraph function as a plain C shared library. Nothing here needs
Python: build and run the example with

    make && ./example            # -n RUNS to call it RUNS times, -s DIR to save the shared variables

## Files

| file | what it is |
|---|---|
| `lib%(N)s.so` | the compiled graph, plus the handle layer described below |
| `%(N)s.h` | prototypes of the `%(N)s_*` calls and the map of graph variables to slots |
| `ffigraph_abi.h` | the ABI: `FfgTensor` (DLPack's `DLTensor` layout), `FfgOutput`, `FfgError`, codes |
| `%(N)s.c` | the library's source; `make library` rebuilds the library from it |
%(cuda_rows)s| `main.c` | an example host: loads the shared variables, fills the inputs, runs, prints |
| `ffg_npy.h`, `ffg_npy.c` | a small, strict `.npy` reader and writer (C order, little-endian, the ABI's dtypes) |
| `ffg_dlpack.h`, `ffg_dlpack.c` | outputs handed on as DLPack `DLManagedTensorVersioned` (their deleter releases the block, or keeps the aliased input alive), DLPack tensors taken in as inputs |
%(data_rows)s| `Makefile` | `make` (example), `make library`, `make flags`, `make clean` |
%(extra_rows)s%(cuda_section)s
## The calls

```c
FfgError err;
%(N)s_handle *h = %(N)s_open(NULL, &err);          /* NULL allocator: malloc/free */
%(N)s_set_shared(h, j, &value, &err);               /* each shared variable, copied in */
%(N)s_run(h, inputs, %(NU)s_N_INPUTS, outputs, %(NU)s_N_OUTPUTS, &err);
%(N)s_release(h, &outputs[k]);                      /* when done with output k */
%(N)s_close(h);
```

- Every call returns `FFG_OK` (0) or an `FFG_ERR_*` code, and fills `err`:
  `err.message` says what was wrong, `err.node` which node failed (or -1),
  and `err.input` which input slot was at fault (or -1). Slots from
  `%(NU)s_N_INPUTS` on are the shared variables. Bad input gives an error code,
  never a crash: a NULL pointer, or a wrong dtype, ndim, shape or device.
  `%(N)s_errmsg(h)` repeats the handle's last message.
- Inputs are `FfgTensor`s: data, device `{FFG_DEVICE_CPU, 0}`, ndim, dtype
  `{code, bits, 1}`, shape, and strides in elements (NULL means C order). The
  library only reads them during the call.
- Outputs: zero each `FfgOutput`, or offer a block in `host_buffer` /
  `host_capacity`. After a successful call, `alias_of` says where the data lies:
  `FFG_OUT_OWNED` means in `base`, which is yours to give back with
  `%(N)s_release`. `FFG_OUT_HOST_BUFFER` means in your block. A value k >= 0
  means inside input k. `tensor.shape` and `tensor.strides` stay valid until
  the next call on the handle. After a failed call every output says
  `FFG_OUT_NONE`: no data, nothing to release.
- Shared variables live in the handle. After a successful `%(N)s_run` their
  updates replace them, so a training step trains from C. `%(N)s_get_shared`
  lends the current value, valid until the next call on the handle.
  `%(N)s_set_shared` copies a value in. `%(N)s_shared_index("name")` finds a
  shared variable's index by name.
- Threads: handles are independent, so open one per thread and run them at
  the same time. A handle takes one call at a time. A second call that
  overlaps (from another thread, or re-entrant from an allocator callback)
  gets `FFG_ERR_RUNTIME` at once, not a data race.
  `%(N)s_describe`, `%(N)s_abi_version`, `%(N)s_shared_index` and
  `%(N)s_shared_name` are safe from any thread.%(pool)s
- Linking into your own program: `make flags` prints the flags.
  `%(N)s.h` compiles as C and as C++.

## Slots

```
%(slots)s
```
"""


def _md_code(label):
    """A variable name inside a `code` span of a table row: one line, escaped as in the C comments,
    with no backtick or | to end the span or the cell."""
    from ffigraph.linkers.c.codegen import comment_text

    return comment_text(label).replace("`", "\\x60").replace("|", "\\x7c")


def readme(plan):
    data_rows = "".join("| `%s` | the value of shared variable `%s` at export time |\n" % (s.file, _md_code(s.label))
                        for s in plan.shared)
    data_rows += "".join("| `%s` | the example value of input `%s` |\n" % (s.file, _md_code(s.label))
                         for s in plan.inputs if s.file)
    extra = ""
    filled = [(s, shape) for s, shape in zip(plan.inputs, getattr(plan, "fill_shapes", [])) if shape is not None]
    if filled:
        shapes = ", ".join("`%s` %s" % (_md_code(s.label), "x".join(str(n) for n in shape) or "(0-d)")
                           for s, shape in filled)
        problem = getattr(plan, "fill_shapes_problem", None)
        checked = ("the export ran the function on them" if problem is None else
                   "but none of the shapes the export tried fits the graph (%s): give them with `-d`"
                   % _md_code(problem))
        extra = ("\nThe example fills each input without a file with 0, 1, 2, ... in C order, in shapes that "
                 "satisfy the graph's constraints (a dot's inner axes equal, elementwise axes equal, shared "
                 "variables' lengths): %s; %s. `./example -d INPUT=SHAPE` (a name or position, lengths "
                 "joined by x: `-d x=3x4`) fills an input in another shape. Export with `example_inputs=` "
                 "to ship real values.\n" % (shapes, checked))
    slots = "\n".join(line[3:] for line in slot_map(plan).splitlines())
    cuda_rows = cuda_section = ""
    if plan.cuda:
        cuda_rows, cuda_section = _readme_cuda(plan)
    return README_TEMPLATE % dict(N=plan.name, NU=plan.name.upper(), data_rows=data_rows, extra_rows=extra,
                                  slots=slots, cuda_rows=cuda_rows, cuda_section=cuda_section, pool=_readme_pool(plan))


def _readme_pool(plan):
    """The README's words on the library's own threads (ffigraph.tensor.threads_c), when it has them."""
    found = re.search(r"^#define FFG_THREADS (\d+)\n#define FFG_THREADS_MIN_SIZE (\d+)LL", plan.graph.source, re.M)
    if found is None:
        return ""
    return ("\n- Inside a call, loops over %s elements or more split over %s threads of the library's own\n"
            "  (a pthread pool, started by the first such loop; the calling thread is one of them), with\n"
            "  results that do not depend on which threads run what. Handles share the pool: a call that\n"
            "  finds it busy runs its loops on its own thread. The workers are joined when the library is\n"
            "  unloaded or the program exits." % found.groups()[::-1])


README_CUDA = """
## GPU (CUDA)

Part of this graph runs on an NVIDIA GPU. `%(cu)s` holds its kernels; nvcc
compiled them into `lib%(N)s.so` (%(nvcc_version)s; flags `%(nvcc_flags)s`).

- **Running needs a CUDA driver.** The folder ships the CUDA runtime
  (`%(cudart)s`, the toolkit's own libcudart, found beside the library through
  its `$ORIGIN` rpath), but not the driver (`libcuda.so`), which belongs to the
  machine. Without a GPU, or with a driver older than this runtime, every call
  that touches the device fails with `FFG_ERR_CUDA` and CUDA's own words in
  `err.message` (e.g. "CUDA driver version is insufficient for CUDA runtime
  version", or "no CUDA-capable device is detected"); `err.detail` holds the
  `cudaError_t`. Nothing crashes.
- Inputs marked `device: cuda` in the slot map below are device arrays: pass an
  `FfgTensor` whose data is CUDA memory and whose device is
  `{FFG_DEVICE_CUDA, id}`. Outputs marked `device: cuda` come back in CUDA memory;
  `%(N)s_release` gives an owned one back with `cudaFree`.%(example)s
- `make library` needs nvcc (the Makefile's `NVCC`, the one ffigraph used);
  `make` and `./example` need only the C compiler%(inc)s.
- Linking your own program: `make flags` (it includes `-lcudart`).
"""


def _readme_cuda(plan):
    from ffigraph.export.bundle import cudart_files

    cuda = plan.graph.requirements["cuda"]
    real, soname = cudart_files(cuda["cudart_dir"])
    names = sorted({os.path.basename(real), soname, "libcudart.so"})
    rows = "| `%s` | the GPU part's CUDA source; `make library` compiles it with nvcc |\n" % plan.cuda_source_name
    rows += "| %s | the CUDA runtime, copied from the toolkit ffigraph compiled with |\n" % ", ".join(
        "`%s`" % n for n in names)
    example = ("\n  The example copies such inputs to the device (cudaMalloc, cudaMemcpy) and device\n"
               "  outputs back to the host before printing them; CUDA errors are printed with\n"
               "  cudaGetErrorString and end the program with a non-zero status."
               if plan.example_uses_cuda else "")
    inc = " and the toolkit's headers (`CUDA_INC` in the Makefile), since `main.c` calls the CUDA runtime" \
        if plan.example_uses_cuda else ""
    section = README_CUDA % dict(N=plan.name, cu=plan.cuda_source_name, nvcc_version=cuda.get("nvcc_version"),
                                 nvcc_flags=" ".join(cuda.get("nvcc_flags", ())), cudart=soname,
                                 example=example, inc=inc)
    return rows, section
