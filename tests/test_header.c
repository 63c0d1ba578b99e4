/*
 * test_header.c - tune.h compiles alone, as C11 with -Wpedantic -Werror
 * (dav1d's and GStreamer's header hygiene check), and the version it states
 * at compile time is the library's (both come from meson.build's project()).
 */
#include <stdio.h>
#include <string.h>

#include "tune.h"

int main(void)
{
    tune_error err = {0};
    (void)err;
    char header[32];
    snprintf(header, sizeof header, "%d.%d.%d", TUNE_VERSION_MAJOR, TUNE_VERSION_MINOR,
             TUNE_VERSION_PATCH);
    if (strcmp(header, tune_version()) != 0) {
        fprintf(stderr, "tune.h says %s, the library %s\n", header, tune_version());
        return 1;
    }
    return TUNE_OK;
}
