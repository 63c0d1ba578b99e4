/*
 * trial_dir.c - per-trial folders in the experiment folder, as Ray Tune keeps
 * one per trial:
 *
 *   <storage>/trials/trial_000042/params.json    the trial's configuration
 *                                 stdout.log      the command trainer's logs
 *                                 stderr.log
 *                                 checkpoint.bin  checkpoints (checkpoint.c)
 *
 * A folder is made the first time an attempt asks for it (tune_trial_dir():
 * the command trainer at once, a C objective when it wants to keep files),
 * with params.json written under a temporary name and renamed, so a crash
 * leaves it whole or absent and the next attempt writes it again. Not at
 * every trial's start: a folder and a file cost 0.4-2 ms here, 4-18 times
 * tune's own cost for a trivial trial with the SQLite store (bench/overhead,
 * 5000 trials: 115 us per trial without folders, 540-2145 us with), and a
 * 100,000-trial sweep would leave 100,000 folders nobody reads; the store
 * holds every configuration anyway. The folders add to the store and never
 * replace it: one that cannot be made (a full disk) is logged and the trial
 * runs without it. ":memory:" studies keep no files, so their trials have no
 * folder and the command trainer sends its program's output to the log
 * callback instead.
 */
#include "engine/trial_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "engine/study.h"

static int is_memory(const char *storage)
{
    return strcmp(storage, ":memory:") == 0;
}

char *tunep_trial_dir_path(const char *storage, int64_t trial_id)
{
    if (!storage || is_memory(storage))
        return NULL;
    return tunep_asprintf("%s/trials/trial_%06lld", storage, (long long)trial_id);
}

static tune_status make_dir(const char *path, tune_error *err)
{
    if (mkdir(path, 0777) == 0 || errno == EEXIST)
        return TUNE_OK;
    return tunep_error_set_at(err, TUNE_EIO, path, 0, 0, "cannot create folder: %s",
                              strerror(errno));
}

tune_status tunep_trial_dir_make(const char *storage, int64_t trial_id, char **ret_dir,
                                 tune_error *err)
{
    if (!storage || is_memory(storage) || !ret_dir)
        return tunep_error_set(err, TUNE_EINVAL, "the study has no folder");
    char *trials = tunep_asprintf("%s/trials", storage);
    char *dir = tunep_trial_dir_path(storage, trial_id);
    tune_status st = TUNE_OK;
    if (!trials || !dir)
        st = tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    /* The experiment folder itself exists: the store was created in it. */
    if (!st)
        st = make_dir(trials, err);
    if (!st)
        st = make_dir(dir, err);
    char *abs = NULL;
    if (!st) {
        /* Absolute, so a command run in another folder (trainer.cwd) finds it. */
        char *real = realpath(dir, NULL); /* malloc'd by libc */
        if (!real)
            st = tunep_error_set_at(err, TUNE_EIO, dir, 0, 0, "cannot resolve folder: %s",
                                    strerror(errno));
        else if (!(abs = tunep_strdup(real)))
            st = tunep_error_set(err, TUNE_ENOMEM, "out of memory");
        free(real);
    }
    tunep_free(trials);
    tunep_free(dir);
    if (st)
        return st;
    *ret_dir = abs;
    return TUNE_OK;
}

/* Writes text to dir/name through dir/name.tmp and a rename. */
static tune_status write_atomic(const char *dir, const char *name, const char *text,
                                tune_error *err)
{
    char *path = tunep_asprintf("%s/%s", dir, name);
    char *tmp = tunep_asprintf("%s/%s.tmp", dir, name);
    tune_status st = TUNE_OK;
    if (!path || !tmp) {
        st = tunep_error_set(err, TUNE_ENOMEM, "out of memory");
        goto out;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        st = tunep_error_set_at(err, TUNE_EIO, tmp, 0, 0, "cannot create: %s", strerror(errno));
        goto out;
    }
    size_t len = strlen(text), done = 0;
    while (done < len) {
        ssize_t w = write(fd, text + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    int write_errno = errno;
    if (close(fd) != 0 && done == len) {
        done = 0;
        write_errno = errno;
    }
    if (done != len) {
        unlink(tmp);
        st = tunep_error_set_at(err, TUNE_EIO, tmp, 0, 0, "cannot write: %s",
                                strerror(write_errno ? write_errno : EIO));
        goto out;
    }
    if (rename(tmp, path) != 0) {
        st = tunep_error_set_at(err, TUNE_EIO, path, 0, 0, "cannot rename into place: %s",
                                strerror(errno));
        unlink(tmp);
    }
out:
    tunep_free(path);
    tunep_free(tmp);
    return st;
}

void tunep_trial_dir_open(struct tune_study *s, struct tune_trial *t)
{
    (void)s;
    t->dir = NULL;
    t->dir_tried = 0;
}

/* Makes the trial's folder and params.json; t->dir, or NULL (logged) when it cannot. */
static const char *make_trial_dir(struct tune_trial *t)
{
    struct tune_study *s = t->study;
    t->dir_tried = 1;
    if (is_memory(s->cfg.storage))
        return NULL;
    tune_error e;
    char *dir = NULL;
    tune_status st = tunep_trial_dir_make(s->cfg.storage, t->rec->id, &dir, &e);
    if (!st) {
        char *params = tunep_asprintf("%s/params.json", dir);
        if (!params) {
            st = tunep_error_set(&e, TUNE_ENOMEM, "out of memory");
        } else if (access(params, F_OK) != 0) {
            /* The values never change between attempts: written once. */
            char *json = tunep_values_json(s->n_params, s->param_names, t->rec->values);
            char *text = json ? tunep_asprintf("%s\n", json) : NULL;
            st = text ? write_atomic(dir, "params.json", text, &e)
                      : tunep_error_set(&e, TUNE_ENOMEM, "out of memory");
            tunep_free(json);
            tunep_free(text);
        }
        tunep_free(params);
    }
    if (st) {
        char where[sizeof e.source + sizeof e.text + 4];
        tune_error_format(&e, where, sizeof where);
        tunep_log(TUNE_LOG_WARN, "trial %lld: runs without its folder: %s", (long long)t->rec->id,
                  where);
        tunep_free(dir);
        return NULL;
    }
    t->dir = dir;
    return dir;
}

void tunep_trial_dir_close(struct tune_trial *t)
{
    tunep_free(t->dir);
    t->dir = NULL;
    t->dir_tried = 0;
}

const char *tune_trial_dir(const tune_trial *t)
{
    if (!t)
        return NULL;
    /* Made on first use by the attempt's own thread (the objective's), so no lock:
     * the cached path is the only state, and only that thread touches it. */
    struct tune_trial *mt = (struct tune_trial *)t;
    return mt->dir_tried ? mt->dir : make_trial_dir(mt);
}
