/*
 * fuzz_util.h - helpers shared by the libFuzzer harnesses in fuzz/: the
 * entry points' prototypes, an in-memory file for parsers that only take a
 * path, and the checks every failed call must pass.
 *
 * Must be the first include of a harness: it asks for memfd_create() with
 * _GNU_SOURCE. Harnesses are not library code, so they may abort(): an
 * abort is how a harness reports a broken invariant to libFuzzer, which then
 * saves the input as a crash.
 */
#ifndef TUNE_FUZZ_UTIL_H
#define TUNE_FUZZ_UTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tune.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Reports a broken invariant and aborts, so that libFuzzer keeps the input. */
#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);           \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/*
 * A file that lives in memory (memfd; an unlinked temporary file where
 * memfd_create is missing), reached by a path ("/proc/self/fd/N") that
 * fopen() and open() accept. Opening the path gives a fresh file
 * description, so each reader starts at offset 0.
 */
struct fuzz_file {
    int fd; /* -1 until first use */
    char path[64];
};

#define FUZZ_FILE_INIT                                                                             \
    {                                                                                              \
        -1,                                                                                        \
        {                                                                                          \
            0                                                                                      \
        }                                                                                          \
    }

/* Replaces the file's content with data[0..size); returns its path. */
static inline const char *fuzz_file_set(struct fuzz_file *f, const void *data, size_t size)
{
    if (f->fd < 0) {
        f->fd = memfd_create("tune-fuzz", MFD_CLOEXEC);
        if (f->fd < 0) {
            const char *dir = getenv("TMPDIR");
            char tmpl[4096];
            snprintf(tmpl, sizeof tmpl, "%s/tune-fuzz-XXXXXX", dir && *dir ? dir : "/tmp");
            f->fd = mkstemp(tmpl);
            FUZZ_CHECK(f->fd >= 0);
            unlink(tmpl);
        }
        snprintf(f->path, sizeof f->path, "/proc/self/fd/%d", f->fd);
    }
    FUZZ_CHECK(ftruncate(f->fd, 0) == 0);
    const char *p = data;
    size_t done = 0;
    while (done < size) {
        ssize_t n = pwrite(f->fd, p + done, size - done, (off_t)done);
        FUZZ_CHECK(n > 0);
        done += (size_t)n;
    }
    return f->path;
}

/* A NUL-terminated copy of data (malloc; the caller frees it). */
static inline char *fuzz_strndup(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    FUZZ_CHECK(s != NULL);
    if (size)
        memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* What every failed call must leave in its tune_error. */
static inline void fuzz_check_error(tune_status st, const tune_error *err)
{
    FUZZ_CHECK(st != TUNE_OK);
    FUZZ_CHECK(err->code == st);
    FUZZ_CHECK(memchr(err->text, '\0', sizeof err->text) != NULL);
    FUZZ_CHECK(memchr(err->source, '\0', sizeof err->source) != NULL);
    FUZZ_CHECK(err->text[0] != '\0');
    FUZZ_CHECK(err->line >= 0 && err->column >= 0);
    FUZZ_CHECK(strlen(tune_strerror(st)) > 0);
    char buf[900];
    FUZZ_CHECK(strlen(tune_error_format(err, buf, sizeof buf)) >= strlen(err->text));
}

#endif /* TUNE_FUZZ_UTIL_H */
