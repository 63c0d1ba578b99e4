/*
 * lock.h - one controller per experiment folder.
 *
 * A writer (tune_study_run) takes the folder's lock before it opens or creates
 * experiment.db and keeps it for the whole run; readers never take it.
 */
#ifndef TUNE_STORE_LOCK_H
#define TUNE_STORE_LOCK_H

#include "base/base.h"

struct tunep_store_lock;

/*
 * Takes the lock of the experiment folder dir (which must exist) without
 * waiting, and writes "pid N on host H" into its lock file.
 * @return TUNE_OK; TUNE_EBUSY when another controller holds it (the text
 *         names that holder and what to do); TUNE_EIO when the lock file
 *         cannot be made; TUNE_ENOMEM. On a file system that refuses locks
 *         altogether (ENOLCK, ENOSYS) it warns and succeeds without a lock.
 */
tune_status tunep_store_lock_take(const char *dir, struct tunep_store_lock **ret_lock,
                                  tune_error *err);
/*
 * As tunep_store_lock_take(), waiting up to wait_s seconds for another
 * holder to release the lock before TUNE_EBUSY (`tune ask` and `tune tell`,
 * which each hold it for one short call).
 */
tune_status tunep_store_lock_take_wait(const char *dir, double wait_s,
                                       struct tunep_store_lock **ret_lock, tune_error *err);
/* Releases the lock (NULL is fine). */
void tunep_store_lock_release(struct tunep_store_lock *lock);

#endif /* TUNE_STORE_LOCK_H */
