"""Loops over graphs: ``scan`` (Theano's and PyTensor's), its ``Scan`` op and ``until``.

As in PyTensor, ``ffigraph.scan`` the attribute is the function once ``import ffigraph``
has run (the package stays importable as ``ffigraph.scan.basic`` and friends).
"""
from ffigraph.scan.basic import scan
from ffigraph.scan.op import Scan
from ffigraph.scan.utils import ScanInfo, until
from ffigraph.scan.views import foldl, foldr, map, reduce

__all__ = ["scan", "Scan", "ScanInfo", "until", "map", "reduce", "foldl", "foldr"]

from ffigraph.scan import rewriting as _rewriting  # noqa: E402,F401  (registers the Scan rewrites)
from ffigraph.scan import blockwise as _blockwise  # noqa: E402,F401  (compiles Blockwise nodes as loops)
