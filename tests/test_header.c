/*
 * test_header.c - tune.h compiles alone, as C11 with -Wpedantic -Werror
 * (dav1d's and GStreamer's header hygiene check).
 */
#include "tune.h"

int main(void)
{
    tune_error err = {0};
    (void)err;
    return TUNE_OK;
}
