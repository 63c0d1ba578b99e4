/*
 * checkpoint_file.h - the checkpoint file of a trial,
 * <storage>/trials/trial_<id>/checkpoint.bin: a 40-byte header, then the
 * objective's bytes.
 *
 *   "TUNECKP2" | int64 iteration | double time_attr value | uint64 size |
 *   double time_total_s  (host order)
 *
 * A "TUNECKP1" file (written before time_total_s was recorded) has the
 * 32-byte header without it and still reads, with time_total_s NaN.
 *
 * Host order: a checkpoint is read back by the machine (or the kind of
 * machine) that wrote it, as an objective's own bytes are.
 */
#ifndef TUNE_STORE_CHECKPOINT_FILE_H
#define TUNE_STORE_CHECKPOINT_FILE_H

#include <stdint.h>

#include "base/base.h"

/* What the header says. */
struct tunep_checkpoint_info {
    int64_t iteration;   /* the trial's iteration when it was saved */
    double t;            /* its time attribute's value then */
    uint64_t size;       /* bytes after the header */
    double time_total_s; /* the trial's time_total_s then; NaN when not recorded */
};

/* <storage>/trials/trial_<id>/checkpoint.bin; NULL for ":memory:" and on OOM (tunep_free). */
char *tunep_checkpoint_file_path(const char *storage, int64_t trial_id);

/*
 * Writes info and info->size bytes of data to path atomically (the folder
 * must exist), so a crash leaves the old checkpoint or the new one, never
 * half of one. @return TUNE_OK, TUNE_EIO, TUNE_ENOMEM.
 */
tune_status tunep_checkpoint_file_write(const char *path, const struct tunep_checkpoint_info *info,
                                        const void *data, tune_error *err);

/*
 * Reads path's header into *ret_info and, when ret_data is not NULL, its
 * bytes into a buffer from tunep_malloc (one byte at least).
 * @return TUNE_OK, TUNE_ENOTFOUND ("no checkpoint"), TUNE_EIO (also "not a
 *         tune checkpoint, or a truncated one"), TUNE_ENOMEM.
 */
tune_status tunep_checkpoint_file_read(const char *path, struct tunep_checkpoint_info *ret_info,
                                       void **ret_data, tune_error *err);

#endif /* TUNE_STORE_CHECKPOINT_FILE_H */
