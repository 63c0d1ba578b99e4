/*
 * cuda_test_util.h - what the CUDA-vs-CPU suites share: the device probe
 * that makes a program exit 77 (skipped) without a GPU, a main() that runs
 * Check without forking (a CUDA context made before a fork is unusable in
 * the child), tracked host and device buffers, and the comparisons.
 *
 * Comparisons print one line per tensor even when they pass, so that the
 * first run on a GPU records the measured errors:
 *   - exact: bit for bit (same operations in the same order on both sides);
 *   - mag:   |gpu - cpu| <= c eps mag_i, with mag_i the sum of |terms| that
 *            make element i (computed on the host) and c the accumulation
 *            length that bounds float rounding (Higham's gamma_k ~ k eps,
 *            once per side), so a wrong index (an O(mag) error) cannot pass;
 *   - nmse:  sum (gpu - cpu)^2 / sum cpu^2 for composite results (attention,
 *            the whole model), where rounding of every element reaches every
 *            output: fp32 relative errors of ~100 eps give about 1.4e-10.
 */
#ifndef TUNE_CUDA_TEST_UTIL_H
#define TUNE_CUDA_TEST_UTIL_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_util.h"
#include "bert/bert_test_util.h"
#include "models/bert/backend.h"
#include "models/cpu/cpu_backend.h"
#include "models/cuda/cuda_backend.h"

#define FEPS ((double)FLT_EPSILON) /* 2^-23 */

/* The backends every test uses, made once in main() (no fork). */
static struct tunep_backend *cpu_be, *gpu_be;

/* ---- buffers, released by release_all() in each test's teardown --------- */

#define MAX_TRACKED 4096
static struct {
    void *p;
    struct tunep_backend *be; /* NULL: host (free) */
} tracked[MAX_TRACKED];
static int ntracked;

static inline void *track(void *p, struct tunep_backend *be)
{
    ck_assert_ptr_nonnull(p);
    ck_assert_int_lt(ntracked, MAX_TRACKED);
    tracked[ntracked].p = p;
    tracked[ntracked].be = be;
    ntracked++;
    return p;
}

static inline void release_all(void)
{
    while (ntracked > 0) {
        ntracked--;
        if (tracked[ntracked].be)
            tracked[ntracked].be->free(tracked[ntracked].be->ctx, tracked[ntracked].p);
        else
            free(tracked[ntracked].p);
    }
}

static inline float *hbuf(size_t n)
{
    return track(calloc(n ? n : 1, sizeof(float)), NULL);
}

static inline float *hrand(struct test_rng *r, size_t n, double lo, double hi)
{
    float *p = hbuf(n);
    for (size_t i = 0; i < n; i++)
        p[i] = (float)test_rng_uniform(r, lo, hi);
    return p;
}

static inline void *dbytes(struct tunep_backend *be, size_t bytes)
{
    void *p = NULL;
    tune_error err = {0};
    ck_assert_msg(be->alloc(be->ctx, bytes ? bytes : 4, &p, &err) == TUNE_OK, "alloc: %s",
                  err.text);
    return track(p, be);
}

/* A device copy of n host floats. */
static inline float *dup_f(const float *h, size_t n)
{
    float *d = dbytes(gpu_be, n * sizeof(float));
    tune_error err = {0};
    ck_assert_msg(gpu_be->upload(gpu_be->ctx, d, h, n * sizeof(float), &err) == TUNE_OK,
                  "upload: %s", err.text);
    return d;
}

static inline int32_t *dup_i(const int32_t *h, size_t n)
{
    int32_t *d = dbytes(gpu_be, n * sizeof(int32_t));
    tune_error err = {0};
    ck_assert_msg(gpu_be->upload(gpu_be->ctx, d, h, n * sizeof(int32_t), &err) == TUNE_OK,
                  "upload: %s", err.text);
    return d;
}

/* A host copy of n device floats (waits for the queued work). */
static inline float *down(const float *d, size_t n)
{
    float *h = hbuf(n);
    tune_error err = {0};
    ck_assert_msg(gpu_be->download(gpu_be->ctx, h, d, n * sizeof(float), &err) == TUNE_OK,
                  "download: %s", err.text);
    return h;
}

/* A host copy of a host array (the CPU side's inputs are changed in place). */
static inline float *copy_h(const float *h, size_t n)
{
    float *p = hbuf(n);
    memcpy(p, h, n * sizeof(float));
    return p;
}

/* ---- comparisons ---------------------------------------------------------- */

static inline int check_exact(const char *name, const float *got, const float *ref, size_t n)
{
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &ref[i], sizeof(float)) != 0 && bad++ == 0)
            first = i;
    fprintf(stderr, "  %-28s exact       %s", name, bad ? "MISMATCH" : "ok");
    if (bad)
        fprintf(stderr, ": %zu of %zu differ, first [%zu] got %.9g want %.9g", bad, n, first,
                (double)got[first], (double)ref[first]);
    fprintf(stderr, "\n");
    return bad == 0;
}

/* |got - ref| <= c eps mag_i (+ a denormal floor); mag NULL means |ref|. */
static inline int check_mag(const char *name, const float *got, const float *ref, const float *mag,
                            size_t n, double c)
{
    size_t bad = 0, first = 0;
    double worst = 0.0; /* max |err| / (eps mag) */
    for (size_t i = 0; i < n; i++) {
        double m = mag ? (double)mag[i] : fabs((double)ref[i]);
        double e = fabs((double)got[i] - (double)ref[i]);
        double u = e / (FEPS * m + 1e-37);
        if (isnan(u))
            worst = (double)INFINITY;
        else if (u > worst)
            worst = u;
        if (!(e <= c * FEPS * m + 1e-30) && bad++ == 0)
            first = i;
    }
    fprintf(stderr, "  %-28s max %8.3g eps*mag (limit %g)%s", name, worst, c,
            bad ? " MISMATCH" : "");
    if (bad)
        fprintf(stderr, ": %zu of %zu, first [%zu] got %.9g want %.9g mag %.3g", bad, n, first,
                (double)got[first], (double)ref[first], mag ? (double)mag[first] : 0.0);
    fprintf(stderr, "\n");
    return bad == 0;
}

static inline int check_nmse(const char *name, const float *got, const float *ref, size_t n,
                             double limit)
{
    double num = 0.0, den = 0.0;
    int finite = 1;
    for (size_t i = 0; i < n; i++) {
        double d = (double)got[i] - (double)ref[i];
        num += d * d;
        den += (double)ref[i] * (double)ref[i];
        finite &= isfinite(got[i]) != 0;
    }
    double v = den > 0.0 ? num / den : num;
    int ok = finite && v <= limit;
    fprintf(stderr, "  %-28s nmse %10.3g (limit %g)%s\n", name, v, limit, ok ? "" : " MISMATCH");
    return ok;
}

/* ---- main: skip without a device, run without forking --------------------- */

#define TUNE_CUDA_CHECK_MAIN(suite_fn)                                                             \
    int main(void)                                                                                 \
    {                                                                                              \
        int count = 0;                                                                             \
        tune_error err_ = {0};                                                                     \
        if (tunep_cuda_device_count(&count, &err_) != TUNE_OK) {                                   \
            printf("skipped: %s\n", err_.text);                                                    \
            return 77; /* Meson: skipped */                                                        \
        }                                                                                          \
        struct tunep_cuda_options opt_ = {.device = 0, .tf32 = 0};                                 \
        if (tunep_cpu_backend_new(2, &cpu_be, &err_) != TUNE_OK ||                                 \
            tunep_cuda_backend_new(&opt_, &gpu_be, &err_) != TUNE_OK) {                            \
            fprintf(stderr, "cannot create the backends: %s\n", err_.text);                        \
            return EXIT_FAILURE;                                                                   \
        }                                                                                          \
        char name_[256];                                                                           \
        tunep_cuda_device_name(0, name_, sizeof name_, NULL);                                      \
        printf("device 0: %s (%d device%s)\n", name_, count, count == 1 ? "" : "s");               \
        SRunner *sr_ = srunner_create(suite_fn());                                                 \
        srunner_set_fork_status(sr_, CK_NOFORK);                                                   \
        srunner_run_all(sr_, CK_NORMAL);                                                           \
        int failed_ = srunner_ntests_failed(sr_);                                                  \
        srunner_free(sr_);                                                                         \
        tunep_cuda_backend_free(gpu_be);                                                           \
        tunep_cpu_backend_free(cpu_be);                                                            \
        return failed_ == 0 ? EXIT_SUCCESS : EXIT_FAILURE;                                         \
    }

#endif /* TUNE_CUDA_TEST_UTIL_H */
