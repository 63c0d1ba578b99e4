/*
 * file_io.h - whole files: the one atomic writer every output goes through
 * (reports, CSV exports, params.json, checkpoints, safetensors files) and
 * the one whole-file reader.
 */
#ifndef TUNE_FILE_IO_H
#define TUNE_FILE_IO_H

#include <stddef.h>

#include "base/base.h"

/*
 * A file being replaced atomically: the bytes go to "<path>.tmp" beside it,
 * which tunep_atomic_commit() syncs and renames over path, then syncs the
 * folder, so that path holds the old file or the whole new one, even after a
 * crash. Readers of path never see a partial file.
 *
 *   struct tunep_atomic_file f;
 *   if (!(st = tunep_atomic_open(&f, path, err)) &&
 *       !(st = tunep_atomic_write(&f, data, size, err)))
 *       st = tunep_atomic_commit(&f, err);
 *   tunep_atomic_abort(&f);   (a no-op once committed or failed)
 *
 * Errors have path as err->source and name the temporary file in the text:
 * "cannot create '<path>.tmp': <strerror>", "cannot write '...': ...",
 * "cannot rename '...' into place: ..."; all are TUNE_EIO, except
 * TUNE_ENOMEM. A call that fails removes the temporary file and releases f,
 * and `error` keeps the errno of the failure for callers that map some of
 * them to their own codes. Two writers of one path at once share its
 * temporary name: the caller serialises them.
 */
struct tunep_atomic_file {
    char *path; /* the target; NULL when f holds nothing */
    char *tmp;  /* "<path>.tmp" */
    int fd;     /* the temporary file, -1 when closed */
    int error;  /* errno of the last failure, 0 when none */
};

/* Creates (truncates) "<path>.tmp", mode 0666 less the umask. */
tune_status tunep_atomic_open(struct tunep_atomic_file *f, const char *path, tune_error *err);
/* Appends size bytes (any size; interrupted writes are resumed). */
tune_status tunep_atomic_write(struct tunep_atomic_file *f, const void *data, size_t size,
                               tune_error *err);
/*
 * fsync, close, rename over path, then fsync the folder (best effort: some
 * file systems cannot sync a folder, and the new file is in place by then).
 * Releases f whatever the outcome.
 */
tune_status tunep_atomic_commit(struct tunep_atomic_file *f, tune_error *err);
/* Removes the temporary file of an uncommitted f and releases f; a no-op on a
 * released or zero-initialised one. */
void tunep_atomic_abort(struct tunep_atomic_file *f);

/* The whole sequence for bytes already in memory. */
tune_status tunep_write_file_atomic(const char *path, const void *data, size_t size,
                                    tune_error *err);

/*
 * Reads the whole file at path (any kind: regular, pipe, device) into a
 * buffer from tunep_malloc with a NUL after the last byte, not counted in
 * *ret_size. limit: the largest size accepted, 0 for none.
 * @return TUNE_OK; TUNE_ENOTFOUND (no such file) or TUNE_EIO "cannot open:
 *         <strerror>"; TUNE_ECONFIG "file is larger than the limit of N
 *         bytes"; TUNE_EIO "cannot read: ..."; TUNE_ENOMEM. Outputs are
 *         written only on success.
 */
tune_status tunep_read_file(const char *path, size_t limit, char **ret_data, size_t *ret_size,
                            tune_error *err);

#endif /* TUNE_FILE_IO_H */
