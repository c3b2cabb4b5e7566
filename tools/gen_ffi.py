"""Write the prebuilt cffi modules (cffi's out-of-line ABI mode) of ffigraph's declarations.

Run after editing ffigraph/abi/ffigraph_abi.h (between its cdef markers) or callshim's _CDEF:
``python tools/gen_ffi.py``. ffigraph.abi.prebuilt explains why they exist; a stale module is
not used (its stamp no longer matches), and tests/abi/test_prebuilt_ffi.py fails until this is run.
"""
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from ffigraph import abi  # noqa: E402
from ffigraph.abi import prebuilt  # noqa: E402
from ffigraph.linkers.c import callshim  # noqa: E402

MODULES = [(abi.ffi_cdef(), abi.FFI_MODULE), (callshim._CDEF, callshim.FFI_MODULE)]


def main():
    for cdef, module in MODULES:
        path = os.path.join(ROOT, *module.split(".")) + ".py"
        with tempfile.TemporaryDirectory() as scratch:
            text = prebuilt.module_text(cdef, module, os.path.join(scratch, "ffi.py"))
        with open(path, "w") as fh:
            fh.write(text)
        print("wrote", os.path.relpath(path, ROOT))


if __name__ == "__main__":
    main()
