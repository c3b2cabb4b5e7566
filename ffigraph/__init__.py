"""ffigraph: a symbolic array-graph compiler in the Theano/PyTensor tradition.

Build graphs with ``ffigraph.tensor`` (``dmatrix``, ``exp``, ``dot``, ...),
compile them with ``function`` and share state with ``shared``.
"""
import logging

from ffigraph.config import config
from ffigraph.compile import DebugMode, In, Mode, MonitorMode, NanGuardMode, OpFromGraph, Out, function, shared
from ffigraph.graph import Apply, Constant, FunctionGraph, Op, Type, Variable, clone_replace, graph_replace
from ffigraph.gradient import Lop, Rop, grad, hessian, jacobian, verify_grad
# the subpackages users reach as attributes (``ffigraph.tensor.dvector``, ``ffigraph.printing.debugprint``);
# last, since they build on the layers above (tensor, then printing, which may name tensor ops)
from ffigraph import tensor, printing  # noqa: E402,F401
# PyTensor's ``pytensor.pp``/``pytensor.pprint``: the infix printer
from ffigraph.printing import pp, pprint  # noqa: E402
# ``ffigraph.ifelse`` is PyTensor's module path (``from pytensor.ifelse import ifelse``)
from ffigraph import ifelse  # noqa: E402,F401
# the export layer plugs f.export() into the compile layer when imported
from ffigraph import export  # noqa: E402,F401
# Random streams make shared variables, so they live in the compile layer; users import them from
# the tensor paths of PyTensor (tensor.random.utils) and Theano (tensor.shared_randomstreams), which
# may not import compile (.importlinter): the root, which may name every layer, puts them there.
from ffigraph.compile.random_stream import MRG_RandomStreams, RandomStream, RandomStreams  # noqa: E402
from ffigraph.compile.random_stream import RandomStateSharedVariable as _RandomStateSharedVariable  # noqa: E402
from ffigraph.tensor import shared_randomstreams as _shared_randomstreams  # noqa: E402
from ffigraph.tensor.random import utils as _random_utils  # noqa: E402

_random_utils.RandomStream = RandomStream
_shared_randomstreams.RandomStreams = RandomStreams
_shared_randomstreams.RandomStateSharedVariable = _RandomStateSharedVariable
from ffigraph.linkers import devices as _devices  # noqa: E402
# Loops and conditions sit above compile (a loop body is rewritten with the function's mode). As in
# PyTensor, ``ffigraph.scan`` is the function; it carries the package's names (``ffigraph.scan.until``).
from ffigraph import scan as _scan_package  # noqa: E402,F401
from ffigraph.scan import Scan as _Scan, foldl, foldr, map as _map, reduce as _reduce, until as _until  # noqa: E402
from ffigraph.scan.basic import scan  # noqa: E402

for _name, _value in (("scan", scan), ("Scan", _Scan), ("until", _until), ("map", _map), ("reduce", _reduce),
                      ("foldl", foldl), ("foldr", foldr), ("basic", _scan_package.basic),
                      ("op", _scan_package.op), ("utils", _scan_package.utils), ("views", _scan_package.views)):
    setattr(scan, _name, _value)

# This module is the composition root: the one place that may name every layer (docs/layers.md).


def _load_cuda():
    import ffigraph.cuda  # noqa: F401  (registers the CUDA device and its GPU rewrite)


# devices load when asked for (Mode(device='cuda')), so a CPU-only process never imports their packages
_devices.register_loader("cuda", _load_cuda, package="ffigraph.cuda")

# a library leaves output to the application: silent unless the user configures logging
logging.getLogger("ffigraph").addHandler(logging.NullHandler())

__version__ = "0.1.0"

# Theano's ``theano.clone(output, replace=None, strict=True, share_inputs=True)`` is PyTensor's
# ``clone_replace`` (ffigraph.graph.clone copies the graph between given inputs and outputs instead)
clone = clone_replace

__all__ = ["config", "function", "shared", "In", "Out", "Mode", "DebugMode", "NanGuardMode", "MonitorMode", "OpFromGraph",
           "Apply", "Constant", "FunctionGraph", "Op", "Type", "Variable", "clone", "clone_replace",
           "graph_replace", "grad", "Lop", "Rop", "jacobian", "hessian",
           "verify_grad",
           "RandomStream", "RandomStreams", "MRG_RandomStreams", "scan", "foldl", "foldr", "pp", "pprint",
           "__version__"]

# jacobian and hessian (tensor layer) loop over an expression of non-static length with scan, which sits
# above them: the root hands it down.
from ffigraph.tensor import gradient as _tensor_gradient  # noqa: E402

_tensor_gradient.register_scan(scan)
