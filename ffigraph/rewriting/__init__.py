"""The standard rewrites, registered into ``ffigraph.graph.rewriting.optdb`` with their tags.

Order (position) and tags::

  0    merge          fast_run fast_compile
  1    canonicalize   fast_run fast_compile   (constant folding, algebraic identities, shapes)
  2    stabilize      fast_run                (log(sigmoid), log1p/expm1, softplus, log(softmax))
  3    specialize     fast_run                (cheaper forms; BLAS names: Dot22, Gemv, Gemm, Ger;
                                               a convolution's bias, batch norm and relu fused into it)
  3.5  merge_again    fast_run fast_compile
  4    fusion         fast_run                (elementwise chains and their reductions in one loop)
  4.5  gpu            gpu                     (Mode(device='cuda'): supported nodes to the GPU;
                                               registered by the CUDA package when it is loaded)
  5    inplace        fast_run                (last: it must see the final graph)

A mode selects by tag (``Mode(optimizer='fast_run')``), adds with
``including('name_or_tag')`` and drops with ``excluding(...)``; excluding
also reaches the node rewriters inside a group by their names.
"""
from __future__ import annotations

from ffigraph.graph.rewriting import optdb
from ffigraph.rewriting import canonicalize as _canonicalize  # noqa: F401  (fills the groups)
from ffigraph.rewriting import shape as _shape  # noqa: F401
from ffigraph.rewriting import stabilize as _stabilize  # noqa: F401
from ffigraph.rewriting import nnet as _nnet  # noqa: F401  (log(softmax), the fused cross-entropy)
from ffigraph.rewriting import blas as _blas  # noqa: F401  (Dot22, Gemv, Gemm, Ger: BLAS names)
from ffigraph.rewriting import conv as _conv  # noqa: F401  (conv + bias / batch norm / relu: one fused op)
from ffigraph.rewriting.constant_folding import constant_folding
from ffigraph.rewriting.fusion import fusion_rewrite
from ffigraph.rewriting.groups import canonicalize, register_canonicalize, specialize, stabilize
from ffigraph.rewriting.inplace import inplace_rewrite
from ffigraph.rewriting.merge import merge_rewrite

register_canonicalize(constant_folding, position=0)


if "merge" not in optdb:
    optdb.register("merge", merge_rewrite, "fast_run", "fast_compile", position=0)
    optdb.register("canonicalize", canonicalize, "fast_run", "fast_compile", position=1)
    optdb.register("stabilize", stabilize, "fast_run", position=2)
    optdb.register("specialize", specialize, "fast_run", position=3)
    optdb.register("merge_again", merge_rewrite, "fast_run", "fast_compile", "merge", position=3.5)
    optdb.register("fusion", fusion_rewrite, "fast_run", position=4)
    optdb.register("inplace", inplace_rewrite, "fast_run", position=5)
