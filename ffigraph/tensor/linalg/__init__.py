"""Linear algebra: PyTensor's ``pytensor.tensor.linalg`` names (``slinalg`` and ``nlinalg`` hold
the same), batched over leading axes, with C code calling LAPACK from the OpenBLAS that ``dot``
uses (``lapack_c``), gradients, and ``numpy.linalg.LinAlgError`` (``LinAlgError`` here) when a
matrix is not positive definite or is singular."""
from numpy.linalg import LinAlgError

from ffigraph.tensor.linalg.cholesky import Cholesky, CholeskyGrad, cholesky
from ffigraph.tensor.linalg.eigen import Eigh, Eigvalsh, eigh, eigvalsh
from ffigraph.tensor.linalg.inverse import MatrixInverse, inv, matrix_inverse
from ffigraph.tensor.linalg.norm import norm
from ffigraph.tensor.linalg.pinv_lstsq import lstsq, pinv
from ffigraph.tensor.linalg.power import Expm, expm, matrix_power
from ffigraph.tensor.linalg.qr import QR, qr
from ffigraph.tensor.linalg.solve import Solve, cho_solve, solve
from ffigraph.tensor.linalg.summary import Det, SLogDet, det, slogdet
from ffigraph.tensor.linalg.svd import SVD, svd
from ffigraph.tensor.linalg.triangular import SolveTriangular, solve_triangular
from ffigraph.tensor.products import kron

__all__ = ["LinAlgError", "Cholesky", "CholeskyGrad", "cholesky", "SolveTriangular", "solve_triangular", "Solve",
           "solve", "cho_solve", "MatrixInverse", "inv", "matrix_inverse", "Det", "det", "SLogDet", "slogdet",
           "Eigh", "Eigvalsh", "eigh", "eigvalsh", "SVD", "svd", "QR", "qr", "pinv", "lstsq", "norm", "matrix_power",
           "Expm", "expm", "kron"]
