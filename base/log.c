/*
 * log.c - the log callback. Silent by default: a library must not print
 * (ggml and dav1d's rule); the CLI installs a stderr logger.
 */
#include "base/base.h"

#include <stdio.h>

static tune_log_fn log_fn;
static tune_log_level log_max = TUNE_LOG_INFO;
static void *log_ud;

void tune_set_log_callback(tune_log_fn fn, tune_log_level max_level, void *user_data)
{
    log_fn = fn;
    log_max = max_level;
    log_ud = user_data;
}

void tunep_log(tune_log_level level, const char *fmt, ...)
{
    if (!log_fn || level > log_max)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log_fn(level, msg, log_ud);
}
