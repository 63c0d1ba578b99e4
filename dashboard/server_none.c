/*
 * server_none.c - the dashboard of a tune built without libmicrohttpd: it
 * says so, and nothing else (meson.build picks this file or server.c).
 */
#include "dashboard/options.h"

int tune_dashboard_available(void)
{
    return 0;
}

tune_status tune_dashboard_start(const tune_dashboard_options *o, tune_dashboard **ret_dashboard,
                                 tune_error *err)
{
    tune_status rs = tunep_dash_options_check(o, err);
    if (rs)
        return rs;
    if (ret_dashboard)
        *ret_dashboard = NULL;
    return tunep_error_set(err, TUNE_EUNSUPPORTED,
                           "dashboard: this tune was built without libmicrohttpd, which the "
                           "dashboard needs (install libmicrohttpd-dev, then run meson setup "
                           "again: the dashboard option is on by default where it is found)");
}

const char *tune_dashboard_url(const tune_dashboard *d)
{
    (void)d;
    return "";
}

int tune_dashboard_port(const tune_dashboard *d)
{
    (void)d;
    return 0;
}

int tune_dashboard_is_loopback(const tune_dashboard *d)
{
    (void)d;
    return 0;
}

void tune_dashboard_stop(tune_dashboard *d)
{
    (void)d;
}
