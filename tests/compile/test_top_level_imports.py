"""The top-level package: what ``import ffigraph`` alone makes reachable."""
import subprocess
import sys


def test_import_ffigraph_alone_reaches_tensor_and_printing():
    # in a child process: this one has imported the subpackages already, which would hide a miss
    code = ("import sys, ffigraph\n"
            "x = ffigraph.tensor.dvector('x')\n"
            "f = ffigraph.function([x], x + 1, mode=ffigraph.Mode(linker='py'))\n"
            "text = ffigraph.printing.debugprint(f, file='str')\n"
            "print('Elemwise{add}' in text, 'ffigraph.cuda' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "False"]   # and a CPU-only process still never imports CUDA
