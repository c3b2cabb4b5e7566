"""PyTensor's ``pytensor.tensor.nlinalg`` path: the names of ``ffigraph.tensor.linalg``."""
from ffigraph.tensor.linalg import *  # noqa: F401,F403
from ffigraph.tensor.linalg import __all__  # noqa: F401
