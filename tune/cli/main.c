/*
 * main.c - `tune`: run sweeps from a JSON config and inspect their results.
 *
 * The only place in the project that turns statuses into exit codes and
 * prints messages (the library never does).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char usage[] =
    "usage: tune <command> [options]\n"
    "\n"
    "commands:\n"
    "  run CONFIG [--storage DIR] [--quiet]   run a sweep described by a JSON config\n"
    "                                         (continues it when DIR holds it already)\n"
    "  resume DIR [--resume-errored]          continue an interrupted sweep\n"
    "  validate CONFIG                        check a config without running anything\n"
    "  status DIR                             counts and best trial of an experiment folder\n"
    "  best DIR                               the best trial as JSON\n"
    "  export DIR --csv FILE [--progress]     write results (or each report) as CSV\n"
    "  report DIR [-o FILE]                   write the HTML report (default DIR/report.html)\n"
    "  dashboard DIR [--port N] [--host ADDR] serve the report live over HTTP while a sweep runs\n"
    "  ask DIR [--config CONFIG]              hand out the next trial as JSON (ask and tell)\n"
    "  tell DIR ID --value X | --state S      end an asked trial with its result\n"
    "  step DIR ID --value X                  an asked trial's intermediate value: continue or "
    "prune\n"
    "\n"
    "options: --help, --version (with any command)\n"
    "exit status: 0 success, 1 the run failed or trials errored, 2 usage or config error\n"
    "config keys: configs/README.md\n";

void cli_print_error(const tune_error *err)
{
    char buf[1024];
    fprintf(stderr, "tune: %s\n", tune_error_format(err, buf, sizeof buf));
}

int cli_exit_code(tune_status st)
{
    switch (st) {
        case TUNE_OK: return CLI_OK;
        case TUNE_ECONFIG:
        case TUNE_EINVAL:
        case TUNE_ENOTFOUND:
        case TUNE_EEXIST:
        case TUNE_EBUSY: return CLI_USAGE;
        default: return CLI_FAILED;
    }
}

int cli_is_help(const char *arg)
{
    return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

/*
 * Applies tune_cpu_env_advice() by re-executing this program with the setting
 * in its environment (OpenBLAS reads it only at load). TUNE_NO_REEXEC=1 turns
 * this off; a variable the user already set is never overridden.
 */
static void apply_cpu_env_advice(char **argv)
{
    const char *advice = tune_cpu_env_advice();
    if (!advice || getenv("TUNE_NO_REEXEC"))
        return;
    int changed = 0;
    char item[128];
    for (const char *p = advice; *p;) {
        size_t n = strcspn(p, " ");
        if (n > 0 && n < sizeof item) {
            memcpy(item, p, n);
            item[n] = '\0';
            char *eq = strchr(item, '=');
            if (eq) {
                *eq = '\0';
                if (!getenv(item) && setenv(item, eq + 1, 1) == 0)
                    changed = 1;
            }
        }
        p += n;
        p += strspn(p, " ");
    }
    if (!changed || setenv("TUNE_NO_REEXEC", "1", 1) != 0)
        return;
    execv("/proc/self/exe", argv);
    /* If exec fails we simply go on with the environment as it was. */
}

int main(int argc, char **argv)
{
    apply_cpu_env_advice(argv);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--version") == 0) {
            printf("tune %s\n", tune_version());
            return CLI_OK;
        }
    }
    if (argc < 2) {
        fputs(usage, stderr);
        return CLI_USAGE;
    }
    const char *cmd = argv[1];
    if (cli_is_help(cmd) || strcmp(cmd, "help") == 0) {
        fputs(usage, stdout);
        return CLI_OK;
    }
    if (strcmp(cmd, "run") == 0)
        return cli_run(argc - 1, argv + 1);
    if (strcmp(cmd, "resume") == 0)
        return cli_resume(argc - 1, argv + 1);
    if (strcmp(cmd, "validate") == 0)
        return cli_validate(argc - 1, argv + 1);
    if (strcmp(cmd, "status") == 0)
        return cli_status(argc - 1, argv + 1);
    if (strcmp(cmd, "best") == 0)
        return cli_best(argc - 1, argv + 1);
    if (strcmp(cmd, "export") == 0)
        return cli_export(argc - 1, argv + 1);
    if (strcmp(cmd, "report") == 0)
        return cli_report(argc - 1, argv + 1);
    if (strcmp(cmd, "dashboard") == 0)
        return cli_dashboard(argc - 1, argv + 1);
    if (strcmp(cmd, "ask") == 0)
        return cli_ask(argc - 1, argv + 1);
    if (strcmp(cmd, "tell") == 0)
        return cli_tell(argc - 1, argv + 1);
    if (strcmp(cmd, "step") == 0)
        return cli_step(argc - 1, argv + 1);
    fprintf(stderr, "tune: unknown command '%s'\n\n%s", cmd, usage);
    return CLI_USAGE;
}
