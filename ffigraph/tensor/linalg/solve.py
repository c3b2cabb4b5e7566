"""``solve``: ``x`` with ``A x = b`` for a square ``A`` (LAPACK ``getrf`` + ``getrs``, or ``potrf`` +
``potrs`` for a positive-definite ``A``), batched, with gradients; and ``cho_solve``; as PyTensor's.

``assume_a`` (PyTensor's names, short or long):

* ``"gen"`` / ``"general"``: any square matrix, LU with partial pivoting;
* ``"sym"`` / ``"symmetric"`` (and ``"her"`` / ``"hermitian"``, the same for real matrices): a
  symmetric matrix, read from the triangle named by ``lower`` (``lower=False``: the upper one), the
  other triangle ignored; solved by LU of the symmetric matrix that triangle stands for;
* ``"pos"`` / ``"positive definite"``: a symmetric positive-definite matrix, read from the triangle
  named by ``lower``, Cholesky; a matrix that is not positive definite is a ``LinAlgError``;
* and, in ``solve`` only, as PyTensor's function: ``"lower triangular"`` / ``"upper triangular"``
  (``solve_triangular``), ``"diagonal"`` (``b`` divided by the diagonal), ``"tridiagonal"`` (the
  three middle diagonals, the rest ignored) and ``"banded"`` (a general solve: the result is the
  same).

``transposed=True`` solves ``A^T x = b`` (as PyTensor: the op on ``A^T`` with ``lower`` flipped).
``b_ndim`` (1 or 2): how many of ``b``'s last axes are one right-hand side; by default
``min(b.ndim, 2)``. A singular matrix (an exactly zero pivot) is a ``numpy.linalg.LinAlgError``
naming the node (from C: FFG_ERR_LINALG). ``check_finite`` refuses inf and NaN (ValueError);
``overwrite_a`` / ``overwrite_b`` are accepted and ignored (inputs are never overwritten).

Decided, the gradient for ``"sym"`` and ``"pos"``: PyTensor 3 returns the general-matrix gradient
``-b_bar x^T`` unchanged, which is the derivative only along symmetric perturbations. Here it is
folded onto the triangle that is read (``G + G^T`` off the diagonal of that triangle, ``G`` on the
diagonal, zero in the other triangle), the derivative of the function as computed; along any
symmetric perturbation (e.g. when ``A`` is built symmetric) the two agree.
"""
from __future__ import annotations

import numpy as np

from ffigraph.tensor.basic import as_tensor_variable
from ffigraph.tensor.linalg import lapack_c
from ffigraph.tensor.linalg.blockwise import mT, sum_batch_to, triangle_masks
from ffigraph.tensor.linalg.triangular import SolveBase, _substitute, default_b_ndim, solve_triangular

__all__ = ["Solve", "solve", "cho_solve"]

_ASSUME = {"gen": "gen", "general": "gen", "sym": "sym", "symmetric": "sym", "her": "sym", "hermitian": "sym",
           "pos": "pos", "positive definite": "pos"}


def _symmetric(a, lower):
    """The symmetric matrix the ``lower`` (or upper) triangle of ``a`` stands for."""
    return np.tril(a) + np.tril(a, -1).T if lower else np.triu(a) + np.triu(a, 1).T


class Solve(SolveBase):
    """``x`` with ``A x = b`` (see the module doc)."""

    __props__ = ("assume_a", "lower", "check_finite", "b_ndim")
    what = "solve"
    c_version = (1,)

    def __init__(self, assume_a="gen", lower=False, check_finite=True, b_ndim=2, overwrite_a=False,
                 overwrite_b=False):
        key = assume_a.lower() if isinstance(assume_a, str) else assume_a
        if key not in _ASSUME:
            raise ValueError("solve: assume_a must be one of %s, got %r" % (", ".join(map(repr, _ASSUME)), assume_a))
        if b_ndim not in (1, 2):
            raise ValueError("solve: b_ndim must be 1 or 2, got %r" % (b_ndim,))
        self.assume_a = _ASSUME[key]
        self.lower = bool(lower)
        self.check_finite = bool(check_finite)
        self.b_ndim = int(b_ndim)

    def core_perform(self, a, b):
        n = a.shape[0]
        if n == 0 or b.size == 0:
            return (np.zeros(b.shape, a.dtype),)
        if self.assume_a == "pos":
            try:
                low = np.linalg.cholesky(_symmetric(a, self.lower))
            except np.linalg.LinAlgError:
                raise np.linalg.LinAlgError("solve: the matrix is not positive definite") from None
            y = _substitute(low, b, lower=True)
            return (_substitute(low.T, y, lower=False).astype(a.dtype),)
        m = _symmetric(a, self.lower) if self.assume_a == "sym" else a
        try:
            x = np.linalg.solve(m, b)
        except np.linalg.LinAlgError:
            raise np.linalg.LinAlgError("solve: singular matrix") from None
        return (np.asarray(x, a.dtype),)

    def L_op(self, inputs, outputs, output_grads):
        """PyTensor's ``SolveBase`` gradient (Giles 2008), batched: ``b_bar = A^-T x_bar`` (the op on
        ``A^T`` with ``lower`` flipped), ``A_bar = -b_bar x^T``; for ``"sym"`` / ``"pos"`` folded onto
        the triangle read (see the module doc)."""
        from ffigraph.tensor.basic import switch
        from ffigraph.tensor.products import matmul

        a, b = inputs
        (x,), (gx,) = outputs, output_grads
        flipped = Solve(assume_a=self.assume_a, lower=not self.lower, check_finite=False, b_ndim=self.b_ndim)
        gb = flipped(mT(a), gx)
        if self.b_ndim == 1:
            ga = -(gb[..., :, None] * x[..., None, :])
        else:
            ga = -matmul(gb, mT(x))
        if self.assume_a != "gen":
            below, on = triangle_masks(a)
            ga = switch(below if self.lower else mT(below), ga + mT(ga), switch(on, ga, 0.0))
        return [sum_batch_to(ga, a), sum_batch_to(gb, b)]

    # ---- C
    def c_routines(self, node):
        return ["potrf", "potrs"] if self.assume_a == "pos" else ["getrf", "getrs"]

    def c_core_out_shape(self, node, d):
        return [list(d.ins[1].dims)]

    def c_workspace(self, node, d):
        n, b = d.ins[0].dims[0], d.ins[1]
        nrhs = b.dims[1] if self.b_ndim == 2 else "1"
        work = [("a, column-major, factored in place", d.T, "%s * %s" % (n, n)),
                ("b, column-major, solved in place", d.T, "%s * %s" % (n, nrhs))]
        if self.assume_a != "pos":
            work.append(("the pivots", "int64_t", n))
        return work

    def c_core(self, node, d):
        a, b, z = d.ins[0], d.ins[1], d.outs[0]
        wa, wb = d.work[0].var, d.work[1].var
        nrhs = b.dims[1] if self.b_ndim == 2 else "1"
        bcs = b.strides[1] if self.b_ndim == 2 else "0"
        uplo = "L" if self.lower else "U"
        lines = ["const int64_t n = %s, nrhs = %s;" % (a.dims[0], nrhs),
                 "const int64_t ld = n > 0 ? n : 1;",
                 "int64_t info = 0;"]
        finite = "_finite" if self.check_finite else ""
        loads = ["ffg_la_load%s_%s(%s, %s, n, n, %s, %s)" % (finite, d.tag, wa, a.ptr, a.strides[0], a.strides[1]),
                 "ffg_la_load%s_%s(%s, %s, n, nrhs, %s, %s)" % (finite, d.tag, wb, b.ptr, b.strides[0], bcs)]
        if self.check_finite:   # (the check fused into the copy, as solve_triangular's)
            for k, load in enumerate(loads):
                lines += ["if (!%s) {" % load,
                          '    ffg_set_error(%s, FFG_ERR_VALUE, -1, "%s: input %d must not contain infs or NaNs '
                          '(batch entry %%lld)", (long long)bi);' % (d.err, d.label, k),
                          "    " + d.fail,
                          "}"]
        else:
            lines += [load + ";" for load in loads]
        if self.assume_a == "pos":
            lines += ["const char uplo = '%s';" % uplo,
                      "if (n > 0 && nrhs > 0)",
                      "    %s(&uplo, &n, %s, &ld, &info, 1);" % (d.sym["potrf"], wa),
                      lapack_c.info_failure(d, "potrf", "the matrix is not positive definite (its leading minor "
                                            "of order %lld is not; batch entry %lld)"),
                      "if (n > 0 && nrhs > 0)",
                      "    %s(&uplo, &n, &nrhs, %s, &ld, %s, &ld, &info, 1);" % (d.sym["potrs"], wa, wb),
                      lapack_c.info_failure(d, "potrs", "potrs failed (%lld; batch entry %lld)")]
        else:
            piv = d.work[2].var
            if self.assume_a == "sym":
                # the other triangle from the one read (column-major: element (i, j) at i + j n)
                src, dst = ("i + j * n", "j + i * n") if self.lower else ("j + i * n", "i + j * n")
                lines += ["{",
                          "    int64_t i, j;   /* the symmetric matrix of the %s triangle */"
                          % ("lower" if self.lower else "upper"),
                          "    for (j = 0; j < n; ++j)",
                          "        for (i = j + 1; i < n; ++i)",
                          "            %s[%s] = %s[%s];" % (wa, dst, wa, src),
                          "}"]
            lines += ["const char trans = 'N';",
                      "if (n > 0 && nrhs > 0)",
                      "    %s(&n, &n, %s, &ld, %s, &info);" % (d.sym["getrf"], wa, piv),
                      lapack_c.info_failure(d, "getrf", "singular matrix (pivot %lld is exactly zero; batch "
                                            "entry %lld)"),
                      "if (n > 0 && nrhs > 0)",
                      "    %s(&trans, &n, &nrhs, %s, &ld, %s, %s, &ld, &info, 1);" % (d.sym["getrs"], wa, piv, wb),
                      lapack_c.info_failure(d, "getrs", "getrs failed (%lld; batch entry %lld)")]
        lines.append("ffg_la_store_%s(%s, %s, n, nrhs, ld);" % (d.tag, z.ptr, wb))
        return "\n".join(lines)


def solve(a, b, *, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True, assume_a="gen",
          transposed=False, b_ndim=None):
    """``x`` with ``a x = b`` (``a^T x = b`` when ``transposed``), batched over leading axes, as
    PyTensor's ``solve`` (see the module doc for ``assume_a`` and ``lower``)."""
    kind = assume_a.lower() if isinstance(assume_a, str) else assume_a
    a, b = as_tensor_variable(a), as_tensor_variable(b)
    if kind in ("lower triangular", "upper triangular"):
        return solve_triangular(a, b, lower=kind.startswith("lower"), trans=1 if transposed else 0,
                                check_finite=check_finite, b_ndim=b_ndim)
    b_ndim = default_b_ndim(b, b_ndim)
    if kind == "diagonal":
        from ffigraph.tensor.construct import diagonal

        diag = diagonal(a, 0, a.ndim - 2, a.ndim - 1)
        return b / diag if b_ndim == 1 else b / diag[..., :, None]
    if kind == "tridiagonal":
        from ffigraph.tensor.construct import tri
        from ffigraph.tensor.shapes import shape_i

        n = shape_i(a, a.ndim - 1)
        a = a * (tri(n, n, 1, dtype=a.dtype) - tri(n, n, -2, dtype=a.dtype))
        kind = "gen"
    elif kind == "banded":
        kind = "gen"
    if kind not in _ASSUME:
        raise ValueError("solve: assume_a must be one of %s, 'lower triangular', 'upper triangular', 'diagonal', "
                         "'tridiagonal' or 'banded', got %r" % (", ".join(map(repr, _ASSUME)), assume_a))
    if transposed:
        a, lower = mT(a), not lower
    return Solve(assume_a=kind, lower=lower, check_finite=check_finite, b_ndim=b_ndim)(a, b)


def cho_solve(c_and_lower, b, *, check_finite=True, b_ndim=None):
    """``x`` with ``A x = b`` given the Cholesky factor ``c`` of ``A`` (``(c, lower)``, as
    ``cho_factor`` or ``cholesky`` gives it: ``A = c c^T`` when ``lower``, ``A = c^T c`` otherwise),
    batched, as PyTensor's ``cho_solve``. Two triangular solves (``solve_triangular``: its C code
    and gradient; only ``c``'s triangle named by ``lower`` is read)."""
    c, lower = c_and_lower
    lower = bool(lower)
    b_ndim = default_b_ndim(b, b_ndim)
    # lower: c c^T x = b, y = c^-1 b, x = c^-T y; upper: c^T c x = b, y = c^-T b, x = c^-1 y
    y = solve_triangular(c, b, lower=lower, trans=0 if lower else 1, check_finite=check_finite, b_ndim=b_ndim)
    return solve_triangular(c, y, lower=lower, trans=1 if lower else 0, check_finite=False, b_ndim=b_ndim)
