/*
 * check_util.h - helpers shared by the Check suites.
 *
 * TUNE_CHECK_MAIN(suite_fn) expands to a main() that runs the suite and exits
 * with EXIT_FAILURE when any test failed (llm.c's test_gpt2.c did not).
 */
#ifndef TUNE_CHECK_UTIL_H
#define TUNE_CHECK_UTIL_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

#endif /* TUNE_CHECK_UTIL_H */
