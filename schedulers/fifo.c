/*
 * fifo.c - FIFO, Ray Tune's FIFOScheduler: every trial runs until its own
 * stop conditions end it. It has no options and no state, so its row leaves
 * every operation at its default (scheduler.h): continue, start new trials.
 */
#include "schedulers/scheduler.h"

static void fifo_summary(const void *cfg, struct tunep_buf *out)
{
    (void)cfg;
    tunep_buf_puts(out, "FIFO: every trial runs to its end");
}

const struct tunep_scheduler_type tunep_fifo_type = {
    .name = "fifo",
    .title = "FIFO",
    .flags = TUNEP_SCHEDULER_MULTI_OBJECTIVE,
    .summary = fifo_summary,
};
