/*
 * status.c - status and trial status strings, and the tune_error helpers.
 *
 * tunep_error_set() fills an optional tune_error and returns the code, so
 * library code reports and returns in one statement (git's `return error()`).
 */
#include "base/base.h"

#include <stdio.h>
#include <string.h>

#include "tune_config.h"

#include "base/text.h"

const char *tune_version(void)
{
    return TUNE_VERSION;
}

const char *tune_strerror(tune_status code)
{
    switch (code) {
        case TUNE_OK: return "success";
        case TUNE_EINVAL: return "invalid argument";
        case TUNE_ENOMEM: return "out of memory";
        case TUNE_EIO: return "input/output error";
        case TUNE_ECONFIG: return "invalid configuration";
        case TUNE_ESTORE: return "store error";
        case TUNE_EDEVICE: return "device error";
        case TUNE_ENUMERIC: return "numeric error (NaN or infinity)";
        case TUNE_ESTOP: return "trial should stop";
        case TUNE_EUNSUPPORTED: return "not supported";
        case TUNE_EINTERNAL: return "internal error";
        case TUNE_ENOTFOUND: return "not found";
        case TUNE_ETYPE: return "wrong type";
        case TUNE_EINTERRUPTED: return "interrupted";
        case TUNE_EFAILED: return "objective failed";
        case TUNE_EEXIST: return "experiment exists";
        case TUNE_EBUSY: return "experiment in use";
        case TUNE_EEXHAUSTED: return "no trials left";
        case TUNE_EWAIT: return "no trial can start yet";
        case TUNE_STATUS_COUNT: break;
    }
    return "unknown status";
}

const char *tune_trial_status_name(tune_trial_status st)
{
    switch (st) {
        case TUNE_TRIAL_PENDING: return "PENDING";
        case TUNE_TRIAL_RUNNING: return "RUNNING";
        case TUNE_TRIAL_TERMINATED: return "TERMINATED";
        case TUNE_TRIAL_STOPPED: return "STOPPED";
        case TUNE_TRIAL_ERROR: return "ERROR";
        case TUNE_TRIAL_PAUSED: return "PAUSED";
        case TUNE_TRIAL_STATUS_COUNT: break;
    }
    return "UNKNOWN";
}

TUNEP_PRINTF(6, 0)
static void verror(tune_error *err, tune_status code, const char *source, int line, int column,
                   const char *fmt, va_list ap)
{
    err->code = code;
    err->line = line;
    err->column = column;
    snprintf(err->source, sizeof err->source, "%s", source ? source : "");
    vsnprintf(err->text, sizeof err->text, fmt, ap);
}

tune_status tunep_error_set(tune_error *err, tune_status code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        verror(err, code, NULL, 0, 0, fmt, ap);
        va_end(ap);
    }
    return code;
}

tune_status tunep_error_set_at(tune_error *err, tune_status code, const char *source, int line,
                               int column, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        verror(err, code, source, line, column, fmt, ap);
        va_end(ap);
    }
    return code;
}

void tunep_error_prefix(tune_error *err, const char *prefix)
{
    if (!err || !prefix)
        return;
    /* Shift the message right and put the prefix in front; a long message loses its tail. */
    size_t cap = sizeof err->text - 1;
    size_t plen = strlen(prefix), tlen = strlen(err->text);
    if (plen + 2 > cap)
        plen = cap - 2;
    if (plen + 2 + tlen > cap)
        tlen = cap - plen - 2;
    memmove(err->text + plen + 2, err->text, tlen);
    memcpy(err->text, prefix, plen);
    err->text[plen] = ':';
    err->text[plen + 1] = ' ';
    err->text[plen + 2 + tlen] = '\0';
}

char *tune_error_format(const tune_error *err, char *buf, size_t size)
{
    if (!buf || size == 0)
        return buf;
    if (!err) {
        buf[0] = '\0';
        return buf;
    }
    /* source and text hold outside text (paths, program output): shown escaped. */
    char raw[sizeof err->source + sizeof err->text + 32];
    if (err->source[0] && err->line > 0 && err->column > 0)
        snprintf(raw, sizeof raw, "%s:%d:%d: %s", err->source, err->line, err->column, err->text);
    else if (err->source[0] && err->line > 0)
        snprintf(raw, sizeof raw, "%s:%d: %s", err->source, err->line, err->text);
    else if (err->source[0])
        snprintf(raw, sizeof raw, "%s: %s", err->source, err->text);
    else
        snprintf(raw, sizeof raw, "%s", err->text[0] ? err->text : tune_strerror(err->code));
    tunep_escape_ctrl(buf, size, raw, NULL);
    return buf;
}
