/*
 * gpu_pool.c - packing fractional-GPU trials onto devices, each device by
 * its own free share (see gpu_pool.h for the rules and Ray's bug #5902).
 *
 * Invariant: 0 <= used[d] <= TUNEP_GPU_UNITS, trials[d] >= 0 and
 * reserved[d] <= budget[d] for every device, changed only under the mutex;
 * reserved[d] == 0 when trials[d] == 0. Memory is queried, under the mutex
 * so that two acquires never judge the same free memory, only for devices
 * whose units fit.
 */
#include "engine/gpu_pool.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "engine/placement.h"

struct tunep_gpu_pool {
    pthread_mutex_t lock;
    int n;
    int used[TUNEP_GPU_MAX_DEVICES];   /* units reserved */
    int trials[TUNEP_GPU_MAX_DEVICES]; /* reservations held */
    /* Device memory reserved by the trials holding the device, and what they
     * may reserve in all: the free memory seen when the device had none. */
    size_t reserved[TUNEP_GPU_MAX_DEVICES];
    size_t budget[TUNEP_GPU_MAX_DEVICES];
    int disabled[TUNEP_GPU_MAX_DEVICES]; /* unusable: placed on no more */
    tunep_gpu_mem_fn mem_info;
    void *mem_user;
};

tune_status tunep_gpu_pool_new(const struct tunep_gpu_pool_options *opt,
                               struct tunep_gpu_pool **ret_pool, tune_error *err)
{
    if (!opt || !ret_pool)
        return tunep_error_set(err, TUNE_EINVAL, "gpu pool: NULL argument");
    int n = opt->device_count;
    if (n <= 0) {
        struct tunep_gpu_set found;
        tune_status st = tunep_gpu_discover(&found, err);
        if (st != TUNE_OK)
            return st;
        if (found.n == 0)
            return tunep_error_set(err, TUNE_EDEVICE, "no GPU found: %s", found.why);
        n = found.n;
    }
    if (n > TUNEP_GPU_MAX_DEVICES)
        return tunep_error_set(err, TUNE_EINVAL, "gpu pool: %d devices, at most %d are supported",
                               n, TUNEP_GPU_MAX_DEVICES);
    struct tunep_gpu_pool *p = tunep_calloc(1, sizeof *p);
    if (!p)
        return tunep_error_set(err, TUNE_ENOMEM, "gpu pool: out of memory");
    if (pthread_mutex_init(&p->lock, NULL) != 0) {
        tunep_free(p);
        return tunep_error_set(err, TUNE_ENOMEM, "gpu pool: cannot create a mutex");
    }
    p->n = n;
    p->mem_info = opt->mem_info;
    p->mem_user = opt->mem_user;
    *ret_pool = p;
    return TUNE_OK;
}

void tunep_gpu_pool_free(struct tunep_gpu_pool *pool)
{
    if (!pool)
        return;
    pthread_mutex_destroy(&pool->lock);
    tunep_free(pool);
}

int tunep_gpu_pool_device_count(const struct tunep_gpu_pool *pool)
{
    return pool ? pool->n : 0;
}

int tunep_gpu_units(double fraction)
{
    if (!(fraction > 0.0 && fraction <= 1.0))
        return 0;
    return (int)lround(fraction * TUNEP_GPU_UNITS);
}

int tunep_gpu_pool_slots(const struct tunep_gpu_pool *pool, double fraction)
{
    int u = tunep_gpu_units(fraction);
    if (!pool || u <= 0)
        return 0;
    return pool->n * (TUNEP_GPU_UNITS / u);
}

/* Devices whose free units take u, best first: most free units, then lowest index. */
static int candidates(const struct tunep_gpu_pool *p, int u, int *order)
{
    int k = 0;
    for (int d = 0; d < p->n; d++) {
        if (p->disabled[d] || TUNEP_GPU_UNITS - p->used[d] < u)
            continue;
        int i = k++;
        while (i > 0 && p->used[order[i - 1]] > p->used[d]) { /* stable: ties keep index order */
            order[i] = order[i - 1];
            i--;
        }
        order[i] = d;
    }
    return k;
}

tune_status tunep_gpu_pool_acquire(struct tunep_gpu_pool *pool, double fraction, size_t mem_bytes,
                                   int *ret_device, tune_error *err)
{
    if (!pool || !ret_device)
        return tunep_error_set(err, TUNE_EINVAL, "gpu pool: NULL argument");
    int u = tunep_gpu_units(fraction);
    if (u <= 0)
        return tunep_error_set(err, TUNE_EINVAL,
                               "resources_per_trial.gpu: %g is not a fraction in [0.0001, 1]",
                               fraction);
    size_t need = mem_bytes ? mem_bytes : TUNEP_GPU_DEFAULT_NEED;
    int order[TUNEP_GPU_MAX_DEVICES];
    tune_status st = TUNE_OK;
    int chosen = -1, busy = 0;
    char detail[256] = "";
    size_t dlen = 0;

    pthread_mutex_lock(&pool->lock);
    int k = candidates(pool, u, order);
    for (int i = 0; i < k && chosen < 0; i++) {
        int d = order[i];
        size_t fr = 0, tot = 0;
        tune_error merr = {0};
        if (!pool->mem_info) {
            chosen = d;
            break;
        }
        if ((st = pool->mem_info(pool->mem_user, d, &fr, &tot, &merr)) != TUNE_OK) {
            tunep_error_set(err, st, "cuda:%d: %s", d, merr.text);
            break;
        }
        /* An idle device's free memory is its trials' budget: running trials
         * have allocated only part of what they reserved, so the free memory
         * seen later counts the rest twice over or not at all. */
        if (pool->trials[d] == 0) {
            pool->budget[d] = fr;
            pool->reserved[d] = 0;
        }
        if (fr >= need && pool->budget[d] - pool->reserved[d] >= need) {
            chosen = d;
            break;
        }
        if (dlen < sizeof detail) {
            int w = snprintf(detail + dlen, sizeof detail - dlen, "%scuda:%d has %.0f MiB free",
                             dlen ? ", " : "", d, (double)fr / 1048576.0);
            dlen += w > 0 ? (size_t)w : 0;
        }
    }
    if (st == TUNE_OK && chosen >= 0) {
        pool->used[chosen] += u;
        pool->trials[chosen]++;
        pool->reserved[chosen] += need;
    }
    /* Short of units or memory: a running trial on a usable device may free
     * both when it ends. */
    int usable = 0;
    for (int d = 0; d < pool->n; d++) {
        busy |= pool->trials[d] > 0 && !pool->disabled[d];
        usable += !pool->disabled[d];
    }
    pthread_mutex_unlock(&pool->lock);

    if (st != TUNE_OK)
        return st;
    if (usable == 0)
        return tunep_error_set(err, TUNE_EDEVICE,
                               "no usable GPU left: a sticky CUDA error has made each of the %d "
                               "unusable in this process",
                               pool->n);
    *ret_device = chosen;
    if (chosen < 0 && !busy)
        return tunep_error_set(err, TUNE_ENOMEM,
                               "not enough free GPU memory for a trial: %s, it needs %.0f MiB",
                               detail, (double)need / 1048576.0);
    return TUNE_OK;
}

void tunep_gpu_pool_release(struct tunep_gpu_pool *pool, int device, double fraction,
                            size_t mem_bytes)
{
    int u = tunep_gpu_units(fraction);
    if (!pool || device < 0 || device >= pool->n || u <= 0)
        return;
    size_t need = mem_bytes ? mem_bytes : TUNEP_GPU_DEFAULT_NEED;
    pthread_mutex_lock(&pool->lock);
    if (pool->trials[device] > 0 && pool->used[device] >= u) {
        pool->used[device] -= u;
        pool->trials[device]--;
        pool->reserved[device] -= need < pool->reserved[device] ? need : pool->reserved[device];
        if (pool->trials[device] == 0)
            pool->reserved[device] = 0;
    }
    pthread_mutex_unlock(&pool->lock);
}

int tunep_gpu_pool_used(struct tunep_gpu_pool *pool, int device)
{
    if (!pool || device < 0 || device >= pool->n)
        return 0;
    pthread_mutex_lock(&pool->lock);
    int u = pool->used[device];
    pthread_mutex_unlock(&pool->lock);
    return u;
}

void tunep_gpu_pool_disable(struct tunep_gpu_pool *pool, int device)
{
    if (!pool || device < 0 || device >= pool->n)
        return;
    pthread_mutex_lock(&pool->lock);
    pool->disabled[device] = 1;
    pthread_mutex_unlock(&pool->lock);
}

int tunep_gpu_pool_disabled(struct tunep_gpu_pool *pool, int device)
{
    if (!pool || device < 0 || device >= pool->n)
        return 0;
    pthread_mutex_lock(&pool->lock);
    int d = pool->disabled[device];
    pthread_mutex_unlock(&pool->lock);
    return d;
}

size_t tunep_gpu_pool_reserved(struct tunep_gpu_pool *pool, int device)
{
    if (!pool || device < 0 || device >= pool->n)
        return 0;
    pthread_mutex_lock(&pool->lock);
    size_t r = pool->reserved[device];
    pthread_mutex_unlock(&pool->lock);
    return r;
}

int tunep_gpu_pool_trials(struct tunep_gpu_pool *pool, int device)
{
    if (!pool || device < 0 || device >= pool->n)
        return 0;
    pthread_mutex_lock(&pool->lock);
    int t = pool->trials[device];
    pthread_mutex_unlock(&pool->lock);
    return t;
}

tune_status tunep_gpu_pool_acquire_whole(struct tunep_gpu_pool *pool, int count, int *ret_devices,
                                         int *ret_got, tune_error *err)
{
    if (!pool || !ret_devices || !ret_got)
        return tunep_error_set(err, TUNE_EINVAL, "gpu pool: NULL argument");
    if (count < 1 || count > pool->n)
        return tunep_error_set(err, TUNE_EINVAL,
                               "resources_per_trial.gpu: %d whole GPUs, but %d are available",
                               count, pool->n);
    int got = 0, usable = 0;
    pthread_mutex_lock(&pool->lock);
    for (int d = 0; d < pool->n; d++)
        usable += !pool->disabled[d];
    for (int d = 0; d < pool->n && got < count; d++)
        if (pool->used[d] == 0 && !pool->disabled[d])
            ret_devices[got++] = d;
    if (got == count)
        for (int i = 0; i < count; i++) {
            pool->used[ret_devices[i]] = TUNEP_GPU_UNITS;
            pool->trials[ret_devices[i]]++;
        }
    pthread_mutex_unlock(&pool->lock);
    *ret_got = got == count ? count : 0;
    if (usable < count)
        return tunep_error_set(err, TUNE_EDEVICE,
                               "a trial needs %d whole GPUs, but a sticky CUDA error has left "
                               "only %d of the %d usable in this process",
                               count, usable, pool->n);
    return TUNE_OK;
}
