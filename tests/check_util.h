/*
 * check_util.h - helpers shared by the Check suites.
 *
 * TUNE_CHECK_MAIN(suite_fn) expands to a main() that runs the suite and exits
 * with EXIT_FAILURE when any test failed (llm.c's test_gpt2.c did not).
 *
 * tune_test_alloc_*() inject allocation failures through tune_set_alloc_funcs()
 * (jansson's test_chaos). Their state is one static struct per test program,
 * so a test must not run two injections at once.
 */
#ifndef TUNE_CHECK_UTIL_H
#define TUNE_CHECK_UTIL_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tune/tune.h"

#define TUNE_CHECK_MAIN(suite_fn)                                                                  \
    int main(void)                                                                                 \
    {                                                                                              \
        SRunner *sr_ = srunner_create(suite_fn());                                                 \
        srunner_run_all(sr_, CK_NORMAL);                                                           \
        int failed_ = srunner_ntests_failed(sr_);                                                  \
        srunner_free(sr_);                                                                         \
        return failed_ == 0 ? EXIT_SUCCESS : EXIT_FAILURE;                                         \
    }

/* Creates a fresh temporary folder; the caller removes it with tune_test_rmtree(). */
static inline char *tune_test_mkdtemp(void)
{
    char tmpl[] = "/tmp/tune-test-XXXXXX";
    char *d = mkdtemp(tmpl);
    return d ? strdup(d) : NULL;
}

/* rm -rf path (tests only). */
static inline void tune_test_rmtree(const char *path)
{
    char cmd[4096];
    if (!path || !*path || strcmp(path, "/") == 0)
        return;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0)
        fprintf(stderr, "warning: could not remove %s\n", path);
}

/* Reads a whole file into a NUL-terminated malloc'd buffer, or NULL. */
static inline char *tune_test_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf)
        buf[n] = '\0';
    fclose(f);
    return buf;
}

/* ---- allocation failures ------------------------------------------------------------------- */

static struct {
    long count;   /* allocations requested since the last fail_after/fail_from */
    long fail_at; /* 0-based index of the allocation that fails; -1: none */
    int sticky;   /* the allocations after fail_at fail as well */
    int hit;      /* the allocation at fail_at was requested */
} tune_test_alloc_ = {0, -1, 0, 0};

/* The malloc_fn that tune_test_alloc_fail_after/from install. */
static inline void *tune_test_alloc_malloc(size_t size)
{
    long i = tune_test_alloc_.count++, at = tune_test_alloc_.fail_at;
    if (at >= 0 && (i == at || (tune_test_alloc_.sticky && i > at))) {
        tune_test_alloc_.hit = 1;
        return NULL;
    }
    return malloc(size);
}

static inline void tune_test_alloc_arm(long n, int sticky)
{
    tune_test_alloc_.count = 0;
    tune_test_alloc_.fail_at = n;
    tune_test_alloc_.sticky = sticky;
    tune_test_alloc_.hit = 0;
    tune_set_alloc_funcs(tune_test_alloc_malloc, free);
}

/* The n-th library allocation from now (0 = the next one) fails and only that
 * one; -1: none fails. Installs the allocator until tune_test_alloc_reset(). */
static inline void tune_test_alloc_fail_after(long n)
{
    tune_test_alloc_arm(n, 0);
}

/* As tune_test_alloc_fail_after(), but every allocation after the n-th fails too. */
static inline void tune_test_alloc_fail_from(long n)
{
    tune_test_alloc_arm(n, 1);
}

/* Restores the default allocator. tune_test_alloc_failed() keeps its answer. */
static inline void tune_test_alloc_reset(void)
{
    tune_set_alloc_funcs(NULL, NULL);
    tune_test_alloc_.fail_at = -1;
    tune_test_alloc_.sticky = 0;
}

/* Whether the injected failure was hit since the last fail_after/fail_from. */
static inline int tune_test_alloc_failed(void)
{
    return tune_test_alloc_.hit;
}

#endif /* TUNE_CHECK_UTIL_H */
