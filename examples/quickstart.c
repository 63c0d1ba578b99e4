/*
 * quickstart.c - a custom objective tuned through the C API: the example that
 * opens tune.h, built and run by the tests and compiled against the installed
 * tune.pc (tests/cli/test_install.sh).
 *
 *     cc quickstart.c $(pkg-config --cflags --libs tune) -o quickstart
 */
#include <math.h>
#include <stdio.h>
#include <tune.h>

static tune_status objective(tune_trial *trial, void *user_data)
{
    double lr, acc = 0.0;
    int64_t batch;
    (void)user_data;
    if (tune_trial_get_double(trial, "lr", &lr, NULL) ||
        tune_trial_get_int(trial, "batch_size", &batch, NULL))
        return TUNE_EINVAL;
    for (int it = 1; it <= 20; it++) {
        acc = 0.9 - 0.01 * fabs(log10(lr) + 3.0) * (1.0 + 8.0 / it) -
              0.001 * (double)batch / 64;
        tune_status st = tune_trial_report_metric(trial, "val_accuracy", acc, NULL);
        if (st == TUNE_ESTOP)
            return TUNE_OK; /* the scheduler stopped this trial: leave promptly */
        if (st != TUNE_OK)
            return st;
    }
    return TUNE_OK;
}

int main(void)
{
    tune_error err;
    tune_space *space = NULL;
    tune_study *study = NULL;
    tune_result *best = NULL;
    tune_options o;
    const int64_t batches[] = {16, 32, 64};
    double lr, acc;
    int64_t batch;

    if (tune_space_new(&space, &err) ||
        tune_space_add_loguniform(space, "lr", 1e-5, 1e-1, 10, &err) ||
        tune_space_add_choice_int(space, "batch_size", batches, 3, &err))
        goto fail;
    tune_options_default(&o);
    o.name = "quickstart";
    o.metric = "val_accuracy";
    o.mode = TUNE_MODE_MAX;
    o.num_samples = 50;
    o.seed = 7;
    o.storage = ":memory:";
    o.scheduler = TUNE_SCHEDULER_ASHA;
    o.asha.max_t = 20;
    if (tune_study_new(&o, space, &study, &err) ||
        tune_study_set_objective(study, objective, NULL, &err) ||
        tune_study_run(study, &err) || tune_study_best(study, &best, &err) ||
        tune_result_get_double(best, "lr", &lr, &err) ||
        tune_result_get_int(best, "batch_size", &batch, &err) ||
        tune_result_get_metric(best, "val_accuracy", &acc, &err))
        goto fail;
    printf("best trial %lld: lr=%g batch_size=%lld val_accuracy=%.4f\n",
           (long long)tune_result_trial_id(best), lr, (long long)batch, acc);
    tune_result_free(best);
    tune_study_free(study);
    tune_space_free(space);
    return 0;
fail:
    fprintf(stderr, "%s:%d:%d: %s\n", err.source, err.line, err.column, err.text);
    tune_result_free(best);
    tune_study_free(study);
    tune_space_free(space);
    return 1;
}
