/*
 * log.c - the log callback. Silent by default: a library must not print
 * (ggml and dav1d's rule); the CLI installs a stderr logger. Messages quote
 * program output and names, so control characters reach the callback
 * escaped as \xNN (tunep_escape_ctrl): a log line cannot steer a terminal.
 */
#include "base/base.h"

#include <stdio.h>

#include "base/text.h"

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
    char shown[4 * sizeof msg]; /* room for every byte escaped */
    tunep_escape_ctrl(shown, sizeof shown, msg, NULL);
    log_fn(level, shown, log_ud);
}
