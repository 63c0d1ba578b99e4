/*
 * trial_dir.h - an attempt's folder: <storage>/trials/trial_000042/ holding
 * the trial's params.json, the command trainer's logs and checkpoints, made
 * when the attempt first asks for it (store/trial_dir.h makes it).
 */
#ifndef TUNE_ENGINE_TRIAL_DIR_H
#define TUNE_ENGINE_TRIAL_DIR_H

struct tune_study;
struct tune_trial;

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

#endif /* TUNE_ENGINE_TRIAL_DIR_H */
