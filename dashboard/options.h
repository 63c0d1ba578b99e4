/*
 * options.h - the checks of tune_dashboard_options (options.c).
 */
#ifndef TUNE_DASHBOARD_OPTIONS_H
#define TUNE_DASHBOARD_OPTIONS_H

#include "base/base.h"

/* TUNE_EINVAL naming the first option out of range. */
tune_status tunep_dash_options_check(const tune_dashboard_options *o, tune_error *err);

#endif /* TUNE_DASHBOARD_OPTIONS_H */
