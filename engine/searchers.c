/*
 * searchers.c - creates the study's searcher from its config, and feeds a
 * resumed study's history to it.
 */
#include "engine/study.h"

#include <math.h>

tune_status tunep_study_searcher_new(struct tune_study *s, tune_error *err)
{
    const struct tunep_config *c = &s->cfg;
    const tune_space *space = c->space;
    switch (c->search) {
        case TUNEP_SEARCH_RANDOM:
        case TUNEP_SEARCH_GRID: return TUNE_OK;
        case TUNEP_SEARCH_TPE: return tunep_tpe_new(space, &c->tpe, c->seed, &s->searcher, err);
        case TUNEP_SEARCH_BOHB: return tunep_bohb_new(space, &c->tpe, c->seed, &s->searcher, err);
        case TUNEP_SEARCH_GP: return tunep_gp_new(space, &c->gp, c->seed, &s->searcher, err);
        case TUNEP_SEARCH_SOBOL: return tunep_sobol_new(space, &c->qmc, c->seed, &s->searcher, err);
        case TUNEP_SEARCH_LHS:
            return tunep_lhs_new(space, &c->qmc, c->seed, s->total_trials, &s->searcher, err);
        default: break;
    }
    return tunep_error_set(err, TUNE_EUNSUPPORTED, "search algorithm \"%s\" is not built in",
                           tunep_search_algo_name(c->search));
}
