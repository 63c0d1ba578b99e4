/*
 * placement.c - which GPUs exist for trials (see placement.h): the
 * process-wide list tune_set_gpus() gives, the config's, or the driver's
 * listing, never a CUDA call.
 */
#include "engine/placement.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

/* tune_set_gpus(): kind NONE until it is called with a list. */
static pthread_mutex_t given_lock = PTHREAD_MUTEX_INITIALIZER;
static enum tunep_gpus_kind given_kind = TUNEP_GPUS_NONE;
static int given_n;
static int given_ids[TUNEP_GPU_SET_MAX];

/* CUDA_VISIBLE_DEVICES split at commas into ret (entries up to the first
 * empty one, as CUDA reads it); -1 when it is not set. */
static int visible_entries(char ret[][TUNEP_GPU_ID_MAX], int cap)
{
    const char *v = getenv("CUDA_VISIBLE_DEVICES");
    if (!v)
        return -1;
    int n = 0;
    while (*v && n < cap) {
        size_t len = strcspn(v, ",");
        if (len == 0 || len >= TUNEP_GPU_ID_MAX)
            break;
        memcpy(ret[n], v, len);
        ret[n][len] = '\0';
        n++;
        v += len;
        if (*v == ',')
            v++;
    }
    return n;
}

/* GPUs the NVIDIA driver lists (one folder per device); -1 without the driver. */
static int driver_gpus(void)
{
    DIR *d = opendir("/proc/driver/nvidia/gpus");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

tune_status tunep_gpu_set_from(enum tunep_gpus_kind kind, int n, const int *ids,
                               struct tunep_gpu_set *ret, tune_error *err)
{
    static char vis[TUNEP_GPU_SET_MAX][TUNEP_GPU_ID_MAX];
    memset(ret, 0, sizeof *ret);
    if (n < 0 || n > TUNEP_GPU_SET_MAX)
        return tunep_error_set(err, TUNE_ECONFIG, "gpus: %d GPUs, at most %d are supported", n,
                               TUNEP_GPU_SET_MAX);
    pthread_mutex_lock(&given_lock); /* vis is shared: the lock makes it this call's */
    int n_vis = visible_entries(vis, TUNEP_GPU_SET_MAX);
    tune_status st = TUNE_OK;
    for (int i = 0; i < n && !st; i++) {
        if (kind == TUNEP_GPUS_COUNT) {
            /* The first n devices the caller sees. */
            if (n_vis >= 0 && i >= n_vis) {
                st = tunep_error_set(err, TUNE_ECONFIG,
                                     "gpus: %d GPUs, but CUDA_VISIBLE_DEVICES names %d", n, n_vis);
                break;
            }
            if (n_vis >= 0)
                memcpy(ret->id[i], vis[i], TUNEP_GPU_ID_MAX);
            else
                snprintf(ret->id[i], TUNEP_GPU_ID_MAX, "%d", i);
            ret->ordinal[i] = i;
            continue;
        }
        for (int j = 0; j < i; j++)
            if (ids[j] == ids[i])
                st = tunep_error_set(err, TUNE_ECONFIG, "gpus: GPU %d is listed twice", ids[i]);
        snprintf(ret->id[i], TUNEP_GPU_ID_MAX, "%d", ids[i]);
        ret->ordinal[i] = ids[i];
        if (n_vis >= 0 && !st) {
            /* CUDA numbers the visible devices 0, 1, ... in their listed order. */
            int at = -1;
            for (int j = 0; j < n_vis && at < 0; j++)
                if (strcmp(vis[j], ret->id[i]) == 0)
                    at = j;
            if (at < 0)
                st = tunep_error_set(err, TUNE_ECONFIG,
                                     "gpus: GPU %d is not in CUDA_VISIBLE_DEVICES", ids[i]);
            ret->ordinal[i] = at;
        }
    }
    pthread_mutex_unlock(&given_lock);
    if (st)
        return st;
    ret->n = n;
    return TUNE_OK;
}

tune_status tunep_gpu_discover(struct tunep_gpu_set *ret, tune_error *err)
{
    (void)err;
    static char vis[TUNEP_GPU_SET_MAX][TUNEP_GPU_ID_MAX];
    memset(ret, 0, sizeof *ret);
    int listed = driver_gpus();
    if (listed <= 0) {
        snprintf(ret->why, sizeof ret->why,
                 listed < 0 ? "no NVIDIA driver (/proc/driver/nvidia/gpus is absent)"
                            : "the NVIDIA driver lists no GPU");
        return TUNE_OK;
    }
    pthread_mutex_lock(&given_lock);
    int n_vis = visible_entries(vis, TUNEP_GPU_SET_MAX);
    int n = n_vis >= 0 ? n_vis : listed;
    if (n > TUNEP_GPU_SET_MAX)
        n = TUNEP_GPU_SET_MAX;
    for (int i = 0; i < n; i++) {
        if (n_vis >= 0)
            memcpy(ret->id[i], vis[i], TUNEP_GPU_ID_MAX);
        else
            snprintf(ret->id[i], TUNEP_GPU_ID_MAX, "%d", i);
        ret->ordinal[i] = i;
    }
    pthread_mutex_unlock(&given_lock);
    ret->n = n;
    if (n == 0)
        snprintf(ret->why, sizeof ret->why, "CUDA_VISIBLE_DEVICES hides every GPU");
    return TUNE_OK;
}

tune_status tunep_gpu_available(enum tunep_gpus_kind kind, int n, const int *ids,
                                struct tunep_gpu_set *ret, tune_error *err)
{
    int copy[TUNEP_GPU_SET_MAX];
    pthread_mutex_lock(&given_lock);
    enum tunep_gpus_kind k = given_kind;
    int gn = given_n;
    if (k != TUNEP_GPUS_NONE)
        memcpy(copy, given_ids, sizeof copy);
    pthread_mutex_unlock(&given_lock);
    if (k != TUNEP_GPUS_NONE)
        return tunep_gpu_set_from(k, gn, copy, ret, err);
    if (kind != TUNEP_GPUS_NONE)
        return tunep_gpu_set_from(kind, n, ids, ret, err);
    return tunep_gpu_discover(ret, err);
}

tune_status tunep_gpus_parse(const char *spec, enum tunep_gpus_kind *ret_kind, int *ret_n, int *ids,
                             tune_error *err)
{
    const char *p = spec;
    int n = 0, comma = spec && strchr(spec, ',') != NULL;
    if (!spec || !*spec)
        goto bad;
    while (*p) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 0 || v > 1000000 || (*end && *end != ','))
            goto bad;
        if (!comma) {
            if (v > TUNEP_GPU_SET_MAX)
                goto bad;
            *ret_kind = TUNEP_GPUS_COUNT;
            *ret_n = (int)v;
            return TUNE_OK;
        }
        if (n == TUNEP_GPU_SET_MAX)
            goto bad;
        ids[n++] = (int)v;
        p = *end ? end + 1 : end;
    }
    *ret_kind = TUNEP_GPUS_LIST;
    *ret_n = n;
    return TUNE_OK;
bad:
    return tunep_error_set(err, TUNE_EINVAL,
                           "gpus: expected a count (\"2\") or device ids (\"0,1\"; one id as "
                           "\"3,\"), got \"%s\"",
                           spec ? spec : "");
}

tune_status tune_set_gpus(const char *spec, tune_error *err)
{
    enum tunep_gpus_kind kind = TUNEP_GPUS_NONE;
    int n = 0;
    static int ids[TUNEP_GPU_SET_MAX];
    pthread_mutex_lock(&given_lock);
    tune_status st = spec ? tunep_gpus_parse(spec, &kind, &n, ids, err) : TUNE_OK;
    if (!st) {
        given_kind = kind;
        given_n = n;
        memcpy(given_ids, ids, sizeof given_ids);
    }
    pthread_mutex_unlock(&given_lock);
    return st;
}
