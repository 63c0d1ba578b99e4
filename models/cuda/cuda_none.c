/*
 * cuda_none.c - the device functions of cuda_backend.h in a build without
 * CUDA (-Dcuda=disabled, or no nvcc or cuBLAS at configure time): each
 * answers TUNE_EUNSUPPORTED with a message saying how to get CUDA, so
 * callers (device selection, the GPU pool) need no #ifdef.
 */
#include "models/cuda/cuda_backend.h"

#include "base/base.h"

#define NO_CUDA "this build has no CUDA backend (configure with -Dcuda=enabled)"

tune_status tunep_cuda_device_count(int *ret_count, tune_error *err)
{
    if (ret_count)
        *ret_count = 0;
    return tunep_error_set(err, TUNE_EUNSUPPORTED, NO_CUDA);
}

tune_status tunep_cuda_mem_info(int device, size_t *ret_free, size_t *ret_total, tune_error *err)
{
    (void)device;
    (void)ret_free;
    (void)ret_total;
    return tunep_error_set(err, TUNE_EUNSUPPORTED, NO_CUDA);
}

tune_status tunep_cuda_device_name(int device, char *buf, size_t size, tune_error *err)
{
    (void)device;
    if (buf && size > 0)
        buf[0] = '\0';
    return tunep_error_set(err, TUNE_EUNSUPPORTED, NO_CUDA);
}

tune_status tunep_cuda_backend_new(const struct tunep_cuda_options *opt,
                                   struct tunep_backend **ret_backend, tune_error *err)
{
    (void)opt;
    (void)ret_backend;
    return tunep_error_set(err, TUNE_EUNSUPPORTED, NO_CUDA);
}

void tunep_cuda_backend_free(struct tunep_backend *backend)
{
    (void)backend;
}

int tunep_cuda_error_is_sticky(int cuda_error)
{
    (void)cuda_error;
    return 0;
}

int tunep_cuda_device_broken(int device)
{
    (void)device;
    return 0;
}
