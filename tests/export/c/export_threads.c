/*
 * Two threads, two handles of the seed export, computing at the same time. Each thread
 * has its own shared vector and its own inputs (of changing shapes) and checks every
 * result against the same formula computed here. Prints calls and mismatches per thread.
 */
#define _POSIX_C_SOURCE 200809L   /* pthread barriers under -std=c99 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seed.h"

#define CALLS 3000

typedef struct job {
    int id;
    long calls, mismatches, errors;
    pthread_barrier_t *start;
} job;

static void *work(void *arg)
{
    job *j = (job *)arg;
    double x[8 * 4], s[4], block[8 * 4];
    int64_t shape[2] = {0, 4}, s_shape[1] = {4};
    FfgTensor in, sv;
    FfgOutput out[2];
    FfgError err;
    seed_handle *h = seed_open(NULL, &err);
    long i;
    int k, r;

    memset(&sv, 0, sizeof sv);
    sv.device.device_type = FFG_DEVICE_CPU;
    sv.dtype.code = FFG_DTYPE_FLOAT;
    sv.dtype.bits = 64;
    sv.dtype.lanes = 1;
    in = sv;
    sv.ndim = 1;
    sv.shape = s_shape;
    sv.data = s;
    in.ndim = 2;
    in.shape = shape;
    in.data = x;
    for (k = 0; k < 4; ++k)
        s[k] = 100.0 * (j->id + 1) + k;
    if (h == NULL || seed_set_shared(h, 0, &sv, &err) != FFG_OK) {
        j->errors++;
        return NULL;
    }
    pthread_barrier_wait(j->start);
    for (i = 0; i < CALLS; ++i) {
        int rows = 1 + (int)((i + j->id) % 8), wrong = 0;
        shape[0] = rows;
        for (k = 0; k < rows * 4; ++k)
            x[k] = (double)(k + i) * (j->id ? -0.5 : 0.25);
        memset(out, 0, sizeof out);
        if (i % 2) {   /* every other call writes output 0 into a block of ours */
            out[0].host_buffer = block;
            out[0].host_capacity = sizeof block;
        }
        if (seed_run(h, &in, 1, out, 2, &err) != FFG_OK) {
            j->errors++;
            continue;
        }
        for (k = 0; k < rows * 4; ++k)
            wrong += ((double *)out[0].tensor.data)[k] != 2 * x[k];
        for (k = 0; k < 4; ++k) {
            double want = s[k];
            for (r = 0; r < rows; ++r)
                want += x[r * 4 + k];
            wrong += ((double *)out[1].tensor.data)[k] != want;
        }
        j->mismatches += wrong != 0;
        j->calls++;
        seed_release(h, &out[0]);
        seed_release(h, &out[1]);
    }
    seed_close(h);
    return NULL;
}

int main(void)
{
    pthread_t threads[2];
    pthread_barrier_t start;
    job jobs[2];
    long bad = 0;
    int t;
    pthread_barrier_init(&start, NULL, 2);
    for (t = 0; t < 2; ++t) {
        memset(&jobs[t], 0, sizeof jobs[t]);
        jobs[t].id = t;
        jobs[t].start = &start;
        pthread_create(&threads[t], NULL, work, &jobs[t]);
    }
    for (t = 0; t < 2; ++t) {
        pthread_join(threads[t], NULL);
        printf("thread %d: calls %ld, mismatches %ld, errors %ld\n", t, jobs[t].calls, jobs[t].mismatches,
               jobs[t].errors);
        bad += jobs[t].mismatches + jobs[t].errors + (jobs[t].calls != CALLS);
    }
    pthread_barrier_destroy(&start);
    return bad ? 1 : 0;
}
