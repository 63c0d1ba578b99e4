/*
 * trial_dir.c - the per-trial folders of an experiment folder, as Ray Tune
 * keeps one per trial:
 *
 *   <storage>/trials/trial_000042/params.json    the trial's configuration
 *                                 stdout.log      the command trainer's logs
 *                                 stderr.log
 *                                 checkpoint.bin  checkpoints (checkpoint_file.c)
 *
 * Only names and files here; engine/trial_dir.c decides when a trial gets its
 * folder. ":memory:" studies keep no files, so none of their trials has one.
 */
#include "store/trial_dir.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file_io.h"
#include "config/config.h"

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

tune_status tunep_trial_dir_write_params(const char *dir, size_t n, const char *const *names,
                                         const struct tunep_value *values, tune_error *err)
{
    char *path = tunep_asprintf("%s/params.json", dir);
    if (!path)
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    tune_status st = TUNE_OK;
    if (access(path, F_OK) != 0) {
        char *json = tunep_values_json(n, names, values);
        char *text = json ? tunep_asprintf("%s\n", json) : NULL;
        st = text ? tunep_write_file_atomic(path, text, strlen(text), err)
                  : tunep_error_set(err, TUNE_ENOMEM, "out of memory");
        tunep_free(json);
        tunep_free(text);
    }
    tunep_free(path);
    return st;
}
