"""Theano's ``theano.tensor.signal``: ``pool`` (max, sum and average pooling over the last two or
three axes, with their gradient ops). Imported only by a program that pools."""
