"""Theano's ``theano.misc`` (PyTensor's ``pytensor.misc``): ``pkl_utils``."""
