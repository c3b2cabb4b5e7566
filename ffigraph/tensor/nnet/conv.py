"""Theano 0.x's ``theano.tensor.nnet.conv.conv2d``, mapped onto ``AbstractConv2d``.

``conv2d(input, filters, image_shape=None, filter_shape=None, border_mode='valid', subsample=(1, 1),
**kargs)``: always a true convolution (the filters flipped), with the border modes 'valid' and
'full' only (as the old ``ConvOp``); the old op's tuning arguments (``unroll_batch``,
``unroll_kern``, ``unroll_patch``, ``openmp``, ``verbose``, ``version``, ``direction_hint``,
``kshp_logical_top_aligned``) are accepted and ignored, others are a TypeError;
``imshp_logical``/``kshp_logical`` (its upsampling) are not implemented.
"""
from __future__ import annotations

from ffigraph.tensor.nnet.abstract_conv import AbstractConv2d

__all__ = ["conv2d"]

# the old ConvOp's arguments that tuned its C code: they do not change the result
_TUNING = ("unroll_batch", "unroll_kern", "unroll_patch", "openmp", "verbose", "version", "direction_hint",
           "kshp_logical_top_aligned")


def conv2d(input, filters, image_shape=None, filter_shape=None, border_mode="valid", subsample=(1, 1), **kargs):
    """The 2D convolution of ``input`` (batch, channels, rows, cols) with ``filters`` (nkern,
    channels, rows, cols), Theano 0.x's: the filters are flipped (a true convolution);
    ``border_mode`` 'valid' or 'full'; ``subsample`` the strides; ``image_shape``/``filter_shape``
    optional shape hints (ints or None)."""
    if border_mode not in ("valid", "full"):
        raise ValueError("conv.conv2d: border_mode must be 'valid' or 'full', got %r" % (border_mode,))
    for name in ("imshp_logical", "kshp_logical"):
        if kargs.get(name) is not None:
            raise NotImplementedError("conv.conv2d: %s (the old ConvOp's upsampling) is not implemented" % name)
    unknown = sorted(k for k in kargs if k not in _TUNING and k not in ("imshp_logical", "kshp_logical"))
    if unknown:
        raise TypeError("conv.conv2d: unexpected keyword arguments %s" % unknown)
    op = AbstractConv2d(imshp=image_shape, kshp=filter_shape, border_mode=border_mode, subsample=subsample,
                        filter_flip=True)
    return op(input, filters)
