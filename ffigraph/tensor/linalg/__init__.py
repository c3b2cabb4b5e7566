"""Linear algebra: PyTensor's ``pytensor.tensor.linalg`` names (``slinalg`` and ``nlinalg`` hold
the same), batched over leading axes, with C code calling LAPACK from the OpenBLAS that ``dot``
uses (``lapack_c``), gradients, and ``numpy.linalg.LinAlgError`` (``LinAlgError`` here) when a
matrix is not positive definite or is singular."""
from numpy.linalg import LinAlgError

from ffigraph.tensor.linalg.cholesky import Cholesky, cholesky
from ffigraph.tensor.linalg.triangular import SolveTriangular, solve_triangular

__all__ = ["LinAlgError", "Cholesky", "cholesky", "SolveTriangular", "solve_triangular"]
