/*
 * device.c - the "device" setting: parsing, resolution ("auto" falls back
 * to the CPU when no CUDA device is usable, saying why), and opening and
 * closing the chosen backend. See device.h.
 */
#include "models/device/device.h"

#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "models/bert/backend.h"
#include "models/cpu/cpu_backend.h"
#include "models/cuda/cuda_backend.h"

tune_status tunep_device_parse(const char *text, struct tunep_device *ret, tune_error *err)
{
    static const char expected[] = "expected \"auto\", \"cpu\", \"cuda\" or \"cuda:N\"";
    if (!text || !ret)
        return tunep_error_set(err, TUNE_EINVAL, "device: NULL argument");
    if (strcmp(text, "cpu") == 0) {
        *ret = (struct tunep_device){TUNEP_DEVICE_CPU, -1};
        return TUNE_OK;
    }
    if (strcmp(text, "auto") == 0) {
        *ret = (struct tunep_device){TUNEP_DEVICE_AUTO, -1};
        return TUNE_OK;
    }
    if (strcmp(text, "cuda") == 0) {
        *ret = (struct tunep_device){TUNEP_DEVICE_CUDA, -1};
        return TUNE_OK;
    }
    if (strncmp(text, "cuda:", 5) == 0) {
        /* Decimal digits only: no sign, no spaces, no leading zeros but "0". */
        const char *d = text + 5;
        size_t len = strlen(d);
        int ok = len >= 1 && len <= 3 && !(len > 1 && d[0] == '0');
        int n = 0;
        for (size_t i = 0; ok && i < len; i++) {
            ok = d[i] >= '0' && d[i] <= '9';
            n = n * 10 + (d[i] - '0');
        }
        if (ok && n <= TUNEP_DEVICE_MAX_INDEX) {
            *ret = (struct tunep_device){TUNEP_DEVICE_CUDA, n};
            return TUNE_OK;
        }
        return tunep_error_set(err, TUNE_ECONFIG, "%s with N a device number in [0, %d]", expected,
                               TUNEP_DEVICE_MAX_INDEX);
    }
    return tunep_error_set(err, TUNE_ECONFIG, "%s", expected);
}

void tunep_device_format(const struct tunep_device *dev, char *buf, size_t size)
{
    if (!buf || size == 0)
        return;
    if (!dev || dev->kind == TUNEP_DEVICE_CPU)
        snprintf(buf, size, "cpu");
    else if (dev->kind == TUNEP_DEVICE_AUTO)
        snprintf(buf, size, "auto");
    else if (dev->index < 0)
        snprintf(buf, size, "cuda");
    else
        snprintf(buf, size, "cuda:%d", dev->index);
}

tune_status tunep_device_resolve(const struct tunep_device *dev, int device, int *ret_cuda,
                                 char *why, size_t why_size, tune_error *err)
{
    if (!dev || !ret_cuda)
        return tunep_error_set(err, TUNE_EINVAL, "device: NULL argument");
    if (why && why_size > 0)
        why[0] = '\0';
    if (dev->kind == TUNEP_DEVICE_CPU) {
        *ret_cuda = -1;
        return TUNE_OK;
    }
    int want = device >= 0 ? device : dev->index >= 0 ? dev->index : 0;
    char name[32];
    tunep_device_format(dev, name, sizeof name);
    int count = 0;
    tune_error probe = {0};
    tune_status st = tunep_cuda_device_count(&count, &probe);
    if (st == TUNE_OK && want >= count) {
        st = TUNE_EDEVICE;
        tunep_error_set(&probe, st, "no device 'cuda:%d' (%d CUDA device%s found)", want, count,
                        count == 1 ? "" : "s");
    }
    if (st != TUNE_OK) {
        if (dev->kind == TUNEP_DEVICE_AUTO) {
            if (why && why_size > 0)
                snprintf(why, why_size, "%s", probe.text);
            *ret_cuda = -1;
            return TUNE_OK;
        }
        return tunep_error_set(err, st, "device '%s': %s", name, probe.text);
    }
    *ret_cuda = want;
    return TUNE_OK;
}

tune_status tunep_device_open(const struct tunep_device *dev, int device, int cpu_threads, int tf32,
                              struct tunep_backend **ret_backend, char *why, size_t why_size,
                              tune_error *err)
{
    if (!ret_backend)
        return tunep_error_set(err, TUNE_EINVAL, "device: NULL argument");
    int cuda = -1;
    tune_status st = tunep_device_resolve(dev, device, &cuda, why, why_size, err);
    if (st != TUNE_OK)
        return st;
    if (cuda < 0)
        return tunep_cpu_backend_new(cpu_threads, ret_backend, err);
    struct tunep_cuda_options opt = {.device = cuda, .tf32 = tf32};
    return tunep_cuda_backend_new(&opt, ret_backend, err);
}

void tunep_device_close(struct tunep_backend *backend)
{
    if (!backend)
        return;
    if (strcmp(backend->name, "cuda") == 0)
        tunep_cuda_backend_free(backend);
    else
        tunep_cpu_backend_free(backend);
}
