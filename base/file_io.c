/*
 * file_io.c - whole-file writes that are atomic and durable, and whole-file
 * reads.
 *
 * The write is the usual POSIX sequence (write a temporary file in the same
 * folder, fsync it, rename it over the target, fsync the folder): rename()
 * replaces the name in one step, and the first fsync makes sure the name never
 * points at a file whose blocks are not on disk yet (ext4's delayed
 * allocation could otherwise leave an empty file after a crash). The folder's
 * fsync makes the rename itself survive a crash. The temporary file sits
 * beside the target because rename() cannot cross file systems.
 */
#include "base/file_io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the atomic writer ---------------------------------------------------- */

static void release(struct tunep_atomic_file *f)
{
    if (f->path && f->fd >= 0) {
        close(f->fd);
        unlink(f->tmp);
    }
    f->fd = -1;
    tunep_free(f->path);
    tunep_free(f->tmp);
    f->path = f->tmp = NULL;
}

/* Sets err from errno `saved` ("cannot <what> '<tmp>'<how>: <strerror>", source
 * the target), then releases f, removing its temporary file. */
static tune_status fail(struct tunep_atomic_file *f, int saved, const char *what, const char *how,
                        tune_error *err)
{
    f->error = saved;
    tune_status st = tunep_error_set_at(err, TUNE_EIO, f->path, 0, 0, "cannot %s '%s'%s: %s", what,
                                        f->tmp, how, strerror(saved));
    release(f);
    return st;
}

tune_status tunep_atomic_open(struct tunep_atomic_file *f, const char *path, tune_error *err)
{
    f->fd = -1;
    f->error = 0;
    f->path = tunep_strdup(path);
    f->tmp = tunep_asprintf("%s.tmp", path);
    if (!f->path || !f->tmp) {
        release(f);
        f->error = ENOMEM;
        return tunep_error_set_at(err, TUNE_ENOMEM, path, 0, 0, "out of memory");
    }
    /* O_CLOEXEC: trials fork commands, which must not inherit the file. */
    f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (f->fd < 0)
        return fail(f, errno, "create", "", err);
    return TUNE_OK;
}

tune_status tunep_atomic_write(struct tunep_atomic_file *f, const void *data, size_t size,
                               tune_error *err)
{
    const char *p = data;
    while (size > 0) {
        ssize_t n = write(f->fd, p, size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return fail(f, n < 0 ? errno : EIO, "write", "", err);
        p += n;
        size -= (size_t)n;
    }
    return TUNE_OK;
}

/* Best effort: file systems that cannot sync a folder (EINVAL) have nothing to flush. */
static void sync_folder(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir =
        slash ? tunep_strndup(path, slash == path ? 1 : (size_t)(slash - path)) : tunep_strdup(".");
    if (!dir)
        return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    tunep_free(dir);
}

tune_status tunep_atomic_commit(struct tunep_atomic_file *f, tune_error *err)
{
    /* close() reports the write errors of file systems that defer them (NFS). */
    int bad = fsync(f->fd) != 0;
    int saved = errno;
    if (close(f->fd) != 0 && !bad) {
        bad = 1;
        saved = errno;
    }
    f->fd = -1;
    if (bad || rename(f->tmp, f->path) != 0) {
        if (!bad)
            saved = errno;
        unlink(f->tmp);
        return fail(f, saved, bad ? "write" : "rename", bad ? "" : " into place", err);
    }
    sync_folder(f->path);
    release(f);
    return TUNE_OK;
}

void tunep_atomic_abort(struct tunep_atomic_file *f)
{
    release(f);
}

tune_status tunep_write_file_atomic(const char *path, const void *data, size_t size,
                                    tune_error *err)
{
    struct tunep_atomic_file f;
    tune_status st = tunep_atomic_open(&f, path, err);
    if (!st)
        st = tunep_atomic_write(&f, data, size, err);
    if (!st)
        st = tunep_atomic_commit(&f, err);
    tunep_atomic_abort(&f);
    return st;
}

/* ---- the reader ------------------------------------------------------------ */

tune_status tunep_read_file(const char *path, size_t limit, char **ret_data, size_t *ret_size,
                            tune_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return tunep_error_set_at(err, errno == ENOENT ? TUNE_ENOTFOUND : TUNE_EIO, path, 0, 0,
                                  "cannot open: %s", strerror(errno));
    /* Room for the NUL and for one more byte, where a read returns 0 at the
     * end: a regular file (its size known) takes one allocation and no copy.
     * Anything else (a pipe) grows from 64 KiB by doubling. With a limit,
     * nothing past limit + 1 bytes is read. */
    struct stat sb;
    size_t cap = 65536, len = 0;
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode))
        cap = (size_t)sb.st_size + 2;
    if (limit && cap > limit + 2)
        cap = limit + 2;
    tune_status st = TUNE_OK;
    char *data = tunep_malloc(cap);
    if (!data)
        st = tunep_error_set(err, TUNE_ENOMEM, "out of memory reading '%s'", path);
    while (!st) {
        if (limit && len > limit) {
            st = tunep_error_set_at(err, TUNE_ECONFIG, path, 0, 0,
                                    "file is larger than the limit of %zu bytes", limit);
            break;
        }
        if (cap - len < 2) {
            size_t grown = limit && cap * 2 > limit + 2 ? limit + 2 : cap * 2;
            char *p = tunep_realloc(data, len, grown);
            if (!p) {
                st = tunep_error_set(err, TUNE_ENOMEM, "out of memory reading '%s'", path);
                break;
            }
            data = p;
            cap = grown;
        }
        ssize_t n = read(fd, data + len, cap - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            st = tunep_error_set_at(err, TUNE_EIO, path, 0, 0, "cannot read: %s", strerror(errno));
        else if (n == 0)
            break;
        else
            len += (size_t)n;
    }
    close(fd);
    if (st) {
        tunep_free(data);
        return st;
    }
    data[len] = '\0';
    *ret_data = data;
    *ret_size = len;
    return TUNE_OK;
}
