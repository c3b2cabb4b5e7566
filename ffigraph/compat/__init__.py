"""Opt-in layers that let code written for another library run on ffigraph.

Nothing here is imported by ``import ffigraph``; each module is imported by name:

* ``ffigraph.compat.theano``: ``install()`` makes ``import theano`` (and its usual submodules)
  resolve to ffigraph's objects of the same meaning; ``python -m ffigraph.compat.theano script.py``
  runs a Theano script that way (docs/tutorial/theano.rst, "Running Theano code").
"""
