"""The Makefile and README of an export folder."""
from __future__ import annotations

import shlex

from ffigraph.export.header_c import slot_map

MAKEFILE_TEMPLATE = """\
# Makefile of the ffigraph export "%(N)s" (generated). Needs a C compiler and make, no Python.
#   make            build ./example from main.c and ffg_npy.c, linked to lib%(N)s.so
#   make library    rebuild lib%(N)s.so from %(N)s.c with the flags ffigraph used
#   make flags      print the flags that link lib%(N)s.so into another program
#   make clean      remove what `make` built (the library stays)
CC = cc
CFLAGS ?= -O2 -std=c99 -Wall
HERE := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))

example: main.o ffg_npy.o lib%(N)s.so
\t$(CC) $(LDFLAGS) -o $@ main.o ffg_npy.o -L. -l%(N)s -Wl,-rpath,'$$ORIGIN' -lm

main.o: main.c %(N)s.h ffigraph_abi.h ffg_npy.h
\t$(CC) $(CFLAGS) -c -o $@ main.c

ffg_npy.o: ffg_npy.c ffg_npy.h ffigraph_abi.h
\t$(CC) $(CFLAGS) -c -o $@ ffg_npy.c

library:
\t%(build)s

flags:
\t@echo "compile: -I$(HERE)"
\t@echo "link:    -L$(HERE) -l%(N)s -Wl,-rpath,$(HERE)"

clean:
\trm -f example main.o ffg_npy.o

.PHONY: library flags clean
"""


def makefile(plan, build_command):
    # the compiler is make's $(CC), so the rule works where ffigraph's compiler path does not exist
    build = "$(CC) " + " ".join(shlex.quote(arg) for arg in build_command[1:]).replace("$", "$$")
    return MAKEFILE_TEMPLATE % dict(N=plan.name, build=build)


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
| `main.c` | an example host: loads the shared variables, fills the inputs, runs, prints |
| `ffg_npy.h`, `ffg_npy.c` | a small, strict `.npy` reader and writer (C order, little-endian, the ABI's dtypes) |
%(data_rows)s| `Makefile` | `make` (example), `make library`, `make flags`, `make clean` |
%(extra_rows)s
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
  the next call on the handle.
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
  `%(N)s_shared_name` are safe from any thread.
- Linking into your own program: `make flags` prints the flags.
  `%(N)s.h` compiles as C and as C++.

## Slots

```
%(slots)s
```
"""


def readme(plan):
    data_rows = "".join("| `%s` | the value of shared variable `%s` at export time |\n" % (s.file, s.label)
                        for s in plan.shared)
    data_rows += "".join("| `%s` | the example value of input `%s` |\n" % (s.file, s.label)
                         for s in plan.inputs if s.file)
    extra = "" if any(s.file for s in plan.inputs) else (
        "\nThe example fills each input with 0, 1, 2, ... in C order. An axis whose length the type "
        "leaves open gets length 3 + its position, so a matrix is 3x4. Export with `example_inputs=` "
        "to ship real values.\n")
    slots = "\n".join(line[3:] for line in slot_map(plan).splitlines())
    return README_TEMPLATE % dict(N=plan.name, NU=plan.name.upper(), data_rows=data_rows, extra_rows=extra,
                                  slots=slots)
