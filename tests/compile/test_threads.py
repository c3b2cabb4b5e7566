"""Calling compiled functions from several threads.

The rule (ffigraph.compile.calllock): calls of one function take turns;
different functions run at the same time (the C call releases the GIL); a
call that updates shared variables holds their locks from reading to
committing, so no update is lost; one library state serves one run at a
time and says so when asked for two.

Overlap is observed, not timed: a rendezvous op counts the callers inside its
C code at once (on a counter the test owns) and returns the largest count it
saw while waiting a bounded time for a partner.
"""
import threading

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import function, shared
from ffigraph.abi import ffi
from ffigraph.compile.mode import Mode
from ffigraph.graph.basic import Apply
from ffigraph.graph.op import Op
from ffigraph.graph.c_interface import COp
from ffigraph.linkers.c.marshal import CallBlock

LINKERS = ["c", "cvm", "c|py", "py"]


def run_threads(target, n_threads):
    """Start ``n_threads`` threads of ``target(index)`` together; re-raise the first failure."""
    barrier = threading.Barrier(n_threads)
    errors = []

    def body(k):
        try:
            barrier.wait()
            target(k)
        except BaseException as err:  # noqa: B902 - handed to the main thread
            errors.append(err)

    threads = [threading.Thread(target=body, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a thread did not finish (a deadlock?)"
    if errors:
        raise errors[0]


# ------------------------------------------------------------------ one function, many threads


@pytest.mark.parametrize("linker", LINKERS)
def test_one_function_from_eight_threads_gives_every_result_right(linker):
    x, y = T.dmatrix("x"), T.dvector("y")
    f = function([x, y], [T.exp(x) * y + 1, (x - y).sum(axis=0)], mode=Mode(linker=linker))
    calls, wrong = [0] * 8, [0] * 8

    def work(k):
        rng = np.random.default_rng(k)
        for i in range(150):
            rows = 1 + (k + i) % 5   # shapes change from call to call and thread to thread
            a, b = rng.standard_normal((rows, 3)), rng.standard_normal(3)
            out0, out1 = f(a, b)
            calls[k] += 1
            if not (np.allclose(out0, np.exp(a) * b + 1) and np.allclose(out1, (a - b).sum(axis=0))):
                wrong[k] += 1

    run_threads(work, 8)
    assert calls == [150] * 8
    assert wrong == [0] * 8


def test_trusted_fast_path_from_threads_reuses_nothing_across_calls():
    x, y = T.dvector("x"), T.dvector("y")
    f = function([x, y], x + y, mode=Mode(linker="c"), trust_input=True)
    wrong = [0] * 4

    def work(k):
        a = np.full(3, float(k))
        for i in range(500):
            b = np.full(3, float(i))
            if not np.array_equal(f(a, b), a + b):
                wrong[k] += 1

    run_threads(work, 4)
    assert wrong == [0] * 4


# ------------------------------------------------------------------ overlap, observed


class Rendezvous(COp, Op):
    """Counts the callers inside its C code at once, on ``counter[0]`` (memory the test owns),
    waiting at most ``limit`` seconds for a partner; returns the largest count it saw.

    A caller that saw a partner confirms it in ``counter[1]`` and stays until the partner has
    confirmed too, so neither leaves before the other could see it."""

    __props__ = ()

    def make_node(self, counter, limit):
        counter, limit = T.as_tensor_variable(counter), T.as_tensor_variable(limit)
        return Apply(self, [counter, limit], [T.lvector()])

    def perform(self, node, inputs, out):
        raise NotImplementedError("Rendezvous runs in C only")

    def c_headers(self, **kwargs):
        return ["time.h"]

    def c_code(self, node, name, inputs, outputs, sub):
        (counter, limit), (z,) = inputs, outputs
        return """
        int64_t *count = (int64_t *)%(counter)s.data, *confirmed = count + 1;
        double seconds = *(const double *)%(limit)s.data, waited = 0.0;
        int64_t one = 1, peak = __atomic_add_fetch(count, 1, __ATOMIC_SEQ_CST);
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        while (peak < 2 && waited <= seconds) {
            int64_t seen = __atomic_load_n(count, __ATOMIC_SEQ_CST);
            if (seen > peak)
                peak = seen;
            clock_gettime(CLOCK_MONOTONIC, &t);
            waited = (double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec);
        }
        if (peak >= 2) {
            __atomic_add_fetch(confirmed, 1, __ATOMIC_SEQ_CST);
            while (__atomic_load_n(confirmed, __ATOMIC_SEQ_CST) < 2 && waited <= seconds) {
                clock_gettime(CLOCK_MONOTONIC, &t);
                waited = (double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec);
            }
        }
        __atomic_sub_fetch(count, 1, __ATOMIC_SEQ_CST);
        if (ffg_alloc_array(&%(z)s, 1, &one, sizeof(int64_t), %(allocator)s, %(err)s))
            %(fail)s
        ((int64_t *)%(z)s.data)[0] = peak;
        """ % dict(sub, counter=counter, limit=limit, z=z)

    def c_code_cache_version(self):
        return (2,)


def rendezvous_function(linker="c"):
    counter, limit = T.lvector("counter"), T.dscalar("limit")
    return function([counter, limit], Rendezvous()(counter, limit), mode=Mode(linker=linker, optimizer=None))


@pytest.mark.parametrize("linker", ["c", "cvm"])
def test_different_functions_run_at_the_same_time(linker):
    fns = [rendezvous_function(linker), rendezvous_function(linker)]
    counter, peaks = np.zeros(2, np.int64), [None, None]

    def work(k):
        peaks[k] = int(fns[k](counter, 30.0)[0])   # waits for its partner (never 30 s when parallel)

    run_threads(work, 2)
    assert peaks == [2, 2]   # both were inside C at once: the GIL was released
    assert counter[0] == 0


@pytest.mark.parametrize("linker", ["c", "cvm"])
def test_calls_of_one_function_take_turns(linker):
    f = rendezvous_function(linker)
    counter, peaks = np.zeros(2, np.int64), [None, None]

    def work(k):
        peaks[k] = int(f(counter, 0.3)[0])   # waits 0.3 s for a partner that the lock keeps out

    run_threads(work, 2)
    assert peaks == [1, 1]
    assert counter[0] == 0


def test_a_state_shared_between_threads_is_refused_not_raced():
    """Below Function: two runs on one library state. The second is refused with a message."""
    f = rendezvous_function("c")
    compiled = f.maker.linker.compiled
    counter = np.zeros(2, np.int64)
    first = []
    worker = threading.Thread(target=lambda: first.append(compiled.call([counter, np.array(10.0)])))
    worker.start()
    for _ in range(100000):   # until the first run is inside its C code
        if counter[0] == 1:
            break
        threading.Event().wait(0.001)
    assert counter[0] == 1
    other = CallBlock(2, 1, [np.int64], [False])   # the second caller's own structs, same state
    code = compiled.library.run(compiled.state, other.inputs, 2, other.outputs, 1, other.err)
    message = ffi.string(other.err.message).decode()
    counter[1] = 5   # let the first run see a confirmed "partner" and finish now
    counter[0] = 5
    worker.join(60)
    assert code == 6 and other.err.code == 6   # FFG_ERR_RUNTIME
    assert "busy with another call" in message and "one state per thread" in message
    assert int(first[0][0][0]) == 5
    counter[:] = 0
    assert int(f(counter, 0.0)[0]) == 1   # the state is free again


# ------------------------------------------------------------------ shared variables


@pytest.mark.parametrize("linker", LINKERS)
def test_concurrent_updates_of_one_function_are_never_lost(linker):
    s = shared(np.zeros(2), name="s")
    f = function([], s.sum(), updates=[(s, s + 1)], mode=Mode(linker=linker))

    def work(k):
        for _ in range(200):
            f()

    run_threads(work, 4)
    np.testing.assert_array_equal(s.get_value(), [800.0, 800.0])


@pytest.mark.parametrize("linker", ["c", "cvm"])
def test_two_functions_updating_the_same_variables_lose_nothing_and_do_not_deadlock(linker):
    s, t = shared(np.zeros(3), name="s"), shared(np.zeros(()), name="t")
    mode = Mode(linker=linker)
    # updates listed in opposite orders: the locks are still taken in one global order
    f = function([], [], updates=[(s, s + 1), (t, t + 1)], mode=mode)
    g = function([], [], updates=[(t, t + 2), (s, s + 2)], mode=mode)
    reader = function([], s.sum() + t, mode=mode)
    seen = []

    def work(k):
        for _ in range(150):
            if k == 2:
                seen.append(float(reader()))   # reads take no lock; a value committed earlier
            else:
                (f if k == 0 else g)()

    run_threads(work, 3)
    np.testing.assert_array_equal(s.get_value(), [450.0] * 3)
    assert float(t.get_value()) == 450.0
    assert all(v == int(v) and 0 <= v <= 4 * 450 for v in seen)


# ------------------------------------------------------------------ re-entry


class CallsBack(Op):
    """A Python op that calls a compiled function (the one it belongs to, in the test)."""

    __props__ = ()

    def __init__(self):
        self.target = None

    def make_node(self, x):
        x = T.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, out):
        out[0][0] = np.asarray(self.target(inputs[0]))


def test_a_reentrant_call_is_refused_not_deadlocked():
    op = CallsBack()
    x = T.dvector("x")
    f = function([x], op(x) + 1, mode=Mode(linker="py"))
    op.target = f
    with pytest.raises(RuntimeError, match="re-entrant"):
        f(np.zeros(2))
    op.target = function([x], x * 2, mode=Mode(linker="c"))   # another function is fine
    np.testing.assert_array_equal(f(np.ones(2)), [3.0, 3.0])
