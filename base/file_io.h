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
 * A file being replaced atomically: the bytes go to a temporary file beside
 * it, which tunep_atomic_commit() syncs and renames over path, then syncs the
 * folder, so that path holds the old file or the whole new one, even after a
 * crash. Readers of path never see a partial file.
 *
 *   struct tunep_atomic_file f;
 *   if (!(st = tunep_atomic_open(&f, path, err)) &&
 *       !(st = tunep_atomic_write(&f, data, size, err)))
 *       st = tunep_atomic_commit(&f, err);
 *   tunep_atomic_abort(&f);   (a no-op once committed or failed)
 *
 * The temporary file is ".<name>.tmp.<host>-<pid>.XXXXXX" in path's folder
 * (<name>: path's last component, cut to 200 bytes; <host>: 8 hex digits
 * hashing this machine's host name; <pid>: the writer's process; XXXXXX:
 * random, created with O_EXCL), so writers of one path at once, in threads or
 * processes, never share one: the last rename wins and each file is whole.
 * A write that fails removes its temporary file. One that was killed leaves
 * it, and the next tunep_atomic_open() of the same path removes every such
 * file of this host whose pid is no longer a live process.
 *
 * Errors have path as err->source and name the temporary file in the text:
 * "cannot create '<folder>/.<name>.tmp.<host>-<pid>.XXXXXX': <strerror>",
 * "cannot write '...': ...", "cannot rename '...' into place: ..."; all are
 * TUNE_EIO, except TUNE_ENOMEM. A call that fails removes the temporary file
 * and releases f, and `error` keeps the errno of the failure for callers
 * that map some of them to their own codes.
 */
struct tunep_atomic_file {
    char *path; /* the target; NULL when f holds nothing */
    char *tmp;  /* the temporary file; NULL when writing to standard output */
    int fd;     /* the temporary file (or 1), -1 when closed */
    int error;  /* errno of the last failure, 0 when none */
};

/* Creates path's temporary file, mode 0666 less the umask. */
tune_status tunep_atomic_open(struct tunep_atomic_file *f, const char *path, tune_error *err);

/*
 * tunep_atomic_open() for a path a user named as an output:
 * - "-" is standard output: written as it comes, nothing to rename (the
 *   caller flushes its own stdio buffers first);
 * - a symbolic link is written through: its target (which must exist) is
 *   replaced and the link stays as it is;
 * - anything but a regular file (a directory, device, FIFO or socket) is
 *   refused, and so is every file of keep[0..n_keep), compared by st_dev and
 *   st_ino (another name or a hard link is still the same file), or by
 *   folder and name when one of them does not exist yet.
 * @return TUNE_OK; TUNE_EINVAL "refusing to write '<path>': it is a directory,
 *         and outputs are written only to regular files ('-' is standard
 *         output)", "refusing to write '<path>': it is <keep_what> '<keep[i]>'",
 *         "cannot write through the symbolic link '<path>': <strerror> ('-' is
 *         standard output)";
 *         otherwise as tunep_atomic_open().
 */
tune_status tunep_atomic_open_output(struct tunep_atomic_file *f, const char *path,
                                     const char *const *keep, size_t n_keep, const char *keep_what,
                                     tune_error *err);
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
