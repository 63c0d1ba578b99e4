/*
 * options.c - tune_dashboard_options: the defaults, and the checks every
 * build makes (with or without the HTTP server).
 */
#include "dashboard/options.h"

void tune_dashboard_options_default(tune_dashboard_options *o)
{
    if (!o)
        return;
    o->experiment_dir = NULL;
    o->host = "127.0.0.1";
    o->port = 8080;
    o->refresh_ms = 1000;
    o->max_connections = 64;
    o->timeout_s = 10;
}

tune_status tunep_dash_options_check(const tune_dashboard_options *o, tune_error *err)
{
    if (!o || !o->experiment_dir)
        return tunep_error_set(err, TUNE_EINVAL, "dashboard: experiment_dir must not be NULL");
    if (!o->host || !*o->host)
        return tunep_error_set(err, TUNE_EINVAL, "dashboard: host must name an address");
    if (o->port < 0 || o->port > 65535)
        return tunep_error_set(err, TUNE_EINVAL,
                               "dashboard: port %d is not a TCP port (0 to 65535; 0 for any free "
                               "one)",
                               o->port);
    if (o->refresh_ms < 100 || o->refresh_ms > 3600000)
        return tunep_error_set(err, TUNE_EINVAL,
                               "dashboard: refresh_ms %d is out of range (100 to 3600000)",
                               o->refresh_ms);
    if (o->max_connections < 1 || o->max_connections > 1000)
        return tunep_error_set(err, TUNE_EINVAL,
                               "dashboard: max_connections %d is out of range (1 to 1000)",
                               o->max_connections);
    if (o->timeout_s < 1 || o->timeout_s > 3600)
        return tunep_error_set(err, TUNE_EINVAL,
                               "dashboard: timeout_s %d is out of range (1 to 3600)", o->timeout_s);
    return TUNE_OK;
}
