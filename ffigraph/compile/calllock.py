"""The locks that make a compiled function safe to call from several threads.

A ``Function`` owns mutable per-call machinery: the library state (its frame
of C locals), the preallocated ABI structs, the storage cells. So calls of
*one* function take turns, behind that function's lock, while *different*
functions run at the same time (cffi releases the GIL for the C call).

A call that updates shared variables also holds each updated variable's lock,
taken in one global order (creation order), from reading the old values to
committing the new ones. Two functions that update the same variable
therefore never lose an update, and functions with disjoint variables still
run in parallel. Reading a shared variable takes no lock: a call sees the
value committed before it started.

A lock is not re-entrant: a call that reaches its own function again (from
an op's Python code, say) would wait for itself forever, so it is refused.
"""
from __future__ import annotations

import itertools
import threading

try:
    from _thread import get_ident
except ImportError:  # pragma: no cover - every supported Python has _thread
    from threading import get_ident

_serials = itertools.count()
_making = threading.Lock()   # two functions compiled at once must not give one variable two locks


class OwnedLock:
    """A plain lock that remembers its holder, so waiting on oneself is an error, not a hang."""

    __slots__ = ("lock", "owner", "serial", "what")

    def __init__(self, what):
        self.lock = threading.Lock()
        self.owner = None
        self.serial = next(_serials)   # the global order in which several are taken
        self.what = what

    def acquire(self):
        if not self.lock.acquire(False):
            wait_turn(self)
        self.owner = get_ident()

    def release(self):
        self.owner = None
        self.lock.release()


def wait_turn(owned):
    """Block until ``owned`` is free; refuse when this very thread holds it."""
    if owned.owner == get_ident():
        raise RuntimeError("%s was called again while this thread is still inside it (a re-entrant "
                           "call); its per-call state would be overwritten, so this is refused. Compile "
                           "a second function for the inner call." % owned.what)
    owned.lock.acquire()


def acquire_all(locks):
    """Take ``locks`` (already sorted by serial); on a refusal, give back the ones taken."""
    taken = []
    try:
        for lock in locks:
            lock.acquire()
            taken.append(lock)
    except BaseException:
        release_all(taken)
        raise


def release_all(locks):
    for lock in reversed(locks):
        lock.release()


def update_lock_of(container):
    """The lock of a shared variable's container (made on first use)."""
    with _making:
        lock = getattr(container, "update_lock", None)
        if lock is None:
            lock = container.update_lock = OwnedLock("the updates of shared variable %s" % (container.name,))
        return lock
