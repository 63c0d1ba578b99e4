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

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- the atomic writer ---------------------------------------------------- */

static void release(struct tunep_atomic_file *f)
{
    if (f->path && f->fd >= 0 && f->tmp) {
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
    tune_status st =
        tunep_error_set_at(err, TUNE_EIO, f->path, 0, 0, "cannot %s '%s'%s: %s", what,
                           f->tmp ? f->tmp : "<standard output>", how, strerror(saved));
    release(f);
    return st;
}

/* The part of a temporary name taken from the target's name, in bytes: keeps
 * ".<name>.tmp.<host>-<pid>.XXXXXX" under NAME_MAX (255) for any name. */
#define TMP_NAME_MAX 200

/* 32-bit FNV-1a of this machine's host name: temporaries made on another
 * machine (a shared file system) are never taken for stale, since their pid
 * means nothing here. */
static unsigned host_id(void)
{
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0)
        host[0] = '\0';
    unsigned h = 2166136261u;
    for (const char *p = host; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    return h;
}

/* Splits path into its folder ("." when none; "/" for "/x") and the name after the last '/'. */
static char *folder_of(const char *path, const char **ret_name)
{
    const char *slash = strrchr(path, '/');
    *ret_name = slash ? slash + 1 : path;
    return slash ? tunep_strndup(path, slash == path ? 1 : (size_t)(slash - path))
                 : tunep_strdup(".");
}

/*
 * Removes the temporaries of path that a dead process of this machine left
 * (one killed while writing): entries ".<name>.tmp.<host>-<pid>.<6 chars>"
 * of path's folder whose host is this one and whose pid is no live process.
 * A pid reused since then keeps its file until the next write: harmless.
 */
static void remove_stale(const char *path, const char *prefix)
{
    const char *name;
    char *dir = folder_of(path, &name);
    DIR *d = dir ? opendir(dir) : NULL;
    size_t n_prefix = strlen(prefix);
    unsigned me = host_id();
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        if (strncmp(e->d_name, prefix, n_prefix) != 0)
            continue;
        const char *rest = e->d_name + n_prefix;
        unsigned host;
        long pid;
        int used = 0;
        if (sscanf(rest, "%8x-%ld.%n", &host, &pid, &used) != 2 || used == 0 ||
            strlen(rest + used) != 6 || host != me || pid <= 0 || pid == (long)getpid())
            continue;
        if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
            (void)unlinkat(dirfd(d), e->d_name, 0);
    }
    if (d)
        closedir(d);
    tunep_free(dir);
}

/* Creates path's temporary file, O_EXCL under a fresh random suffix (mkstemp
 * would make it 0600; outputs get 0666 less the umask, like any new file). */
static tune_status open_tmp(struct tunep_atomic_file *f, tune_error *err)
{
    static _Atomic unsigned long counter;
    const char *slash = strrchr(f->path, '/');
    int n_dir = slash ? (int)(slash - f->path + 1) : 0;
    const char *name = f->path + n_dir;
    size_t n_name = strlen(name) > TMP_NAME_MAX ? TMP_NAME_MAX : strlen(name);
    char *prefix = tunep_asprintf(".%.*s.tmp.", (int)n_name, name);
    f->tmp = prefix ? tunep_asprintf("%.*s%s%08x-%ld.XXXXXX", n_dir, f->path, prefix, host_id(),
                                     (long)getpid())
                    : NULL;
    if (!f->tmp) {
        tunep_free(prefix);
        release(f);
        f->error = ENOMEM;
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    }
    remove_stale(f->path, prefix);
    tunep_free(prefix);
    char *x = f->tmp + strlen(f->tmp) - 6;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^
                    ((uint64_t)getpid() << 40) ^ (uint64_t)(uintptr_t)f ^
                    ++counter * 0x9e3779b97f4a7c15u;
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    for (int attempt = 0; attempt < 100; attempt++) {
        for (int i = 0; i < 6; i++) {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17; /* xorshift64 */
            x[i] = alphabet[seed % (sizeof alphabet - 1)];
        }
        /* O_CLOEXEC: trials fork commands, which must not inherit the file. */
        f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (f->fd >= 0 || errno != EEXIST)
            break;
    }
    if (f->fd < 0) {
        memcpy(x, "XXXXXX", 6); /* the message names the pattern, not a last guess */
        return fail(f, errno, "create", "", err);
    }
    return TUNE_OK;
}

tune_status tunep_atomic_open(struct tunep_atomic_file *f, const char *path, tune_error *err)
{
    f->fd = -1;
    f->error = 0;
    f->tmp = NULL;
    f->path = tunep_strdup(path);
    if (!f->path) {
        f->error = ENOMEM;
        return tunep_error_set_at(err, TUNE_ENOMEM, path, 0, 0, "out of memory");
    }
    return open_tmp(f, err);
}

static const char *kind_of(mode_t mode)
{
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISSOCK(mode))
        return "a socket";
    return "not a regular file";
}

/* Whether a and b name one file: the same st_dev/st_ino when both exist,
 * else the same name in the same folder (a file not there yet). */
static int same_file(const char *a, const struct stat *a_sb, const char *b)
{
    struct stat b_sb;
    int b_exists = stat(b, &b_sb) == 0;
    if (a_sb && b_exists)
        return a_sb->st_dev == b_sb.st_dev && a_sb->st_ino == b_sb.st_ino;
    if (a_sb || b_exists)
        return 0;
    const char *a_name, *b_name;
    char *a_dir = folder_of(a, &a_name), *b_dir = folder_of(b, &b_name);
    struct stat ad, bd;
    int same = a_dir && b_dir && strcmp(a_name, b_name) == 0 && stat(a_dir, &ad) == 0 &&
               stat(b_dir, &bd) == 0 && ad.st_dev == bd.st_dev && ad.st_ino == bd.st_ino;
    tunep_free(a_dir);
    tunep_free(b_dir);
    return same;
}

tune_status tunep_atomic_open_output(struct tunep_atomic_file *f, const char *path,
                                     const char *const *keep, size_t n_keep, const char *keep_what,
                                     tune_error *err)
{
    f->fd = -1;
    f->error = 0;
    f->path = f->tmp = NULL;
    if (strcmp(path, "-") == 0) {
        if (!(f->path = tunep_strdup("-"))) {
            f->error = ENOMEM;
            return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
        }
        f->fd = STDOUT_FILENO;
        return TUNE_OK;
    }
    /* A symbolic link is written through: the temporary file goes beside its
     * target and replaces the target; the link stays a link. */
    struct stat sb;
    char *real = NULL;
    if (lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode)) {
        char *r = realpath(path, NULL);
        if (!r) {
            f->error = errno;
            return tunep_error_set_at(err, TUNE_EINVAL, path, 0, 0,
                                      "cannot write through the symbolic link '%s': %s "
                                      "('-' is standard output)",
                                      path, strerror(errno));
        }
        real = tunep_strdup(r);
        free(r);
        if (!real) {
            f->error = ENOMEM;
            return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
        }
    }
    const char *target = real ? real : path;
    int exists = stat(target, &sb) == 0;
    tune_status st = TUNE_OK;
    if (exists && !S_ISREG(sb.st_mode)) {
        f->error = EINVAL;
        st = tunep_error_set_at(err, TUNE_EINVAL, path, 0, 0,
                                "refusing to write '%s': it is %s, and outputs are written "
                                "only to regular files ('-' is standard output)",
                                path, kind_of(sb.st_mode));
    }
    for (size_t i = 0; !st && i < n_keep; i++)
        if (keep[i] && same_file(target, exists ? &sb : NULL, keep[i])) {
            f->error = EINVAL;
            st = tunep_error_set_at(err, TUNE_EINVAL, path, 0, 0,
                                    "refusing to write '%s': it is %s '%s'", path,
                                    keep_what ? keep_what : "the file", keep[i]);
        }
    if (st) {
        tunep_free(real);
        return st;
    }
    if (real) {
        f->path = real;
        return open_tmp(f, err);
    }
    return tunep_atomic_open(f, path, err);
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
    const char *name;
    char *dir = folder_of(path, &name);
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
    if (!f->tmp) { /* standard output: nothing to sync or rename */
        release(f);
        return TUNE_OK;
    }
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
