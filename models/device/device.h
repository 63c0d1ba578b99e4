/*
 * device.h - where a model runs: the trainer's "device" setting ("auto",
 * "cpu", "cuda", "cuda:N") parsed once, and turned into a backend at trial
 * start, with "auto" falling back to the CPU and saying why.
 *
 * The backend registry: it names both backends, so
 * callers never #ifdef on CUDA; in a build without CUDA the CUDA side
 * answers TUNE_EUNSUPPORTED (cuda_none.c).
 */
#ifndef TUNE_DEVICE_H
#define TUNE_DEVICE_H

#include <stddef.h>

#include "tune.h"

struct tunep_backend;

enum tunep_device_kind {
    TUNEP_DEVICE_CPU = 0,  /* "cpu" (the zero value: a zeroed config runs on the CPU) */
    TUNEP_DEVICE_AUTO = 1, /* "auto": a CUDA device when one is usable, else the CPU */
    TUNEP_DEVICE_CUDA = 2, /* "cuda" or "cuda:N": a CUDA device or an error */
};

#define TUNEP_DEVICE_MAX_INDEX 255

struct tunep_device {
    enum tunep_device_kind kind;
    int index; /* "cuda:N" -> N; -1 when not given (device 0, or the GPU pool's choice) */
};

/* Parses text into *ret. TUNE_ECONFIG with a message naming the accepted
 * forms otherwise; *ret untouched on failure. */
tune_status tunep_device_parse(const char *text, struct tunep_device *ret, tune_error *err);

/* "cpu", "auto", "cuda", "cuda:3". */
void tunep_device_format(const struct tunep_device *dev, char *buf, size_t size);

/*
 * Decides where a trial would run, without creating anything: *ret_cuda is
 * the CUDA device index to use, or -1 for the CPU. "auto" without a usable
 * CUDA device answers -1 and puts the reason in why ("" otherwise);
 * "cuda[:N]" without one is an error (TUNE_EDEVICE or TUNE_EUNSUPPORTED)
 * naming the device and the reason. `device` overrides the index when >= 0
 * (the GPU pool's assignment).
 */
tune_status tunep_device_resolve(const struct tunep_device *dev, int device, int *ret_cuda,
                                 char *why, size_t why_size, tune_error *err);

/*
 * Resolves dev (as tunep_device_resolve) and creates the backend: a CPU
 * backend on cpu_threads threads, or a CUDA backend (tf32 as given). A CUDA
 * device that exists but fails to start is an error, never a silent switch
 * to the CPU. Free with tunep_device_close().
 */
tune_status tunep_device_open(const struct tunep_device *dev, int device, int cpu_threads, int tf32,
                              struct tunep_backend **ret_backend, char *why, size_t why_size,
                              tune_error *err);
/* Frees a backend from tunep_device_open (either kind); NULL is a no-op. */
void tunep_device_close(struct tunep_backend *backend);

#endif /* TUNE_DEVICE_H */
