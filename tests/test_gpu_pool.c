/*
 * test_gpu_pool.c - packing fractional-GPU trials (tune/gpu_pool.c) with an
 * injected device count and free memory, so it runs without a GPU: each
 * device is filled by its own fraction and never by the fractions free in
 * total (Ray Tune bug #5902), 0.1 x 10 and 1/3 x 3 fill a device exactly,
 * placement spreads and is deterministic, free memory is checked before a
 * start (moving on to another device, waiting, or failing when waiting
 * cannot help) and reserved, so that trials started together never take
 * more than was free, releases give back exactly what was taken, and concurrent
 * acquire/release from threads keeps the books balanced.
 */
#include <math.h>
#include <pthread.h>

#include "check_util.h"
#include "engine/gpu_pool.h"

#define MIB ((size_t)1 << 20)

/* Fake devices: free and total memory per device; a query counter. */
struct fake_gpus {
    size_t free_mem[8], total_mem[8];
    int queries;
    int fail_device; /* -1: none */
};

static tune_status fake_mem(void *user, int device, size_t *ret_free, size_t *ret_total,
                            tune_error *err)
{
    struct fake_gpus *g = user;
    g->queries++;
    if (device == g->fail_device) {
        snprintf(err->text, sizeof err->text, "query failed");
        err->code = TUNE_EDEVICE;
        return TUNE_EDEVICE;
    }
    *ret_free = g->free_mem[device];
    *ret_total = g->total_mem[device];
    return TUNE_OK;
}

static struct fake_gpus gpus;

static struct tunep_gpu_pool *make_pool(int n, size_t free_each)
{
    gpus = (struct fake_gpus){.fail_device = -1};
    for (int d = 0; d < 8; d++) {
        gpus.free_mem[d] = free_each;
        gpus.total_mem[d] = 80 * 1024 * MIB;
    }
    struct tunep_gpu_pool_options opt = {
        .device_count = n, .mem_info = fake_mem, .mem_user = &gpus};
    struct tunep_gpu_pool *p = NULL;
    tune_error err = {0};
    ck_assert_int_eq(tunep_gpu_pool_new(&opt, &p, &err), TUNE_OK);
    ck_assert_int_eq(tunep_gpu_pool_device_count(p), n);
    return p;
}

/* Acquires with 1 GiB needed; returns the device (-1: none now) and checks the status. */
static int take(struct tunep_gpu_pool *p, double f)
{
    int dev = -99;
    tune_error err = {0};
    ck_assert_int_eq(tunep_gpu_pool_acquire(p, f, 1024 * MIB, &dev, &err), TUNE_OK);
    ck_assert(dev >= -1 && dev < tunep_gpu_pool_device_count(p));
    return dev;
}

START_TEST(quarter_gpu_packs_four_per_device)
{
    struct tunep_gpu_pool *p = make_pool(1, 40 * 1024 * MIB);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(take(p, 0.25), 0);
    ck_assert_int_eq(tunep_gpu_pool_used(p, 0), TUNEP_GPU_UNITS);
    ck_assert_int_eq(tunep_gpu_pool_trials(p, 0), 4);
    ck_assert_int_eq(take(p, 0.25), -1); /* full: wait */
    tunep_gpu_pool_release(p, 0, 0.25, 1024 * MIB);
    ck_assert_int_eq(tunep_gpu_pool_trials(p, 0), 3);
    ck_assert_int_eq(take(p, 0.25), 0);
    ck_assert_int_eq(tunep_gpu_pool_slots(p, 0.25), 4);
    tunep_gpu_pool_free(p);
}
END_TEST

/* Ray #5902: with 0.4 free on each of two GPUs (0.8 in total), a 0.6 trial
 * must wait, and two 0.6 trials never land on one device. */
START_TEST(fraction_of_one_device_not_of_the_total)
{
    struct tunep_gpu_pool *p = make_pool(2, 40 * 1024 * MIB);
    int a = take(p, 0.6), b = take(p, 0.6);
    ck_assert_int_eq(a, 0);
    ck_assert_int_eq(b, 1);
    ck_assert_int_eq(tunep_gpu_pool_used(p, 0), 6000);
    ck_assert_int_eq(tunep_gpu_pool_used(p, 1), 6000);
    ck_assert_int_eq(take(p, 0.6), -1);
    /* 0.4 still fits on each device, by its own share */
    ck_assert_int_eq(take(p, 0.4), 0);
    ck_assert_int_eq(take(p, 0.4), 1);
    ck_assert_int_eq(take(p, 0.1), -1);
    ck_assert_int_eq(tunep_gpu_pool_slots(p, 0.6), 2);
    tunep_gpu_pool_free(p);
}
END_TEST

/* Units are integers: 10 x 0.1 and 3 x 1/3 fill a device, an 11th / 4th waits. */
START_TEST(exact_fills)
{
    struct tunep_gpu_pool *p = make_pool(1, 40 * 1024 * MIB);
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(take(p, 0.1), 0);
    ck_assert_int_eq(take(p, 0.1), -1);
    ck_assert_int_eq(tunep_gpu_pool_used(p, 0), TUNEP_GPU_UNITS);
    for (int i = 0; i < 10; i++)
        tunep_gpu_pool_release(p, 0, 0.1, 1024 * MIB);
    ck_assert_int_eq(tunep_gpu_pool_used(p, 0), 0);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(take(p, 1.0 / 3.0), 0);
    ck_assert_int_eq(take(p, 1.0 / 3.0), -1);
    ck_assert_int_eq(tunep_gpu_pool_used(p, 0), 9999);
    ck_assert_int_eq(tunep_gpu_pool_slots(p, 1.0 / 3.0), 3);
    ck_assert_int_eq(tunep_gpu_units(0.1), 1000);
    ck_assert_int_eq(tunep_gpu_units(1.0), TUNEP_GPU_UNITS);
    tunep_gpu_pool_free(p);
}
END_TEST

/* Spread: the device with the most free units first, ties to the lowest index. */
START_TEST(placement_spreads_deterministically)
{
    struct tunep_gpu_pool *p = make_pool(3, 40 * 1024 * MIB);
    int want[] = {0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2};
    for (int i = 0; i < 12; i++)
        ck_assert_int_eq(take(p, 0.25), want[i]);
    ck_assert_int_eq(take(p, 0.25), -1);
    tunep_gpu_pool_release(p, 1, 0.25, 1024 * MIB);
    tunep_gpu_pool_release(p, 1, 0.25, 1024 * MIB);
    tunep_gpu_pool_release(p, 2, 0.25, 1024 * MIB);
    /* device 1 has 0.5 free, device 2 0.25: a 0.5 trial goes to 1, then 0.25 to 2 */
    ck_assert_int_eq(take(p, 0.5), 1);
    ck_assert_int_eq(take(p, 0.25), 2);
    ck_assert_int_eq(tunep_gpu_pool_slots(p, 0.25), 12);
    tunep_gpu_pool_free(p);
}
END_TEST

START_TEST(memory_is_checked_before_a_start)
{
    struct tunep_gpu_pool *p = make_pool(2, 40 * 1024 * MIB);
    gpus.free_mem[0] = 512 * MIB; /* another process holds device 0 */
    /* device 0 has more free units but too little memory: device 1 */
    ck_assert_int_eq(take(p, 0.5), 1);
    ck_assert_int_eq(take(p, 0.5), 1);
    /* device 1's units are full, device 0 lacks memory, a trial runs: wait */
    ck_assert_int_eq(take(p, 0.5), -1);
    /* nothing running anywhere and no memory: waiting cannot help */
    tunep_gpu_pool_release(p, 1, 0.5, 1024 * MIB);
    tunep_gpu_pool_release(p, 1, 0.5, 1024 * MIB);
    gpus.free_mem[1] = 100 * MIB;
    int dev = -99;
    tune_error err = {0};
    ck_assert_int_eq(tunep_gpu_pool_acquire(p, 0.5, 1024 * MIB, &dev, &err), TUNE_ENOMEM);
    ck_assert_int_eq(dev, -1);
    ck_assert_msg(strstr(err.text, "cuda:0 has 512 MiB free") &&
                      strstr(err.text, "cuda:1 has 100 MiB free") &&
                      strstr(err.text, "needs 1024 MiB"),
                  "message: %s", err.text);
    /* 0 asks for the default need, 1 GiB */
    gpus.free_mem[1] = TUNEP_GPU_DEFAULT_NEED;
    ck_assert_int_eq(tunep_gpu_pool_acquire(p, 0.5, 0, &dev, &err), TUNE_OK);
    ck_assert_int_eq(dev, 1);
    tunep_gpu_pool_free(p);
}
END_TEST

START_TEST(bad_fractions_and_releases)
{
    struct tunep_gpu_pool *p = make_pool(2, 40 * 1024 * MIB);
    double bad[] = {0.0, -0.5, 1.5, 2.0, 1e-9, (double)NAN, (double)INFINITY};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int dev = -99;
        tune_error err = {0};
        ck_assert_int_eq(tunep_gpu_pool_acquire(p, bad[i], 0, &dev, &err), TUNE_EINVAL);
        ck_assert_int_eq(dev, -99); /* untouched */
        ck_assert_ptr_nonnull(strstr(err.text, "resources_per_trial.gpu"));
        ck_assert_int_eq(tunep_gpu_pool_slots(p, bad[i]), 0);
    }
    /* releases without an acquire never drive the books negative */
    tunep_gpu_pool_release(p, 0, 0.5, 1024 * MIB);
    tunep_gpu_pool_release(p, 7, 0.5, 1024 * MIB);
    tunep_gpu_pool_release(p, -1, 0.5, 1024 * MIB);
    ck_assert_int_eq(tunep_gpu_pool_used(p, 0), 0);
    ck_assert_int_eq(tunep_gpu_pool_trials(p, 0), 0);
    ck_assert_int_eq(take(p, 1.0), 0);
    ck_assert_int_eq(take(p, 1.0), 1);
    ck_assert_int_eq(take(p, 1.0), -1);
    tunep_gpu_pool_free(p);
    tunep_gpu_pool_free(NULL);
}
END_TEST

START_TEST(memory_query_failure_is_reported)
{
    struct tunep_gpu_pool *p = make_pool(1, 40 * 1024 * MIB);
    gpus.fail_device = 0;
    int dev = -99;
    tune_error err = {0};
    ck_assert_int_eq(tunep_gpu_pool_acquire(p, 0.5, 0, &dev, &err), TUNE_EDEVICE);
    ck_assert_str_eq(err.text, "cuda:0: query failed");
    ck_assert_int_eq(tunep_gpu_pool_used(p, 0), 0);
    tunep_gpu_pool_free(p);
}
END_TEST

/* Devices whose units are full are not even queried for memory. */
START_TEST(full_devices_are_not_queried)
{
    struct tunep_gpu_pool *p = make_pool(2, 40 * 1024 * MIB);
    ck_assert_int_eq(take(p, 1.0), 0);
    gpus.queries = 0;
    ck_assert_int_eq(take(p, 0.5), 1);
    ck_assert_int_eq(gpus.queries, 1);
    tunep_gpu_pool_free(p);
}
END_TEST

struct worker_arg {
    struct tunep_gpu_pool *pool;
    int rounds;
    int over; /* set when a device was seen over-committed */
};

static void *worker(void *v)
{
    struct worker_arg *a = v;
    for (int i = 0; i < a->rounds; i++) {
        int dev = -1;
        if (tunep_gpu_pool_acquire(a->pool, 0.25, 0, &dev, NULL) != TUNE_OK)
            continue;
        if (dev < 0)
            continue;
        if (tunep_gpu_pool_used(a->pool, dev) > TUNEP_GPU_UNITS ||
            tunep_gpu_pool_reserved(a->pool, dev) > 40 * 1024 * MIB)
            a->over = 1;
        tunep_gpu_pool_release(a->pool, dev, 0.25, 0);
    }
    return NULL;
}

START_TEST(threads_keep_the_books_balanced)
{
    /* The fake's query counter is not thread-safe; it is not read here. */
    struct tunep_gpu_pool *p = make_pool(2, 40 * 1024 * MIB);
    pthread_t th[8];
    struct worker_arg args[8];
    for (int i = 0; i < 8; i++) {
        args[i] = (struct worker_arg){p, 300, 0};
        ck_assert_int_eq(pthread_create(&th[i], NULL, worker, &args[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(args[i].over, 0);
    }
    ck_assert_int_eq(tunep_gpu_pool_used(p, 0), 0);
    ck_assert_int_eq(tunep_gpu_pool_used(p, 1), 0);
    ck_assert_int_eq(tunep_gpu_pool_trials(p, 0), 0);
    ck_assert_int_eq(tunep_gpu_pool_trials(p, 1), 0);
    ck_assert_uint_eq(tunep_gpu_pool_reserved(p, 0), 0);
    ck_assert_uint_eq(tunep_gpu_pool_reserved(p, 1), 0);
    tunep_gpu_pool_free(p);
}
END_TEST

/* Acquires with `need` bytes; the device, or -1. */
static int take_mem(struct tunep_gpu_pool *p, double f, size_t need)
{
    int dev = -99;
    tune_error err = {0};
    ck_assert_int_eq(tunep_gpu_pool_acquire(p, f, need, &dev, &err), TUNE_OK);
    return dev;
}

/* Trials started together have allocated nothing yet, so the free memory
 * the pool sees does not move: the reservations alone keep them within what
 * was free. */
START_TEST(memory_is_reserved_not_just_checked)
{
    const size_t GIB = 1024 * MIB;
    struct tunep_gpu_pool *p = make_pool(1, 10 * GIB);
    ck_assert_int_eq(take_mem(p, 0.25, 4 * GIB), 0);
    ck_assert_int_eq(take_mem(p, 0.25, 4 * GIB), 0);
    ck_assert_uint_eq(tunep_gpu_pool_reserved(p, 0), 8 * GIB);
    /* units free and 10 GiB still reported free, but only 2 GiB unreserved */
    ck_assert_int_eq(take_mem(p, 0.25, 4 * GIB), -1);
    ck_assert_int_eq(take_mem(p, 0.25, 2 * GIB), 0);
    ck_assert_uint_eq(tunep_gpu_pool_reserved(p, 0), 10 * GIB);
    /* a release gives its memory back */
    tunep_gpu_pool_release(p, 0, 0.25, 4 * GIB);
    ck_assert_uint_eq(tunep_gpu_pool_reserved(p, 0), 6 * GIB);
    /* the trials have allocated now (2 GiB free): the free-memory check holds too */
    gpus.free_mem[0] = 2 * GIB;
    ck_assert_int_eq(take_mem(p, 0.25, 3 * GIB), -1);
    /* a release larger than what is left never wraps around */
    tunep_gpu_pool_release(p, 0, 0.25, 4 * GIB);
    tunep_gpu_pool_release(p, 0, 0.25, 8 * GIB);
    ck_assert_uint_eq(tunep_gpu_pool_reserved(p, 0), 0);
    ck_assert_int_eq(tunep_gpu_pool_trials(p, 0), 0);
    /* an idle device's budget is its free memory again */
    gpus.free_mem[0] = 10 * GIB;
    ck_assert_int_eq(take_mem(p, 0.5, 6 * GIB), 0);
    ck_assert_int_eq(take_mem(p, 0.5, 6 * GIB), -1);
    tunep_gpu_pool_free(p);

    /* two devices: device 0 comes first (more free units) and reports 10 GiB
     * free, but 8 of them are reserved: the trial goes to device 1 */
    p = make_pool(2, 10 * GIB);
    ck_assert_int_eq(take_mem(p, 0.25, 8 * GIB), 0);
    ck_assert_int_eq(take_mem(p, 0.5, 1 * GIB), 1);
    ck_assert_int_eq(take_mem(p, 0.25, 4 * GIB), 1);
    ck_assert_uint_eq(tunep_gpu_pool_reserved(p, 0), 8 * GIB);
    ck_assert_uint_eq(tunep_gpu_pool_reserved(p, 1), 5 * GIB);
    tunep_gpu_pool_free(p);
}
END_TEST

/* A device disabled after a sticky CUDA error takes no more trials; its
 * holders still release; with none left, acquire says so. */
START_TEST(disabled_devices_take_no_trials)
{
    struct tunep_gpu_pool *p = make_pool(2, 40 * 1024 * MIB);
    ck_assert_int_eq(take(p, 0.5), 0);
    ck_assert_int_eq(take(p, 0.5), 1);
    tunep_gpu_pool_disable(p, 0);
    tunep_gpu_pool_disable(p, 9); /* out of range: ignored */
    /* both hold 0.5 and device 0 would come first (lower index) */
    ck_assert_int_eq(take(p, 0.5), 1);
    ck_assert_int_eq(take(p, 0.5), -1); /* device 1 full, a trial runs there: wait */
    tunep_gpu_pool_release(p, 0, 0.5, 1024 * MIB);
    ck_assert_int_eq(tunep_gpu_pool_used(p, 0), 0);
    ck_assert_int_eq(tunep_gpu_pool_trials(p, 0), 0);
    ck_assert_int_eq(take(p, 0.5), -1); /* device 0 free but disabled */
    tunep_gpu_pool_disable(p, 1);
    int dev = -99;
    tune_error err = {0};
    ck_assert_int_eq(tunep_gpu_pool_acquire(p, 0.5, 0, &dev, &err), TUNE_EDEVICE);
    ck_assert_msg(strstr(err.text, "no usable GPU left") != NULL, "message: %s", err.text);
    tunep_gpu_pool_release(p, 1, 0.5, 1024 * MIB);
    tunep_gpu_pool_release(p, 1, 0.5, 1024 * MIB);
    ck_assert_int_eq(tunep_gpu_pool_trials(p, 1), 0);
    ck_assert_uint_eq(tunep_gpu_pool_reserved(p, 1), 0);
    tunep_gpu_pool_free(p);
}
END_TEST

/* Whole-GPU trials skip disabled devices too, and say so once too few are left. */
START_TEST(disabled_devices_take_no_whole_trials)
{
    struct tunep_gpu_pool *p = make_pool(3, 40 * 1024 * MIB);
    int devs[3] = {-1, -1, -1}, got = -1;
    tunep_gpu_pool_disable(p, 0);
    ck_assert_int_eq(tunep_gpu_pool_disabled(p, 0), 1);
    ck_assert_int_eq(tunep_gpu_pool_disabled(p, 1), 0);
    ck_assert_int_eq(tunep_gpu_pool_acquire_whole(p, 2, devs, &got, NULL), TUNE_OK);
    ck_assert_int_eq(got, 2);
    ck_assert_int_eq(devs[0], 1);
    ck_assert_int_eq(devs[1], 2);
    tunep_gpu_pool_release(p, 1, 1.0, 0);
    tunep_gpu_pool_release(p, 2, 1.0, 0);
    tunep_gpu_pool_disable(p, 2);
    tune_error err = {0};
    ck_assert_int_eq(tunep_gpu_pool_acquire_whole(p, 2, devs, &got, &err), TUNE_EDEVICE);
    ck_assert_int_eq(got, 0);
    ck_assert_msg(strstr(err.text, "only 1 of the 3 usable") != NULL, "message: %s", err.text);
    ck_assert_int_eq(tunep_gpu_pool_acquire_whole(p, 1, devs, &got, NULL), TUNE_OK);
    ck_assert_int_eq(got, 1);
    ck_assert_int_eq(devs[0], 1);
    tunep_gpu_pool_free(p);
}
END_TEST

/* Without an injected count the pool asks CUDA: on a machine without a GPU
 * (or a build without CUDA) that is an error naming the reason. */
START_TEST(real_devices_or_a_reason)
{
    struct tunep_gpu_pool_options opt = {0};
    struct tunep_gpu_pool *p = NULL;
    tune_error err = {0};
    tune_status st = tunep_gpu_pool_new(&opt, &p, &err);
    if (st == TUNE_OK) {
        ck_assert_int_ge(tunep_gpu_pool_device_count(p), 1);
        tunep_gpu_pool_free(p);
    } else {
        ck_assert(st == TUNE_EDEVICE || st == TUNE_EUNSUPPORTED);
        ck_assert_ptr_null(p);
        ck_assert(err.text[0] != '\0');
    }
}
END_TEST

static Suite *gpu_pool_suite(void)
{
    Suite *s = suite_create("gpu_pool");
    TCase *tc = tcase_create("pool");
    tcase_add_test(tc, quarter_gpu_packs_four_per_device);
    tcase_add_test(tc, fraction_of_one_device_not_of_the_total);
    tcase_add_test(tc, exact_fills);
    tcase_add_test(tc, placement_spreads_deterministically);
    tcase_add_test(tc, memory_is_checked_before_a_start);
    tcase_add_test(tc, bad_fractions_and_releases);
    tcase_add_test(tc, memory_query_failure_is_reported);
    tcase_add_test(tc, full_devices_are_not_queried);
    tcase_add_test(tc, threads_keep_the_books_balanced);
    tcase_add_test(tc, memory_is_reserved_not_just_checked);
    tcase_add_test(tc, disabled_devices_take_no_trials);
    tcase_add_test(tc, disabled_devices_take_no_whole_trials);
    tcase_add_test(tc, real_devices_or_a_reason);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(gpu_pool_suite)
