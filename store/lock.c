/*
 * lock.c - one controller per experiment folder: an fcntl() write lock on
 * <dir>/experiment.lock.
 *
 * An open-file-description lock (F_OFD_SETLK, Linux 3.15+; F_SETLK where
 * that is missing) belongs to the open file, not to a path or a pid file:
 * the kernel drops it when the holder's last descriptor closes, so a
 * SIGKILLed controller leaves no stale lock and its folder can be resumed at
 * once. Unlike flock(), fcntl locks reach the server on NFS (through lockd
 * or NFSv4's own locking), so two controllers on two hosts of a cluster
 * exclude each other too. Where it does not hold: NFS mounted with `nolock`
 * or `local_lock=all`, and Lustre without `-o flock`, lock only within one
 * host. The lock file holds the holder's pid and host, for the message a
 * second controller gets; it is never removed, since unlinking a lock file
 * lets two processes lock two different files of one name.
 */
#define _GNU_SOURCE /* F_OFD_SETLK */
#include "store/lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct tunep_store_lock {
    int fd;
};

static int set_lock(int fd, short type)
{
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = type;
    fl.l_whence = SEEK_SET; /* l_start = l_len = 0: the whole file */
#ifdef F_OFD_SETLK
    if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
        return 0;
    if (errno != EINVAL)
        return -1;
        /* A kernel older than 3.15: a classic per-process lock. The study keeps
         * its only descriptor of the file, so no other close() drops it. */
#endif
    return fcntl(fd, F_SETLK, &fl);
}

/* The holder's "pid N on host H", or "" when it has not written it yet. */
static void read_holder(int fd, char *buf, size_t size)
{
    ssize_t n = pread(fd, buf, size - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
}

tune_status tunep_store_lock_take(const char *dir, struct tunep_store_lock **ret_lock,
                                  tune_error *err)
{
    return tunep_store_lock_take_wait(dir, 0, ret_lock, err);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

tune_status tunep_store_lock_take_wait(const char *dir, double wait_s,
                                       struct tunep_store_lock **ret_lock, tune_error *err)
{
    *ret_lock = NULL;
    char *path = tunep_asprintf("%s/experiment.lock", dir);
    if (!path)
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0 && (errno == EROFS || errno == EACCES)) {
        /* This process cannot write the folder, so it cannot write the store
         * either: opening the store says so in its own words. */
        tunep_free(path);
        return TUNE_OK;
    }
    if (fd < 0) {
        tune_status st =
            tunep_error_set_at(err, TUNE_EIO, path, 0, 0,
                               "cannot open the experiment's lock file: %s", strerror(errno));
        tunep_free(path);
        return st;
    }
    tunep_free(path);
    /* Another holder's calls are short (an ask, a tell): poll for it every 10 ms. */
    double deadline = wait_s > 0 ? now_s() + wait_s : 0;
    int locked;
    while (!(locked = set_lock(fd, F_WRLCK) == 0) && (errno == EACCES || errno == EAGAIN) &&
           now_s() < deadline)
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    if (!locked) {
        int e = errno;
        if (e == EACCES || e == EAGAIN) {
            /* The holder writes its name just after it takes the lock: give
             * it a moment (100 ms at most) when it is that new. */
            char holder[256];
            read_holder(fd, holder, sizeof holder);
            for (int i = 0; i < 20 && !*holder; i++) {
                nanosleep(&(struct timespec){0, 5000000}, NULL);
                read_holder(fd, holder, sizeof holder);
            }
            close(fd);
            if (wait_s > 0)
                return tunep_error_set_at(err, TUNE_EBUSY, dir, 0, 0,
                                          "another tune run is using this experiment folder "
                                          "(%s), still after %g s of waiting; try again when "
                                          "it ends",
                                          *holder ? holder : "a process that is starting", wait_s);
            return tunep_error_set_at(
                err, TUNE_EBUSY, dir, 0, 0,
                "another tune run is using this experiment folder (%s); wait for it to "
                "end or stop it (Ctrl-C), then continue with `tune resume %s`",
                *holder ? holder : "a process that is starting", dir);
        }
        close(fd);
        if (e == ENOLCK || e == ENOSYS || e == EOPNOTSUPP) {
            tunep_log(TUNE_LOG_WARN,
                      "%s: the file system refuses locks (%s): nothing stops a second tune "
                      "run from writing this experiment at the same time",
                      dir, strerror(e));
            return TUNE_OK;
        }
        return tunep_error_set_at(err, TUNE_EIO, dir, 0, 0, "cannot lock the experiment: %s",
                                  strerror(e));
    }
    struct tunep_store_lock *lock = tunep_calloc(1, sizeof *lock);
    if (!lock) {
        close(fd);
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    }
    lock->fd = fd;
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0)
        snprintf(host, sizeof host, "unknown");
    char since[32] = "";
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(since, sizeof since, ", since %Y-%m-%d %H:%M:%S UTC", &tm);
    char text[384];
    int n = snprintf(text, sizeof text, "pid %ld on host %s%s\n", (long)getpid(), host, since);
    /* Only for messages: the lock itself is what excludes. */
    if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)n, 0) != n)
        tunep_log(TUNE_LOG_DEBUG, "%s: cannot record the lock holder", dir);
    *ret_lock = lock;
    return TUNE_OK;
}

void tunep_store_lock_release(struct tunep_store_lock *lock)
{
    if (!lock)
        return;
    /* Cleared first, so a later reader does not name a finished run. */
    if (ftruncate(lock->fd, 0) != 0)
        tunep_log(TUNE_LOG_DEBUG, "cannot clear the lock holder");
    close(lock->fd); /* releases the lock */
    tunep_free(lock);
}
