"""Threads in generated loops: a small pthread pool in the library, and how a loop is cut into chunks.

Large elementwise and reduction loops (``fused_c``, ``elemwise_c``, ``reduce_c``) are split over
``config.threads`` threads. The generated C of such a loop is:

* a *chunk function* in the node's ``c_support_code_apply``, ``static int nodeN_chunk(void *ctx,
  int c, FfgError *err)``: the op's loop nest, bounded on one axis to chunk ``c``'s range;
* at the node, a context struct (the arrays and the loop's shape), ``ffg_split_loop`` choosing the
  cut, and ``ffg_parallel`` running the chunks;
* the pool itself (below), the ``c_support_code`` of every op that cuts loops, so one copy per
  library.

The cut depends only on the loop's shape and ``FFG_THREADS`` (never on which threads are free), so
each chunk computes the same thing whatever thread runs it: elementwise results are the bits one
thread gives; a reduction cut along a kept axis too; one cut along a reduced axis gives every
chunk its own accumulators, combined in chunk order after the chunks ran (so a float sum is
deterministic for a given ``config.threads``, and may differ from one thread's in the last bits).

Why a pthread pool and not OpenMP: the pool is ~300 lines of C pasted into the library and needs
only ``-pthread``, so an exported library builds with any C compiler and runs from any C host (no
libgomp or libomp to ship or to match); it is fork-safe (``pthread_atfork`` gives a child an empty
pool, where libgomp hangs in a child of a process that used it); its workers spin for a bounded
50 us after a job and then sleep (libgomp's spinning is set only by the host's environment,
OMP_WAIT_POLICY / GOMP_SPINCOUNT, and can keep a core that a Python thread needs);
``OMP_NUM_THREADS`` and friends, which numeric stacks set for their own reasons (this project's
benchmarks set it to 1), do not change it; and its lifetime is the library's (joined when the
library is unloaded), which the Python side already manages.

Both values are written into the C (``#define``), so the compile cache key covers them.
"""
from __future__ import annotations

import numpy as np

from ffigraph.config import config

# A loop is cut into this many chunks per thread (handed out one at a time, so a thread that starts
# late, or runs on a busy core, takes fewer), along an axis with at least that many units if one has.
UNITS_PER_THREAD = 4

# How long a worker with nothing to do, or a caller waiting for the last chunk, spins before it
# sleeps on its condition variable: a sleeping thread takes tens of microseconds to wake.
SPIN_NS = 50000

_POOL_C = r"""
#ifndef FFG_THREADS_DEFINED
#define FFG_THREADS_DEFINED
/* ---- threads: large loops cut into chunks, run by a small pool of worker threads ----

   FFG_THREADS is ffigraph.config.threads and FFG_THREADS_MIN_SIZE config.threads_min_size when
   this source was generated. A loop over fewer elements runs on the calling thread alone; a larger
   one is cut by ffg_split_loop into at most %(per_thread)d * FFG_THREADS chunks, from its shape and
   FFG_THREADS alone, so what each chunk computes (and so every result) does not depend on which
   threads run it. A reduction cut along a reduced axis gives each chunk its own accumulators,
   combined in chunk order once every chunk is done.

   The pool is the library's: FFG_THREADS - 1 workers, started at its first large loop. Between
   jobs a worker spins for FFG_THREADS_SPIN_NS (the next call often follows at once), then sleeps
   on a condition variable. The calling thread runs chunks too, so a loop finishes even with no
   worker. One call at a time uses the pool: a call that finds it busy (another state of this
   library, run by another thread) runs all its chunks itself, in order, with the same results.
   Workers block every signal. A child made by fork() starts with an empty pool (pthread_atfork);
   the workers are stopped and joined when the library is unloaded or the process exits. */
#define FFG_THREADS %(threads)d
#define FFG_THREADS_MIN_SIZE %(min_size)dLL
#define FFG_THREADS_SPIN_NS %(spin_ns)dLL   /* how long a thread with nothing to do spins before it sleeps */
#include <pthread.h>
#include <signal.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#define FFG_PAUSE() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define FFG_PAUSE() __asm__ __volatile__("yield")
#else
#define FFG_PAUSE() ((void)0)
#endif

/* One chunk of a loop: 0 on success; -1 with *err filled on failure. */
typedef int (*ffg_chunk_fn)(void *ctx, int chunk, FfgError *err);

typedef struct ffg_pool {
    pthread_mutex_t lock;         /* guards what follows (job and finished are also read without it) */
    pthread_cond_t wake;          /* workers sleep here between jobs */
    pthread_cond_t done;          /* the caller sleeps here until the last chunk is done */
    pthread_t workers[FFG_THREADS];
    int n_workers;
    int stop;                     /* set when the library goes: workers return */
    int busy;                     /* a call is using the pool (atomic, without the lock) */
    unsigned job;                 /* bumped for every job */
    ffg_chunk_fn fn;              /* the job: fn(ctx, c, ...) for every chunk c < n_chunks */
    void *ctx;
    int n_chunks;
    int next;                     /* the next chunk to hand out */
    int finished;                 /* chunks done */
    int failed;                   /* the first chunk that failed (n_chunks: none) */
    FfgError error;               /* and its error */
} ffg_pool;

/* One pool per library. A library built in parts (FFG_PART_MASK: the parts this translation unit
   holds) shares the pool that the unit holding part 0 defines. */
#if !defined(FFG_PART_MASK)
#define FFG_POOL_STORAGE static
#elif FFG_PART_MASK & 1
#define FFG_POOL_STORAGE __attribute__((visibility("hidden")))
#else
#define FFG_POOL_STORAGE extern __attribute__((visibility("hidden")))
#define FFG_POOL_ELSEWHERE
#endif
#ifdef FFG_POOL_ELSEWHERE
FFG_POOL_STORAGE ffg_pool ffg_the_pool;
#else
FFG_POOL_STORAGE ffg_pool ffg_the_pool = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER,
                                          .done = PTHREAD_COND_INITIALIZER};
#endif
FFG_POOL_STORAGE int ffg_pool_atfork_registered;

/* Spin (without the lock) for at most FFG_THREADS_SPIN_NS until *word != value (until_equal 0)
   or *word == value (until_equal 1): a job that comes soon, or a chunk about to end, is then
   seen at once, without the wake-up of a sleeping thread (tens of microseconds). 1 if it came. */
static int ffg_pool_spin(const unsigned *word, unsigned value, int until_equal)
{
    int k;
#ifdef TIME_UTC   /* C11's clock (the library is built as gnu11); plain C99 counts pauses instead */
    struct timespec t0, t;
    int64_t spun;
    timespec_get(&t0, TIME_UTC);
    for (;;) {
        for (k = 0; k < 64; ++k) {
            if ((__atomic_load_n(word, __ATOMIC_ACQUIRE) == value) == until_equal)
                return 1;
            FFG_PAUSE();
        }
        timespec_get(&t, TIME_UTC);
        spun = (int64_t)(t.tv_sec - t0.tv_sec) * 1000000000LL + (t.tv_nsec - t0.tv_nsec);
        if (spun > FFG_THREADS_SPIN_NS || spun < 0)   /* (< 0: the wall clock was set back) */
            return 0;
    }
#else
    for (k = 0; k < FFG_THREADS_SPIN_NS / 16; ++k) {
        if ((__atomic_load_n(word, __ATOMIC_ACQUIRE) == value) == until_equal)
            return 1;
        FFG_PAUSE();
    }
    return 0;
#endif
}

/* Run chunks of job `job` until none is left to hand out (called, and returning, with the lock held). */
static void ffg_pool_take_chunks(ffg_pool *p, unsigned job)
{
    while (p->job == job && p->next < p->n_chunks) {
        const int c = p->next++;
        const ffg_chunk_fn fn = p->fn;
        void *const ctx = p->ctx;
        FfgError e;
        int status;
        memset(&e, 0, sizeof e);
        e.node = -1;
        e.input = -1;
        pthread_mutex_unlock(&p->lock);
        status = fn(ctx, c, &e);
        pthread_mutex_lock(&p->lock);
        /* the job cannot end (nor another start) before this chunk is counted */
        if (status != 0 && c < p->failed) {
            p->failed = c;
            p->error = e;
        }
        if (__atomic_add_fetch(&p->finished, 1, __ATOMIC_RELEASE) == p->n_chunks)
            pthread_cond_signal(&p->done);
    }
}

static void *ffg_pool_worker(void *arg)
{
    ffg_pool *p = (ffg_pool *)arg;
    unsigned seen = 0;   /* a job that is over when first seen hands out nothing */
    pthread_mutex_lock(&p->lock);
    while (!p->stop) {
        if (p->job != seen) {
            seen = p->job;
            ffg_pool_take_chunks(p, seen);
            continue;
        }
        pthread_mutex_unlock(&p->lock);
        ffg_pool_spin(&p->job, seen, 0);   /* the next call often comes right away */
        pthread_mutex_lock(&p->lock);
        while (!p->stop && p->job == seen)
            pthread_cond_wait(&p->wake, &p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* In a child made by fork(): only the forking thread came along, so the pool starts empty. */
static void ffg_pool_forget_in_child(void)
{
    ffg_pool *p = &ffg_the_pool;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    p->n_workers = 0;
    p->stop = 0;
    p->busy = 0;
}

/* Start the workers that are missing (lock held); a refused pthread_create leaves fewer. */
static void ffg_pool_start(ffg_pool *p)
{
#ifdef SIG_SETMASK   /* POSIX (the library is built as gnu11) */
    sigset_t all, old;
#endif
    if (p->n_workers >= FFG_THREADS - 1)
        return;
    if (!ffg_pool_atfork_registered) {
        /* registered for this library: glibc drops it when the library is unloaded */
        ffg_pool_atfork_registered = pthread_atfork(NULL, NULL, ffg_pool_forget_in_child) == 0;
    }
#ifdef SIG_SETMASK
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);   /* workers inherit it: signals go to the host's threads */
#endif
    while (p->n_workers < FFG_THREADS - 1
           && pthread_create(&p->workers[p->n_workers], NULL, ffg_pool_worker, p) == 0)
        ++p->n_workers;
#ifdef SIG_SETMASK
    pthread_sigmask(SIG_SETMASK, &old, NULL);
#endif
}

/* When the library is unloaded (or the process exits): stop and join the workers. */
#ifndef FFG_POOL_ELSEWHERE   /* the unit that defines the pool stops it */
__attribute__((destructor)) static void ffg_pool_shut_down(void)
{
    ffg_pool *p = &ffg_the_pool;
    int k, n;
    if (__atomic_load_n(&p->busy, __ATOMIC_ACQUIRE))
        return;   /* a call is running: the process is exiting under it, so leave the workers be */
    pthread_mutex_lock(&p->lock);
    n = p->n_workers;
    p->stop = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (k = 0; k < n; ++k)
        pthread_join(p->workers[k], NULL);
    p->n_workers = 0;
    p->stop = 0;
}
#endif

/* Run fn(ctx, c, err) for every chunk c < n: on the pool's workers and this thread, or on this
   thread alone (in chunk order) when n is 1 or the pool is busy. Chunks are handed out one at a
   time, so a thread that starts late takes fewer. 0 on success; otherwise -1, with *err holding
   the error of the first chunk that failed, whichever way the chunks ran. */
static int ffg_parallel(ffg_chunk_fn fn, void *ctx, int n, FfgError *err)
{
    ffg_pool *p = &ffg_the_pool;
    int c;
    if (n > 1 && !__atomic_exchange_n(&p->busy, 1, __ATOMIC_ACQUIRE)) {
        int failed;
        pthread_mutex_lock(&p->lock);
        ffg_pool_start(p);
        p->fn = fn;
        p->ctx = ctx;
        p->n_chunks = n;
        p->next = 0;
        p->finished = 0;
        p->failed = n;
        __atomic_add_fetch(&p->job, 1, __ATOMIC_RELEASE);
        pthread_cond_broadcast(&p->wake);
        ffg_pool_take_chunks(p, p->job);   /* this thread works too */
        if (p->finished < n) {
            pthread_mutex_unlock(&p->lock);
            ffg_pool_spin((const unsigned *)&p->finished, (unsigned)n, 1);   /* the last chunks are ending */
            pthread_mutex_lock(&p->lock);
        }
        while (p->finished < n)
            pthread_cond_wait(&p->done, &p->lock);
        failed = p->failed;
        if (failed < n)
            ffg_set_error(err, p->error.code, p->error.input, "%%s", p->error.message);
        p->fn = NULL;
        p->ctx = NULL;
        pthread_mutex_unlock(&p->lock);
        __atomic_store_n(&p->busy, 0, __ATOMIC_RELEASE);
        return failed < n ? -1 : 0;
    }
    for (c = 0; c < n; ++c)
        if (fn(ctx, c, err))
            return -1;
    return 0;
}

/* How a loop is cut: chunk c covers units [c * units / n, (c + 1) * units / n) of axis `axis`
   (rounded the same way for every chunk), a unit being `block` elements (the last axis, walked in
   blocks) or one index (another axis). */
typedef struct ffg_split {
    int n;              /* chunks; 1: the whole loop is one chunk */
    int axis;
    int partial;        /* the axis is reduced: each chunk has its own accumulators */
    int64_t units;
    int64_t block;
} ffg_split;

/* Choose the cut of a loop over shape[0..nd), its last axis walked in blocks of `block` elements.
   `cuttable`: bit mask of the axes that may be cut; `reduced`: those a reduction folds, where a
   cut needs `count` accumulators per chunk (so they are cut only while those stay few against the
   loop). Fewer than FFG_THREADS_MIN_SIZE elements: one chunk. Otherwise up to %(per_thread)d * FFG_THREADS
   chunks along the outermost axis with at least that many units (an outer axis gives each chunk
   long runs of memory to stream through); else along the axis with the most units. Depends on
   the shape and FFG_THREADS only. */
static void ffg_split_loop(ffg_split *s, int nd, const int64_t *shape, int64_t block, uint64_t cuttable,
                           uint64_t reduced, int64_t count)
{
    const int64_t size = ffg_size(nd, shape);
    int64_t units[FFG_MAX_NDIM], best_units = 1;
    int a, best = -1;
    s->n = 1;
    s->axis = 0;
    s->partial = 0;
    s->units = 1;
    s->block = 1;
    if (nd == 0 || size < FFG_THREADS_MIN_SIZE || size < 2)
        return;
    if (count > size / (16 * %(per_thread)d * FFG_THREADS))
        cuttable &= ~reduced;   /* too many accumulators for the chunks: cut a kept axis or nothing */
    for (a = 0; a < nd; ++a)
        units[a] = a == nd - 1 ? (shape[a] + block - 1) / block : shape[a];
    for (a = 0; a < nd && best < 0; ++a)
        if ((cuttable >> a & 1) && units[a] >= %(per_thread)d * FFG_THREADS)
            best = a;
    if (best < 0) {
        for (a = 0; a < nd; ++a)
            if ((cuttable >> a & 1) && units[a] > best_units) {
                best = a;
                best_units = units[a];
            }
        if (best < 0)
            return;
    }
    s->axis = best;
    s->units = units[best];
    s->n = s->units < %(per_thread)d * FFG_THREADS ? (int)s->units : %(per_thread)d * FFG_THREADS;
    s->block = best == nd - 1 ? block : 1;
    s->partial = (int)(reduced >> best & 1);
}

/* When the cut axis is reduced, chunk c accumulates in part + c * (count + FFG_PART_GAP): the gap
   keeps two chunks' accumulators off one cache line (a line written by two threads goes back and
   forth between their cores at every write). */
#define FFG_PART_GAP 16

/* The range [*lo, *hi) of chunk c along the cut axis (of length len), in elements. */
static void ffg_split_range(const ffg_split *s, int c, int64_t len, int64_t *lo, int64_t *hi)
{
    const int64_t q = s->units / s->n, r = s->units %% s->n;
    const int64_t u0 = c * q + (c < r ? c : r), u1 = u0 + q + (c < r ? 1 : 0);
    *lo = u0 * s->block;
    *hi = u1 * s->block < len ? u1 * s->block : len;
}
#endif /* FFG_THREADS_DEFINED */
"""


def enabled():
    """Whether generated loops may be split over threads (config.threads > 1)."""
    return config.threads > 1


def support_code():
    """The pool and the cut helpers (one copy per library: every op returns this same text)."""
    return _POOL_C % dict(threads=config.threads, min_size=config.threads_min_size, per_thread=UNITS_PER_THREAD,
                          spin_ns=SPIN_NS)


def pool_support_code():
    """An op's ``c_support_code`` when its loops may be split: the pool, which the code generator keeps
    once per library (the same text from every op); nothing when threads are off."""
    return support_code() if enabled() else ""


def compile_args():
    return ["-pthread"] if enabled() else []


def worth_threads(shape):
    """Whether a loop over ``shape`` (a static shape: ints, None where unknown) may reach the
    threshold: threads are on, and the shape does not say it is smaller (a 0-d loop, or a known
    small shape, needs no pool)."""
    if not enabled() or len(shape) == 0:
        return False
    if any(s is None for s in shape):
        return True
    return int(np.prod(shape, dtype=np.float64)) >= max(config.threads_min_size, 2)


def mask(axes):
    """C literal of the bit mask of ``axes``."""
    return "0x%xULL" % sum(1 << a for a in axes)


def bounded(ndim, shape, bounds="lo", limits="hi"):
    """C: ``int64_t lo[n], hi[n]`` for a chunk (the whole of ``shape`` but along the cut axis)."""
    n = max(ndim, 1)
    return ["int64_t %s[%d], %s[%d];" % (bounds, n, limits, n),
            "int d_;",
            "for (d_ = 0; d_ < %d; ++d_) {" % ndim,
            "    %s[d_] = 0;" % bounds,
            "    %s[d_] = %s[d_];" % (limits, shape),
            "}"]


def chunk_bounds(ctx, shape_expr, bounds="lo", limits="hi"):
    """C: narrow ``lo``/``hi`` to chunk ``chunk`` of ``<ctx>->split``."""
    return ["if (%s->split.n > 1)" % ctx,
            "    ffg_split_range(&%s->split, chunk, %s[%s->split.axis], &%s[%s->split.axis], &%s[%s->split.axis]);"
            % (ctx, shape_expr, ctx, bounds, ctx, limits, ctx)]


def run_chunks(name, ctx, sub):
    """C at the node: run ``<name>_chunk`` over the chunks of ``<ctx>.split``."""
    return ["if (ffg_parallel(%s_chunk, &%s, %s.split.n, %s))" % (name, ctx, ctx, sub["err"]),
            "    %s" % sub["fail"]]
