"""Shared pytest set-up: which linkers the op tests run under, and import paths.

Every test that takes the ``mode`` fixture runs once per linker in LINKERS: ``py`` runs each op's
``perform`` (the reference semantics), ``c`` its C code. ``c|py`` is left out of the op matrices on
purpose: it builds each node as the library that ``c`` builds for that node alone (the very same
library, tests/linkers/test_c_backend.py checks), so running every op case under it again would
compile the same op C code once more; what ``c|py`` adds, sequencing nodes and Python fallbacks
from Python, is tested in tests/linkers and tests/compile.
"""
import os
import re
import sys

import pytest

ROOT = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "tests"))
pytest_plugins = ["one_per_test"]   # --one-per-test: the sanitizer phase's subset (tests/one_per_test.py)

LINKERS = ["py", "c"]


@pytest.fixture(params=LINKERS)
def mode(request):
    from ffigraph.compile.mode import Mode

    return Mode(linker=request.param, optimizer=None)


# What the phases of ``./dev test`` run besides the whole suite on CPython (docs/develop.rst, "Tests"):
# The op matrices check every op against numpy over dtypes, shapes, axes and layouts. Their
# generated C is the same whichever interpreter loads it, so the PyPy phase runs one case per test
# function, op and linker of them (--one-per-test-marked op_matrix) and every other file in full.
OP_MATRIX = (
    "tests/tensor/test_elemwise.py", "tests/tensor/test_reductions.py", "tests/tensor/test_reduce_c.py",
    "tests/tensor/test_dot_c.py", "tests/tensor/test_views_c.py", "tests/tensor/test_shape_ops.py",
    "tests/tensor/test_build_ops.py", "tests/tensor/test_arange.py", "tests/tensor/test_inc_subtensor.py",
    "tests/tensor/test_sum_to_shape.py", "tests/tensor/test_grad_ops.py", "tests/scalar/test_vmath.py",
    "tests/rewriting/test_fusion.py", "tests/rewriting/test_rewrites_canonical.py",
    "tests/tensor/test_reduce_acc_dtype.py",
)
# The sanitizer phase (CPython, generated C built with ASan and UBSan) runs one case per test
# function and op (--one-per-test) of these: every op, the failure paths (bad input, failing ops,
# failed allocations, errors from C hosts), the library memo and the export example with its C hosts.
SANITIZE = OP_MATRIX + (
    "tests/compile/test_compile_ops.py", "tests/rewriting/test_inplace.py", "tests/examples/test_double.py",
    "tests/examples/test_logistic_regression.py", "tests/compile/test_function.py",
    "tests/linkers/test_c_backend.py", "tests/linkers/test_alloc_failure.py", "tests/linkers/test_library_memo.py",
    "tests/linkers/test_sanitize.py", "tests/linkers/test_arity_call.py", "tests/export/test_export.py",
    "tests/export/test_hostile_names.py", "tests/linkers/test_node_dedup.py",
    "tests/compile/test_profile.py", "tests/tensor/test_threads_c.py", "tests/export/test_export_threads.py",
    "tests/tensor/test_advanced_indexing.py", "tests/scan/test_scan_c.py", "tests/linkers/test_build_parts.py",
    "tests/tensor/test_sort.py", "tests/tensor/test_extra_ops.py", "tests/tensor/test_layout.py",
    "tests/tensor/test_elemwise_breadth.py", "tests/tensor/linalg/test_cholesky_triangular.py",
    "tests/tensor/linalg/test_solve_inv_det.py", "tests/tensor/linalg/test_decompositions.py",
    "tests/tensor/linalg/test_norm_power.py", "tests/compile/test_call_safety.py",
    "tests/tools/test_fuzz_programs.py", "tests/tensor/nnet/test_neighbours.py",
    "tests/tensor/nnet/test_conv_c.py", "tests/tensor/signal/test_pool.py",
    "tests/tensor/nnet/test_bn.py", "tests/rewriting/test_conv_fusion.py", "tests/tensor/test_topk.py",
    "tests/scalar/test_special_functions.py", "tests/test_raise_op.py", "tests/compile/test_api_details.py",
    "tests/scalar/test_scalar_variables.py", "tests/compile/test_builders.py", "tests/tensor/test_construct.py",
    "tests/tensor/test_blockwise.py", "tests/tensor/test_selection.py", "tests/test_typed_list.py",
)


def pytest_configure(config):
    # Threads in generated loops (ffigraph.config.threads, default: the CPU count) add a thread pool
    # and a chunk function to a library, some 50 ms of compile time each; the suite builds thousands
    # of libraries, so it runs with one thread unless FFIGRAPH_FLAGS names `threads` (set in the
    # environment too, so that the processes the tests start build the same sources). The threaded
    # C is tested where threads are set explicitly: tests/tensor/test_threads_c.py and
    # tests/export/test_export_threads.py.
    flags = os.environ.get("FFIGRAPH_FLAGS", "")
    if not re.search(r"(^|,)\s*threads\s*=", flags):
        from ffigraph.config import config as ffigraph_config

        os.environ["FFIGRAPH_FLAGS"] = flags + ("," if flags.strip() else "") + "threads=1"
        ffigraph_config.threads = 1
    config.addinivalue_line("markers", "gpu: needs a working CUDA GPU (skipped elsewhere, with the reason)")
    config.addinivalue_line("markers", "op_matrix: a file of OP_MATRIX (conftest.py): one case per op on PyPy")
    config.addinivalue_line("markers", "sanitize: a file of SANITIZE (conftest.py): run in the sanitizer phase")
    config.addinivalue_line("markers", "finite_differences: a gradient check by finite differences (verify_grad), "
                            "left out of the PyPy phase (its graphs and libraries are the CPython phase's; on PyPy it "
                            "would only call them many times more) and of the sanitizer phase (it calls the C kernels "
                            "its file's value tests run there), unless also marked grad_kernel")
    config.addinivalue_line("markers", "grad_kernel: a finite_differences check that is the only test to run a "
                            "gradient op's own C kernel (CholeskyGrad): the sanitizer phase keeps it")


def pytest_collection_modifyitems(config, items):
    """Mark the op matrices and the sanitizer phase's files; skip @pytest.mark.gpu tests unless a
    GPU can run work, saying why in CUDA's own words."""
    for item in items:
        path = item.nodeid.split("::")[0]
        if path in OP_MATRIX:
            item.add_marker(pytest.mark.op_matrix)
        if path in SANITIZE:
            item.add_marker(pytest.mark.sanitize)
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_items:
        return
    try:
        from ffigraph.cuda.runtime import gpu_status

        ok, reason = gpu_status()
    except Exception as err:  # the toolkit is missing or broken: that is the reason
        ok, reason = False, "%s: %s" % (type(err).__name__, err)
    if ok:
        return
    skip = pytest.mark.skip(reason="GPU tier skipped, no usable GPU: %s" % reason)
    for item in gpu_items:
        item.add_marker(skip)
