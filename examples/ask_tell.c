/*
 * ask_tell.c - the caller's own loop drives the study (Optuna's ask and tell):
 * no objective is handed to tune. Two trials train side by side, one epoch of
 * each in turn, as a program with its own scheduling would; ASHA's answers
 * to the reports prune the poor ones. Built and run by the tests.
 *
 *     cc ask_tell.c $(pkg-config --cflags --libs tune) -o ask_tell
 *     ./ask_tell [DIR]    (DIR: an experiment folder to keep; default: in memory)
 */
#include <math.h>
#include <stdio.h>
#include <tune.h>

#define SLOTS  2
#define EPOCHS 20

/* One epoch of the caller's "training": validation accuracy after `epoch` epochs. */
static double train_epoch(double lr, int64_t batch, int epoch)
{
    return 0.9 - 0.01 * fabs(log10(lr) + 3.0) * (1.0 + 8.0 / epoch) -
           0.001 * (double)batch / 64;
}

int main(int argc, char **argv)
{
    tune_error err;
    tune_space *space = NULL;
    tune_study *study = NULL;
    tune_result *best = NULL;
    tune_options o;
    const int64_t batches[] = {16, 32, 64};
    tune_trial *slot[SLOTS] = {NULL};
    int epoch[SLOTS] = {0};
    int asked = 0, pruned = 0, exhausted = 0;
    double lr, acc;
    int64_t batch;

    if (tune_space_new(&space, &err) ||
        tune_space_add_loguniform(space, "lr", 1e-5, 1e-1, 10, &err) ||
        tune_space_add_choice_int(space, "batch_size", batches, 3, &err))
        goto fail;
    tune_options_default(&o);
    o.name = "ask_tell";
    o.metric = "val_accuracy";
    o.mode = TUNE_MODE_MAX;
    o.num_samples = 30;
    o.seed = 7;
    o.storage = argc > 1 ? argv[1] : ":memory:";
    o.scheduler = TUNE_SCHEDULER_ASHA;
    o.asha.max_t = EPOCHS;
    if (tune_study_new(&o, space, &study, &err))
        goto fail;
    for (;;) {
        int open = 0;
        for (int k = 0; k < SLOTS; k++) {
            if (!slot[k] && !exhausted) {
                tune_status st = tune_study_ask(study, &slot[k], &err);
                if (st == TUNE_EEXHAUSTED) /* all num_samples trials were handed out */
                    exhausted = 1;
                else if (st)
                    goto fail;
                else
                    asked++, epoch[k] = 0;
            }
            if (!slot[k])
                continue;
            open++;
            tune_trial *t = slot[k];
            if (tune_trial_get_double(t, "lr", &lr, &err) ||
                tune_trial_get_int(t, "batch_size", &batch, &err))
                goto fail;
            epoch[k]++;
            tune_status st = tune_trial_report_metric(
                t, "val_accuracy", train_epoch(lr, batch, epoch[k]), &err);
            if (st != TUNE_OK && st != TUNE_ESTOP)
                goto fail;
            if (st == TUNE_ESTOP || epoch[k] == EPOCHS) {
                /* TUNE_ESTOP is the scheduler's "prune" (ASHA, or max_t reached). */
                tune_tell_state end =
                    epoch[k] < EPOCHS ? TUNE_TELL_PRUNED : TUNE_TELL_COMPLETE;
                pruned += end == TUNE_TELL_PRUNED;
                if (tune_study_tell(study, t, end, NULL, &err))
                    goto fail;
                slot[k] = NULL;
            }
        }
        if (!open && exhausted)
            break;
    }
    if (tune_study_finish(study, &err) || tune_study_best(study, &best, &err) ||
        tune_result_get_double(best, "lr", &lr, &err) ||
        tune_result_get_int(best, "batch_size", &batch, &err) ||
        tune_result_get_metric(best, "val_accuracy", &acc, &err))
        goto fail;
    printf("%d trials asked, %d pruned; best trial %lld: lr=%g batch_size=%lld "
           "val_accuracy=%.4f\n",
           asked, pruned, (long long)tune_result_trial_id(best), lr, (long long)batch, acc);
    tune_result_free(best);
    tune_study_free(study);
    tune_space_free(space);
    return asked == 30 && pruned > 0 ? 0 : 1;
fail:
    fprintf(stderr, "%s:%d:%d: %s\n", err.source, err.line, err.column, err.text);
    tune_result_free(best);
    tune_study_free(study);
    tune_space_free(space);
    return 1;
}
