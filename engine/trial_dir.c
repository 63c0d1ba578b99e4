/*
 * trial_dir.c - which trial gets its folder, and when (the folder itself, its
 * name and params.json are store/trial_dir.c's).
 *
 * A folder is made the first time an attempt asks for it (tune_trial_dir():
 * the command trainer at once, a C objective when it wants to keep files),
 * with params.json written atomically, so a crash leaves it whole or absent
 * and the next attempt writes it again. Not at every trial's start: a folder
 * and a file cost 0.4-2 ms here, 4-18 times tune's own cost for a trivial
 * trial with the SQLite store (bench/overhead, 5000 trials: 115 us per trial
 * without folders, 540-2145 us with), and a 100,000-trial sweep would leave
 * 100,000 folders nobody reads; the store holds every configuration anyway.
 * The folders add to the store and never replace it: one that cannot be made
 * (a full disk) is logged and the trial runs without it. ":memory:" studies
 * keep no files, so their trials have no folder and the command trainer sends
 * its program's output to the log callback instead.
 */
#include "engine/trial_dir.h"

#include <string.h>

#include "engine/study.h"
#include "store/trial_dir.h"

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
    if (strcmp(s->cfg.storage, ":memory:") == 0)
        return NULL;
    tune_error e;
    char *dir = NULL;
    tune_status st = tunep_trial_dir_make(s->cfg.storage, t->rec->id, &dir, &e);
    if (!st)
        st = tunep_trial_dir_write_params(dir, s->n_params, s->param_names, t->rec->values, &e);
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
