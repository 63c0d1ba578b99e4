/*
 * isolate.c - "isolation": "process": each trial attempt runs in a child
 * process, so an objective that segfaults, aborts or hangs costs only its own
 * attempt.
 *
 * The child is forked from the worker thread and runs the objective; its
 * reports go over a pipe to that worker thread, which answers each one
 * through the normal report path (store, scheduler, stop rules) and writes
 * the answer back. The child never touches the study lock or the store,
 * which a fork of a multi-threaded process could find held by a thread that
 * does not exist in the child. Messages (native byte order, same machine):
 *   child -> parent  'R' u32 n { u16 len, name bytes, f64 value } * n
 *                    'D' i32 status, u16 len, error text       (objective done)
 *   parent -> child  i32 status (the report's answer)
 * A child that dies without 'D' failed: the error names its signal or exit
 * status. Past trial_timeout_s the child is killed (SIGKILL) and the attempt
 * fails with "timed out"; when the study is stopping, a child that does not
 * end within STOP_GRACE_S gets SIGTERM, then SIGKILL. Both are checked after
 * every message too, so a child that reports without pause cannot outrun
 * them. A child dies with the worker thread that forked it
 * (PR_SET_PDEATHSIG), so a killed controller leaves no trial running.
 */
#include "engine/study.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define STOP_GRACE_S    5.0
#define MAX_MSG_METRICS TUNE_REPORT_MAX_METRICS

static int write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* 0 on success, 1 at a clean end of file, -1 on error or a short message. */
static int read_all(int fd, void *buf, size_t n)
{
    char *p = buf;
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, p + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            return got == 0 ? 1 : -1;
        if (r < 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

/* ---- the child's side ----------------------------------------------------- */

void tunep_report_msg_put(struct tunep_buf *b, size_t n, const char *const *names,
                          const double *values)
{
    uint32_t n32 = (uint32_t)n;
    tunep_buf_append(b, "R", 1);
    tunep_buf_append(b, (const char *)&n32, sizeof n32);
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(names[i]);
        uint16_t l16 = (uint16_t)(len > 65535 ? 65535 : len);
        tunep_buf_append(b, (const char *)&l16, sizeof l16);
        tunep_buf_append(b, names[i], l16);
        tunep_buf_append(b, (const char *)&values[i], sizeof values[i]);
    }
}

tune_status tunep_ipc_report(struct tune_trial *t, size_t n, const char *const *names,
                             const double *values)
{
    if (n > MAX_MSG_METRICS)
        return TUNE_EINVAL;
    struct tunep_buf b;
    tunep_buf_init(&b);
    tunep_report_msg_put(&b, n, names, values);
    int32_t answer = TUNE_ESTORE;
    int ok = !b.oom && write_all(t->ipc_req, b.data, b.len) == 0 &&
             read_all(t->ipc_resp, &answer, sizeof answer) == 0;
    tunep_buf_done(&b);
    if (ok && (answer == TUNE_OK || answer == TUNE_ESTOP))
        t->rec->iteration++; /* keeps tune_trial_iteration() right in the child */
    return ok ? (tune_status)answer : TUNE_ESTORE;
}

static void child_main(struct tune_study *s, struct tune_trial *t)
{
    tune_status st = s->fn(t, s->fn_data);
    int32_t st32 = st;
    size_t len = strlen(t->error);
    uint16_t l16 = (uint16_t)len;
    if (write_all(t->ipc_req, "D", 1) || write_all(t->ipc_req, &st32, sizeof st32) ||
        write_all(t->ipc_req, &l16, sizeof l16) || write_all(t->ipc_req, t->error, len)) {
        /* The parent is gone or the pipe broke: nothing more to say. */
    }
    _exit(0); /* the forked child, never the caller's process: exit-lint-ok */
}

/* ---- the parent's side ---------------------------------------------------- */

static tune_status child_failed(struct tune_trial *t, int wstatus)
{
    if (WIFSIGNALED(wstatus))
        snprintf(t->error, sizeof t->error, "trial process killed by signal %d (%s)",
                 WTERMSIG(wstatus), strsignal(WTERMSIG(wstatus)));
    else if (WIFEXITED(wstatus))
        snprintf(t->error, sizeof t->error, "trial process exited with status %d",
                 WEXITSTATUS(wstatus));
    else
        snprintf(t->error, sizeof t->error, "trial process ended unexpectedly");
    return TUNE_EFAILED;
}

/* Reads one 'R' message and answers it. 0 on success. */
static int serve_report(struct tune_trial *t, int req, int resp)
{
    uint32_t n;
    if (read_all(req, &n, sizeof n) || n > MAX_MSG_METRICS)
        return -1;
    char **names = tunep_calloc(n ? n : 1, sizeof *names);
    double *values = tunep_calloc(n ? n : 1, sizeof *values);
    uint32_t i = 0;
    int bad = !names || !values;
    for (; !bad && i < n; i++) {
        uint16_t len;
        if (read_all(req, &len, sizeof len) || !(names[i] = tunep_malloc((size_t)len + 1)) ||
            read_all(req, names[i], len) || read_all(req, &values[i], sizeof values[i])) {
            bad = 1;
            i++;
            break;
        }
        names[i][len] = '\0';
    }
    int32_t answer = TUNE_EINVAL;
    if (!bad)
        answer = tune_trial_report(t, n, (const char *const *)names, values, NULL);
    for (uint32_t k = 0; names && k < i; k++)
        tunep_free(names[k]);
    tunep_free(names);
    tunep_free(values);
    if (bad)
        return -1;
    return write_all(resp, &answer, sizeof answer);
}

tune_status tunep_run_isolated(struct tune_study *s, struct tune_trial *t)
{
    int req[2], resp[2];
    if (pipe(req) != 0)
        goto no_process;
    if (pipe(resp) != 0) {
        close(req[0]);
        close(req[1]);
        goto no_process;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        close(req[0]), close(req[1]), close(resp[0]), close(resp[1]);
        goto no_process;
    }
    if (pid == 0) {
        /* Killed when the forking thread ends, whatever ends it; a parent that
         * died before this line would never send the signal, hence the check. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
            _exit(1); /* the forked child, never the caller's process: exit-lint-ok */
        close(req[0]);
        close(resp[1]);
        t->ipc_req = req[1];
        t->ipc_resp = resp[0];
        child_main(s, t);
    }
    close(req[1]);
    close(resp[0]);
    t->pid = pid; /* the store's pid of this attempt */

    tune_status st = TUNE_EFAILED;
    double deadline = s->cfg.trial_timeout_s > 0 ? t->t0 + s->cfg.trial_timeout_s : 0;
    double stop_since = 0;
    int done = 0, killed_for_time = 0, sent_term = 0;
    while (!done) {
        struct pollfd pfd = {req[0], POLLIN, 0};
        int pr = poll(&pfd, 1, 100);
        double now = tunep_now_monotonic();
        if (pr < 0 && errno != EINTR)
            break;
        /* The deadline and the stop escalation before any message: a child
         * that reports all the time must not postpone them. */
        if (deadline > 0 && now >= deadline) {
            kill(pid, SIGKILL);
            killed_for_time = 1;
            break;
        }
        if (atomic_load(&s->stop_requested)) {
            if (stop_since == 0) {
                stop_since = now;
            } else if (now - stop_since > 2 * STOP_GRACE_S) {
                kill(pid, SIGKILL);
            } else if (now - stop_since > STOP_GRACE_S && !sent_term) {
                kill(pid, SIGTERM); /* once: a child may be busy handling it */
                sent_term = 1;
            }
        }
        if (pr <= 0)
            continue;
        char type;
        int r = read_all(req[0], &type, 1);
        if (r != 0)
            break; /* end of file: the child died */
        if (type == 'R') {
            if (serve_report(t, req[0], resp[1]))
                break;
        } else if (type == 'D') {
            int32_t st32;
            uint16_t len;
            if (read_all(req[0], &st32, sizeof st32) || read_all(req[0], &len, sizeof len))
                break;
            char text[sizeof t->error];
            size_t keep = len < sizeof text - 1 ? len : sizeof text - 1;
            if (read_all(req[0], text, keep))
                break;
            for (size_t skip = keep; skip < len; skip++) {
                char c;
                if (read_all(req[0], &c, 1))
                    break;
            }
            text[keep] = '\0';
            if (keep > 0)
                snprintf(t->error, sizeof t->error, "%s", text);
            st = (tune_status)st32;
            done = 1;
        } else {
            break;
        }
    }
    close(req[0]);
    close(resp[1]);
    int wstatus = 0;
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    if (killed_for_time) {
        snprintf(t->error, sizeof t->error, "timed out after %g s (trial_timeout_s)",
                 s->cfg.trial_timeout_s);
        t->fail_now = 1;
        return TUNE_EFAILED;
    }
    /* Ended by the stop escalation (or dying on its own meanwhile): cut short,
     * not failed, so it goes back to PENDING as a thread-mode trial does. */
    if (!done && stop_since > 0)
        return TUNE_EINTERRUPTED;
    if (!done)
        return child_failed(t, wstatus);
    return st;

no_process:
    snprintf(t->error, sizeof t->error, "cannot start a trial process: %s", strerror(errno));
    return TUNE_EFAILED;
}
