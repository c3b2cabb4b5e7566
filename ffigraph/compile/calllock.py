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

A call that reaches its own function again (from an op's Python code, say)
would overwrite its own per-call state, or wait for itself forever: it is
refused.

No interrupt leaves a lock taken. A ``KeyboardInterrupt`` (any asynchronous
exception) can arrive between two steps of Python code: on CPython 3.10 and
later only where a call returns or a loop jumps back, on PyPy before any
instruction. So a call holds each lock by a ``with`` statement inside a
``try`` whose handler gives the lock back if this thread still holds it (an
interrupt between the block's end and the lock's ``__exit__``, which PyPy
can deliver). The locks are re-entrant locks only so that "held by this
thread" is known exactly (``_is_owned``, recorded by the lock itself as it
is taken); a second call by the holding thread is refused, unless no call of
this thread is inside (its frames say so): then an interrupt of the handler
itself left it taken, and it is given back.

``fork()`` copies the locks as they are, also those that another thread held
at that moment, which does not exist in the child: so the child gets a free
copy of each of those (``os.register_at_fork``), as CPython does for its own,
and each such lock's ``on_fork`` hooks give the function new per-call state,
since the vanished thread may have left it half written.
"""
from __future__ import annotations

import itertools
import os
import sys
import threading
import weakref

try:
    from _thread import get_ident
except ImportError:  # pragma: no cover - every supported Python has _thread
    from threading import get_ident

_serials = itertools.count()
_making = threading.Lock()   # two functions compiled at once must not give one variable two locks
_every_lock = weakref.WeakSet()   # for a forked child, which gets every taken one anew
_registering = threading.Lock()   # (its own lock: update_lock_of makes locks while holding _making)


class OwnedLock:
    """A lock that knows whether this thread holds it, so waiting on oneself is an error, not a hang.

    ``entries``: the code of each generated call that holds it (how a call inside is recognised);
    ``on_fork``: callables run in a forked child when another thread held the lock at the fork."""

    __slots__ = ("lock", "serial", "what", "entries", "on_fork", "__weakref__")

    def __init__(self, what):
        self.lock = threading.RLock()
        self.serial = next(_serials)   # the global order in which several are taken
        self.what = what
        self.entries = set()
        self.on_fork = []
        with _registering:
            _every_lock.add(self)

    def taken(self):
        """Whether any thread holds the lock now."""
        if self.lock._is_owned():
            return True
        if self.lock.acquire(False):
            self.lock.release()
            return False
        return True


def reentered(owned, frames_up=2):
    """This thread holds ``owned``: refuse the call if a call of this thread holding it is inside
    (on the stack, above the asking call ``frames_up`` frames up); otherwise the lock was left taken
    by an interrupt, and is given back."""
    frame = sys._getframe(frames_up)
    while frame is not None:
        code = frame.f_code
        if code in owned.entries or (code is _HOLDING_CODE and frame.f_locals.get("owned") is owned):
            raise RuntimeError("%s was called again while this thread is still inside it (a re-entrant "
                               "call); its per-call state would be overwritten, so this is refused. Compile "
                               "a second function for the inner call." % owned.what)
        frame = frame.f_back
    while owned.lock._is_owned():
        owned.lock.release()


def take(locks):
    """Take each of ``locks`` in order, for the generated call that asks (inside its ``try``)."""
    for owned in locks:
        if owned.lock._is_owned():
            reentered(owned, 3)
        owned.lock.acquire()


def give_back(locks):
    """Give back each of ``locks`` that this thread holds, last taken first."""
    for owned in reversed(locks):
        while owned.lock._is_owned():
            owned.lock.release()


def held_lines(body, updates=False):
    """Source lines that run ``body`` (lines that set ``result_`` and do not return) while the
    OwnedLock ``owned`` is held, and with ``updates`` the OwnedLocks ``update_locks`` after it, given
    back however the block is left. The namespace they run in has those, ``reentered``, ``take`` and
    ``give_back``; the function made of them must be added to each lock's ``entries``."""
    if updates:
        body = ["take(update_locks)", "try:"] + _indented(body) + ["finally:", "    give_back(update_locks)"]
    return (["if owned.lock._is_owned():", "    reentered(owned)", "try:", "    with owned.lock:"]
            + _indented(_indented(body))
            + ["except BaseException:",   # an interrupt before a lock's release ran: this thread's locks back
               "    give_back(%s)" % ("all_locks" if updates else "owned_only"),
               "    raise"])


def _indented(lines):
    return ["    " + line for line in lines]


def holding(locks, fn, *args):
    """``fn(*args)`` with each of ``locks`` (sorted by serial) held, given back however it ends."""
    return _holding(locks, 0, fn, args)


def _holding(locks, i, fn, args):
    if i == len(locks):
        return fn(*args)
    owned = locks[i]
    lock = owned.lock
    if lock._is_owned():
        reentered(owned)
    try:
        with lock:
            return _holding(locks, i + 1, fn, args)
    except BaseException:
        if lock._is_owned():   # (an interrupt before the lock's __exit__ ran)
            lock.release()
        raise


_HOLDING_CODE = _holding.__code__


def _after_fork_in_child():
    """In a child made by fork(): every lock that a thread which is not here held is free again, and
    what that thread left half done is forgotten."""
    global _making, _registering
    _making, _registering = threading.Lock(), threading.Lock()
    for owned in list(_every_lock):
        lock = owned.lock
        if lock._is_owned():
            continue   # held by the thread that forked (a call inside an op's Python code): it goes on
        if lock.acquire(False):
            lock.release()
            continue
        owned.lock = threading.RLock()
        for forget in owned.on_fork:
            forget()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def update_lock_of(container):
    """The lock of a shared variable's container (made on first use)."""
    with _making:
        lock = getattr(container, "update_lock", None)
        if lock is None:
            lock = container.update_lock = OwnedLock("the updates of shared variable %s" % (container.name,))
        return lock
