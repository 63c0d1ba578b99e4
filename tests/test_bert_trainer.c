/*
 * test_bert_trainer.c - the bert trainer end to end on a hand-made dataset:
 * a task a tiny model learns perfectly, so val_accuracy must be exactly 1 on
 * a dev set with true labels, 0 with every label flipped and 0.5 with half of
 * them flipped; every report carries the documented metrics; a diverging
 * learning rate ends the trial as ERROR with its reason while the sweep goes
 * on; a malformed TSV fails the run before any trial, naming file and line.
 */
#include <math.h>

#include "check_util.h"
#include "tune.h"

static char *dir;

static void write_file(const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* label 1 when the sentence says good or great, whatever else it says. */
static const char *const positive[] = {"a good movie", "the great film", "good", "great great",
                                       "the movie good", "a film great"};
static const char *const negative[] = {"a bad movie", "the awful film", "bad", "awful awful",
                                       "the movie bad", "a film awful"};

static void setup(void)
{
    dir = tune_test_mkdtemp();
    write_file("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\ngood\nbad\nmovie\na\nthe\nfilm\n"
                            "great\nawful\n");
    char train[8192] = "sentence\tlabel\n";
    for (int r = 0; r < 8; r++)
        for (int i = 0; i < 6; i++) {
            char line[128];
            snprintf(line, sizeof line, "%s\t1\n%s\t0\n", positive[i], negative[i]);
            strcat(train, line);
        }
    write_file("train.tsv", train);
    write_file("dev.tsv", "sentence\tlabel\ngood movie\t1\nbad film\t0\nthe great\t1\nawful\t0\n");
    write_file("flipped.tsv", "sentence\tlabel\ngood movie\t0\nbad film\t1\nthe great\t0\nawful\t1\n");
    write_file("half.tsv", "sentence\tlabel\ngood movie\t1\nbad film\t1\nthe great\t0\nawful\t0\n");
    write_file("bad.tsv", "sentence\tlabel\ngood movie\t1\nbad film\tzero\n");
    write_file("empty.tsv", "sentence\tlabel\ngood movie\t1\nbad film\t0\n \t1\n");
    write_file("fields.tsv", "sentence\tlabel\ngood movie\t1\nbad\tfilm\t0\n");
}

static void teardown(void)
{
    tune_test_rmtree(dir);
    free(dir);
}

static tune_study *run(const char *dev, const char *lr, const char *name, tune_status want,
                       tune_error *err)
{
    char json[4096];
    snprintf(json, sizeof json,
             "{\"name\": \"%s\", \"metric\": \"val_accuracy\", \"num_samples\": 1, \"seed\": 3,"
             " \"storage\": \"%s/%s\", \"max_concurrent_trials\": 1,"
             " \"param_space\": {\"lr\": %s, \"batch_size\": 8, \"warmup_steps\": 0,"
             " \"dropout\": 0.0, \"weight_decay\": 0.0},"
             " \"trainer\": {\"type\": \"bert\", \"train\": \"%s/train.tsv\","
             " \"dev\": \"%s/%s\", \"vocab\": \"%s/vocab.txt\", \"threads\": 1,"
             " \"model\": {\"layers\": 1, \"hidden\": 16, \"heads\": 2, \"intermediate\": 32,"
             " \"max_position\": 16}, \"epochs\": 12, \"eval_every\": 24, \"max_seq_len\": 16}}",
             name, dir, name, lr, dir, dir, dev, dir);
    tune_study *s = NULL;
    ck_assert_int_eq(tune_study_new_from_json(json, NULL, &s, err), TUNE_OK);
    ck_assert_int_eq(tune_study_run(s, err), want);
    return s;
}

/* The value of "key":number in a JSON text. */
static double json_number(const char *json, const char *key)
{
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(json, pat);
    ck_assert_msg(p != NULL, "no %s in %s", key, json);
    return strtod(p + strlen(pat), NULL);
}

static double best_accuracy(const char *dev, const char *name)
{
    tune_error err;
    tune_study *s = run(dev, "0.01", name, TUNE_OK, &err);
    char *best = NULL;
    ck_assert_int_eq(tune_study_best_json(s, &best, &err), TUNE_OK);
    double acc = json_number(best, "val_accuracy");
    ck_assert_int_eq((int)json_number(best, "training_iteration"), 6); /* 12 epochs x 12 steps / 24 */
    tune_free(best);
    tune_study_free(s);
    return acc;
}

START_TEST(accuracy_on_hand_made_sets)
{
    ck_assert_double_eq(best_accuracy("dev.tsv", "true"), 1.0);
    ck_assert_double_eq(best_accuracy("flipped.tsv", "flipped"), 0.0);
    ck_assert_double_eq(best_accuracy("half.tsv", "half"), 0.5);
}
END_TEST

START_TEST(reports_carry_the_metrics)
{
    tune_error err;
    tune_study *s = run("dev.tsv", "0.01", "metrics", TUNE_OK, &err);
    tune_study_free(s);
    char path[600];
    snprintf(path, sizeof path, "%s/metrics/progress.csv", dir);
    char *csv = tune_test_slurp(path);
    ck_assert_ptr_nonnull(csv);
    static const char header[] = "trial_id,training_iteration,time_total_s,epoch,step,"
                                 "val_accuracy,val_loss,train_loss,examples_per_s,attempt,";
    ck_assert_msg(strncmp(csv, header, strlen(header)) == 0, "%.200s", csv);
    /* Second report: epoch 4 (24 steps of 12 per epoch, twice), step 48. */
    const char *row2 = strstr(csv, "\r\n0,2,");
    ck_assert_ptr_nonnull(row2);
    double t, epoch, step;
    ck_assert_int_eq(sscanf(row2 + 6, "%lf,%lf,%lf", &t, &epoch, &step), 3);
    ck_assert_double_eq(epoch, 4.0);
    ck_assert_double_eq(step, 48.0);
    free(csv);
}
END_TEST

START_TEST(diverging_trial_is_an_error)
{
    tune_error err;
    tune_study *s = run("dev.tsv", "1e30", "nan", TUNE_OK, &err);
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    tune_study_counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_ERROR], 1);
    char *text = NULL;
    ck_assert_int_eq(tune_study_progress_text(s, 5, &text, NULL), TUNE_OK);
    ck_assert_msg(strstr(text, "not finite at step") != NULL, "%s", text);
    tune_free(text);
    tune_study_free(s);
}
END_TEST

static const struct {
    const char *file;
    int line;
    const char *text;
} bad_tsv[] = {
    {"bad.tsv", 3, "expected an integer label, got 'zero'"},
    {"empty.tsv", 4, "empty text in field 1"},
    {"fields.tsv", 3, "expected 2 tab-separated fields, got 3"},
};

START_TEST(bad_tsv_fails_before_any_trial)
{
    tune_error err;
    char name[32];
    snprintf(name, sizeof name, "badtsv%d", _i);
    tune_study *s = run(bad_tsv[_i].file, "0.01", name, TUNE_ECONFIG, &err);
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, bad_tsv[_i].file);
    ck_assert_str_eq(err.source, path);
    ck_assert_int_eq(err.line, bad_tsv[_i].line);
    ck_assert_str_eq(err.text, bad_tsv[_i].text);
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    tune_study_counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_RUNNING] + c[TUNE_TRIAL_TERMINATED] + c[TUNE_TRIAL_ERROR], 0);
    tune_study_free(s);
}
END_TEST

/*
 * A Hugging Face checkpoint (tests/bert/data/hf_tiny: 2 layers, hidden 32,
 * 3 labels, its own vocab.txt) fine-tuned on a 3-class task written in its
 * vocabulary: the vocabulary comes from the checkpoint folder, shapes from its
 * config.json, its weights load, and the model learns the task.
 */
START_TEST(fine_tunes_a_hugging_face_checkpoint)
{
    const char *src = getenv("TUNE_SOURCE_ROOT");
    ck_assert_ptr_nonnull(src);
    char train[8192] = "sentence\tlabel\n";
    static const char *const rows[] = {"the movie was good\t2", "a great film\t2",
                                       "the plot was bad\t0",  "awful acting\t0",
                                       "the film was ok\t1",   "it is a movie\t1"};
    for (int r = 0; r < 8; r++)
        for (int i = 0; i < 6; i++) {
            strcat(train, rows[i]);
            strcat(train, "\n");
        }
    write_file("train3.tsv", train);
    /* 48 examples teach a tiny model its training sentences, not the language:
     * the dev set checks that the pipeline learns, so it reuses them. */
    write_file("dev3.tsv", "sentence\tlabel\nthe movie was good\t2\nthe plot was bad\t0\n"
                           "it is a movie\t1\n");
    char json[4096];
    snprintf(json, sizeof json,
             "{\"name\": \"hf\", \"num_samples\": 1, \"seed\": 5, \"storage\": \"%s/hf\","
             " \"max_concurrent_trials\": 1,"
             " \"param_space\": {\"lr\": 0.003, \"batch_size\": 8, \"dropout\": 0.0},"
             " \"trainer\": {\"type\": \"bert\", \"train\": \"%s/train3.tsv\","
             " \"dev\": \"%s/dev3.tsv\", \"checkpoint\": \"%s/tests/bert/data/hf_tiny\","
             " \"threads\": 1, \"epochs\": 10, \"max_seq_len\": 16}}",
             dir, dir, dir, src);
    tune_study *s = NULL;
    tune_error err;
    ck_assert_msg(tune_study_new_from_json(json, NULL, &s, &err) == TUNE_OK, "%s", err.text);
    ck_assert_int_eq(tune_study_run(s, &err), TUNE_OK);
    char *best = NULL;
    ck_assert_int_eq(tune_study_best_json(s, &best, &err), TUNE_OK);
    ck_assert_double_eq(json_number(best, "val_accuracy"), 1.0);
    ck_assert_int_eq((int)json_number(best, "training_iteration"), 10);
    tune_free(best);
    tune_study_free(s);
}
END_TEST

static Suite *bert_trainer_suite(void)
{
    Suite *s = suite_create("bert_trainer");
    TCase *tc = tcase_create("end_to_end");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, accuracy_on_hand_made_sets);
    tcase_add_test(tc, reports_carry_the_metrics);
    tcase_add_test(tc, diverging_trial_is_an_error);
    tcase_add_loop_test(tc, bad_tsv_fails_before_any_trial, 0,
                        (int)(sizeof bad_tsv / sizeof bad_tsv[0]));
    tcase_add_test(tc, fine_tunes_a_hugging_face_checkpoint);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(bert_trainer_suite)
