/*
 * placement.h - the GPUs trials are placed on: which exist (an explicit list
 * or count, else discovery without CUDA), and the ids a trial's own process
 * is given in CUDA_VISIBLE_DEVICES.
 *
 * Precedence: tune_set_gpus() (the CLI's --gpus), then the config's "gpus",
 * then discovery: the driver's listing in /proc/driver/nvidia/gpus (one
 * folder per GPU), restricted by the caller's CUDA_VISIBLE_DEVICES. Nothing
 * here initialises CUDA, so a controller that forks trials stays fork-safe.
 */
#ifndef TUNE_PLACEMENT_H
#define TUNE_PLACEMENT_H

#include "tune.h"

#define TUNEP_GPU_SET_MAX 256 /* = TUNEP_GPU_MAX_DEVICES */
#define TUNEP_GPU_ID_MAX  48

/* How a list of GPUs was given: not at all, as a count, or as device ids. */
enum tunep_gpus_kind { TUNEP_GPUS_NONE = 0, TUNEP_GPUS_COUNT, TUNEP_GPUS_LIST };

struct tunep_gpu_set {
    int n;
    int ordinal[TUNEP_GPU_SET_MAX];               /* the device's CUDA index in this process */
    char id[TUNEP_GPU_SET_MAX][TUNEP_GPU_ID_MAX]; /* its name in a child's CUDA_VISIBLE_DEVICES */
    char why[200]; /* n == 0 after discovery: the reason, for messages */
};

/*
 * The set a count or a list of ids gives (kind COUNT: n devices, the first n
 * the caller sees; LIST: ids[0 .. n-1]). Ids are as the machine numbers its
 * GPUs; when the caller's CUDA_VISIBLE_DEVICES is set they must be among its
 * entries. TUNE_ECONFIG for a repeated id, one not visible, or more than
 * TUNEP_GPU_SET_MAX.
 */
tune_status tunep_gpu_set_from(enum tunep_gpus_kind kind, int n, const int *ids,
                               struct tunep_gpu_set *ret, tune_error *err);
/* The GPUs the driver lists, restricted by CUDA_VISIBLE_DEVICES; n == 0 with a reason in why
 * when there are none. Fails only for a malformed CUDA_VISIBLE_DEVICES (TUNE_ECONFIG). */
tune_status tunep_gpu_discover(struct tunep_gpu_set *ret, tune_error *err);
/*
 * The GPUs trials may use: tune_set_gpus()'s when it was called, else the
 * config's (kind, n, ids), else discovery.
 */
tune_status tunep_gpu_available(enum tunep_gpus_kind kind, int n, const int *ids,
                                struct tunep_gpu_set *ret, tune_error *err);

/*
 * Parses "2" (a count) or "0,1" / "3," (device ids, comma-separated) into
 * kind, *ret_n and ids (room for TUNEP_GPU_SET_MAX). TUNE_EINVAL otherwise.
 */
tune_status tunep_gpus_parse(const char *spec, enum tunep_gpus_kind *ret_kind, int *ret_n, int *ids,
                             tune_error *err);

#endif /* TUNE_PLACEMENT_H */
