/*
 * gpu_pool.h - which GPU a trial runs on, for resources_per_trial
 * {"gpu": f}: trials that need a fraction f in (0, 1] of a GPU are packed
 * onto the devices by each device's own free share.
 *
 * Each device is one whole GPU of TUNEP_GPU_UNITS units (Ray's fractional
 * resource granularity, 1/10000); a trial takes round(f * TUNEP_GPU_UNITS)
 * units of ONE device that has that many free, never units gathered across
 * devices: two GPUs with 0.4 free each do not take a 0.6 trial (Ray Tune
 * bug #5902 placed trials by the fraction free in total). Integer units make
 * 0.1 x 10 or 0.25 x 4 fill a device exactly, where doubles would not.
 * Before a start the chosen device's memory is checked and reserved as well
 * (see tunep_gpu_pool_acquire).
 *
 * Placement spreads: of the devices where the trial fits, the one with the
 * most free units (then the lowest index), so that fewer trials than slots
 * get a GPU each. The pool is thread-safe and needs no CUDA: it packs shares
 * onto device numbers. Device memory is checked only when the caller hands
 * it a query (a trainer that runs CUDA in this process; tests).
 *
 * Trials that take several whole GPUs ("gpu": 2) take devices nobody holds
 * any share of (tunep_gpu_pool_acquire_whole).
 */
#ifndef TUNE_GPU_POOL_H
#define TUNE_GPU_POOL_H

#include <stddef.h>

#include "tune.h"

#define TUNEP_GPU_UNITS       10000
#define TUNEP_GPU_MAX_DEVICES 256
/* Free device memory a trial needs when the caller cannot say: a CUDA
 * context (~300-500 MiB on recent drivers), the cuBLAS workspace (32 MiB)
 * and bert-tiny's arenas at batch 32 x 128 (~200 MiB) - an estimate, not a
 * measurement. */
#define TUNEP_GPU_DEFAULT_NEED ((size_t)1 << 30)

struct tunep_gpu_pool;

/* Free and total memory of `device` in bytes. */
typedef tune_status (*tunep_gpu_mem_fn)(void *user, int device, size_t *ret_free, size_t *ret_total,
                                        tune_error *err);

struct tunep_gpu_pool_options {
    int device_count;          /* devices to use (0 .. count-1); <= 0: those discovery finds
                                * (tunep_gpu_discover) */
    tunep_gpu_mem_fn mem_info; /* NULL: memory is not checked */
    void *mem_user;            /* handed to mem_info */
};

/*
 * Creates a pool over the devices. @return TUNE_OK, TUNE_EINVAL (more than
 * TUNEP_GPU_MAX_DEVICES), TUNE_EDEVICE (no GPU found, with the reason, when
 * device_count <= 0), TUNE_ENOMEM; *ret_pool untouched
 * on failure.
 */
tune_status tunep_gpu_pool_new(const struct tunep_gpu_pool_options *opt,
                               struct tunep_gpu_pool **ret_pool, tune_error *err);
/* NULL is a no-op. */
void tunep_gpu_pool_free(struct tunep_gpu_pool *pool);

int tunep_gpu_pool_device_count(const struct tunep_gpu_pool *pool);

/* The units a fraction takes: round(f * TUNEP_GPU_UNITS), or 0 when f is
 * not in (0, 1] (or rounds to 0). */
int tunep_gpu_units(double fraction);

/* How many trials of this fraction fit at once on an empty pool (the sum over
 * devices of floor(UNITS / units)); 0 for an invalid fraction. A controller
 * can cap its concurrency with it. */
int tunep_gpu_pool_slots(const struct tunep_gpu_pool *pool, double fraction);

/*
 * Reserves `fraction` of one device and mem_bytes of its memory (0:
 * TUNEP_GPU_DEFAULT_NEED) for a trial. A device takes the trial when its
 * free memory now holds mem_bytes AND the memory its trials have reserved,
 * mem_bytes included, stays within its budget: the free memory it had when
 * it last held no trial. Trials started together therefore never reserve
 * more than was free, even before any of them has allocated; memory that
 * another process takes later is seen only by the free-memory check.
 *  - TUNE_OK and *ret_device >= 0: reserved; release it with the same fraction.
 *  - TUNE_OK and *ret_device == -1: nothing fits now (units or memory) while
 *    some trial holds a device; retry after a release.
 *  - TUNE_ENOMEM: the units fit but no such device has the memory, and no
 *    trial holds any device, so waiting would not help. err names each
 *    device's free memory and the need.
 *  - TUNE_EINVAL: fraction not in (0, 1].
 *  - TUNE_EDEVICE: the memory query failed, or every device is disabled.
 * Devices whose units fit are tried in placement order; a memory shortfall
 * on one moves on to the next.
 */
tune_status tunep_gpu_pool_acquire(struct tunep_gpu_pool *pool, double fraction, size_t mem_bytes,
                                   int *ret_device, tune_error *err);

/*
 * Reserves `count` whole devices that no trial holds any share of, for a trial
 * of "gpu": count. *ret_got is count and ret_devices[0 .. count-1] the devices,
 * or 0 when that many are not free now (retry after a release). TUNE_EINVAL
 * when count is not in 1 .. the pool's devices; TUNE_EDEVICE when fewer than
 * count are still usable (not disabled). Release each with fraction 1.
 */
tune_status tunep_gpu_pool_acquire_whole(struct tunep_gpu_pool *pool, int count, int *ret_devices,
                                         int *ret_got, tune_error *err);

/* Gives back what tunep_gpu_pool_acquire reserved on device: the same
 * fraction and mem_bytes. A release without a matching acquire is ignored
 * (units and memory never go below 0). */
void tunep_gpu_pool_release(struct tunep_gpu_pool *pool, int device, double fraction,
                            size_t mem_bytes);

/* Units in use on device (0 for an invalid device), and trials holding it. */
int tunep_gpu_pool_used(struct tunep_gpu_pool *pool, int device);
int tunep_gpu_pool_trials(struct tunep_gpu_pool *pool, int device);
/* Places no more trials on device (a sticky CUDA error made it unusable in
 * this process); its holders still release. Once every device is disabled,
 * acquire fails with TUNE_EDEVICE. */
void tunep_gpu_pool_disable(struct tunep_gpu_pool *pool, int device);
/* 1 when device was disabled. */
int tunep_gpu_pool_disabled(struct tunep_gpu_pool *pool, int device);

/* Device memory reserved on device by the trials holding it, in bytes. */
size_t tunep_gpu_pool_reserved(struct tunep_gpu_pool *pool, int device);

#endif /* TUNE_GPU_POOL_H */
