/*
 * searchers.c - creates the study's searcher from its config, and feeds a
 * resumed study's history to it.
 */
#include "engine/study.h"

#include <math.h>
#include <string.h>

tune_status tunep_study_searcher_new(struct tune_study *s, tune_error *err)
{
    const struct tunep_config *c = &s->cfg;
    const tune_space *space = c->space;
    switch (c->search) {
        case TUNEP_SEARCH_RANDOM:
        case TUNEP_SEARCH_GRID: return TUNE_OK;
        case TUNEP_SEARCH_TPE: {
            struct tunep_tpe_config tpe = c->tpe; /* several objectives: MOTPE */
            tpe.n_objectives = c->n_objectives;
            return tunep_tpe_new(space, &tpe, c->seed, &s->searcher, err);
        }
        case TUNEP_SEARCH_BOHB: return tunep_bohb_new(space, &c->tpe, c->seed, &s->searcher, err);
        case TUNEP_SEARCH_GP: return tunep_gp_new(space, &c->gp, c->seed, &s->searcher, err);
        case TUNEP_SEARCH_SOBOL: return tunep_sobol_new(space, &c->qmc, c->seed, &s->searcher, err);
        case TUNEP_SEARCH_NSGA2:
            return tunep_nsga2_new(space, &c->nsga2, c->n_objectives, &s->searcher, err);
        case TUNEP_SEARCH_LHS:
            return tunep_lhs_new(space, &c->qmc, c->seed, s->total_trials, &s->searcher, err);
        default: break;
    }
    return tunep_error_set(err, TUNE_EUNSUPPORTED, "search algorithm \"%s\" is not built in",
                           tunep_search_algo_name(c->search));
}

tune_status tunep_study_searcher_complete(struct tune_study *s, const struct tunep_trial_rec *rec,
                                          double score)
{
    const struct tunep_searcher_ops *ops = s->searcher->ops;
    if (!ops->on_complete_values)
        return ops->on_complete(s->searcher, rec->id, 1, rec->last_t, score);
    /* Each objective's last value, larger-is-better, -inf when missing (as the main score). */
    double scores[TUNEP_MAX_OBJECTIVES];
    for (size_t j = 0; j < s->cfg.n_objectives; j++) {
        double v = (double)NAN;
        for (size_t id = 0; id < s->n_metrics && id < rec->n_last; id++)
            if (strcmp(s->metric_names[id], s->cfg.objectives[j]) == 0)
                v = rec->last[id];
        v = s->cfg.objectives_max[j] ? v : -v;
        scores[j] = isfinite(v) ? v : -HUGE_VAL;
    }
    return ops->on_complete_values(s->searcher, rec->id, 1, scores, s->cfg.n_objectives);
}
