/*
 * numfmt.c - locale-independent number formatting.
 *
 * printf's %g follows LC_NUMERIC, which a host program may have set to a
 * locale with ',' decimals; CSV and JSON need '.' (systemd's warning). We print
 * 15 significant digits when they read back exactly, else 17, and then replace
 * whatever decimal separator came out.
 */
#include "base/base.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fix_decimal_point(char *s)
{
    /* Any byte that is not part of a number in the C locale is the separator. */
    for (char *p = s; *p; p++) {
        if (!((*p >= '0' && *p <= '9') || *p == '-' || *p == '+' || *p == 'e' || *p == 'E')) {
            char *q;
            *p = '.';
            /* A multibyte separator leaves bytes behind: drop them. */
            for (q = p + 1; *q && !((*q >= '0' && *q <= '9') || *q == 'e' || *q == 'E'); q++) {
            }
            if (q != p + 1)
                memmove(p + 1, q, strlen(q) + 1);
            break;
        }
    }
}

void tunep_format_double(char *buf, size_t size, double v)
{
    if (isnan(v)) {
        snprintf(buf, size, "nan");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, size, v > 0 ? "inf" : "-inf");
        return;
    }
    if (v == floor(v) && fabs(v) < 1e15) {
        snprintf(buf, size, "%.0f", v);
        if (strcmp(buf, "-0") == 0)
            snprintf(buf, size, "0");
        return;
    }
    /* 15 digits when they read back exactly (0.1 stays "0.1"), else 17, which
     * always do; skipping 16 saves a printf and a strtod on the store's hot path. */
    snprintf(buf, size, "%.15g", v);
    fix_decimal_point(buf);
    if (strtod(buf, NULL) != v) {
        snprintf(buf, size, "%.17g", v);
        fix_decimal_point(buf);
    }
}
