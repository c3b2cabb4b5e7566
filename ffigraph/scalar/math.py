"""PyTensor's ``pytensor.scalar.math``: the special functions among the scalar ops (each one of
``ffigraph.scalar.basic``'s table, where every scalar op lives)."""
from ffigraph.scalar.basic import (I0, I1, J0, J1, BetaLn, Erf, Erfc, Erfcinv, Erfcx, Erfinv, Gamma, GammaLn, Polygamma, polygamma, GammaInc, GammaIncC, gammainc, gammaincc,
                                   Log1mexp, Psi, Sigmoid, Softplus, TriGamma, XlogX, XlogY0, betaln, erf, erfc,
                                   erfcinv, erfcx, erfinv, gamma, gammaln, i0, i1, j0, j1, log1mexp, psi, sigmoid,
                                   softplus, tri_gamma, xlogx, xlogy0)

__all__ = ["Polygamma", "polygamma", "GammaInc", "GammaIncC", "gammainc", "gammaincc", "I0", "I1", "J0", "J1", "BetaLn", "Erf", "Erfc", "Erfcinv", "Erfcx", "Erfinv", "Gamma", "GammaLn",
           "Log1mexp", "Psi", "Sigmoid", "Softplus", "TriGamma", "XlogX", "XlogY0", "betaln", "erf", "erfc",
           "erfcinv", "erfcx", "erfinv", "gamma", "gammaln", "i0", "i1", "j0", "j1", "log1mexp", "psi", "sigmoid",
           "softplus", "tri_gamma", "xlogx", "xlogy0"]
