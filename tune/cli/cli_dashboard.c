/*
 * cli_dashboard.c - `tune dashboard DIR [--port N] [--host ADDR]
 * [--refresh-ms MS]`: serves the experiment's report live
 * (tune_dashboard_start) until Ctrl-C or SIGTERM. The library serves and
 * never prints; this prints the address, and a warning when the address is
 * reachable from other machines (the dashboard has no authentication).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cli.h"

/* The priority the dashboard serves at (see below). */
#define DASHBOARD_NICE 10

static const char help[] =
    "usage: tune dashboard DIR [--port N] [--host ADDR] [--refresh-ms MS]\n"
    "Serves the experiment in DIR live over HTTP while a sweep runs (or after it):\n"
    "the report page, redrawn in place as reports arrive, and the trials as JSON\n"
    "(GET /api/trials, /api/trials/<id>). Read-only: nothing in DIR is written.\n"
    "  --port N         TCP port (default 8080; 0 for any free one)\n"
    "  --host ADDR      address to listen on (default 127.0.0.1, this machine only;\n"
    "                   there is no authentication, so think before 0.0.0.0)\n"
    "  --refresh-ms MS  how often the page asks for new data (default 1000)\n"
    "It runs at nice 10, so that a sweep on the same CPUs keeps them. Stops on\n"
    "Ctrl-C (SIGINT) or SIGTERM.\n";

/* An integer option value within [lo, hi]; -1 (after a message) when it is not one. */
static long int_arg(const char *name, const char *s, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < lo || v > hi) {
        fprintf(stderr, "tune dashboard: %s expects an integer from %ld to %ld, not '%s'\n", name,
                lo, hi, s);
        return -1;
    }
    return v;
}

/* "--name VALUE" or "--name=VALUE" at argv[*i]; the value, or NULL when argv[*i] is not it. */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0)
        return NULL;
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (argv[*i][n] == '\0' && *i + 1 < argc)
        return argv[++*i];
    return NULL;
}

int cli_dashboard(int argc, char **argv)
{
    tune_dashboard_options o;
    tune_dashboard_options_default(&o);
    const char *v;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            fputs(help, stdout);
            return CLI_OK;
        } else if ((v = opt_value(argc, argv, &i, "--port"))) {
            long p = int_arg("--port", v, 0, 65535);
            if (p < 0)
                return CLI_USAGE;
            o.port = (int)p;
        } else if ((v = opt_value(argc, argv, &i, "--host"))) {
            o.host = v;
        } else if ((v = opt_value(argc, argv, &i, "--refresh-ms"))) {
            long ms = int_arg("--refresh-ms", v, 100, 3600000);
            if (ms < 0)
                return CLI_USAGE;
            o.refresh_ms = (int)ms;
        } else if (argv[i][0] == '-' || o.experiment_dir) {
            fprintf(stderr,
                    "tune dashboard: unexpected argument '%s' (see tune dashboard --help)\n",
                    argv[i]);
            return CLI_USAGE;
        } else {
            o.experiment_dir = argv[i];
        }
    }
    if (!o.experiment_dir) {
        fprintf(stderr, "tune dashboard: missing DIR (see tune dashboard --help)\n");
        return CLI_USAGE;
    }
    if (!tune_dashboard_available()) {
        fprintf(stderr, "tune dashboard: this tune was built without libmicrohttpd, which the "
                        "dashboard needs: install libmicrohttpd-dev (Debian, Ubuntu) and set up "
                        "the build again (meson setup --reconfigure BUILD -Ddashboard=enabled)\n");
        return CLI_FAILED;
    }
    /* The server's thread inherits this mask, so the signals come to sigwait() below. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* A viewer gives way: at nice 10 (inherited by the server's thread, so set first) a
     * sweep on the same CPUs keeps them when both want them. Best effort. */
    errno = 0;
    if (getpriority(PRIO_PROCESS, 0) < DASHBOARD_NICE && errno == 0)
        (void)setpriority(PRIO_PROCESS, 0, DASHBOARD_NICE);

    tune_error err;
    tune_dashboard *d = NULL;
    tune_status st = tune_dashboard_start(&o, &d, &err);
    if (st) {
        cli_print_error(&err);
        return cli_exit_code(st);
    }
    if (!tune_dashboard_is_loopback(d))
        fprintf(stderr,
                "tune dashboard: warning: listening on %s, which is not a loopback address: "
                "anyone who can reach this machine on port %d can read this experiment (there "
                "is no authentication). To look from another machine, keep the default --host "
                "127.0.0.1 and tunnel: ssh -L %d:127.0.0.1:%d THIS_HOST\n",
                o.host, tune_dashboard_port(d), tune_dashboard_port(d), tune_dashboard_port(d));
    printf("tune dashboard: serving %s at %s (Ctrl-C to stop)\n", o.experiment_dir,
           tune_dashboard_url(d));
    fflush(stdout);
    int sig = 0;
    sigwait(&stop, &sig);
    tune_dashboard_stop(d);
    printf("tune dashboard: stopped (%s)\n", sig == SIGINT    ? "SIGINT"
                                             : sig == SIGTERM ? "SIGTERM"
                                                              : "SIGHUP");
    return CLI_OK;
}
