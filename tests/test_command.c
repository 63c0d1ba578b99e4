/*
 * test_command.c - trainer "type": "command" and per-trial folders.
 *
 * Small /bin/sh programs written into a temporary folder play the training
 * script. Checked: template expansion; every config error at its exact line
 * and column; reports stored row by row (experiment.db, read with SQLite);
 * what is left out of a report and what fails it; substitution, environment
 * and cwd as the program sees them; logs in the trial folder and params.json;
 * that a stopped program and everything in its process group is gone (a
 * program ignoring SIGTERM is SIGKILLed after kill_grace_s); exit statuses,
 * signals, exec failures and timeouts as failed attempts, retried up to
 * max_failures; Ctrl-C (tune_study_request_stop) between reports; ":memory:"
 * studies logging through the callback; concurrent trials not holding each
 * other's pipes open.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <time.h>

#include "check_util.h"
#include "trainers/trainer.h"
#include "tune.h"
#include "base/base.h"
#include "store/trial_dir.h"

/* ---- helpers ------------------------------------------------------------- */

static char *fmt(const char *f, ...) TUNE_PRINTF(1, 2);
static char *fmt(const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    int n = vsnprintf(NULL, 0, f, ap);
    va_end(ap);
    char *s = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(s);
    va_start(ap, f);
    vsnprintf(s, (size_t)n + 1, f, ap);
    va_end(ap);
    return s;
}

static void write_file(const char *path, const char *text, int executable)
{
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
    ck_assert_int_eq(chmod(path, executable ? 0755 : 0644), 0);
}

/* Writes dir/name as a /bin/sh script; returns its path (free). */
static char *script(const char *dir, const char *name, const char *body)
{
    char *path = fmt("%s/%s", dir, name);
    char *text = fmt("#!/bin/sh\n%s", body);
    write_file(path, text, 1);
    free(text);
    return path;
}

static char *slurp(const char *path)
{
    char *t = tune_test_slurp(path);
    ck_assert_msg(t != NULL, "cannot read %s", path);
    return t;
}

/* slurp() of a formatted path. */
static char *slurpf(const char *f, ...) TUNE_PRINTF(1, 2);
static char *slurpf(const char *f, ...)
{
    char path[8192];
    va_list ap;
    va_start(ap, f);
    vsnprintf(path, sizeof path, f, ap);
    va_end(ap);
    return slurp(path);
}

static tune_study *study(const char *json)
{
    tune_study *s = NULL;
    tune_error err;
    tune_status st = tune_study_new_from_json(json, NULL, &s, &err);
    ck_assert_msg(st == TUNE_OK, "config rejected: %d:%d: %s", err.line, err.column, err.text);
    return s;
}

static void run(tune_study *s)
{
    tune_error err;
    tune_status st = tune_study_run(s, &err);
    ck_assert_msg(st == TUNE_OK, "run failed: %s", err.text);
}

/* A query's rows, fields joined by '|' and rows by '\n' (free). */
static char *query(const char *storage, const char *sql)
{
    char *db_path = fmt("%s/experiment.db", storage);
    sqlite3 *db = NULL;
    ck_assert_int_eq(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *stmt = NULL;
    ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) == SQLITE_OK, "%s",
                  sqlite3_errmsg(db));
    struct tunep_buf b;
    tunep_buf_init(&b);
    while (sqlite3_step(stmt) == SQLITE_ROW) {
        for (int i = 0; i < sqlite3_column_count(stmt); i++) {
            const unsigned char *v = sqlite3_column_text(stmt, i);
            tunep_buf_printf(&b, "%s%s", i ? "|" : "", v ? (const char *)v : "");
        }
        tunep_buf_puts(&b, "\n");
    }
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    free(db_path);
    char *out = tunep_buf_take(&b);
    char *copy = strdup(out ? out : "");
    tunep_free(out);
    return copy;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Whether pid is a live process (a zombie waiting for a reaper is not). */
static int alive(pid_t pid)
{
    if (kill(pid, 0) != 0)
        return 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char state = '?';
    int scanned = fscanf(f, "%*d (%*[^)]) %c", &state);
    fclose(f);
    return scanned == 1 && state != 'Z';
}

/* Reads a pid the program wrote into a file of its trial folder. */
static pid_t read_pid(const char *storage, int trial, const char *name)
{
    char *t = slurpf("%s/trials/trial_%06d/%s", storage, trial, name);
    pid_t pid = (pid_t)atol(t);
    free(t);
    ck_assert_int_gt(pid, 1);
    return pid;
}

static void assert_gone(pid_t pid)
{
    /* The group was SIGKILLed or exited; a reparented child may need init a moment. */
    for (int i = 0; i < 50 && alive(pid); i++)
        usleep(20000);
    ck_assert_msg(!alive(pid), "process %d is still running", (int)pid);
}

/*
 * A sweep config: x is a grid (so trial i has x = grid[i]), the trainer
 * runs `program` with the given extra argv elements (JSON), extra top-level
 * keys go at the end.
 */
static char *sweep(const char *storage, const char *grid, const char *program, const char *args,
                   const char *trainer_extra, const char *top_extra)
{
    return fmt("{\"name\": \"cmd\", \"metric\": \"score\", \"seed\": 1,\n"
               " \"max_concurrent_trials\": 2, \"storage\": \"%s\",\n"
               " \"param_space\": {\"x\": {\"grid_search\": %s}},\n"
               " \"trainer\": {\"type\": \"command\", \"argv\": [\"%s\"%s]%s}%s}\n",
               storage, grid, program, args, trainer_extra, top_extra);
}

/* ---- templates ----------------------------------------------------------- */

static int lookup_xy(void *ud, const char *name, struct tunep_buf *out)
{
    (void)ud;
    if (strcmp(name, "x") == 0 || strcmp(name, "a/b") == 0) {
        tunep_buf_printf(out, "<%s>", name);
        return 0;
    }
    return -1;
}

static int expand(const char *tmpl, char *out, size_t size, char *bad)
{
    struct tunep_buf b;
    tunep_buf_init(&b);
    int r = tunep_command_expand(tmpl, lookup_xy, NULL, &b, bad, 64);
    char *s = tunep_buf_take(&b);
    snprintf(out, size, "%s", s ? s : "(oom)");
    tunep_free(s);
    return r;
}

START_TEST(templates_expand)
{
    static const struct {
        const char *tmpl, *want;
    } ok[] = {
        {"{x}", "<x>"},
        {"--lr={x}!", "--lr=<x>!"},
        {"{a/b}{x}", "<a/b><x>"},
        {"{{x}}", "{x}"},
        {"{{{x}}}", "{<x>}"},
        {"a}b", "a}b"},
        {"}}", "}"},
        {"", ""},
        {"no placeholders", "no placeholders"},
    };
    char out[256], bad[64];
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        ck_assert_int_eq(expand(ok[i].tmpl, out, sizeof out, bad), 0);
        ck_assert_str_eq(out, ok[i].want);
    }
    ck_assert_int_eq(expand("--{lr}", out, sizeof out, bad), -1);
    ck_assert_str_eq(bad, "lr");
    ck_assert_int_eq(expand("{}", out, sizeof out, bad), -1);
    ck_assert_str_eq(bad, "");
    ck_assert_int_eq(expand("a{x", out, sizeof out, bad), -2);
    ck_assert_str_eq(bad, "{x");
    ck_assert_int_eq(expand("{a{x}", out, sizeof out, bad), -1);
}
END_TEST

/* ---- config errors ------------------------------------------------------- */

/*
 * Each bad trainer (inside a config whose param_space has lr and opt/name)
 * with the error text and the text at which the error must point: the
 * expected line and column are where `at` first occurs in the document.
 */
START_TEST(config_errors_at_their_position)
{
    char *dir = tune_test_mkdtemp();
    char *plain = fmt("%s/plain.txt", dir);
    write_file(plain, "not a program\n", 0);
    char *plain_q = fmt("\"%s\"", plain);
    char *not_exec = fmt("trainer.argv[0]: '%s' is not executable (chmod +x, or run it with its "
                         "interpreter: [\"python3\", \"%s\"])",
                         plain, plain);
    const struct {
        const char *trainer, *at, *text;
    } cases[] = {
        {"{\"type\": \"command\"}", "{\"type\": \"command\"}",
         "trainer: missing key 'argv' (the program and its arguments, e.g. [\"python3\", "
         "\"train.py\", \"--lr\", \"{lr}\"])"},
        {"{\"type\": \"command\", \"argv\": \"sh -c true\"}", "\"sh -c",
         "trainer.argv: expected a non-empty array of strings such as [\"python3\", \"train.py\", "
         "\"--lr\", \"{lr}\"]"},
        {"{\"type\": \"command\", \"argv\": []}", "[]",
         "trainer.argv: expected a non-empty array of strings such as [\"python3\", \"train.py\", "
         "\"--lr\", \"{lr}\"]"},
        {"{\"type\": \"command\", \"argv\": [\"/bin/sh\", 3]}", "3]",
         "trainer.argv[1]: expected a string"},
        {"{\"type\": \"command\", \"argv\": [\"\"]}", "\"\"]",
         "trainer.argv[0]: expected the program (a non-empty string)"},
        {"{\"type\": \"command\", \"argv\": [\"no-such-program-xyz\"]}", "\"no-such-program-xyz\"",
         "trainer.argv[0]: 'no-such-program-xyz' not found in PATH"},
        {"{\"type\": \"command\", \"argv\": [\"./no/such.sh\"]}", "\"./no/such.sh\"",
         "trainer.argv[0]: './no/such.sh': No such file or directory"},
        {NULL, NULL, NULL}, /* the non-executable file, filled in below */
        {"{\"type\": \"command\", \"argv\": [\"/bin/sh\", \"--lr\", \"{lrr}\"]}", "\"{lrr}\"",
         "trainer.argv[2]: unknown placeholder '{lrr}' (did you mean '{lr}'?)"},
        {"{\"type\": \"command\", \"argv\": [\"/bin/sh\", \"{zzzzzz}\"]}", "\"{zzzzzz}\"",
         "trainer.argv[1]: unknown placeholder '{zzzzzz}' (expected a parameter: lr, opt/name, "
         "trial_id or trial_dir; write '{{' for a literal '{')"},
        {"{\"type\": \"command\", \"argv\": [\"/bin/sh\", \"x{lr\"]}", "\"x{lr\"",
         "trainer.argv[1]: unterminated placeholder '{lr' (write '{{' for a literal '{')"},
        {"{\"type\": \"command\", \"argv\": [\"/bin/sh\"], \"env\": {\"V\": \"{opt/nam}\"}}",
         "\"{opt/nam}\"",
         "trainer.env.V: unknown placeholder '{opt/nam}' (did you mean '{opt/name}'?)"},
        {"{\"type\": \"command\", \"argv\": [\"/bin/sh\"], \"env\": {\"1X\": \"a\"}}", "\"1X\"",
         "trainer.env.1X: not a variable name (letters, digits and '_')"},
        {"{\"type\": \"command\", \"argv\": [\"/bin/sh\"], \"env\": {\"TUNE_X\": \"a\"}}",
         "\"TUNE_X\"", "trainer.env.TUNE_X: TUNE_ variables are set by tune itself"},
        {"{\"type\": \"command\", \"argv\": [\"/bin/sh\"], \"env\": {\"N\": 1}}", "1}}",
         "trainer.env.N: expected a string"},
        {"{\"type\": \"command\", \"argv\": [\"/bin/sh\"], \"env\": [\"N=1\"]}", "[\"N=1\"]",
         "trainer.env: expected an object of strings such as {\"OMP_NUM_THREADS\": \"1\"}"},
        {"{\"type\": \"command\", \"argv\": [\"/bin/sh\"], \"kill_grace_s\": -1}", "-1",
         "trainer.kill_grace_s: expected a number in [0, 3600], got -1"},
        {"{\"type\": \"command\", \"argv\": [\"/bin/sh\"], \"report_fd\": 2}", "2}",
         "trainer.report_fd: expected an integer in [3, 1023], got 2"},
        {"{\"type\": \"command\", \"argv\": [\"/bin/sh\"], \"cwd\": \"/nonexistent/dir\"}",
         "\"/nonexistent/dir\"", "trainer.cwd: '/nonexistent/dir': No such file or directory"},
        {"{\"type\": \"command\", \"args\": [\"/bin/sh\"]}", "\"args\"",
         "trainer.args: unknown key (did you mean 'argv'?)"},
        {"{\"type\": \"cmd\"}", "\"cmd\"",
         "trainer.type: unknown trainer type 'cmd' (expected \"synthetic\", \"bert\", \"command\" "
         "or "
         "\"plugin\")"},
        {"{\"argv\": [\"/bin/sh\"]}", "{\"argv\"",
         "trainer: missing key 'type' (expected \"synthetic\", \"bert\", \"command\" or "
         "\"plugin\")"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *trainer = cases[i].trainer ? fmt("%s", cases[i].trainer)
                                         : fmt("{\"type\": \"command\", \"argv\": [%s]}", plain_q);
        const char *at = cases[i].at ? cases[i].at : plain_q;
        const char *text = cases[i].text ? cases[i].text : not_exec;
        /* The trainer comes before param_space: placeholders are checked once all is read. */
        char *json = fmt("{\"name\": \"e\",\n \"trainer\": %s,\n"
                         " \"param_space\": {\"lr\": {\"loguniform\": [1e-4, 1e-1]},"
                         " \"opt\": {\"name\": {\"choice\": [\"a\", \"b\"]}}}}\n",
                         trainer);
        tune_study *s = NULL;
        tune_error err;
        memset(&err, 0, sizeof err);
        tune_status st = tune_study_new_from_json(json, "cmd.json", &s, &err);
        ck_assert_msg(st == TUNE_ECONFIG, "case %zu: status %d", i, st);
        ck_assert_ptr_null(s);
        const char *hit = strstr(json, at);
        ck_assert_ptr_nonnull(hit);
        int line = 1, column = 1;
        for (const char *p = json; p < hit; p++, column++)
            if (*p == '\n')
                line++, column = 0;
        ck_assert_msg(err.line == line && err.column == column,
                      "case %zu: at %d:%d, expected %d:%d (%s)", i, err.line, err.column, line,
                      column, err.text);
        ck_assert_str_eq(err.source, "cmd.json");
        ck_assert_str_eq(err.text, text);
        free(json);
        free(trainer);
    }
    /* A command needs no process isolation, which would orphan it on a timeout. */
    tune_study *iso = NULL;
    tune_error err;
    ck_assert_int_eq(tune_study_new_from_json("{\"isolation\": \"process\",\n \"trainer\": "
                                              "{\"type\": \"command\", \"argv\": [\"/bin/sh\"]}}",
                                              NULL, &iso, &err),
                     TUNE_ECONFIG);
    ck_assert_int_eq(err.line, 1);
    ck_assert_int_eq(err.column, 15);
    ck_assert_str_eq(err.text,
                     "isolation: \"process\" is for objectives in tune's own process; the "
                     "command trainer's program is a process of its own already");
    /* Valid: nested names, escaped braces, placeholders in env, the built-ins. */
    tune_study *s = study("{\"trainer\": {\"type\": \"command\", \"argv\": [\"/bin/sh\", "
                          "\"{opt/name}\", \"{{lr}}\", \"{trial_id}\", \"{trial_dir}\"], "
                          "\"env\": {\"LR\": \"{lr}\"}}, \"param_space\": {\"lr\": 0.1, "
                          "\"opt\": {\"name\": \"adam\"}}}");
    tune_study_free(s);
    free(plain);
    free(plain_q);
    free(not_exec);
    tune_test_rmtree(dir);
    free(dir);
}
END_TEST

/* ---- reports --------------------------------------------------------------- */

START_TEST(reports_stored_row_by_row)
{
    char *dir = tune_test_mkdtemp();
    char *storage = fmt("%s/exp", dir);
    /* Trial with x = k reports score 10k + i at iterations i = 1..4; the last via the report fd. */
    char *prog =
        script(dir, "report.sh",
               "x=$1\n"
               "echo \"training with x=$x\"\n"
               "for i in 1 2 3; do\n"
               "  echo \"tune-report {\\\"score\\\": $((10 * x + i)), \\\"i\\\": $i}\"\n"
               "  echo \"epoch $i done\"\n"
               "done\n"
               "echo \"{\\\"score\\\": $((10 * x + 4)), \\\"i\\\": 4}\" >&$TUNE_REPORT_FD\n"
               "echo 'tune-report  {\"score\": 99}' >/dev/null\n"
               "printf 'last line without newline'\n");
    char *json = sweep(storage, "[1, 2, 3]", prog, ", \"{x}\"", "", "");
    tune_study *s = study(json);
    run(s);
    char *rows = query(storage, "SELECT trial_id, attempt, training_iteration, metrics FROM reports"
                                " ORDER BY trial_id, training_iteration");
    ck_assert_str_eq(rows, "0|1|1|{\"score\":11,\"i\":1}\n"
                           "0|1|2|{\"score\":12,\"i\":2}\n"
                           "0|1|3|{\"score\":13,\"i\":3}\n"
                           "0|1|4|{\"score\":14,\"i\":4}\n"
                           "1|1|1|{\"score\":21,\"i\":1}\n"
                           "1|1|2|{\"score\":22,\"i\":2}\n"
                           "1|1|3|{\"score\":23,\"i\":3}\n"
                           "1|1|4|{\"score\":24,\"i\":4}\n"
                           "2|1|1|{\"score\":31,\"i\":1}\n"
                           "2|1|2|{\"score\":32,\"i\":2}\n"
                           "2|1|3|{\"score\":33,\"i\":3}\n"
                           "2|1|4|{\"score\":34,\"i\":4}\n");
    char *trials = query(storage, "SELECT trial_id, status, attempt, training_iteration, "
                                  "coalesce(error, '') FROM trials ORDER BY trial_id");
    ck_assert_str_eq(trials, "0|TERMINATED|1|4|\n1|TERMINATED|1|4|\n2|TERMINATED|1|4|\n");
    /* Every non-report stdout line, in order, in the trial's stdout.log. */
    for (int k = 0; k < 3; k++) {
        char *folder = fmt("%s/trials/trial_%06d", storage, k);
        char *out_path = fmt("%s/stdout.log", folder);
        char *params_path = fmt("%s/params.json", folder);
        char *out = slurp(out_path);
        char *want = fmt("training with x=%d\nepoch 1 done\nepoch 2 done\nepoch 3 done\n"
                         "last line without newline\n",
                         k + 1);
        ck_assert_str_eq(out, want);
        char *params = slurp(params_path);
        char *want_params = fmt("{\"x\":%d}\n", k + 1);
        ck_assert_str_eq(params, want_params);
        free(folder), free(out_path), free(params_path), free(out), free(want), free(params),
            free(want_params);
    }
    free(rows), free(trials), free(json), free(prog);
    tune_study_free(s);
    tune_test_rmtree(dir);
    free(dir), free(storage);
}
END_TEST

START_TEST(report_values_kept_and_left_out)
{
    char *dir = tune_test_mkdtemp();
    char *storage = fmt("%s/exp", dir);
    /* Non-numbers and reserved names are left out, repeated names keep the last value, the
     * engine numbers iterations whatever training_iteration says; \u escapes are decoded. */
    char *prog = script(dir, "values.sh",
                        "cat <<'EOF'\n"
                        "tune-report {\"score\": 1.5, \"note\": \"hi\", \"flag\": true, "
                        "\"none\": null, \"nested\": {\"a\": [1, {\"b\": [2]}]}, "
                        "\"training_iteration\": 7, \"time_total_s\": 3, \"score\": 2.5, "
                        "\"caf\\u00e9\": 3, \"big\": 1E300, \"neg\": -0.25e-1, \"zero\": -0}\n"
                        "tune-report\t{ }\n"
                        "tune-reporting is not a report\n"
                        "tune-report {\"loss\": Infinity, \"gain\": -Infinity}\n"
                        "EOF\n");
    char *json = sweep(storage, "[0]", prog, "", "", "");
    tune_study *s = study(json);
    run(s);
    char *rows = query(storage, "SELECT training_iteration, metrics FROM reports ORDER BY 1");
    /* The store writes infinities as 1e999 (valid JSON that reads back as infinite). */
    ck_assert_str_eq(rows, "1|{\"score\":2.5,\"caf\xc3\xa9\":3,\"big\":1e+300,\"neg\":-0.025,"
                           "\"zero\":0}\n"
                           "2|{}\n"
                           "3|{\"loss\":1e999,\"gain\":-1e999}\n");
    char *out = slurpf("%s/trials/trial_000000/stdout.log", storage);
    ck_assert_str_eq(out, "tune-reporting is not a report\n");
    free(rows), free(out), free(json), free(prog);
    tune_study_free(s);
    tune_test_rmtree(dir);
    free(dir), free(storage);
}
END_TEST

START_TEST(bad_reports_fail_the_attempt)
{
    char *dir = tune_test_mkdtemp();
    char *storage = fmt("%s/exp", dir);
    /* x selects the fault; each trial's first report is good. */
    char *prog = script(dir, "bad.sh",
                        "echo 'tune-report {\"score\": 1}'\n"
                        "case $1 in\n"
                        "0) echo 'tune-report {\"score\" 1}' ;;\n"
                        "1) echo 'tune-report [1, 2]' ;;\n"
                        "2) echo 'tune-report {\"score\": 1,}' ;;\n"
                        "3) echo 'tune-report {\"score\": NaN}' ;;\n"
                        "4) echo 'tune-report {\"score\": 01}' ;;\n"
                        "5) echo '{\"score\": 2} trailing' >&$TUNE_REPORT_FD ;;\n"
                        "esac\n"
                        "sleep 30\n");
    char *json =
        sweep(storage, "[0, 1, 2, 3, 4, 5]", prog, ", \"{x}\"", ", \"kill_grace_s\": 0.2", "");
    tune_study *s = study(json);
    double t0 = now_s();
    run(s);
    ck_assert_msg(now_s() - t0 < 10, "the sleeping programs were not stopped");
    char *trials = query(storage, "SELECT trial_id, status, training_iteration, error FROM trials"
                                  " ORDER BY trial_id");
    ck_assert_str_eq(
        trials, "0|ERROR|1|bad tune-report line: expected ':' after the name at byte 10 "
                "(stdout line 2)\n"
                "1|ERROR|1|bad tune-report line: expected a JSON object at byte 1 (stdout line 2)\n"
                "2|ERROR|1|bad tune-report line: expected a metric name in quotes at byte 13 "
                "(stdout line 2)\n"
                "3|ERROR|2|reported score = nan at iteration 2\n"
                "4|ERROR|1|bad tune-report line: expected ',' or '}' at byte 12 (stdout line 2)\n"
                "5|ERROR|1|bad tune-report line: text after the object at byte 14 (the report "
                "pipe line 1)\n");
    free(trials), free(json), free(prog);
    tune_study_free(s);
    tune_test_rmtree(dir);
    free(dir), free(storage);
}
END_TEST

/* ---- what the program sees -------------------------------------------------- */

START_TEST(substitution_environment_and_cwd)
{
    char *dir = tune_test_mkdtemp();
    char *storage = fmt("%s/exp", dir);
    char *work = fmt("%s/work", dir);
    ck_assert_int_eq(mkdir(work, 0755), 0);
    char *prog = script(dir, "show.sh",
                        "printf '%s\\n' \"$@\" > \"$TUNE_TRIAL_DIR/args.txt\"\n"
                        "{ echo \"$TUNE_TRIAL_PARAMS\"; echo \"$TUNE_TRIAL_ID\"; "
                        "echo \"$TUNE_TRIAL_ATTEMPT\"; echo \"$TUNE_TRIAL_DIR\"; "
                        "echo \"$TUNE_REPORT_FD\"; echo \"$MY_LR\"; echo \"$PYTHONUNBUFFERED\"; "
                        "echo \"${TUNE_LEAK-unset}\"; pwd; } > \"$TUNE_TRIAL_DIR/env.txt\"\n"
                        "echo 'tune-report {\"score\": 1}'\n");
    char *json = fmt("{\"name\": \"env\", \"metric\": \"score\", \"storage\": \"%s\",\n"
                     " \"param_space\": {\"lr\": {\"grid_search\": [0.001, 1e-20]},"
                     " \"opt\": {\"name\": \"adam w\", \"beta\": 0.9}, \"flag\": true, \"n\": 7},\n"
                     " \"trainer\": {\"type\": \"command\", \"cwd\": \"%s\", \"report_fd\": 5,\n"
                     "   \"argv\": [\"%s\", \"{lr}\", \"{opt/name}\", \"--beta={opt/beta}\","
                     " \"{flag}\", \"{n}\", \"{{literal}}\", \"{trial_id}\", \"{trial_dir}\","
                     " \"x}y\", \"\"],\n"
                     "   \"env\": {\"MY_LR\": \"lr={lr}\"}}}\n",
                     storage, work, prog);
    setenv("TUNE_LEAK", "from the parent", 1);
    tune_study *s = study(json);
    run(s);
    unsetenv("TUNE_LEAK");
    const char *lrs[2] = {"0.001", "1e-20"};
    for (int k = 0; k < 2; k++) {
        char *folder = fmt("%s/trials/trial_%06d", storage, k);
        char *real = realpath(folder, NULL);
        ck_assert_ptr_nonnull(real);
        char *args = slurpf("%s/args.txt", folder);
        char *want =
            fmt("%s\nadam w\n--beta=0.9\ntrue\n7\n{literal}\n%d\n%s\nx}y\n\n", lrs[k], k, real);
        ck_assert_str_eq(args, want);
        char *env = slurpf("%s/env.txt", folder);
        char *params = fmt("{\"lr\":%s,\"opt\":{\"name\":\"adam w\",\"beta\":0.9},\"flag\":true,"
                           "\"n\":7}",
                           lrs[k]);
        char *want_env =
            fmt("%s\n%d\n1\n%s\n5\nlr=%s\n1\nunset\n%s\n", params, k, real, lrs[k], work);
        ck_assert_str_eq(env, want_env);
        /* params.json holds the same text as TUNE_TRIAL_PARAMS. */
        char *pj = slurpf("%s/params.json", folder);
        char *want_pj = fmt("%s\n", params);
        ck_assert_str_eq(pj, want_pj);
        free(folder), free(real), free(args), free(want), free(env), free(params), free(want_env),
            free(pj), free(want_pj);
    }
    free(json), free(prog), free(work);
    tune_study_free(s);
    tune_test_rmtree(dir);
    free(dir), free(storage);
}
END_TEST

/* ---- stopping ---------------------------------------------------------------- */

START_TEST(stopped_program_and_its_group_are_gone)
{
    char *dir = tune_test_mkdtemp();
    char *storage = fmt("%s/exp", dir);
    /* Reports forever, with a background child in its process group. */
    char *prog = script(dir, "forever.sh",
                        "echo $$ > \"$TUNE_TRIAL_DIR/pid\"\n"
                        "sleep 300 &\n"
                        "echo $! > \"$TUNE_TRIAL_DIR/child.pid\"\n"
                        "i=0\n"
                        "while :; do i=$((i + 1)); echo \"tune-report {\\\"score\\\": $i}\";"
                        " sleep 0.02; done\n");
    char *json = sweep(storage, "[0, 1]", prog, "", "", ", \"stop\": {\"training_iteration\": 3}");
    tune_study *s = study(json);
    double t0 = now_s();
    run(s);
    ck_assert_msg(now_s() - t0 < 5, "took %.1f s", now_s() - t0);
    char *trials = query(storage, "SELECT trial_id, status, training_iteration, coalesce(error, '')"
                                  " FROM trials ORDER BY trial_id");
    ck_assert_str_eq(trials, "0|TERMINATED|3|\n1|TERMINATED|3|\n");
    for (int k = 0; k < 2; k++) {
        assert_gone(read_pid(storage, k, "pid"));
        assert_gone(read_pid(storage, k, "child.pid"));
        char *err = slurpf("%s/trials/trial_%06d/stderr.log", storage, k);
        ck_assert_msg(strstr(err, "[tune] attempt 1: stopped (SIGTERM)\n"), "stderr.log: %s", err);
        free(err);
    }
    free(trials), free(json), free(prog);
    tune_study_free(s);
    tune_test_rmtree(dir);
    free(dir), free(storage);
}
END_TEST

START_TEST(sigterm_ignored_means_sigkill_after_grace)
{
    char *dir = tune_test_mkdtemp();
    char *storage = fmt("%s/exp", dir);
    char *prog = script(dir, "stubborn.sh",
                        "trap '' TERM\n"
                        "echo $$ > \"$TUNE_TRIAL_DIR/pid\"\n"
                        "while :; do echo 'tune-report {\"score\": 1}'; sleep 0.02; done\n");
    char *json = sweep(storage, "[0]", prog, "", ", \"kill_grace_s\": 0.6",
                       ", \"stop\": {\"training_iteration\": 2}");
    tune_study *s = study(json);
    double t0 = now_s();
    run(s);
    double took = now_s() - t0;
    ck_assert_msg(took >= 0.6 && took < 4, "took %.2f s with a grace of 0.6 s", took);
    char *trials = query(storage, "SELECT status, training_iteration FROM trials");
    ck_assert_str_eq(trials, "TERMINATED|2\n");
    assert_gone(read_pid(storage, 0, "pid"));
    char *err = slurpf("%s/trials/trial_000000/stderr.log", storage);
    ck_assert_msg(strstr(err, "[tune] attempt 1: stopped (SIGTERM, then SIGKILL after "
                              "kill_grace_s)\n"),
                  "stderr.log: %s", err);
    free(trials), free(err), free(json), free(prog);
    tune_study_free(s);
    tune_test_rmtree(dir);
    free(dir), free(storage);
}
END_TEST

struct stopper {
    tune_study *s;
    double after_s;
};

static void *stop_later(void *arg)
{
    struct stopper *st = arg;
    usleep((useconds_t)(st->after_s * 1e6));
    tune_study_request_stop(st->s);
    return NULL;
}

START_TEST(request_stop_reaches_a_silent_program)
{
    char *dir = tune_test_mkdtemp();
    char *storage = fmt("%s/exp", dir);
    /* One report, then a long silence: only tune's own stop can end it early. */
    char *prog = script(dir, "silent.sh",
                        "echo $$ > \"$TUNE_TRIAL_DIR/pid\"\n"
                        "echo 'tune-report {\"score\": 1}'\n"
                        "sleep 60\n");
    char *json = sweep(storage, "[0]", prog, "", ", \"kill_grace_s\": 5", "");
    tune_study *s = study(json);
    struct stopper st = {s, 0.5};
    pthread_t th;
    pthread_create(&th, NULL, stop_later, &st);
    double t0 = now_s();
    tune_error err;
    ck_assert_int_eq(tune_study_run(s, &err), TUNE_EINTERRUPTED);
    pthread_join(th, NULL);
    /* sh dies of SIGTERM at once (its sleep with it): no need for the 5 s grace. */
    ck_assert_msg(now_s() - t0 < 3, "took %.1f s", now_s() - t0);
    char *trials = query(storage, "SELECT status, coalesce(error, '') FROM trials");
    ck_assert_str_eq(trials, "PENDING|\n");
    assert_gone(read_pid(storage, 0, "pid"));
    free(trials), free(json), free(prog);
    tune_study_free(s);
    tune_test_rmtree(dir);
    free(dir), free(storage);
}
END_TEST

START_TEST(timeout_kills_a_hung_program)
{
    char *dir = tune_test_mkdtemp();
    char *storage = fmt("%s/exp", dir);
    char *prog = script(dir, "hang.sh", "echo $$ > \"$TUNE_TRIAL_DIR/pid\"\nsleep 60\n");
    char *json =
        sweep(storage, "[0]", prog, "", ", \"kill_grace_s\": 0.2", ", \"trial_timeout_s\": 0.4");
    tune_study *s = study(json);
    double t0 = now_s();
    run(s);
    ck_assert_msg(now_s() - t0 < 3, "took %.1f s", now_s() - t0);
    char *trials = query(storage, "SELECT status, error FROM trials");
    ck_assert_str_eq(trials, "ERROR|timed out after 0.4 s (trial_timeout_s)\n");
    assert_gone(read_pid(storage, 0, "pid"));
    free(trials), free(json), free(prog);
    tune_study_free(s);
    tune_test_rmtree(dir);
    free(dir), free(storage);
}
END_TEST

/* ---- failures ------------------------------------------------------------------ */

START_TEST(failures_are_retried_with_their_reason)
{
    char *dir = tune_test_mkdtemp();
    char *storage = fmt("%s/exp", dir);
    /* x = 0 fails on its first attempt only; x = 1 always exits 3; x = 2 is killed by signal 9. */
    char *prog = script(dir, "flaky.sh",
                        "echo 'tune-report {\"score\": 1}'\n"
                        "if [ $1 = 0 ] && [ $TUNE_TRIAL_ATTEMPT = 1 ]; then\n"
                        "  echo 'warming up' >&2; echo 'RuntimeError: CUDA out of memory  ' >&2;"
                        " exit 3; fi\n"
                        "if [ $1 = 1 ]; then echo \"boom $TUNE_TRIAL_ATTEMPT\" >&2; exit 3; fi\n"
                        "if [ $1 = 2 ]; then kill -9 $$; fi\n"
                        "echo 'tune-report {\"score\": 2}'\n");
    char *json = sweep(storage, "[0, 1, 2]", prog, ", \"{x}\"", "", ", \"max_failures\": 1");
    tune_study *s = study(json);
    run(s);
    char *trials = query(storage, "SELECT trial_id, status, attempt, training_iteration, "
                                  "coalesce(error, '') FROM trials ORDER BY trial_id");
    ck_assert_str_eq(trials, "0|TERMINATED|2|2|\n"
                             "1|ERROR|2|1|command exited with status 3 (stderr: boom 2)\n"
                             "2|ERROR|2|1|command killed by signal 9 (Killed)\n");
    /* Each attempt's reports are kept, under its own attempt number. */
    char *rows = query(storage, "SELECT trial_id, attempt, training_iteration, metrics FROM reports"
                                " WHERE trial_id = 0 ORDER BY attempt, training_iteration");
    ck_assert_str_eq(rows, "0|1|1|{\"score\":1}\n0|2|1|{\"score\":1}\n0|2|2|{\"score\":2}\n");
    /* The error names the last non-empty stderr line, trailing blanks trimmed. */
    char *err0 = slurpf("%s/trials/trial_000000/stderr.log", storage);
    ck_assert_msg(strstr(err0, "warming up\nRuntimeError: CUDA out of memory  \n[tune] attempt 1: "
                               "command exited with status 3 (stderr: RuntimeError: CUDA out of "
                               "memory)\n[tune] attempt 2: "),
                  "stderr.log: %s", err0);
    free(err0);
    char *err = slurpf("%s/trials/trial_000001/stderr.log", storage);
    char *want = fmt("[tune] attempt 1: %s 1\nboom 1\n"
                     "[tune] attempt 1: command exited with status 3 (stderr: boom 1)\n"
                     "[tune] attempt 2: %s 1\nboom 2\n"
                     "[tune] attempt 2: command exited with status 3 (stderr: boom 2)\n",
                     prog, prog);
    ck_assert_str_eq(err, want);
    free(trials), free(rows), free(err), free(want), free(json), free(prog);
    tune_study_free(s);
    tune_test_rmtree(dir);
    free(dir), free(storage);
}
END_TEST

START_TEST(programs_that_cannot_run)
{
    char *dir = tune_test_mkdtemp();
    char *storage = fmt("%s/exp", dir);
    /* Executable, but neither ELF nor #!: execve fails with ENOEXEC in the child. */
    char *garbage = fmt("%s/garbage", dir);
    write_file(garbage,
               "\x7f"
               "ELF but not really\n",
               1);
    char *json = sweep(storage, "[0]", garbage, "", "", "");
    tune_study *s = study(json);
    run(s);
    char *trials = query(storage, "SELECT status, error FROM trials");
    char *want = fmt("ERROR|cannot run '%s': Exec format error\n", garbage);
    ck_assert_str_eq(trials, want);
    tune_study_free(s);
    free(trials), free(want), free(json);

    /* Validated, then removed before the run. */
    char *gone = script(dir, "gone.sh", "exit 0\n");
    char *storage2 = fmt("%s/exp2", dir);
    json = sweep(storage2, "[0]", gone, "", "", "");
    s = study(json);
    ck_assert_int_eq(unlink(gone), 0);
    run(s);
    trials = query(storage2, "SELECT status, error FROM trials");
    want = fmt("ERROR|cannot run the command: '%s': No such file or directory\n", gone);
    ck_assert_str_eq(trials, want);
    tune_study_free(s);
    free(trials), free(want), free(json), free(gone), free(garbage), free(storage2);
    tune_test_rmtree(dir);
    free(dir), free(storage);
}
END_TEST

/* ---- logs --------------------------------------------------------------------- */

START_TEST(long_lines)
{
    char *dir = tune_test_mkdtemp();
    char *storage = fmt("%s/exp", dir);
    /* x = 0: a 3 MiB log line on stdout and stderr, then a report; x = 1: a 2 MiB report line. */
    char *prog = script(dir, "long.sh",
                        "if [ $1 = 0 ]; then\n"
                        "  head -c 3145728 /dev/zero | tr '\\0' a; echo\n"
                        "  head -c 3145728 /dev/zero | tr '\\0' b >&2; echo >&2\n"
                        "  echo 'tune-report {\"score\": 1}'\n"
                        "else\n"
                        "  printf 'tune-report {\"n\": \"'; head -c 2097152 /dev/zero | tr '\\0' c;"
                        " echo '\"}'\n"
                        "  sleep 30\n"
                        "fi\n");
    char *json = sweep(storage, "[0, 1]", prog, ", \"{x}\"", ", \"kill_grace_s\": 0.2", "");
    tune_study *s = study(json);
    run(s);
    char *trials = query(storage, "SELECT trial_id, status, training_iteration, "
                                  "coalesce(error, '') FROM trials ORDER BY trial_id");
    ck_assert_str_eq(trials, "0|TERMINATED|1|\n"
                             "1|ERROR|0|bad tune-report line: longer than 1 MiB (stdout line 1)\n");
    struct stat sb;
    char *out_log = fmt("%s/trials/trial_000000/stdout.log", storage);
    ck_assert_int_eq(stat(out_log, &sb), 0);
    free(out_log);
    ck_assert_int_eq(sb.st_size, 3145728 + 1);
    char *err = slurpf("%s/trials/trial_000000/stderr.log", storage);
    char *b_run = strstr(err, "bbbb");
    ck_assert_ptr_nonnull(b_run);
    ck_assert_uint_eq(strspn(b_run, "b"), 3145728);
    ck_assert_int_eq(b_run[3145728], '\n');
    free(trials), free(err), free(json), free(prog);
    tune_study_free(s);
    tune_test_rmtree(dir);
    free(dir), free(storage);
}
END_TEST

struct captured {
    pthread_mutex_t lock;
    char text[8192];
};

static void capture(tune_log_level level, const char *message, void *ud)
{
    struct captured *c = ud;
    (void)level;
    pthread_mutex_lock(&c->lock);
    size_t n = strlen(c->text);
    snprintf(c->text + n, sizeof c->text - n, "%s\n", message);
    pthread_mutex_unlock(&c->lock);
}

START_TEST(memory_studies_log_through_the_callback)
{
    char *dir = tune_test_mkdtemp();
    static struct captured cap = {PTHREAD_MUTEX_INITIALIZER, ""};
    tune_set_log_callback(capture, TUNE_LOG_INFO, &cap);
    char *prog = script(dir, "mem.sh",
                        "echo 'hello out'\necho 'hello err' >&2\n"
                        "if [ -n \"${TUNE_TRIAL_DIR+set}\" ]; then d=1; else d=0; fi\n"
                        "echo \"tune-report {\\\"score\\\": $d, \\\"note\\\": \\\"x\\\"}\"\n");
    char *json = sweep(":memory:", "[0]", prog, "", "", "");
    tune_study *s = study(json);
    run(s);
    tune_set_log_callback(NULL, TUNE_LOG_ERROR, NULL);
    ck_assert_msg(strstr(cap.text, "trial 0 stdout: hello out\n") &&
                      strstr(cap.text, "trial 0 stderr: hello err\n") &&
                      strstr(cap.text, "trial 0: tune-report 'note' left out: not a number "
                                       "(warned once per attempt)\n"),
                  "log: %s", cap.text);
    char *best = NULL;
    ck_assert_int_eq(tune_study_best_json(s, &best, NULL), TUNE_OK);
    ck_assert_msg(strstr(best, "\"score\":0"), "TUNE_TRIAL_DIR is set: %s", best); /* no folder */
    tune_free(best);
    free(json), free(prog);
    tune_study_free(s);
    tune_test_rmtree(dir);
    free(dir);
}
END_TEST

START_TEST(concurrent_trials_do_not_hold_each_others_pipes)
{
    char *dir = tune_test_mkdtemp();
    char *storage = fmt("%s/exp", dir);
    /* Odd trials run 1.5 s; even ones exit at once and must end at once, which they
     * could not if an odd trial's program had inherited their pipes. */
    char *prog = script(dir, "mixed.sh",
                        "echo \"tune-report {\\\"score\\\": $1}\"\n"
                        "if [ $(($1 % 2)) = 1 ]; then sleep 1.5; fi\n");
    char *json = sweep(storage, "[0, 1, 2, 3, 4, 5]", prog, ", \"{x}\"", "", "");
    char *json3 = strdup(json);
    char *at = strstr(json3, "\"max_concurrent_trials\": 2");
    at[sizeof "\"max_concurrent_trials\": " - 1] = '3';
    tune_study *s = study(json3);
    run(s);
    char *rows = query(storage, "SELECT trial_id, status, time_total_s < 1.0 FROM trials"
                                " ORDER BY trial_id");
    ck_assert_str_eq(rows, "0|TERMINATED|1\n1|TERMINATED|0\n2|TERMINATED|1\n"
                           "3|TERMINATED|0\n4|TERMINATED|1\n5|TERMINATED|0\n");
    free(rows), free(json), free(json3), free(prog);
    tune_study_free(s);
    tune_test_rmtree(dir);
    free(dir), free(storage);
}
END_TEST

/* ---- trial folders ------------------------------------------------------------- */

static tune_status obj_check_dir(tune_trial *t, void *ud)
{
    int *seen = ud;
    const char *d = tune_trial_dir(t);
    if (!d)
        return tune_trial_report_metric(t, "score", -1, NULL) == TUNE_ESTORE ? TUNE_ESTORE
                                                                             : TUNE_OK;
    struct stat sb;
    char path[4200];
    snprintf(path, sizeof path, "%s/params.json", d);
    char *json = NULL;
    tune_trial_config_json(t, &json, NULL);
    char *text = tune_test_slurp(path);
    int ok = d[0] == '/' && stat(d, &sb) == 0 && S_ISDIR(sb.st_mode) && text && json &&
             strncmp(text, json, strlen(json)) == 0 && strcmp(text + strlen(json), "\n") == 0;
    free(text);
    tune_free(json);
    if (ok)
        __atomic_add_fetch(seen, 1, __ATOMIC_SEQ_CST);
    return tune_trial_report_metric(t, "score", ok, NULL) == TUNE_ESTORE ? TUNE_ESTORE : TUNE_OK;
}

static tune_status obj_no_dir(tune_trial *t, void *ud)
{
    (void)ud;
    return tune_trial_report_metric(t, "score", 1, NULL) == TUNE_ESTORE ? TUNE_ESTORE : TUNE_OK;
}

START_TEST(trial_folders)
{
    char *p = tunep_trial_dir_path("exp", 42);
    ck_assert_str_eq(p, "exp/trials/trial_000042");
    tunep_free(p);
    p = tunep_trial_dir_path("exp", 1234567);
    ck_assert_str_eq(p, "exp/trials/trial_1234567");
    tunep_free(p);
    ck_assert_ptr_null(tunep_trial_dir_path(":memory:", 1));
    ck_assert_ptr_null(tune_trial_dir(NULL));

    char *dir = tune_test_mkdtemp();
    char *storage = fmt("%s/exp", dir);
#define DIRS_CONFIG                                                                                \
    "{\"name\": \"dirs\", \"metric\": \"score\", \"storage\": \"%s\", "                            \
    "\"max_concurrent_trials\": 3, \"num_samples\": 5, \"param_space\": {\"u\": {\"uniform\": "    \
    "[0, 1]}, \"c\": {\"choice\": [\"a b\", \"c\"]}}}"
    char *json = fmt(DIRS_CONFIG, storage);
    tune_study *s = study(json);
    int seen = 0;
    tune_study_set_objective(s, obj_check_dir, &seen, NULL);
    run(s);
    ck_assert_int_eq(seen, 5);
    tune_study_free(s);

    /* Objectives that never ask for their folder get none. */
    char *quiet_storage = fmt("%s/quiet", dir);
    char *quiet = fmt(DIRS_CONFIG, quiet_storage);
    s = study(quiet);
    tune_study_set_objective(s, obj_no_dir, NULL, NULL);
    run(s);
    tune_study_free(s);
    char *trials_dir = fmt("%s/trials", quiet_storage);
    struct stat sb;
    ck_assert_int_ne(stat(trials_dir, &sb), 0);
    free(quiet_storage), free(quiet), free(trials_dir);

    /* ":memory:": no folder. */
    char *mem = fmt(DIRS_CONFIG, ":memory:");
    s = study(mem);
    seen = 0;
    tune_study_set_objective(s, obj_check_dir, &seen, NULL);
    run(s);
    ck_assert_int_eq(seen, 0);
    char *best = NULL;
    ck_assert_int_eq(tune_study_best_json(s, &best, NULL), TUNE_OK);
    ck_assert_msg(strstr(best, "\"score\":-1"), "%s", best);
    tune_free(best);
    tune_study_free(s);

    /* A folder that cannot be made: the trial runs without one (and says so in the log). */
    char *storage2 = fmt("%s/blocked", dir);
    ck_assert_int_eq(mkdir(storage2, 0755), 0);
    char *blocker = fmt("%s/trials", storage2);
    write_file(blocker, "a file where the folder would go\n", 0);
    char *json2 = fmt(DIRS_CONFIG, storage2);
    static struct captured cap = {PTHREAD_MUTEX_INITIALIZER, ""};
    tune_set_log_callback(capture, TUNE_LOG_WARN, &cap);
    s = study(json2);
    seen = 0;
    tune_study_set_objective(s, obj_check_dir, &seen, NULL);
    run(s);
    tune_set_log_callback(NULL, TUNE_LOG_ERROR, NULL);
    ck_assert_int_eq(seen, 0);
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    tune_study_counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_TERMINATED], 5);
    char *want = fmt("trial 0: runs without its folder: %s/trials/trial_000000: cannot create "
                     "folder: Not a directory\n",
                     storage2);
    ck_assert_msg(strstr(cap.text, want), "log: %s", cap.text);
    tune_study_free(s);
    free(json), free(mem), free(json2), free(want), free(blocker), free(storage2);
    tune_test_rmtree(dir);
    free(dir), free(storage);
}
END_TEST

static Suite *command_suite(void)
{
    Suite *s = suite_create("command");
    TCase *tc = tcase_create("command");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, templates_expand);
    tcase_add_test(tc, config_errors_at_their_position);
    tcase_add_test(tc, reports_stored_row_by_row);
    tcase_add_test(tc, report_values_kept_and_left_out);
    tcase_add_test(tc, bad_reports_fail_the_attempt);
    tcase_add_test(tc, substitution_environment_and_cwd);
    tcase_add_test(tc, stopped_program_and_its_group_are_gone);
    tcase_add_test(tc, sigterm_ignored_means_sigkill_after_grace);
    tcase_add_test(tc, request_stop_reaches_a_silent_program);
    tcase_add_test(tc, timeout_kills_a_hung_program);
    tcase_add_test(tc, failures_are_retried_with_their_reason);
    tcase_add_test(tc, programs_that_cannot_run);
    tcase_add_test(tc, long_lines);
    tcase_add_test(tc, memory_studies_log_through_the_callback);
    tcase_add_test(tc, concurrent_trials_do_not_hold_each_others_pipes);
    tcase_add_test(tc, trial_folders);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(command_suite)
