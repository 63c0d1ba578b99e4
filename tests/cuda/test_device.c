/*
 * test_device.c - the trainer's "device" setting on any machine: parsing
 * ("auto", "cpu", "cuda", "cuda:N" and nothing else), "auto" falling back to
 * the CPU with the reason when no CUDA device is usable (or taking the GPU
 * when there is one), "cuda" without a device being a clear error and never
 * a crash, and the same through a whole study of the bert trainer: "cuda"
 * on a machine without a GPU stops the run before any trial with a message
 * naming the device, "auto" runs on the CPU and says why once; which CUDA
 * errors are sticky (they make a device unusable for the process).
 * The branches for a machine with a GPU run there instead; nothing skips.
 */
#include <stdlib.h>

#include "check_util.h"
#include "models/bert/backend.h"
#include "models/cuda/cuda_backend.h"
#include "models/device/device.h"
#include "tune_config.h"

/* 1 when this build and machine have a usable CUDA device. */
static int have_gpu(void)
{
    int n = 0;
    return tunep_cuda_device_count(&n, NULL) == TUNE_OK && n > 0;
}

/* Which CUDA errors corrupt a context for good (cudaError_t's documented
 * values: 700 illegal address, 719 launch failure, 716 misaligned address,
 * 710 device assert; 2 out of memory and 1 invalid value are recoverable),
 * and no device is marked broken before any error. */
START_TEST(sticky_errors_are_told_apart)
{
    int sticky = TUNE_HAVE_CUDA ? 1 : 0; /* without CUDA there is none */
    ck_assert_int_eq(tunep_cuda_error_is_sticky(700), sticky);
    ck_assert_int_eq(tunep_cuda_error_is_sticky(719), sticky);
    ck_assert_int_eq(tunep_cuda_error_is_sticky(716), sticky);
    ck_assert_int_eq(tunep_cuda_error_is_sticky(710), sticky);
    ck_assert_int_eq(tunep_cuda_error_is_sticky(0), 0);
    ck_assert_int_eq(tunep_cuda_error_is_sticky(1), 0);
    ck_assert_int_eq(tunep_cuda_error_is_sticky(2), 0);
    ck_assert_int_eq(tunep_cuda_device_broken(0), 0);
    ck_assert_int_eq(tunep_cuda_device_broken(-1), 0);
    ck_assert_int_eq(tunep_cuda_device_broken(100000), 0);
}
END_TEST

START_TEST(parse_accepts_the_four_forms)
{
    struct {
        const char *text;
        enum tunep_device_kind kind;
        int index;
    } ok[] = {{"cpu", TUNEP_DEVICE_CPU, -1},    {"auto", TUNEP_DEVICE_AUTO, -1},
              {"cuda", TUNEP_DEVICE_CUDA, -1},  {"cuda:0", TUNEP_DEVICE_CUDA, 0},
              {"cuda:7", TUNEP_DEVICE_CUDA, 7}, {"cuda:255", TUNEP_DEVICE_CUDA, 255}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        struct tunep_device d = {TUNEP_DEVICE_AUTO, 99};
        tune_error err = {0};
        ck_assert_int_eq(tunep_device_parse(ok[i].text, &d, &err), TUNE_OK);
        ck_assert_int_eq(d.kind, ok[i].kind);
        ck_assert_int_eq(d.index, ok[i].index);
        char buf[32];
        tunep_device_format(&d, buf, sizeof buf);
        ck_assert_str_eq(buf, ok[i].text); /* round trip */
    }
}
END_TEST

START_TEST(parse_rejects_everything_else)
{
    const char *bad[] = {"",         "gpu",     "CUDA",    "cuda:",   "cuda:x", "cuda:-1",
                         "cuda:256", "cuda:01", "cuda: 1", "cuda:1 ", "cpu ",   "cuda:1000"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct tunep_device d = {TUNEP_DEVICE_AUTO, 99};
        tune_error err = {0};
        ck_assert_msg(tunep_device_parse(bad[i], &d, &err) == TUNE_ECONFIG, "'%s'", bad[i]);
        ck_assert_int_eq(d.kind, TUNEP_DEVICE_AUTO); /* untouched */
        ck_assert_int_eq(d.index, 99);
        ck_assert_ptr_nonnull(
            strstr(err.text, "expected \"auto\", \"cpu\", \"cuda\" or \"cuda:N\""));
    }
}
END_TEST

START_TEST(cpu_needs_no_probe)
{
    struct tunep_device d = {TUNEP_DEVICE_CPU, -1};
    int cuda = 5;
    char why[128] = "x";
    ck_assert_int_eq(tunep_device_resolve(&d, -1, &cuda, why, sizeof why, NULL), TUNE_OK);
    ck_assert_int_eq(cuda, -1);
    ck_assert_str_eq(why, "");
    struct tunep_backend *be = NULL;
    ck_assert_int_eq(tunep_device_open(&d, -1, 1, 0, &be, why, sizeof why, NULL), TUNE_OK);
    ck_assert_str_eq(be->name, "cpu");
    tunep_device_close(be);
    tunep_device_close(NULL);
}
END_TEST

START_TEST(auto_falls_back_with_a_reason)
{
    struct tunep_device d = {TUNEP_DEVICE_AUTO, -1};
    int cuda = 5;
    char why[256] = "x";
    tune_error err = {0};
    ck_assert_int_eq(tunep_device_resolve(&d, -1, &cuda, why, sizeof why, &err), TUNE_OK);
    struct tunep_backend *be = NULL;
    ck_assert_int_eq(tunep_device_open(&d, -1, 1, 0, &be, why, sizeof why, &err), TUNE_OK);
    if (have_gpu()) {
        ck_assert_int_eq(cuda, 0);
        ck_assert_str_eq(why, "");
        ck_assert_str_eq(be->name, "cuda");
    } else {
        ck_assert_int_eq(cuda, -1);
        ck_assert_str_eq(be->name, "cpu");
        /* the reason: no driver, an old driver, no device, or no CUDA in this build */
        ck_assert_msg(strstr(why, "driver") || strstr(why, "no CUDA device") ||
                          strstr(why, "no CUDA backend"),
                      "why: '%s'", why);
        if (!TUNE_HAVE_CUDA)
            ck_assert_ptr_nonnull(strstr(why, "-Dcuda=enabled"));
    }
    tunep_device_close(be);
}
END_TEST

START_TEST(cuda_without_a_device_is_an_error)
{
    struct tunep_device d = {TUNEP_DEVICE_CUDA, -1};
    struct tunep_backend *be = (struct tunep_backend *)(uintptr_t)1; /* must stay untouched */
    char why[256];
    tune_error err = {0};
    tune_status st = tunep_device_open(&d, -1, 1, 0, &be, why, sizeof why, &err);
    if (have_gpu()) {
        ck_assert_int_eq(st, TUNE_OK);
        ck_assert_str_eq(be->name, "cuda");
        tunep_device_close(be);
        return;
    }
    ck_assert(st == TUNE_EDEVICE || st == TUNE_EUNSUPPORTED);
    ck_assert_int_eq(st, TUNE_HAVE_CUDA ? TUNE_EDEVICE : TUNE_EUNSUPPORTED);
    ck_assert_ptr_eq(be, (struct tunep_backend *)(uintptr_t)1);
    ck_assert_msg(strncmp(err.text, "device 'cuda': ", 15) == 0, "text: %s", err.text);
    /* the CUDA layer itself says the same without the prefix */
    struct tunep_cuda_options o = {.device = 0, .tf32 = 0};
    tune_error err2 = {0};
    ck_assert_int_eq(tunep_cuda_backend_new(&o, &be, &err2), st);
    ck_assert_str_eq(err2.text, err.text + 15);
}
END_TEST

START_TEST(a_device_index_past_the_last)
{
    struct tunep_device d = {TUNEP_DEVICE_CUDA, 255};
    int cuda = 5;
    tune_error err = {0};
    ck_assert_int_ne(tunep_device_resolve(&d, -1, &cuda, NULL, 0, &err), TUNE_OK);
    ck_assert_int_eq(cuda, 5);
    ck_assert_ptr_nonnull(strstr(err.text, "device 'cuda:255': "));
    if (have_gpu())
        ck_assert_ptr_nonnull(strstr(err.text, "no device 'cuda:255'"));
    /* "auto" with an index falls back instead */
    d.kind = TUNEP_DEVICE_AUTO;
    char why[256];
    ck_assert_int_eq(tunep_device_resolve(&d, -1, &cuda, why, sizeof why, &err), TUNE_OK);
    ck_assert_int_eq(cuda, -1);
    ck_assert(why[0] != '\0');
}
END_TEST

/* ---- through a study of the bert trainer ---------------------------------- */

static char logbuf[8192];
static int warn_lines;

static void capture(tune_log_level level, const char *msg, void *user)
{
    (void)user;
    if (level <= TUNE_LOG_WARN && strstr(msg, "trainer.device")) {
        warn_lines++;
        snprintf(logbuf, sizeof logbuf, "%s", msg);
    }
}

/* A 2-trial sweep of a one-layer BERT on the malformed-test fixtures. */
static tune_status run_sweep(const char *device, tune_error *err)
{
    const char *root = getenv("TUNE_SOURCE_ROOT");
    char json[4096];
    snprintf(json, sizeof json,
             "{\"name\": \"device\", \"num_samples\": 2, \"seed\": 1,"
             " \"max_concurrent_trials\": 2, \"storage\": \":memory:\","
             " \"trainer\": {\"type\": \"bert\", \"device\": \"%s\","
             " \"train\": \"%s/tests/malformed/good_train.tsv\","
             " \"dev\": \"%s/tests/malformed/good_dev.tsv\","
             " \"vocab\": \"%s/tests/malformed/vocab_good.txt\","
             " \"model\": {\"layers\": 1, \"hidden\": 16, \"heads\": 2, \"intermediate\": 32,"
             " \"max_position\": 32}, \"max_seq_len\": 16, \"epochs\": 1,"
             " \"max_train_examples\": 2, \"threads\": 1}}",
             device, root ? root : ".", root ? root : ".", root ? root : ".");
    tune_study *study = NULL;
    tune_status st = tune_study_new_from_json(json, "<device test>", &study, err);
    if (st == TUNE_OK)
        st = tune_study_run(study, err);
    tune_study_free(study);
    return st;
}

START_TEST(sweep_with_cuda_and_no_gpu_stops_before_any_trial)
{
    if (have_gpu())
        return; /* then it runs on the GPU: test_cuda_model covers that */
    tune_error err = {0};
    tune_status st = run_sweep("cuda:0", &err);
    if (!TUNE_HAVE_CUDA) {
        /* a build without CUDA refuses the config itself */
        ck_assert_int_eq(st, TUNE_ECONFIG);
        ck_assert_ptr_nonnull(strstr(err.text, "this build has no CUDA backend"));
        return;
    }
    ck_assert_int_eq(st, TUNE_EDEVICE);
    ck_assert_msg(strstr(err.text, "device 'cuda:0': ") != NULL, "text: %s", err.text);
}
END_TEST

START_TEST(sweep_with_auto_runs_and_says_why_once)
{
    warn_lines = 0;
    logbuf[0] = '\0';
    tune_set_log_callback(capture, TUNE_LOG_DEBUG, NULL);
    tune_error err = {0};
    tune_status st = run_sweep("auto", &err);
    tune_set_log_callback(NULL, TUNE_LOG_ERROR, NULL);
    ck_assert_msg(st == TUNE_OK, "%s", err.text);
    if (have_gpu()) {
        ck_assert_int_eq(warn_lines, 0);
    } else {
        ck_assert_int_eq(warn_lines, 1); /* once per study, not per trial */
        ck_assert_ptr_nonnull(strstr(logbuf, "trials run on the CPU"));
    }
}
END_TEST

static Suite *device_suite(void)
{
    Suite *s = suite_create("device");
    TCase *tc = tcase_create("device");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, parse_accepts_the_four_forms);
    tcase_add_test(tc, sticky_errors_are_told_apart);
    tcase_add_test(tc, parse_rejects_everything_else);
    tcase_add_test(tc, cpu_needs_no_probe);
    tcase_add_test(tc, auto_falls_back_with_a_reason);
    tcase_add_test(tc, cuda_without_a_device_is_an_error);
    tcase_add_test(tc, a_device_index_past_the_last);
    tcase_add_test(tc, sweep_with_cuda_and_no_gpu_stops_before_any_trial);
    tcase_add_test(tc, sweep_with_auto_runs_and_says_why_once);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(device_suite)
