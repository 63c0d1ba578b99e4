/*
 * trial_dir.h - per-trial folders: <storage>/trials/trial_000042/ holding the
 * trial's params.json, the command trainer's logs and checkpoints.
 */
#ifndef TUNE_TRIAL_DIR_H
#define TUNE_TRIAL_DIR_H

#include <stdint.h>

#include "base/base.h"

struct tune_study;
struct tune_trial;

/*
 * The folder of trial `trial_id` of the experiment in `storage`, as
 * "<storage>/trials/trial_000042" (at least six digits, so that names sort
 * by id). NULL for ":memory:" and on OOM; caller frees with tunep_free.
 * Creates nothing.
 */
char *tunep_trial_dir_path(const char *storage, int64_t trial_id);

/*
 * Creates the folder of trial `trial_id` (and <storage>/trials) when missing
 * and returns its absolute path (tunep_free). Safe to call from any thread.
 * @return TUNE_OK, TUNE_EINVAL (":memory:"), TUNE_EIO, TUNE_ENOMEM.
 */
tune_status tunep_trial_dir_make(const char *storage, int64_t trial_id, char **ret_dir,
                                 tune_error *err);

/*
 * At the start of an attempt, lock not held: the attempt has no folder yet.
 * tune_trial_dir() makes it on first use, with params.json (written to a
 * temporary name and renamed, so it is whole or absent) when it has none
 * yet. A folder that cannot be made is logged and the attempt runs without
 * one: the store, not the folder, is the record of the sweep. ":memory:"
 * studies have none.
 */
void tunep_trial_dir_open(struct tune_study *s, struct tune_trial *t);
/* At the end of the attempt: forgets the folder's path. */
void tunep_trial_dir_close(struct tune_trial *t);

#endif /* TUNE_TRIAL_DIR_H */
