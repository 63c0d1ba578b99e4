/*
 * checkpoint.c - an objective's saved state: tune_trial_save_checkpoint(),
 * tune_trial_load_checkpoint() and what the controller does with them.
 *
 * A study with a storage folder keeps each trial's last checkpoint in
 * <storage>/trials/trial_<id>/checkpoint.bin (the file and its header are
 * store/checkpoint_file.c's), so `tune resume` after a crash continues trials
 * from it; an in-memory study keeps the bytes in the trial record. The lock is
 * not held while the bytes are written (a BERT state is hundreds of MB); only
 * the record's fields are updated under it.
 */
#include "engine/study.h"

#include <math.h>
#include <string.h>

#include "engine/trial_dir.h"
#include "store/checkpoint_file.h"
#include "store/trial_dir.h"

static int is_memory(const struct tune_study *s)
{
    return strcmp(s->cfg.storage, ":memory:") == 0;
}

/* Makes the trial's folder (with its params.json when the trial is at hand). */
static tune_status make_trial_dir(struct tune_study *s, tune_trial *t, int64_t trial_id,
                                  tune_error *err)
{
    if (t && tune_trial_dir(t))
        return TUNE_OK;
    char *dir = NULL;
    tune_status st = tunep_trial_dir_make(s->cfg.storage, trial_id, &dir, err);
    tunep_free(dir);
    return st;
}

tune_status tune_trial_save_checkpoint(tune_trial *t, const void *data, size_t size,
                                       tune_error *err)
{
    if (!t || (size && !data))
        return tunep_error_set(err, TUNE_EINVAL, "tune_trial_save_checkpoint: bad arguments");
    if (t->ipc_req >= 0 || t->remote_tag)
        return tunep_error_set(err, TUNE_EUNSUPPORTED,
                               "checkpoints are not supported with \"isolation\": \"process\" "
                               "or on MPI worker ranks");
    struct tune_study *s = t->study;
    struct tunep_trial_rec *rec = t->rec;
    pthread_mutex_lock(&s->lock);
    struct tunep_checkpoint_info h = {.iteration = rec->iteration,
                                      .t = rec->last_t,
                                      .size = size,
                                      .time_total_s = rec->time_total_s};
    int64_t id = rec->id;
    pthread_mutex_unlock(&s->lock);

    tune_status st = TUNE_OK;
    void *copy = NULL;
    char *path = tunep_checkpoint_file_path(s->cfg.storage, id);
    if (path) {
        st = make_trial_dir(s, t, id, err);
        if (!st)
            st = tunep_checkpoint_file_write(path, &h, data, err);
        tunep_free(path);
    } else if (is_memory(s)) {
        copy = tunep_malloc(size ? size : 1);
        if (!copy)
            st = tunep_error_set(err, TUNE_ENOMEM, "out of memory saving a checkpoint");
        else if (size)
            memcpy(copy, data, size);
    } else {
        st = tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    }
    if (st)
        return st;
    pthread_mutex_lock(&s->lock);
    if (copy) {
        tunep_free(rec->ckpt);
        rec->ckpt = copy;
        rec->ckpt_size = size;
    }
    rec->has_ckpt = 1;
    rec->ckpt_iter = h.iteration;
    rec->ckpt_t = h.t;
    rec->ckpt_time = h.time_total_s;
    rec->want_ckpt = 0;
    pthread_mutex_unlock(&s->lock);
    return TUNE_OK;
}

tune_status tune_trial_load_checkpoint(tune_trial *t, void **ret_data, size_t *ret_size,
                                       tune_error *err)
{
    if (!t || !ret_data || !ret_size)
        return tunep_error_set(err, TUNE_EINVAL, "tune_trial_load_checkpoint: bad arguments");
    *ret_data = NULL;
    *ret_size = 0;
    if (t->ipc_req >= 0 || t->remote_tag)
        return tunep_error_set(err, TUNE_ENOTFOUND,
                               "no checkpoints in an isolated trial or on an MPI worker rank");
    struct tune_study *s = t->study;
    struct tunep_trial_rec *rec = t->rec;
    pthread_mutex_lock(&s->lock);
    if (!rec->has_ckpt) {
        pthread_mutex_unlock(&s->lock);
        return tunep_error_set(err, TUNE_ENOTFOUND, "trial %lld has no checkpoint",
                               (long long)rec->id);
    }
    struct tunep_checkpoint_info h = {.iteration = rec->ckpt_iter,
                                      .t = rec->ckpt_t,
                                      .size = rec->ckpt_size,
                                      .time_total_s = rec->ckpt_time};
    void *data = NULL;
    tune_status st = TUNE_OK;
    if (rec->ckpt) {
        data = tunep_malloc(rec->ckpt_size ? rec->ckpt_size : 1);
        if (!data)
            st = tunep_error_set(err, TUNE_ENOMEM, "out of memory loading a checkpoint");
        else if (rec->ckpt_size)
            memcpy(data, rec->ckpt, rec->ckpt_size);
    }
    int64_t id = rec->id;
    pthread_mutex_unlock(&s->lock);
    if (st)
        return st;
    if (!data) {
        char *path = tunep_checkpoint_file_path(s->cfg.storage, id);
        if (!path)
            return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
        st = tunep_checkpoint_file_read(path, &h, &data, err);
        tunep_free(path);
        if (st)
            return st;
    }
    pthread_mutex_lock(&s->lock);
    /* A restore, as Ray's: the *_since_restore counters start again. */
    double now = tunep_now_monotonic();
    t->t_restore = t->t_last = now;
    t->iters_since_restore = 0;
    /* The objective is now at the checkpoint's iteration and time_total_s; after a
     * PBT restart the trial keeps counting its own reports and time instead. */
    if (!rec->keep_iteration) {
        rec->iteration = h.iteration;
        rec->last_t = h.t;
        if (!isnan(h.time_total_s))
            rec->time_offset = h.time_total_s - (rec->time_base + (now - t->t0));
    }
    pthread_mutex_unlock(&s->lock);
    *ret_data = data;
    *ret_size = (size_t)h.size;
    return TUNE_OK;
}

int tune_trial_checkpoint_wanted(const tune_trial *t)
{
    if (!t || t->ipc_req >= 0 || t->remote_tag)
        return 0;
    pthread_mutex_lock(&t->study->lock);
    int want = t->rec->want_ckpt;
    pthread_mutex_unlock(&t->study->lock);
    return want;
}

tune_status tunep_checkpoint_copy(struct tune_study *s, struct tunep_trial_rec *dst,
                                  const struct tunep_trial_rec *src, tune_error *err)
{
    if (!src->has_ckpt)
        return tunep_error_set(err, TUNE_ENOTFOUND, "trial %lld has no checkpoint",
                               (long long)src->id);
    if (is_memory(s)) {
        void *copy = tunep_malloc(src->ckpt_size ? src->ckpt_size : 1);
        if (!copy)
            return tunep_error_set(err, TUNE_ENOMEM, "out of memory copying a checkpoint");
        if (src->ckpt_size)
            memcpy(copy, src->ckpt, src->ckpt_size);
        tunep_free(dst->ckpt);
        dst->ckpt = copy;
        dst->ckpt_size = src->ckpt_size;
    } else {
        char *from = tunep_checkpoint_file_path(s->cfg.storage, src->id);
        char *to = tunep_checkpoint_file_path(s->cfg.storage, dst->id);
        struct tunep_checkpoint_info h;
        void *data = NULL;
        tune_status st = from && to ? tunep_checkpoint_file_read(from, &h, &data, err)
                                    : tunep_error_set(err, TUNE_ENOMEM, "out of memory");
        if (!st)
            st = make_trial_dir(s, NULL, dst->id, err);
        if (!st)
            st = tunep_checkpoint_file_write(to, &h, data, err);
        tunep_free(data);
        tunep_free(from);
        tunep_free(to);
        if (st)
            return st;
    }
    dst->has_ckpt = 1;
    dst->ckpt_iter = src->ckpt_iter;
    dst->ckpt_t = src->ckpt_t;
    dst->ckpt_time = src->ckpt_time;
    return TUNE_OK;
}

void tunep_checkpoint_forget(struct tunep_trial_rec *r)
{
    tunep_free(r->ckpt);
    r->ckpt = NULL;
    r->ckpt_size = 0;
    r->has_ckpt = 0;
}

void tunep_checkpoint_probe(struct tune_study *s, struct tunep_trial_rec *r)
{
    char *path = tunep_checkpoint_file_path(s->cfg.storage, r->id);
    if (!path)
        return;
    struct tunep_checkpoint_info h;
    if (tunep_checkpoint_file_read(path, &h, NULL, NULL) == TUNE_OK) {
        r->has_ckpt = 1;
        r->ckpt_iter = h.iteration;
        r->ckpt_t = h.t;
        r->ckpt_time = h.time_total_s;
        r->ckpt_size = (size_t)h.size;
    }
    tunep_free(path);
}
