/*
 * trial_dir.h - per-trial folders on disk: <storage>/trials/trial_000042/
 * holding the trial's params.json, the command trainer's logs and
 * checkpoints. Paths and files only; which trial gets one and when is the
 * engine's (engine/trial_dir.c).
 */
#ifndef TUNE_STORE_TRIAL_DIR_H
#define TUNE_STORE_TRIAL_DIR_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "search/space.h"

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
 * Writes dir/params.json, the JSON object of the n values (names flattened
 * with '/', as tunep_values_json() nests them) and a newline, unless the
 * file exists: a trial's values never change between its attempts. Written
 * atomically, so the file is whole or absent.
 * @return TUNE_OK, TUNE_EIO, TUNE_ENOMEM.
 */
tune_status tunep_trial_dir_write_params(const char *dir, size_t n, const char *const *names,
                                         const struct tunep_value *values, tune_error *err);

#endif /* TUNE_STORE_TRIAL_DIR_H */
