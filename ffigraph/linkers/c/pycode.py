"""Python code that the C linker writes at run time (the per-arity call of a compiled function,
marshal.CallBlock.arity_call), compiled once: marshalled in this process and in the compile cache.

Compiling the call written for a function with many inputs and outputs (a 20-layer network's
training step: 42 in, 41 out) takes some 12 ms, a fifth of a warm ``function()``. The code object
depends only on the text and the interpreter, so it is stored under the SHA-256 of both in the
cache's ``pycode`` folder, as private as its libraries (cache.publish_private_file: the owner's
alone, atomic), with the SHA-256 of the marshalled bytes in its first line, and read back by the
next process. A file that is not sound is never unmarshalled (marshal trusts its input, and the
code would run): absent, unreadable, damaged (its hash does not match), another user's, writable
by others, a link, or in a folder that is not private. It is compiled again and, where the
folder is the user's, replaced.
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
_MAGIC = ("ffigraph-pycode-2 %s %s" % (sys.implementation.cache_tag, sys.version)).encode()


def compiled(source: str, filename: str):
    """``compile(source, filename, "exec")``, from this process's memo or the compile cache when
    it was compiled before."""
    key = (filename, source)
    data = _memo.get(key)
    if data is not None:
        return marshal.loads(data)
    digest = hashlib.sha256(_MAGIC + b"\0" + filename.encode() + b"\0" + source.encode()).hexdigest()
    data, code = _read(digest)
    if code is None:
        code = compile(source, filename, "exec")
        data = marshal.dumps(code)
        try:
            cache.publish_private_file(os.path.join(cache.private_shard(cache.PYCODE, digest),
                                                    digest + ".marshal"), file_bytes(data))
        except (OSError, cache.CacheSecurityError):   # a cache that cannot be written only costs the compile
            pass
    with _lock:
        _memo[key] = data
    return code


def file_bytes(data):
    """What a pycode file holds: the magic line, the SHA-256 of the marshalled bytes, the bytes."""
    return _MAGIC + b"\n" + hashlib.sha256(data).hexdigest().encode() + b"\n" + data


def marshalled(content):
    """The marshalled bytes of a pycode file's ``content``, or None when it is of another
    interpreter or damaged (its hash does not match)."""
    head = _MAGIC + b"\n"
    if content is None or not content.startswith(head):
        return None
    digest, newline, data = content[len(head):].partition(b"\n")
    if not newline or hashlib.sha256(data).hexdigest().encode() != digest:
        return None
    return data


def _read(digest):
    """(the marshalled code, the code object) stored for ``digest``, or (None, None)."""
    try:
        path = cache.check_path(os.path.join(cache.root(), cache.PYCODE, digest[:2], digest + ".marshal"))
        data = marshalled(cache.read_private_file(path))
    except (OSError, cache.CacheSecurityError):   # absent, or not only the user's: compiled again
        return None, None
    if data is None:
        return None, None
    try:
        code = marshal.loads(data)
    except (ValueError, EOFError, TypeError):
        return None, None
    return (data, code) if hasattr(code, "co_code") else (None, None)
