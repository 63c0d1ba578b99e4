/*
 * test_gpu_trainer_ops.c - the engine's placement uses what a trainer row
 * says about GPUs: the device memory one trial needs is reserved in the pool
 * (so trials that fit by share but not by memory wait), and a GPU the
 * trainer says is broken takes no more trials. The "gpuish" trainer is
 * defined here and registered as the built-in ones are; "gpus" in the config
 * declares two GPUs on a machine without any.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <time.h>

#include "check_util.h"
#include "trainers/trainer.h"

#define GIB ((size_t)1 << 30)

struct gpuish_config {
    int need_gib;  /* what gpu_mem_need says; 0: not said */
    int break_gpu; /* the first trial on this GPU breaks it; -1: none */
};

static const struct tunep_option gpuish_options[] = {
    TUNEP_OPT_ROW("need_gib", TUNEP_OPT_INT, struct gpuish_config, need_gib, 0, 64, 0),
    TUNEP_OPT_ROW("break_gpu", TUNEP_OPT_INT, struct gpuish_config, break_gpu, -1, 8, -1),
    {0},
};

/* What the trials saw, shared by the test and the objective. */
static struct {
    pthread_mutex_t lock;
    int running[2], most[2], most_total, total;
    int broken[2];
    int started_on_broken; /* attempts that began on a GPU after it broke */
    int attempts;
} seen = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void reset_seen(void)
{
    pthread_mutex_lock(&seen.lock);
    for (int d = 0; d < 2; d++)
        seen.running[d] = seen.most[d] = seen.broken[d] = 0;
    seen.most_total = seen.total = seen.started_on_broken = seen.attempts = 0;
    pthread_mutex_unlock(&seen.lock);
}

static tune_status gpuish_objective(tune_trial *t, void *user_data)
{
    const struct gpuish_config *c = user_data;
    int gpu = tune_trial_gpu(t, 0);
    ck_assert_int_eq(tune_trial_gpu_count(t), 1);
    ck_assert(gpu == 0 || gpu == 1);
    pthread_mutex_lock(&seen.lock);
    seen.attempts++;
    seen.started_on_broken += seen.broken[gpu];
    int breaks = gpu == c->break_gpu && !seen.broken[gpu];
    seen.running[gpu]++;
    seen.total++;
    if (seen.running[gpu] > seen.most[gpu])
        seen.most[gpu] = seen.running[gpu];
    if (seen.total > seen.most_total)
        seen.most_total = seen.total;
    pthread_mutex_unlock(&seen.lock);

    nanosleep(&(struct timespec){0, 60 * 1000000L}, NULL);

    pthread_mutex_lock(&seen.lock);
    seen.running[gpu]--;
    seen.total--;
    seen.broken[gpu] |= breaks; /* as a sticky CUDA error: broken from now on */
    pthread_mutex_unlock(&seen.lock);
    if (breaks) {
        tune_trial_set_error(t, "an illegal memory access was encountered (sticky)");
        return TUNE_EFAILED;
    }
    tune_status st = tune_trial_report_metric(t, "score", 1.0, NULL);
    return st == TUNE_ESTOP ? TUNE_OK : st;
}

/* Every declared GPU has 10 GiB free of 16. */
static tune_status gpuish_mem(int device, size_t *ret_free, size_t *ret_total, tune_error *err)
{
    (void)device, (void)err;
    *ret_free = 10 * GIB;
    *ret_total = 16 * GIB;
    return TUNE_OK;
}

static size_t gpuish_need(const void *state)
{
    const struct gpuish_config *c = state;
    return (size_t)c->need_gib * GIB;
}

static int gpuish_broken(int device)
{
    pthread_mutex_lock(&seen.lock);
    int b = device >= 0 && device < 2 && seen.broken[device];
    pthread_mutex_unlock(&seen.lock);
    return b;
}

static const struct tunep_trainer_type gpuish = {
    .name = "gpuish",
    .options = gpuish_options,
    .config_size = sizeof(struct gpuish_config),
    .objective = gpuish_objective,
    .gpu_mem = gpuish_mem,
    .gpu_mem_need = gpuish_need,
    .gpu_broken = gpuish_broken,
    .uses_gpu = 1,
};

static void register_gpuish(void)
{
    static int done;
    if (done++)
        return;
    tune_error err = {0};
    ck_assert_msg(tunep_trainer_register(&gpuish, &err) == TUNE_OK, "%s", err.text);
}

static void sweep(const char *trainer, int samples, int concurrent, int failures)
{
    register_gpuish();
    reset_seen();
    char json[600];
    snprintf(json, sizeof json,
             "{\"metric\": \"score\", \"num_samples\": %d, \"storage\": \":memory:\","
             " \"max_concurrent_trials\": %d, \"gpus\": [0, 1], \"max_failures\": %d,"
             " \"resources_per_trial\": {\"gpu\": 0.25}, \"trainer\": %s}",
             samples, concurrent, failures, trainer);
    tune_study *s = NULL;
    tune_error err = {0};
    ck_assert_msg(tune_study_new_from_json(json, NULL, &s, &err) == TUNE_OK, "%s", err.text);
    ck_assert_msg(tune_study_run(s, &err) == TUNE_OK, "%s", err.text);
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    tune_study_counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_TERMINATED], samples);
    tune_study_free(s);
}

/* A quarter of a GPU each, 4 GiB each on GPUs with 10 GiB free: two trials fit
 * a GPU by memory although four would by share, so four run at once, not
 * eight. */
START_TEST(memory_need_bounds_trials_per_gpu)
{
    sweep("{\"type\": \"gpuish\", \"need_gib\": 4}", 16, 8, 0);
    ck_assert_int_le(seen.most[0], 2);
    ck_assert_int_le(seen.most[1], 2);
    ck_assert_int_le(seen.most_total, 4);
    ck_assert_int_ge(seen.most_total, 3); /* and the pool is used, not serialised */
}
END_TEST

/* The control: with the pool's default need, share alone packs four per GPU. */
START_TEST(without_a_need_share_alone_packs)
{
    sweep("{\"type\": \"gpuish\"}", 16, 8, 0);
    ck_assert_int_ge(seen.most[0] + seen.most[1], 6);
}
END_TEST

/* One trial at a time, so placement would always choose GPU 0 (the lower
 * index among equally free ones): the first trial breaks it, fails with the
 * reason and is retried, and no attempt starts on GPU 0 after that; every
 * trial still ends. */
START_TEST(a_broken_gpu_takes_no_more_trials)
{
    sweep("{\"type\": \"gpuish\", \"break_gpu\": 0}", 12, 1, 1);
    ck_assert_int_eq(seen.broken[0], 1);
    ck_assert_int_eq(seen.started_on_broken, 0);
    ck_assert_int_eq(seen.attempts, 13); /* 12 trials, one retried */
}
END_TEST

static Suite *gpu_trainer_ops_suite(void)
{
    Suite *s = suite_create("gpu_trainer_ops");
    TCase *tc = tcase_create("placement");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, memory_need_bounds_trials_per_gpu);
    tcase_add_test(tc, without_a_need_share_alone_packs);
    tcase_add_test(tc, a_broken_gpu_takes_no_more_trials);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(gpu_trainer_ops_suite)
