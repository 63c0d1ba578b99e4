/*
 * checkpoint.c - an objective's saved state: tune_trial_save_checkpoint(),
 * tune_trial_load_checkpoint() and what the controller does with them.
 *
 * A study with a storage folder keeps each trial's last checkpoint in
 * <storage>/trials/trial_<id>/checkpoint.bin, so `tune resume` after a crash
 * continues trials from it; an in-memory study keeps the bytes in the trial
 * record. The file is a 32-byte header then the objective's bytes:
 *
 *   "TUNECKP1" | int64 iteration | double time_attr value | uint64 size  (host order)
 *
 * It is written to a temporary name, synced and renamed, so a crash leaves
 * either the old checkpoint or the new one, never half of one. The lock is
 * not held while the bytes are written (a BERT state is hundreds of MB); only
 * the record's fields are updated under it.
 */
#include "engine/study.h"
#include "engine/trial_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CKPT_MAGIC "TUNECKP1"

struct ckpt_header {
    char magic[8];
    int64_t iteration;
    double t;
    uint64_t size;
};

static int is_memory(const struct tune_study *s)
{
    return strcmp(s->cfg.storage, ":memory:") == 0;
}

char *tunep_checkpoint_path(const struct tune_study *s, int64_t trial_id)
{
    char *dir = tunep_trial_dir_path(s->cfg.storage, trial_id);
    if (!dir)
        return NULL;
    char *path = tunep_asprintf("%s/checkpoint.bin", dir);
    tunep_free(dir);
    return path;
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

static int write_all(int fd, const void *data, size_t size)
{
    const char *p = data;
    while (size > 0) {
        ssize_t n = write(fd, p, size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        size -= (size_t)n;
    }
    return 0;
}

static int read_all(int fd, void *data, size_t size)
{
    char *p = data;
    while (size > 0) {
        ssize_t n = read(fd, p, size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        size -= (size_t)n;
    }
    return 0;
}

/* Writes header + data to path atomically (temporary file, fsync, rename). */
static tune_status write_file(const char *path, const struct ckpt_header *h, const void *data,
                              tune_error *err)
{
    tune_status st = TUNE_OK;
    char *tmp = tunep_asprintf("%s.tmp", path);
    if (!tmp)
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        st = tunep_error_set_at(err, TUNE_EIO, tmp, 0, 0, "cannot write checkpoint: %s",
                                strerror(errno));
        tunep_free(tmp);
        return st;
    }
    int bad = write_all(fd, h, sizeof *h) || (h->size && write_all(fd, data, h->size)) ||
              fsync(fd) != 0;
    int saved = errno;
    bad |= close(fd) != 0;
    if (!bad && rename(tmp, path) != 0) {
        saved = errno;
        bad = 1;
    }
    if (bad) {
        st = tunep_error_set_at(err, TUNE_EIO, path, 0, 0, "cannot write checkpoint: %s",
                                strerror(saved ? saved : EIO));
        unlink(tmp);
    }
    tunep_free(tmp);
    return st;
}

/* Reads a checkpoint file's header, and its bytes when ret_data is not NULL. */
static tune_status read_file(const char *path, struct ckpt_header *h, void **ret_data,
                             tune_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return tunep_error_set_at(err, TUNE_ENOTFOUND, path, 0, 0, "no checkpoint");
        return tunep_error_set_at(err, TUNE_EIO, path, 0, 0, "cannot read checkpoint: %s",
                                  strerror(errno));
    }
    struct stat sb;
    tune_status st = TUNE_OK;
    if (fstat(fd, &sb) != 0 || read_all(fd, h, sizeof *h) != 0 ||
        memcmp(h->magic, CKPT_MAGIC, 8) != 0 || (uint64_t)sb.st_size != sizeof *h + h->size) {
        st = tunep_error_set_at(err, TUNE_EIO, path, 0, 0,
                                "not a tune checkpoint, or a truncated one");
    } else if (ret_data) {
        void *data = tunep_malloc(h->size ? h->size : 1);
        if (!data) {
            st = tunep_error_set(err, TUNE_ENOMEM, "out of memory reading %s", path);
        } else if (h->size && read_all(fd, data, h->size) != 0) {
            tunep_free(data);
            st = tunep_error_set_at(err, TUNE_EIO, path, 0, 0, "cannot read checkpoint: %s",
                                    strerror(errno ? errno : EIO));
        } else {
            *ret_data = data;
        }
    }
    close(fd);
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
    struct ckpt_header h = {.iteration = rec->iteration, .t = rec->last_t, .size = size};
    int64_t id = rec->id;
    pthread_mutex_unlock(&s->lock);
    memcpy(h.magic, CKPT_MAGIC, 8);

    tune_status st = TUNE_OK;
    void *copy = NULL;
    char *path = tunep_checkpoint_path(s, id);
    if (path) {
        st = make_trial_dir(s, t, id, err);
        if (!st)
            st = write_file(path, &h, data, err);
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
    struct ckpt_header h = {.iteration = rec->ckpt_iter, .t = rec->ckpt_t, .size = rec->ckpt_size};
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
        char *path = tunep_checkpoint_path(s, id);
        if (!path)
            return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
        st = read_file(path, &h, &data, err);
        tunep_free(path);
        if (st)
            return st;
    }
    pthread_mutex_lock(&s->lock);
    /* The objective is now at the checkpoint's iteration; after a PBT restart the
     * trial keeps counting its own reports instead. */
    if (!rec->keep_iteration) {
        rec->iteration = h.iteration;
        rec->last_t = h.t;
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
        char *from = tunep_checkpoint_path(s, src->id);
        char *to = tunep_checkpoint_path(s, dst->id);
        struct ckpt_header h;
        void *data = NULL;
        tune_status st = from && to ? read_file(from, &h, &data, err)
                                    : tunep_error_set(err, TUNE_ENOMEM, "out of memory");
        if (!st)
            st = make_trial_dir(s, NULL, dst->id, err);
        if (!st)
            st = write_file(to, &h, data, err);
        tunep_free(data);
        tunep_free(from);
        tunep_free(to);
        if (st)
            return st;
    }
    dst->has_ckpt = 1;
    dst->ckpt_iter = src->ckpt_iter;
    dst->ckpt_t = src->ckpt_t;
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
    char *path = tunep_checkpoint_path(s, r->id);
    if (!path)
        return;
    struct ckpt_header h;
    if (read_file(path, &h, NULL, NULL) == TUNE_OK) {
        r->has_ckpt = 1;
        r->ckpt_iter = h.iteration;
        r->ckpt_t = h.t;
        r->ckpt_size = (size_t)h.size;
    }
    tunep_free(path);
}

tune_status tunep_read_file_bytes(const char *path, char **ret_data, size_t *ret_size,
                                  tune_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        tune_status st = tunep_error_set_at(err, TUNE_EIO, path, 0, 0, "cannot read: %s",
                                            strerror(errno));
        if (fd >= 0)
            close(fd);
        return st;
    }
    size_t size = (size_t)sb.st_size;
    char *data = tunep_malloc(size ? size : 1);
    tune_status st = TUNE_OK;
    if (!data)
        st = tunep_error_set(err, TUNE_ENOMEM, "out of memory reading %s", path);
    else if (size && read_all(fd, data, size) != 0)
        st = tunep_error_set_at(err, TUNE_EIO, path, 0, 0, "cannot read: %s",
                                strerror(errno ? errno : EIO));
    close(fd);
    if (st) {
        tunep_free(data);
        return st;
    }
    *ret_data = data;
    *ret_size = size;
    return TUNE_OK;
}
