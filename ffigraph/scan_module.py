"""Theano's ``theano.scan_module`` path: ``scan`` and ``until``."""
from ffigraph.scan.basic import scan
from ffigraph.scan.utils import until

__all__ = ["scan", "until"]
