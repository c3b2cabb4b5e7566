"""The call path never computes from memory it does not own, and never stays locked.

Found from outside (issue "Nothing crashes, nothing lies", defects 1-3):

- a returned result that the caller changes in place (its shape, dtype, strides, or its block
  with ``resize``) and then drops was offered to the library again as the next output, so the
  next result came back with the caller's shape/dtype and wrong values, or was written into the
  block numpy had freed;
- after a failed call, ``None`` passed for an input matched the "nothing described" marker of
  that input's slot, so the call ran on the failed call's (freed) input memory;
- an interrupt (``KeyboardInterrupt``, any asynchronous exception) that arrived between taking a
  function's lock and the ``try`` that gives it back left the function locked for ever; a
  ``fork()`` while another thread was inside a function did the same to the child's copy.

Interrupts are injected at every step of a call (a trace function that raises at the k-th
event of every frame the call runs), which reaches the windows a real Ctrl-C finds by chance.
"""
import dis
import os
import signal
import sys
import threading
import warnings

import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph import function, shared
from ffigraph.compile.mode import Mode
from ffigraph.graph.basic import Apply
from ffigraph.graph.op import Op

IS_PYPY = hasattr(sys, "pypy_version_info")
C_LINKERS = ["c", "cvm"]


def _vector_sum(linker):
    x, y = T.dvector("x"), T.dvector("y")
    return function([x, y], x + y, mode=Mode(linker=linker) if linker else None)


# ------------------------------------------------------------------ 1. output reuse


def _change(r, how):
    if how == "shape":
        r.shape = (2, 2)
    elif how == "dtype":
        r.dtype = np.int64
    elif how == "strides":
        with warnings.catch_warnings():   # (numpy 2.4 deprecates setting strides; it still works)
            warnings.simplefilter("ignore", DeprecationWarning)
            r.strides = (0,)
    elif how == "resize":
        r.resize((100000,), refcheck=False)   # a new block; the old one is freed
    elif how == "resize back":
        r.resize((100000,), refcheck=False)
        r.resize((4,), refcheck=False)


@pytest.mark.parametrize("linker", C_LINKERS + [None])
def test_a_result_changed_in_place_and_dropped_is_never_written_again(linker):
    f = _vector_sum(linker)
    b = np.ones(4)
    for k, how in enumerate(["shape", "dtype", "strides", "resize", "resize back", "shape"]):
        a = np.arange(4.0) + 10 * k
        r = f(a, b)
        np.testing.assert_array_equal(r, a + b)
        if how.startswith("resize") and not r.flags.owndata:
            continue   # (PyPy: a result is a row of a batch; numpy refuses to resize a view)
        _change(r, how)
        del r   # the caller drops it: only the function's spare list holds it now
        a2 = a * 2 - 1
        got = f(a2, b)
        assert got.shape == (4,) and got.dtype == np.float64, (how, got.shape, got.dtype)
        np.testing.assert_array_equal(got, a2 + b, err_msg=how)
        got2 = f(a, b)   # and the call after that one
        np.testing.assert_array_equal(got2, a + b, err_msg=how)
        np.testing.assert_array_equal(got, a2 + b, err_msg="a held result was overwritten: " + how)


def test_a_kept_result_is_not_overwritten_and_a_dropped_one_is_reused():
    f = _vector_sum("c")
    a, b = np.arange(3.0), np.ones(3)
    kept = f(a, b)
    second = f(a * 2, b)
    np.testing.assert_array_equal(kept, a + b)
    np.testing.assert_array_equal(second, 2 * a + b)
    # the reuse itself is still there (a loop that drops each result allocates nothing) where the
    # call can prove the dropped array is as the library left it
    first_address = f(a, b).__array_interface__["data"][0]
    again = f(a, b).__array_interface__["data"][0]
    if not IS_PYPY and f._entry is not None and "packed_call" in f._entry.source:
        assert again == first_address


# ------------------------------------------------------------------ 2. None and other non-arrays


@pytest.mark.parametrize("linker", C_LINKERS + [None])
def test_none_is_refused_fresh_and_after_a_failed_call(linker):
    f = _vector_sum(linker)
    n = 5
    with pytest.raises(TypeError, match="None"):
        f(None, np.ones(n))
    with pytest.raises(ValueError):
        f(np.full(n, 2.0), np.ones(7))   # fails (shapes): the slots described that call's arrays
    with pytest.raises(TypeError, match="None"):
        f(None, np.ones(n))
    with pytest.raises(TypeError, match="None"):
        f(np.ones(n), None)
    np.testing.assert_array_equal(f(np.full(n, 2.0), np.ones(n)), np.full(n, 3.0))
    with pytest.raises(TypeError, match="None"):
        f(None, np.ones(n))   # after a call that succeeded, too


@pytest.mark.parametrize("linker", C_LINKERS)
def test_a_failed_call_forgets_its_inputs(linker):
    x, y = T.dvector("x"), T.dvector("y")
    f = function([x, y], x * y, mode=Mode(linker=linker))
    f.trust_input = True   # the identity check alone decides whether an input is described again
    a = np.full(5, 2.0)
    with pytest.raises(ValueError):
        f(a, np.ones(7))
    a[:] = 3.0
    np.testing.assert_array_equal(f(a, np.ones(5)), np.full(5, 3.0))


# ------------------------------------------------------------------ 3. interrupts and fork


class Interrupt(BaseException):
    """Stands for a KeyboardInterrupt (not one: pytest would stop the session on a stray one)."""


# Where CPython 3.11 delivers a signal's exception: at a RESUME (a function starts), and right after a
# call or a backward jump returns control (its eval-breaker checks); never between other
# instructions, so taking a lock and entering its ``with`` block is one step. PyPy: every event.
_DELIVERY_AFTER = {dis.opmap[name] for name in ("CALL", "CALL_FUNCTION_EX", "JUMP_BACKWARD") if name in dis.opmap}
_RESUME = dis.opmap.get("RESUME")
_PACKAGE = os.path.dirname(os.path.abspath(ffigraph.__file__))
_TRACED = os.path.join(_PACKAGE, "compile") if IS_PYPY else _PACKAGE


def _interrupt_at(k, call):
    """Run ``call()`` with an Interrupt raised at the k-th point where the interpreter may deliver a
    signal, in any frame it runs; True if it was interrupted."""
    count = [0]
    previous = {}

    def deliverable(frame, event):
        if IS_PYPY or _RESUME is None:
            return event in ("line", "opcode")
        if event != "opcode":
            return False
        op = frame.f_code.co_code[frame.f_lasti]
        after = previous.get(frame)
        previous[frame] = op
        return op == _RESUME or after in _DELIVERY_AFTER

    def tracer(frame, event, arg):
        frame.f_trace_opcodes = True
        if deliverable(frame, event):
            count[0] += 1
            if count[0] == k:
                raise Interrupt()
        return tracer

    def calls(frame, event, arg):
        # only ffigraph's frames and the calls it writes: an interrupt inside numpy's Python code
        # reaches them as one at the step that called numpy. (PyPy, where every line is a step and
        # tracing is slow: the calls written out and ffigraph.compile's frames, where the locks are)
        name = frame.f_code.co_filename
        if name.startswith(_TRACED) or name.startswith("<ffigraph"):
            return tracer(frame, event, arg)
        return None

    sys.settrace(calls)
    try:
        call()
    except Interrupt:
        return True
    finally:
        sys.settrace(None)
    return False


def _interrupted_everywhere(f, call, check, most=3000):
    """Interrupt ``call`` at every step, one step per try; after each try the function is free
    (its lock and its update locks) and ``check()`` (real calls) gives numpy's answers."""
    locks = [f._lock] + list(f._update_locks)
    tries = 0
    for k in range(1, most):
        interrupted = _interrupt_at(k, call)
        for lock in locks:
            assert not lock.taken(), "interrupted at step %d: %s stays locked" % (k, lock.what)
        check()
        tries += 1
        if not interrupted:
            break
    else:
        raise AssertionError("the call was still being interrupted after %d steps" % most)
    assert tries > 10


@pytest.mark.parametrize("linker", ["c", "cvm", "c|py"])
def test_an_interrupt_at_any_step_of_a_call_leaves_the_function_working(linker):
    f = _vector_sum(linker)
    a, b = np.arange(6.0), np.ones(6)
    f(a, b)

    def check():
        np.testing.assert_array_equal(f(a, b), a + b)
        c = np.arange(3.0)[::-1]
        np.testing.assert_array_equal(f(c, c), 2 * c)

    _interrupted_everywhere(f, lambda: f(a * 3, b), check)
    _interrupted_everywhere(f, lambda: f(x=a, y=b), check)   # keywords: the generic path


@pytest.mark.parametrize("linker", ["c", "c|py"])
def test_an_interrupt_during_a_call_with_updates_loses_no_lock(linker):
    w = shared(np.zeros(3), name="w")
    x = T.dvector("x")
    f = function([x], w.sum(), updates=[(w, w + x)], mode=Mode(linker=linker))
    g = function([x], w * 2, updates=[(w, w - x)], mode=Mode(linker=linker))
    ones = np.ones(3)

    def check():
        before = w.get_value()
        np.testing.assert_allclose(f(ones), before.sum(), rtol=1e-15)
        np.testing.assert_array_equal(w.get_value(), before + 1)
        np.testing.assert_array_equal(g(ones), 2 * (before + 1))
        np.testing.assert_array_equal(w.get_value(), before)

    _interrupted_everywhere(f, lambda: f(ones), check)
    _interrupted_everywhere(g, lambda: g(x=ones), check)


def _child_calls(f, a, b):
    """In a forked child: call ``f`` once (an alarm ends a hang); exit 0 if it answered right."""
    pid = os.fork()
    if pid == 0:   # the child: only the forking thread came along
        code = 3
        try:
            signal.alarm(20)
            code = 0 if np.array_equal(f(a, b), a + b) else 2
        finally:
            os._exit(code)
    return pid


class _Blocking(Op):
    """x -> x, in Python, standing still until the test's event is set (a call that is inside)."""

    __props__ = ()

    def __init__(self, inside=None, leave=None):
        self.inside, self.leave = inside, leave
        self.blocks = None   # the thread that stands still (set by the test)

    def make_node(self, x):
        x = T.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, out):
        if threading.get_ident() == self.blocks and not self.leave.is_set():
            self.inside.set()
            self.leave.wait(60)
        out[0][0] = inputs[0].copy()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.parametrize("linker", ["c", "c|py"])
def test_a_fork_while_another_thread_is_inside_the_function(linker):
    x, y = T.dvector("x"), T.dvector("y")
    inside, leave = threading.Event(), threading.Event()
    small, one = np.arange(4.0), np.ones(4)
    if linker == "c":
        # a whole-graph library: the other thread is inside its C code, on a long input
        out = x + y + T.exp(T.sin(x) * T.cos(y)).sum() * 0
        f = function([x, y], out, mode=Mode(linker=linker))
        big = np.ones(10_000_000)
        worker = threading.Thread(target=lambda: f(big, big))
    else:
        # a Python op that stands still inside the call until told to go
        op = _Blocking(inside, leave)
        f = function([x, y], op(x) + y, mode=Mode(linker=linker))

        def stand_still():
            op.blocks = threading.get_ident()
            f(small, one)

        worker = threading.Thread(target=stand_still)
    f(small, one)
    worker.start()
    try:
        if linker == "c":
            while worker.is_alive() and not f._lock.taken():
                pass
        else:
            assert inside.wait(30)
        pid = _child_calls(f, small, one)
        still_inside = worker.is_alive() and f._lock.taken()
    finally:
        leave.set()
        worker.join(60)
    _, status = os.waitpid(pid, 0)
    if not still_inside:
        pytest.skip("the other thread's call ended before the fork (a slow fork?)")
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, \
        "the child's call hung or failed (wait status %r)" % (status,)
    np.testing.assert_array_equal(f(small, one), small + one)


def test_a_call_holding_many_update_locks_is_written_flat():
    # each lock held in its own nested block would pass Python's 20 nested blocks at about nine
    # updated variables (SyntaxError when the call is written): they are taken in one step
    values = [shared(np.full(2, float(i)), name="s%d" % i) for i in range(24)]
    x = T.dvector("x")
    f = function([x], [x + s for s in values], updates=[(s, s * 2 + x) for s in values])
    outs = f(np.ones(2))
    for i, (out, s) in enumerate(zip(outs, values)):
        np.testing.assert_array_equal(out, np.full(2, i + 1.0))
        np.testing.assert_array_equal(s.get_value(), np.full(2, 2.0 * i + 1))
    assert not any(lock.taken() for lock in [f._lock] + f._update_locks)
