"""Python code that the C linker writes at run time (the per-arity call of a compiled function,
marshal.CallBlock.arity_call), compiled once: marshalled in this process and in the compile cache.

Compiling the call written for a function with many inputs and outputs (a 20-layer network's
training step: 42 in, 41 out) takes some 12 ms, a fifth of a warm ``function()``. The code object
depends only on the text and the interpreter, so it is stored under the SHA-256 of both in the
cache's ``pycode`` folder, as private as its libraries (cache.publish_private_file: the owner's
alone, atomic; a file another user owns or others may write is refused, since it would be run),
and read back by the next process. An unreadable or foreign file is compiled again and replaced.
"""
from __future__ import annotations

import hashlib
import marshal
import os
import sys
import threading

from ffigraph.linkers.c import cache

# (filename, source) -> the marshalled code, for this process. Not the code object itself: each
# caller gets a fresh one, since PyPy's code objects keep the globals they last ran with (here a
# compiled function's call namespace, which holds its library open).
_memo = {}
_lock = threading.Lock()
_MAGIC = ("ffigraph-pycode-1 %s %s" % (sys.implementation.cache_tag, sys.version)).encode()


def compiled(source: str, filename: str):
    """``compile(source, filename, "exec")``, from this process's memo or the compile cache when
    it was compiled before."""
    key = (filename, source)
    data = _memo.get(key)
    if data is not None:
        return marshal.loads(data)
    digest = hashlib.sha256(_MAGIC + b"\0" + filename.encode() + b"\0" + source.encode()).hexdigest()
    path = os.path.join(cache.root(), cache.PYCODE, digest[:2], digest + ".marshal")
    data, code = _read(path)
    if code is None:
        code = compile(source, filename, "exec")
        data = marshal.dumps(code)
        try:
            cache.publish_private_file(os.path.join(cache.private_shard(cache.PYCODE, digest),
                                                    digest + ".marshal"), _MAGIC + b"\n" + data)
        except (OSError, cache.CacheSecurityError):   # a cache that cannot be written only costs the compile
            pass
    with _lock:
        _memo[key] = data
    return code


def _read(path):
    """(the marshalled code, the code object) stored at ``path``, or (None, None)."""
    data = cache.read_private_file(path)
    if data is None or not data.startswith(_MAGIC + b"\n"):
        return None, None
    data = data[len(_MAGIC) + 1:]
    try:
        code = marshal.loads(data)
    except (ValueError, EOFError, TypeError):
        return None, None
    return (data, code) if hasattr(code, "co_code") else (None, None)
