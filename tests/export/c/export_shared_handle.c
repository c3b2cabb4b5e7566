/*
 * Misuse, on purpose: two threads share ONE handle of the seed export. The documented rule is
 * one handle per thread; a handle shared anyway must refuse an overlapping call with
 * FFG_ERR_RUNTIME ("busy") and never race. Every call must either succeed with right values
 * or be refused that way. Prints the counts.
 */
#define _POSIX_C_SOURCE 200809L   /* pthread barriers under -std=c99 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seed.h"

#define CALLS 100000

typedef struct job {
    int id;
    seed_handle *h;
    const double *s;
    long ok, busy, mismatches, other;
    pthread_barrier_t *start;
} job;

static void *work(void *arg)
{
    job *j = (job *)arg;
    double x[8 * 4];
    int64_t shape[2] = {0, 4};
    FfgTensor in;
    FfgOutput out[2];
    FfgError err;
    long i;
    int k, r;

    memset(&in, 0, sizeof in);
    in.device.device_type = FFG_DEVICE_CPU;
    in.dtype.code = FFG_DTYPE_FLOAT;
    in.dtype.bits = 64;
    in.dtype.lanes = 1;
    in.ndim = 2;
    in.shape = shape;
    in.data = x;
    pthread_barrier_wait(j->start);
    for (i = 0; i < CALLS; ++i) {
        int rows = 1 + (int)((i + j->id) % 8), wrong = 0;
        int32_t code;
        shape[0] = rows;
        for (k = 0; k < rows * 4; ++k)
            x[k] = (double)(k + i) * (j->id ? -0.5 : 0.25);
        memset(out, 0, sizeof out);
        code = seed_run(j->h, &in, 1, out, 2, &err);
        if (code == FFG_ERR_RUNTIME && err.code == code && strstr(err.message, "busy") != NULL) {
            j->busy++;
            continue;
        }
        if (code != FFG_OK) {
            j->other++;
            continue;
        }
        /* only the data blocks are read: they belong to this call (the shape storage is the handle's) */
        for (k = 0; k < rows * 4; ++k)
            wrong += ((double *)out[0].tensor.data)[k] != 2 * x[k];
        for (k = 0; k < 4; ++k) {
            double want = j->s[k];
            for (r = 0; r < rows; ++r)
                want += x[r * 4 + k];
            wrong += ((double *)out[1].tensor.data)[k] != want;
        }
        j->mismatches += wrong != 0;
        j->ok++;
        seed_release(j->h, &out[0]);
        seed_release(j->h, &out[1]);
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[2];
    pthread_barrier_t start;
    job jobs[2];
    double s[4] = {1.0, 2.0, 3.0, 4.0};
    int64_t s_shape[1] = {4};
    FfgTensor sv;
    FfgError err;
    long ok = 0, busy = 0, mismatches = 0, other = 0;
    int t;
    seed_handle *h = seed_open(NULL, &err);

    memset(&sv, 0, sizeof sv);
    sv.device.device_type = FFG_DEVICE_CPU;
    sv.dtype.code = FFG_DTYPE_FLOAT;
    sv.dtype.bits = 64;
    sv.dtype.lanes = 1;
    sv.ndim = 1;
    sv.shape = s_shape;
    sv.data = s;
    if (h == NULL || seed_set_shared(h, 0, &sv, &err) != FFG_OK) {
        printf("setup failed: %s\n", err.message);
        return 2;
    }
    pthread_barrier_init(&start, NULL, 2);
    for (t = 0; t < 2; ++t) {
        memset(&jobs[t], 0, sizeof jobs[t]);
        jobs[t].id = t;
        jobs[t].h = h;
        jobs[t].s = s;
        jobs[t].start = &start;
        pthread_create(&threads[t], NULL, work, &jobs[t]);
    }
    for (t = 0; t < 2; ++t) {
        pthread_join(threads[t], NULL);
        ok += jobs[t].ok;
        busy += jobs[t].busy;
        mismatches += jobs[t].mismatches;
        other += jobs[t].other;
    }
    pthread_barrier_destroy(&start);
    seed_close(h);
    printf("calls %d, ok %ld, refused busy %ld, mismatches %ld, other errors %ld\n", 2 * CALLS, ok, busy,
           mismatches, other);
    return (mismatches || other || ok + busy != 2 * CALLS || ok == 0) ? 1 : 0;
}
