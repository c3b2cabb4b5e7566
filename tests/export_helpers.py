"""Helpers of the export tests (tests/export, tests/cuda): a toolchain with no Python, running
the exported example, reading what it prints."""
import os
import re
import shutil
import subprocess

import numpy as np

TOOLS = ("make", "cc", "gcc", "g++", "as", "ld", "rm")


def no_python_env(folder):
    """An environment with make and the C toolchain on PATH, and no Python at all."""
    bin_dir = os.path.join(str(folder), "bin")
    os.makedirs(bin_dir, exist_ok=True)
    for tool in TOOLS:
        real = shutil.which(tool)
        if real is not None and not os.path.exists(os.path.join(bin_dir, tool)):
            os.symlink(os.path.realpath(real), os.path.join(bin_dir, tool))
    env = {"PATH": bin_dir, "HOME": str(folder), "LANG": "C"}
    assert shutil.which("python3", path=bin_dir) is None and shutil.which("python", path=bin_dir) is None
    assert shutil.which("pypy3", path=bin_dir) is None
    assert not any(k.startswith("PYTHON") for k in env)
    return env


def run(argv, cwd, env, check=True):
    proc = subprocess.run(argv, cwd=str(cwd), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True)
    if check and proc.returncode != 0:
        raise AssertionError("%s exited %d\nstdout:\n%s\nstderr:\n%s"
                             % (" ".join(argv), proc.returncode, proc.stdout[-4000:], proc.stderr[-4000:]))
    return proc


def steps_from_c(function, tmp_path, example_inputs, n_steps):
    """Export ``function`` with ``example_inputs``, build it with no Python, and run its example
    ``n_steps`` times; the folder where it saved its shared variables (``<name>.npy``) after them."""
    bundle = function.export(str(tmp_path / "bundle"), example_inputs=example_inputs)
    env = no_python_env(tmp_path)
    saved = tmp_path / "after"
    saved.mkdir()
    run(["make", "-s"], bundle.directory, env)
    out = run(["./example", "-n", str(n_steps), "-s", str(saved)], bundle.directory, env)
    assert "%d run(s) succeeded" % n_steps in out.stdout, out.stdout
    return saved


_HEADER = re.compile(r"^(input|output|shared) (.*): (bool|float|int|uint|complex)(\d+), shape \(([^)]*)\)$", re.M)
_DTYPES = {"float": "f", "int": "i", "uint": "u", "complex": "c"}


def parse_printed(text):
    """{(kind, name): array} from what the example prints (numbers written with %.17g); kind is
    "input" (an input it filled), "output" or "shared"."""
    found = {}
    heads = list(_HEADER.finditer(text))
    for k, head in enumerate(heads):
        body = text[head.end():heads[k + 1].start() if k + 1 < len(heads) else len(text)]
        kind, name, base, bits, dims = head.groups()
        shape = tuple(int(d) for d in dims.replace(",", " ").split())
        if base == "bool":
            values = [v == "True" for v in re.findall(r"True|False", body)]
            dtype = np.bool_
        else:
            dtype = np.dtype("%s%d" % (_DTYPES[base], int(bits) // 8))
            tokens = re.findall(r"[-+]?(?:nan|inf|[0-9.]+(?:e[-+]?\d+)?)(?:[-+](?:nan|inf|[0-9.]+(?:e[-+]?\d+)?)j)?",
                                body)
            values = [complex(t.replace("+-", "-")) if t.endswith("j") else float(t) for t in tokens]
        found[(kind, name)] = np.array(values, dtype=dtype).reshape(shape)
    return found


def output_slot_names(f):
    """The names the library's description gives f's outputs (as ./example prints them): the
    user's variable names made unique, "output<k>" for unnamed ones (codegen.unique_slot_names)."""
    from ffigraph.linkers.c.codegen import unique_slot_names
    from ffigraph.linkers.c.linker import _graph_c_roles

    fgraph = f.maker.fgraph
    input_roles, output_roles = _graph_c_roles(fgraph)
    n_out = len(fgraph.outputs)
    return unique_slot_names(fgraph.inputs, input_roles, fgraph.outputs, output_roles,
                             list(getattr(fgraph, "update_inputs", None) or [-1] * n_out),
                             list(getattr(fgraph, "output_names", None) or []))[1]
