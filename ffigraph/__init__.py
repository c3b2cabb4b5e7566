"""ffigraph: a symbolic array-graph compiler in the Theano/PyTensor tradition.

Build graphs with ``ffigraph.tensor`` (``dmatrix``, ``exp``, ``dot``, ...),
compile them with ``function`` and share state with ``shared``.
"""
import logging

from ffigraph.config import config
from ffigraph.compile import DebugMode, In, Mode, MonitorMode, NanGuardMode, Out, function, shared
from ffigraph.graph import Apply, Constant, FunctionGraph, Op, Type, Variable
from ffigraph.gradient import grad, hessian, jacobian, verify_grad
# the subpackages users reach as attributes (``ffigraph.tensor.dvector``, ``ffigraph.printing.debugprint``);
# last, since they build on the layers above (tensor, then printing, which may name tensor ops)
from ffigraph import tensor, printing  # noqa: E402,F401

# a library leaves output to the application: silent unless the user configures logging
logging.getLogger("ffigraph").addHandler(logging.NullHandler())

__version__ = "0.1.0"

__all__ = ["config", "function", "shared", "In", "Out", "Mode", "DebugMode", "NanGuardMode", "MonitorMode",
           "Apply", "Constant", "FunctionGraph", "Op", "Type", "Variable", "grad", "jacobian", "hessian", "verify_grad",
           "__version__"]
