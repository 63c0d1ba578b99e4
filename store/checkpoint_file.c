/*
 * checkpoint_file.c - the checkpoint file's format (checkpoint_file.h): a
 * fixed header that says how many bytes follow, so a truncated file is
 * recognised as one; written through the atomic writer, read with one
 * allocation. engine/checkpoint.c decides when checkpoints are saved, loaded,
 * copied (PBT) or kept in memory (":memory:" studies).
 */
#include "store/checkpoint_file.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file_io.h"
#include "store/trial_dir.h"

#define CKPT_MAGIC    "TUNECKP2"
#define CKPT_MAGIC_V1 "TUNECKP1" /* read: its header ends at size */

struct ckpt_header {
    char magic[8];
    int64_t iteration;
    double t;
    uint64_t size;
    double time_total_s; /* version 2 on */
};

/* The bytes of a version 1 header: a struct ending at size. */
#define CKPT_HEADER_V1 (8 + 8 + 8 + 8)
_Static_assert(sizeof(struct ckpt_header) == CKPT_HEADER_V1 + 8, "the header has no padding");

char *tunep_checkpoint_file_path(const char *storage, int64_t trial_id)
{
    char *dir = tunep_trial_dir_path(storage, trial_id);
    if (!dir)
        return NULL;
    char *path = tunep_asprintf("%s/checkpoint.bin", dir);
    tunep_free(dir);
    return path;
}

tune_status tunep_checkpoint_file_write(const char *path, const struct tunep_checkpoint_info *info,
                                        const void *data, tune_error *err)
{
    struct ckpt_header h = {.iteration = info->iteration,
                            .t = info->t,
                            .size = info->size,
                            .time_total_s = info->time_total_s};
    memcpy(h.magic, CKPT_MAGIC, 8);
    struct tunep_atomic_file f;
    tune_status st = tunep_atomic_open(&f, path, err);
    if (!st)
        st = tunep_atomic_write(&f, &h, sizeof h, err);
    if (!st && info->size)
        st = tunep_atomic_write(&f, data, (size_t)info->size, err);
    if (!st)
        st = tunep_atomic_commit(&f, err);
    tunep_atomic_abort(&f);
    return st;
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

tune_status tunep_checkpoint_file_read(const char *path, struct tunep_checkpoint_info *ret_info,
                                       void **ret_data, tune_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return tunep_error_set_at(err, TUNE_ENOTFOUND, path, 0, 0, "no checkpoint");
        return tunep_error_set_at(err, TUNE_EIO, path, 0, 0, "cannot read checkpoint: %s",
                                  strerror(errno));
    }
    struct stat sb;
    struct ckpt_header h;
    tune_status st = TUNE_OK;
    size_t head = 0; /* the header's size, by its version */
    if (fstat(fd, &sb) == 0 && read_all(fd, &h, CKPT_HEADER_V1) == 0) {
        if (memcmp(h.magic, CKPT_MAGIC_V1, 8) == 0) {
            head = CKPT_HEADER_V1;
            h.time_total_s = (double)NAN;
        } else if (memcmp(h.magic, CKPT_MAGIC, 8) == 0 &&
                   read_all(fd, (char *)&h + CKPT_HEADER_V1, sizeof h - CKPT_HEADER_V1) == 0) {
            head = sizeof h;
        }
    }
    if (head == 0 || (uint64_t)sb.st_size != head + h.size) {
        st = tunep_error_set_at(err, TUNE_EIO, path, 0, 0,
                                "not a tune checkpoint, or a truncated one");
    } else if (ret_data) {
        void *data = tunep_malloc(h.size ? (size_t)h.size : 1);
        if (!data) {
            st = tunep_error_set(err, TUNE_ENOMEM, "out of memory reading %s", path);
        } else if (h.size && read_all(fd, data, (size_t)h.size) != 0) {
            tunep_free(data);
            st = tunep_error_set_at(err, TUNE_EIO, path, 0, 0, "cannot read checkpoint: %s",
                                    strerror(errno ? errno : EIO));
        } else {
            *ret_data = data;
        }
    }
    close(fd);
    if (!st)
        *ret_info = (struct tunep_checkpoint_info){h.iteration, h.t, h.size, h.time_total_s};
    return st;
}
