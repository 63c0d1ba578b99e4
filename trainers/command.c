/*
 * command.c - "type": "command": each trial attempt runs an external program,
 * which is how a PyTorch script (or anything else) is tuned from the CLI.
 *
 *   "trainer": {"type": "command",
 *               "argv": ["python3", "train.py", "--lr", "{lr}", "--batch-size", "{batch_size}"],
 *               "env": {"OMP_NUM_THREADS": "1"}, "cwd": "examples", "kill_grace_s": 10}
 *
 * "{name}" in argv and env values becomes the trial's value of parameter
 * `name` (nested ones as "{optimizer/lr}"), "{trial_id}" and "{trial_dir}"
 * the trial's id and folder; "{{" and "}}" are literal braces. Unknown names
 * are config errors (config.c checks every template at validation). The
 * program also gets TUNE_TRIAL_PARAMS (the configuration as JSON),
 * TUNE_TRIAL_ID, TUNE_TRIAL_ATTEMPT, TUNE_TRIAL_SEED, TUNE_TRIAL_DIR and
 * TUNE_REPORT_FD, and PYTHONUNBUFFERED=1 unless set otherwise, because a
 * Python script's stdout into a pipe is block-buffered and its reports would
 * otherwise arrive only when it exits. With "resources_per_trial" it also
 * gets CUDA_VISIBLE_DEVICES (the GPUs the engine placed the trial on, over
 * any other value) and, from "cpu", OMP_NUM_THREADS, MKL_NUM_THREADS and
 * OPENBLAS_NUM_THREADS (unless trainer.env sets them).
 *
 * Protocol: a line `tune-report {"val_accuracy": 0.81, "loss": 0.4}` on
 * stdout, or on the pipe at descriptor TUNE_REPORT_FD (where a bare JSON
 * object also counts), is one report: one training_iteration, numbered by
 * the engine. Values that are not numbers (strings, booleans, null, arrays,
 * objects) and the names the engine fills in itself (training_iteration,
 * time_total_s, done, pid, ...: tune_metric_name_reserved()) are left out
 * with a warning, once per
 * attempt; NaN and Infinity (as Python's json.dumps writes them) are
 * numbers. A line that is not a JSON object fails the attempt, as a typo in
 * the protocol must not pass silently. Every other stdout line goes to the
 * trial folder's stdout.log and all of stderr to stderr.log (in ":memory:"
 * studies, to the log callback at INFO level).
 *
 * Process control: the program runs in its own process group (fork, setpgid,
 * execve; no shell). When a report is answered TUNE_ESTOP (the scheduler,
 * a stop rule), the study is stopping (Ctrl-C) or trial_timeout_s passes,
 * the group gets SIGTERM and, kill_grace_s later, SIGKILL. When the program
 * exits, whatever it left running in its group is killed; if tune itself
 * dies, the program gets SIGKILL (Linux's parent-death signal). A non-zero exit or
 * death by a signal that tune did not send fails the attempt ("command exited
 * with status 3", "command killed by signal 9"), retried up to max_failures.
 * All of it runs on the trial's worker thread, which blocks in poll() on the
 * program's pipes; the controller and the other trials never wait for it.
 */
#define _GNU_SOURCE /* pipe2, strtod_l, environ */
#include "trainer.h"

#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#define REPORT_PREFIX "tune-report"
/* Longer report lines fail the attempt; longer log lines are logged in pieces. */
#define MAX_LINE       ((size_t)1 << 20)
#define MAX_JSON_DEPTH 64
/* After the program exits, how long a descendant outside its process group may
 * keep its pipes open before tune stops reading them. */
#define DRAIN_S 2.0

/* The trainer's section: argv and env values are templates with {name} placeholders. */
struct command_config {
    struct tunep_strv argv;  /* the program and its arguments */
    struct tunep_strmap env; /* variables added to tune's environment */
    char *cwd;               /* the program's working folder; NULL: tune's */
    double kill_grace_s;     /* SIGTERM -> SIGKILL of a stopped trial's process group */
    int report_fd;           /* the report pipe's descriptor number in the program */
};

static const struct tunep_option command_options[] = {
    {.name = "argv",
     .type = TUNEP_OPT_ARGV,
     .offset = offsetof(struct command_config, argv),
     .expected = "a non-empty array of strings such as [\"python3\", \"train.py\", \"--lr\", "
                 "\"{lr}\"]"},
    {.name = "env",
     .type = TUNEP_OPT_ENV,
     .offset = offsetof(struct command_config, env),
     .expected = "an object of strings such as {\"OMP_NUM_THREADS\": \"1\"}"},
    {.name = "cwd", .type = TUNEP_OPT_DIR, .offset = offsetof(struct command_config, cwd)},
    TUNEP_OPT_ROW("kill_grace_s", TUNEP_OPT_NUMBER, struct command_config, kill_grace_s, 0, 3600,
                  10),
    TUNEP_OPT_ROW("report_fd", TUNEP_OPT_INT, struct command_config, report_fd, 3, 1023, 3),
    {0},
};

struct command_trainer {
    const struct command_config *cfg; /* borrowed from the study's config */
    locale_t c_locale;                /* number parsing whatever LC_NUMERIC says */
    int cpu;                          /* resources_per_trial.cpu (prepare()); 0: not given */
};

/* ---- templates ------------------------------------------------------------ */

int tunep_command_expand(const char *tmpl, tunep_placeholder_fn lookup, void *ud,
                         struct tunep_buf *out, char *bad, size_t bad_size)
{
    const char *p = tmpl;
    while (*p) {
        if (p[0] == '{' && p[1] == '{') {
            tunep_buf_append(out, "{", 1);
            p += 2;
        } else if (p[0] == '}' && p[1] == '}') {
            tunep_buf_append(out, "}", 1);
            p += 2;
        } else if (p[0] == '{') {
            const char *end = strchr(p + 1, '}');
            if (!end) {
                snprintf(bad, bad_size, "%s", p);
                return -2;
            }
            char name[TUNEP_SPACE_MAX_NAME + 1];
            size_t len = (size_t)(end - p - 1);
            if (len > TUNEP_SPACE_MAX_NAME || memchr(p + 1, '{', len)) {
                snprintf(bad, bad_size, "%.*s", (int)(len < 200 ? len : 200), p + 1);
                return -1;
            }
            memcpy(name, p + 1, len);
            name[len] = '\0';
            if (lookup(ud, name, out) != 0) {
                snprintf(bad, bad_size, "%s", name);
                return -1;
            }
            p = end + 1;
        } else {
            size_t run = strcspn(p, "{}");
            if (run == 0) /* a lone '}' */
                run = 1;
            tunep_buf_append(out, p, run);
            p += run;
        }
    }
    return 0;
}

/*
 * Validation checks that every placeholder names a parameter or a built-in, so
 * one without a value at run time is a conditional parameter of an option the
 * trial did not choose.
 */
#define ABSENT_PLACEHOLDER                                                                         \
    "'{%s}' has no value in this trial (a conditional parameter of an option not chosen; "         \
    "TUNE_TRIAL_PARAMS holds the present ones)"

/* The trial's value of a placeholder, formatted as in TUNE_TRIAL_PARAMS. */
static int trial_placeholder(void *ud, const char *name, struct tunep_buf *out)
{
    const tune_trial *t = ud;
    const char *s;
    int b;
    int64_t i;
    double d;
    char num[64];
    if (tune_trial_get_string(t, name, &s, NULL) == TUNE_OK) {
        tunep_buf_puts(out, s);
    } else if (tune_trial_get_bool(t, name, &b, NULL) == TUNE_OK) {
        tunep_buf_puts(out, b ? "true" : "false");
    } else if (tune_trial_get_int(t, name, &i, NULL) == TUNE_OK) {
        tunep_buf_printf(out, "%lld", (long long)i);
    } else if (tune_trial_get_double(t, name, &d, NULL) == TUNE_OK) {
        tunep_format_double(num, sizeof num, d);
        tunep_buf_puts(out, num);
    } else if (strcmp(name, "trial_id") == 0) {
        tunep_buf_printf(out, "%lld", (long long)tune_trial_id(t));
    } else if (strcmp(name, "trial_dir") == 0) {
        tunep_buf_puts(out, tune_trial_dir(t) ? tune_trial_dir(t) : "");
    } else {
        return -1;
    }
    return 0;
}

/* ---- finding the program -------------------------------------------------- */

static int is_executable_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && access(path, X_OK) == 0;
}

int tunep_command_find_program(const char *program, const char *cwd, const char *path_env,
                               char **ret_path, char *why, size_t why_size)
{
    *ret_path = NULL;
    if (strchr(program, '/')) {
        /* Run as given (execve after chdir(cwd)); checked where it will be looked for. */
        char *where = program[0] != '/' && cwd ? tunep_asprintf("%s/%s", cwd, program)
                                               : tunep_strdup(program);
        if (!where)
            return -2;
        struct stat sb;
        int r = 0;
        if (stat(where, &sb) != 0) {
            snprintf(why, why_size, "'%s': %s", program, strerror(errno));
            r = -1;
        } else if (!S_ISREG(sb.st_mode)) {
            snprintf(why, why_size, "'%s' is not a file", program);
            r = -1;
        } else if (access(where, X_OK) != 0) {
            snprintf(why, why_size,
                     "'%s' is not executable (chmod +x, or run it with its "
                     "interpreter: [\"python3\", \"%s\"])",
                     program, program);
            r = -1;
        }
        tunep_free(where);
        if (r)
            return r;
        return (*ret_path = tunep_strdup(program)) ? 0 : -2;
    }
    if (!path_env)
        path_env = getenv("PATH");
    if (!path_env)
        path_env = "/usr/local/bin:/usr/bin:/bin";
    const char *p = path_env;
    for (;;) {
        size_t len = strcspn(p, ":");
        char *cand;
        if (len == 0)
            cand = tunep_asprintf("./%s", program);
        else
            cand = tunep_asprintf("%.*s/%s", (int)len, p, program);
        if (!cand)
            return -2;
        if (is_executable_file(cand)) {
            if (cand[0] != '/') {
                /* Relative PATH entries mean tune's folder, not the program's cwd. */
                char here[4096];
                char *abs = getcwd(here, sizeof here) ? tunep_asprintf("%s/%s", here, cand) : NULL;
                tunep_free(cand);
                if (!abs)
                    return -2;
                cand = abs;
            }
            *ret_path = cand;
            return 0;
        }
        tunep_free(cand);
        if (p[len] == '\0')
            break;
        p += len + 1;
    }
    snprintf(why, why_size, "'%s' not found in PATH", program);
    return -1;
}

/* ---- the trainer ---------------------------------------------------------- */

static tune_status command_create(const void *vcfg, const char *source, void **ret_state,
                                  tune_error *err)
{
    const struct command_config *cfg = vcfg;
    (void)source;
    struct command_trainer *t = tunep_calloc(1, sizeof *t);
    if (!t)
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    t->cfg = cfg;
    t->c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (t->c_locale == (locale_t)0) {
        tunep_free(t);
        return tunep_error_set(err, TUNE_ENOMEM, "cannot create the C locale");
    }
    *ret_state = t;
    return TUNE_OK;
}

static tune_status command_prepare(void *state, const struct tunep_trainer_env *env,
                                   tune_error *err)
{
    (void)err;
    struct command_trainer *t = state;
    t->cpu = env->resources_cpu;
    return TUNE_OK;
}

/* A trial's program runs on "cpu" threads and on the GPUs the engine placed it on. */
static void command_resources(const void *state, const struct tunep_trainer_env *env,
                              struct tunep_trial_resources *ret)
{
    const struct command_trainer *t = state;
    ret->cpu_threads = t->cpu > 0 ? t->cpu : 1;
    ret->gpu_share = env->resources_gpu > 0 ? env->resources_gpu : 0;
}

static void command_free(void *state)
{
    struct command_trainer *t = state;
    if (!t)
        return;
    freelocale(t->c_locale);
    tunep_free(t);
}

/* ---- one attempt ---------------------------------------------------------- */

enum stream { S_OUT = 0, S_ERR = 1, S_REP = 2, S_COUNT };

static const char *const stream_names[S_COUNT] = {"stdout", "stderr", "the report pipe"};

struct line_reader {
    int fd; /* our end of the pipe; -1 once at end of file */
    char *buf;
    size_t len, cap;
    int overlong; /* the current line passed MAX_LINE: its rest goes to the log */
    int discard;  /* ... or nowhere (a report line that long failed the attempt) */
    int64_t line_no;
};

enum stop_reason { STOP_NONE = 0, STOP_ANSWER, STOP_INTERRUPT, STOP_TIMEOUT, STOP_FAILED };

struct run {
    struct command_trainer *ct;
    struct tune_trial *t;
    int log_fd[2]; /* stdout.log, stderr.log; -1: lines go to the log callback */
    struct line_reader in[S_COUNT];
    pid_t pid;
    enum stop_reason stop; /* why tune signalled the program, if it did */
    double kill_at;        /* when SIGKILL follows the SIGTERM */
    int killed;
    tune_status status; /* what the attempt returns when tune stopped it */
    char last_err[240]; /* the last non-empty stderr line, for the error text */
    int warned_value, warned_name, warned_iteration;
    /* A report being parsed: names in `arena` (NUL-separated), values beside. */
    struct tunep_buf arena;
    size_t *name_at;
    double *values;
    size_t n_metrics, cap_metrics;
};

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return; /* a full disk loses log lines, never the trial */
        p += w;
        n -= (size_t)w;
    }
}

/* A piece of a log line: to the file, or (whole lines) to the log callback. */
static void log_piece(struct run *r, enum stream which, const char *p, size_t n, int newline)
{
    int fd = r->log_fd[which == S_ERR];
    if (fd >= 0) {
        write_all(fd, p, n);
        if (newline)
            write_all(fd, "\n", 1);
        return;
    }
    tunep_log(TUNE_LOG_INFO, "trial %lld %s: %.*s", (long long)tune_trial_id(r->t),
              which == S_ERR ? "stderr" : "stdout", (int)(n > 4000 ? 4000 : n), p);
}

/* Signals the program's process group: SIGTERM now and SIGKILL after the grace period. */
static void stop_program(struct run *r, enum stop_reason why)
{
    if (r->stop != STOP_NONE)
        return;
    r->stop = why;
    double grace = r->ct->cfg->kill_grace_s;
    if (grace <= 0) {
        kill(-r->pid, SIGKILL);
        r->killed = 1;
        return;
    }
    kill(-r->pid, SIGTERM);
    r->kill_at = tunep_now_monotonic() + grace;
}

/* Fails the attempt for a bad report line and stops the program. */
static void fail_attempt(struct run *r, const char *why, int64_t line_no, enum stream which)
{
    if (r->stop != STOP_NONE)
        return;
    tune_trial_set_error(r->t, "bad tune-report line: %s (%s line %lld)", why, stream_names[which],
                         (long long)line_no);
    r->status = TUNE_EFAILED;
    stop_program(r, STOP_FAILED);
}

/* ---- report lines: a flat JSON object of numbers -------------------------- */

struct parser {
    const char *p, *end;
    const char *error;
};

static void skip_ws(struct parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\r' || *ps->p == '\n'))
        ps->p++;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

static int read_hex4(struct parser *ps, unsigned *ret)
{
    if (ps->end - ps->p < 4)
        return -1;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(ps->p[i]);
        if (h < 0)
            return -1;
        v = v * 16 + (unsigned)h;
    }
    ps->p += 4;
    *ret = v;
    return 0;
}

static void put_utf8(struct tunep_buf *b, unsigned cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    tunep_buf_append(b, u, n);
}

/*
 * A JSON string at ps->p (at its '"'); decoded into out when out is not NULL.
 * *has_nul is set when it holds a \u0000. 0, or -1 with ps->error.
 */
static int parse_string(struct parser *ps, struct tunep_buf *out, int *has_nul)
{
    ps->p++; /* the opening quote */
    for (;;) {
        if (ps->p >= ps->end) {
            ps->error = "unterminated string";
            return -1;
        }
        unsigned char c = (unsigned char)*ps->p;
        if (c == '"') {
            ps->p++;
            return 0;
        }
        if (c < 0x20) {
            ps->error = "control character in a string";
            return -1;
        }
        if (c != '\\') {
            const char *start = ps->p;
            while (ps->p < ps->end && *ps->p != '"' && *ps->p != '\\' &&
                   (unsigned char)*ps->p >= 0x20)
                ps->p++;
            if (out)
                tunep_buf_append(out, start, (size_t)(ps->p - start));
            continue;
        }
        ps->p++;
        if (ps->p >= ps->end) {
            ps->error = "unterminated string";
            return -1;
        }
        char e = *ps->p++;
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e && simple) {
            static const char decoded[] = "\"\\/\b\f\n\r\t";
            if (out)
                tunep_buf_append(out, &decoded[simple - "\"\\/bfnrt"], 1);
            continue;
        }
        if (e != 'u') {
            ps->error = "invalid escape in a string";
            return -1;
        }
        unsigned cp;
        if (read_hex4(ps, &cp)) {
            ps->error = "invalid \\u escape";
            return -1;
        }
        if (cp >= 0xD800 && cp < 0xDC00) {
            unsigned lo;
            if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u' ||
                (ps->p += 2, read_hex4(ps, &lo)) || lo < 0xDC00 || lo >= 0xE000) {
                ps->error = "invalid surrogate pair";
                return -1;
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xDC00 && cp < 0xE000) {
            ps->error = "invalid surrogate pair";
            return -1;
        }
        if (cp == 0)
            *has_nul = 1;
        if (out)
            put_utf8(out, cp);
    }
}

/* The extent of a JSON number (strict grammar) at ps->p; 0, or -1. */
static int scan_number(struct parser *ps)
{
    const char *p = ps->p;
    if (p < ps->end && *p == '-')
        p++;
    if (p < ps->end && *p == '0') {
        p++;
    } else if (p < ps->end && *p >= '1' && *p <= '9') {
        while (p < ps->end && *p >= '0' && *p <= '9')
            p++;
    } else {
        return -1;
    }
    if (p < ps->end && *p == '.') {
        p++;
        if (!(p < ps->end && *p >= '0' && *p <= '9'))
            return -1;
        while (p < ps->end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < ps->end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < ps->end && (*p == '+' || *p == '-'))
            p++;
        if (!(p < ps->end && *p >= '0' && *p <= '9'))
            return -1;
        while (p < ps->end && *p >= '0' && *p <= '9')
            p++;
    }
    ps->p = p;
    return 0;
}

static int literal(struct parser *ps, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) >= n && memcmp(ps->p, word, n) == 0) {
        ps->p += n;
        return 1;
    }
    return 0;
}

/* Skips any JSON value (a non-numeric one). 0, or -1 with ps->error. */
static int skip_value(struct parser *ps, int depth)
{
    if (depth > MAX_JSON_DEPTH) {
        ps->error = "nested too deeply";
        return -1;
    }
    skip_ws(ps);
    if (ps->p >= ps->end) {
        ps->error = "expected a value";
        return -1;
    }
    int nul = 0;
    char c = *ps->p;
    if (c == '"')
        return parse_string(ps, NULL, &nul);
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        ps->p++;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            return 0;
        }
        for (;;) {
            if (c == '{') {
                skip_ws(ps);
                if (ps->p >= ps->end || *ps->p != '"') {
                    ps->error = "expected a name in quotes";
                    return -1;
                }
                if (parse_string(ps, NULL, &nul))
                    return -1;
                skip_ws(ps);
                if (ps->p >= ps->end || *ps->p != ':') {
                    ps->error = "expected ':'";
                    return -1;
                }
                ps->p++;
            }
            if (skip_value(ps, depth + 1))
                return -1;
            skip_ws(ps);
            if (ps->p < ps->end && *ps->p == ',') {
                ps->p++;
                continue;
            }
            if (ps->p < ps->end && *ps->p == close) {
                ps->p++;
                return 0;
            }
            ps->error = c == '{' ? "expected ',' or '}'" : "expected ',' or ']'";
            return -1;
        }
    }
    if (literal(ps, "true") || literal(ps, "false") || literal(ps, "null"))
        return 0;
    if (scan_number(ps) == 0)
        return 0;
    ps->error = "expected a value";
    return -1;
}

/*
 * A number at ps->p, including Python's NaN, Infinity and -Infinity.
 * 1 with *ret set; 0 when the value there is not a number (not consumed).
 */
static int parse_number(struct run *r, struct parser *ps, double *ret)
{
    if (literal(ps, "NaN")) {
        *ret = (double)NAN;
        return 1;
    }
    if (literal(ps, "Infinity")) {
        *ret = (double)INFINITY;
        return 1;
    }
    if (literal(ps, "-Infinity")) {
        *ret = -(double)INFINITY;
        return 1;
    }
    const char *start = ps->p;
    if (scan_number(ps) != 0)
        return 0;
    size_t len = (size_t)(ps->p - start);
    char small[64];
    char *text = len < sizeof small ? small : tunep_strndup(start, len);
    if (!text) {
        *ret = (double)NAN; /* unreachable in practice: a number longer than 64 bytes, and OOM */
        return 1;
    }
    if (text == small) {
        memcpy(small, start, len);
        small[len] = '\0';
    }
    *ret = strtod_l(text, NULL, r->ct->c_locale);
    if (text != small)
        tunep_free(text);
    return 1;
}

/* Says once per attempt and kind that a report's entry was left out. */
static void warn_once(struct run *r, int *flag, const char *name, const char *why)
{
    if (*flag)
        return;
    *flag = 1;
    tunep_log(TUNE_LOG_WARN, "trial %lld: tune-report '%s' left out: %s (warned once per attempt)",
              (long long)tune_trial_id(r->t), name, why);
}

/* Keeps one metric of the report (the last value when a name repeats). 0, or -1 on OOM. */
static int add_metric(struct run *r, const char *name, double value)
{
    for (size_t i = 0; i < r->n_metrics; i++) {
        if (strcmp(r->arena.data + r->name_at[i], name) == 0) {
            r->values[i] = value;
            return 0;
        }
    }
    if (r->n_metrics == r->cap_metrics) {
        size_t cap = r->cap_metrics ? r->cap_metrics * 2 : 16;
        size_t *a = tunep_realloc(r->name_at, r->n_metrics * sizeof *a, cap * sizeof *a);
        if (!a)
            return -1;
        r->name_at = a;
        double *v = tunep_realloc(r->values, r->n_metrics * sizeof *v, cap * sizeof *v);
        if (!v)
            return -1;
        r->values = v;
        r->cap_metrics = cap;
    }
    size_t at = r->arena.len;
    tunep_buf_append(&r->arena, name, strlen(name) + 1);
    if (r->arena.oom)
        return -1;
    r->name_at[r->n_metrics] = at;
    r->values[r->n_metrics++] = value;
    return 0;
}

/* Reads the JSON object at text into r's metrics. 0, -1 (syntax, with ps->error), -2 (OOM). */
static int parse_report(struct run *r, const char *text, size_t len, struct parser *ps)
{
    ps->p = text;
    ps->end = text + len;
    ps->error = NULL;
    r->n_metrics = 0;
    r->arena.len = 0;
    struct tunep_buf name;
    tunep_buf_init(&name);
    int rc = -1;
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != '{') {
        ps->error = "expected a JSON object";
        goto out;
    }
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        goto end;
    }
    for (;;) {
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != '"') {
            ps->error = "expected a metric name in quotes";
            goto out;
        }
        int nul = 0;
        name.len = 0;
        if (parse_string(ps, &name, &nul))
            goto out;
        tunep_buf_append(&name, "", 1); /* NUL-terminate, even when empty */
        if (name.oom) {
            rc = -2;
            goto out;
        }
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != ':') {
            ps->error = "expected ':' after the name";
            goto out;
        }
        ps->p++;
        skip_ws(ps);
        double v;
        const char *key = name.data;
        if (!parse_number(r, ps, &v)) {
            if (skip_value(ps, 1))
                goto out;
            warn_once(r, &r->warned_value, key, "not a number");
        } else if (nul || name.len - 1 == 0 || name.len - 1 > TUNEP_MAX_METRIC_NAME) {
            warn_once(r, &r->warned_name, key, "the name is empty, too long or holds a NUL");
        } else if (strcmp(key, "training_iteration") == 0) {
            /* The engine numbers iterations itself; a program that counts differently is told. */
            if (v != (double)(tune_trial_iteration(r->t) + 1) && !r->warned_iteration) {
                r->warned_iteration = 1;
                tunep_log(TUNE_LOG_WARN,
                          "trial %lld: tune-report training_iteration %g is not the engine's "
                          "count (%lld); the engine's count is kept",
                          (long long)tune_trial_id(r->t), v,
                          (long long)(tune_trial_iteration(r->t) + 1));
            }
        } else if (tune_metric_name_reserved(key) && strncmp(key, "config/", 7) != 0) {
            /* A "config/..." name is left to the engine, which refuses the report. */
            warn_once(r, &r->warned_name, key, "the engine fills it in");
        } else if (r->n_metrics >= TUNE_REPORT_MAX_METRICS) {
            ps->error = "more than TUNE_REPORT_MAX_METRICS (4096) metrics";
            goto out;
        } else if (add_metric(r, key, v)) {
            rc = -2;
            goto out;
        }
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == '}') {
            ps->p++;
            break;
        }
        ps->error = "expected ',' or '}'";
        goto out;
    }
end:
    skip_ws(ps);
    if (ps->p != ps->end) {
        ps->error = "text after the object";
        goto out;
    }
    rc = 0;
out:
    tunep_buf_done(&name);
    return rc;
}

/* One report line's JSON: r's program reported; answers it and acts on the answer. */
static void on_report(struct run *r, const char *json, size_t len, int64_t line_no,
                      enum stream which)
{
    struct parser ps;
    int rc = parse_report(r, json, len, &ps);
    if (rc == -2) {
        tune_trial_set_error(r->t, "out of memory reading a report");
        r->status = TUNE_ENOMEM;
        stop_program(r, STOP_FAILED);
        return;
    }
    if (rc) {
        char detail[160];
        snprintf(detail, sizeof detail, "%s at byte %ld", ps.error, (long)(ps.p - json) + 1);
        fail_attempt(r, detail, line_no, which);
        return;
    }
    const char *names_small[16];
    const char **names =
        r->n_metrics <= 16 ? names_small : tunep_malloc(r->n_metrics * sizeof *names);
    if (!names) {
        tune_trial_set_error(r->t, "out of memory reading a report");
        r->status = TUNE_ENOMEM;
        stop_program(r, STOP_FAILED);
        return;
    }
    for (size_t i = 0; i < r->n_metrics; i++)
        names[i] = r->arena.data + r->name_at[i];
    tune_error rerr;
    tune_status st = tune_trial_report(r->t, r->n_metrics, names, r->values, &rerr);
    if (names != names_small)
        tunep_free((void *)names);
    if (st == TUNE_OK)
        return;
    if (st == TUNE_ESTOP) {
        stop_program(r, STOP_ANSWER);
        return;
    }
    /* The store failed (the study stops) or an argument the filters above missed. */
    if (st != TUNE_ESTORE)
        tune_trial_set_error(r->t, "report refused: %s", rerr.text);
    r->status = st;
    stop_program(r, STOP_FAILED);
}

/* The JSON part of a report line, or NULL for a log line. */
static const char *report_json(const char *line, size_t len, enum stream which)
{
    size_t plen = sizeof REPORT_PREFIX - 1;
    if (len > plen && memcmp(line, REPORT_PREFIX, plen) == 0 &&
        (line[plen] == ' ' || line[plen] == '\t')) {
        const char *p = line + plen;
        while (p < line + len && (*p == ' ' || *p == '\t'))
            p++;
        return p;
    }
    if (which == S_REP) {
        const char *p = line;
        while (p < line + len && (*p == ' ' || *p == '\t'))
            p++;
        if (p < line + len && *p == '{')
            return p;
    }
    return NULL;
}

static void on_line(struct run *r, enum stream which, const char *line, size_t len)
{
    struct line_reader *lr = &r->in[which];
    lr->line_no++;
    if (which != S_ERR) {
        const char *json = report_json(line, len, which);
        if (json) {
            /* After a stop the program may still report: the answer would be "stop" again. */
            if (r->stop == STOP_NONE)
                on_report(r, json, len - (size_t)(json - line), lr->line_no, which);
            return;
        }
    } else {
        size_t n = len;
        while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == ' '))
            n--;
        if (n > 0)
            snprintf(r->last_err, sizeof r->last_err, "%.*s", (int)n, line);
    }
    log_piece(r, which, line, len, 1);
}

/* Bytes from one of the program's pipes, split into lines. */
static void feed(struct run *r, enum stream which, const char *data, size_t n)
{
    struct line_reader *lr = &r->in[which];
    while (n > 0) {
        const char *nl = memchr(data, '\n', n);
        size_t take = nl ? (size_t)(nl - data) : n;
        if (lr->overlong) {
            if (!lr->discard)
                log_piece(r, which, data, take, nl != NULL);
            if (nl)
                lr->overlong = lr->discard = 0;
        } else if (lr->len + take <= MAX_LINE) {
            if (lr->len + take + 1 > lr->cap) {
                size_t cap = lr->cap ? lr->cap : 256;
                while (cap < lr->len + take + 1)
                    cap *= 2;
                char *b = tunep_realloc(lr->buf, lr->len, cap);
                if (!b) {
                    tune_trial_set_error(r->t, "out of memory reading %s", stream_names[which]);
                    r->status = TUNE_ENOMEM;
                    stop_program(r, STOP_FAILED);
                    return;
                }
                lr->buf = b;
                lr->cap = cap;
            }
            memcpy(lr->buf + lr->len, data, take);
            lr->len += take;
            if (nl) {
                on_line(r, which, lr->buf, lr->len);
                lr->len = 0;
            }
        } else {
            /* A line longer than MAX_LINE: a log line is logged in pieces, a report fails. */
            lr->line_no++;
            lr->overlong = !nl;
            if (which != S_ERR && lr->len > 0 && report_json(lr->buf, lr->len, which)) {
                fail_attempt(r, "longer than 1 MiB", lr->line_no, which);
                lr->discard = 1;
            } else {
                log_piece(r, which, lr->buf, lr->len, 0);
                log_piece(r, which, data, take, nl != NULL);
            }
            lr->len = 0;
            if (nl)
                lr->discard = 0;
        }
        if (!nl)
            break;
        data = nl + 1;
        n -= take + 1;
    }
}

/* End of file on one pipe: the last line may lack its newline. */
static void finish_stream(struct run *r, enum stream which)
{
    struct line_reader *lr = &r->in[which];
    if (lr->len > 0 && !lr->overlong)
        on_line(r, which, lr->buf, lr->len);
    else if (lr->overlong && !lr->discard)
        log_piece(r, which, "", 0, 1);
    lr->len = 0;
    close(lr->fd);
    lr->fd = -1;
}

/* ---- starting the program ------------------------------------------------- */

/* "NAME=value" strings for the program: tune's environment, the config's, then tune's own. */
static char **build_env(char *const *extra, size_t n_extra)
{
    size_t n_base = 0;
    while (environ && environ[n_base])
        n_base++;
    char **envp = tunep_calloc(n_base + n_extra + 1, sizeof *envp);
    if (!envp)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < n_base; i++) {
        const char *eq = strchr(environ[i], '=');
        size_t klen = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
        int replaced = 0;
        for (size_t j = 0; j < n_extra && !replaced; j++)
            replaced = strncmp(extra[j], environ[i], klen) == 0 && extra[j][klen] == '=';
        /* TUNE_* of tune's own environment would be the parent's: never passed on. */
        if (!replaced && strncmp(environ[i], "TUNE_", 5) != 0)
            envp[n++] = environ[i];
    }
    for (size_t j = 0; j < n_extra; j++)
        envp[n++] = extra[j];
    envp[n] = NULL;
    return envp;
}

/* The argument, shell-quoted when it needs to be, for the log's "attempt N: ..." line. */
static void shell_quote(struct tunep_buf *b, const char *arg)
{
    if (*arg && strspn(arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                            "_-+=/.,:@%") == strlen(arg)) {
        tunep_buf_puts(b, arg);
        return;
    }
    tunep_buf_puts(b, "'");
    for (const char *p = arg; *p; p++) {
        if (*p == '\'')
            tunep_buf_puts(b, "'\\''");
        else
            tunep_buf_append(b, p, 1);
    }
    tunep_buf_puts(b, "'");
}

/* Moves fd to a descriptor >= min (close-on-exec), closing the old one. -1 on failure. */
static int move_fd(int fd, int min)
{
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, min);
    int saved = errno;
    close(fd);
    errno = saved;
    return moved;
}

/* Closes [lo, hi] in the child: only async-signal-safe calls between fork and exec. */
static void close_range_child(int lo, int hi, int max_fd)
{
    if (lo > hi)
        return;
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)lo, (unsigned)hi, 0u) == 0)
        return;
#endif
    for (int fd = lo; fd <= hi && fd < max_fd; fd++)
        close(fd);
}

/* The child, between fork and execve: async-signal-safe calls only. Never returns. */
static void child_exec(const char *path, char *const argv[], char *const envp[], const char *cwd,
                       int devnull, int out_w, int err_w, int rep_w, int rep_fd, int exec_w,
                       int max_fd, pid_t tune_pid)
{
    setpgid(0, 0);
#ifdef __linux__
    /* If tune dies (SIGKILL, a crash), so does the program: `tune resume` runs the
     * trial again, and an orphan would train on, holding its cores or GPU. The
     * signal comes when the forking thread ends, which is never before it reaped
     * the program (the objective waits for it). */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != tune_pid)
        _exit(127); /* tune died before prctl: exit-lint-ok */
#else
    (void)tune_pid;
#endif
    /* The worker thread's blocked signals and ignored ones must not reach the program. */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < 32; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            sigaction(sig, &dfl, NULL);
    int err = 0;
    /* Every source is above rep_fd (move_fd), so these never overwrite each other. */
    if (dup2(devnull, 0) < 0 || dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0 || dup2(rep_w, rep_fd) < 0)
        err = errno;
    if (!err && cwd && chdir(cwd) != 0)
        err = errno;
    if (!err) {
        close_range_child(3, rep_fd - 1, max_fd);
        close_range_child(rep_fd + 1, exec_w - 1, max_fd);
        close_range_child(exec_w + 1, ~0u >> 1, max_fd);
        execve(path, argv, envp);
        err = errno;
    }
    ssize_t w = write(exec_w, &err, sizeof err);
    (void)w;
    _exit(127); /* the forked child, never the caller's process: exit-lint-ok */
}

/* ---- the objective --------------------------------------------------------- */

static void run_done(struct run *r)
{
    for (int i = 0; i < S_COUNT; i++) {
        if (r->in[i].fd >= 0)
            close(r->in[i].fd);
        tunep_free(r->in[i].buf);
    }
    for (int i = 0; i < 2; i++)
        if (r->log_fd[i] >= 0)
            close(r->log_fd[i]);
    tunep_buf_done(&r->arena);
    tunep_free(r->name_at);
    tunep_free(r->values);
}

/* Opens the trial folder's log files (appending: every attempt adds to them). */
static void open_logs(struct run *r)
{
    const char *dir = tune_trial_dir(r->t);
    static const char *const names[2] = {"stdout.log", "stderr.log"};
    for (int i = 0; i < 2; i++) {
        r->log_fd[i] = -1;
        if (!dir)
            continue;
        char *path = tunep_asprintf("%s/%s", dir, names[i]);
        if (path)
            r->log_fd[i] = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (r->log_fd[i] < 0)
            tunep_log(TUNE_LOG_WARN, "trial %lld: cannot open %s/%s: %s; its lines go to the log",
                      (long long)tune_trial_id(r->t), dir, names[i], strerror(errno));
        tunep_free(path);
    }
}

/* A line of tune's own in stderr.log ("[tune] attempt 2: ..."), so retries can be told apart. */
static void note(struct run *r, const char *text)
{
    if (r->log_fd[1] < 0)
        return;
    char *line = tunep_asprintf("[tune] attempt %d: %s\n", tune_trial_attempt(r->t), text);
    if (line)
        write_all(r->log_fd[1], line, strlen(line));
    tunep_free(line);
}

/* Builds argv, the environment and the program's path; 0, or -1 with the trial's error set. */
static int prepare(struct run *r, char ***ret_argv, char ***ret_extra, size_t *ret_n_extra,
                   char **ret_path)
{
    const struct command_config *cfg = r->ct->cfg;
    tune_trial *t = r->t;
    char **argv = tunep_calloc(cfg->argv.n + 1, sizeof *argv);
    size_t n_extra = cfg->env.n + 12;
    char **extra = tunep_calloc(n_extra + 1, sizeof *extra);
    char *params = NULL;
    char bad[TUNEP_SPACE_MAX_NAME + 64];
    int rc = -1;
    *ret_argv = argv;
    *ret_extra = extra;
    if (!argv || !extra)
        goto oom;
    for (size_t i = 0; i < cfg->argv.n; i++) {
        struct tunep_buf b;
        tunep_buf_init(&b);
        int e = tunep_command_expand(cfg->argv.v[i], trial_placeholder, t, &b, bad, sizeof bad);
        argv[i] = tunep_buf_take(&b);
        if (e) {
            /* Validation accepted every placeholder: this one is an absent parameter. */
            tune_trial_set_error(t, "trainer.argv[%zu]: " ABSENT_PLACEHOLDER, i, bad);
            return -1;
        }
        if (!argv[i])
            goto oom;
    }
    size_t n = 0;
    const char *path_env = NULL;
    int have_unbuffered = getenv("PYTHONUNBUFFERED") != NULL;
    /* The thread variables of "cpu" unless trainer.env sets them; the placement's
     * CUDA_VISIBLE_DEVICES over any other, so the program sees only its GPUs. */
    static const char *const thread_vars[] = {"OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                              "OPENBLAS_NUM_THREADS"};
    int set_threads[3] = {r->ct->cpu > 0, r->ct->cpu > 0, r->ct->cpu > 0};
    const char *gpu_ids = tune_trial_gpu_count(t) > 0 ? tune_trial_gpu_ids(t) : NULL;
    for (size_t i = 0; i < cfg->env.n; i++) {
        for (int k = 0; k < 3; k++)
            if (strcmp(cfg->env.names[i], thread_vars[k]) == 0)
                set_threads[k] = 0;
        if (gpu_ids && strcmp(cfg->env.names[i], "CUDA_VISIBLE_DEVICES") == 0)
            continue;
        struct tunep_buf b;
        tunep_buf_init(&b);
        tunep_buf_printf(&b, "%s=", cfg->env.names[i]);
        int e = tunep_command_expand(cfg->env.values[i], trial_placeholder, t, &b, bad, sizeof bad);
        extra[n] = tunep_buf_take(&b);
        if (e) {
            tune_trial_set_error(t, "trainer.env.%s: " ABSENT_PLACEHOLDER, cfg->env.names[i], bad);
            return -1;
        }
        if (!extra[n])
            goto oom;
        if (strcmp(cfg->env.names[i], "PATH") == 0)
            path_env = extra[n] + 5;
        if (strcmp(cfg->env.names[i], "PYTHONUNBUFFERED") == 0)
            have_unbuffered = 1;
        n++;
    }
    if (tune_trial_config_json(t, &params, NULL) != TUNE_OK)
        goto oom;
    const char *dir = tune_trial_dir(t);
    if (!(extra[n++] = tunep_asprintf("TUNE_TRIAL_PARAMS=%s", params)) ||
        !(extra[n++] = tunep_asprintf("TUNE_TRIAL_ID=%lld", (long long)tune_trial_id(t))) ||
        !(extra[n++] = tunep_asprintf("TUNE_TRIAL_ATTEMPT=%d", tune_trial_attempt(t))) ||
        !(extra[n++] =
              tunep_asprintf("TUNE_TRIAL_SEED=%llu", (unsigned long long)tune_trial_seed(t))) ||
        !(extra[n++] = tunep_asprintf("TUNE_REPORT_FD=%d", cfg->report_fd)) ||
        (dir && !(extra[n++] = tunep_asprintf("TUNE_TRIAL_DIR=%s", dir))) ||
        (!have_unbuffered && !(extra[n++] = tunep_strdup("PYTHONUNBUFFERED=1"))) ||
        (gpu_ids && !(extra[n++] = tunep_asprintf("CUDA_VISIBLE_DEVICES=%s", gpu_ids))))
        goto oom;
    for (int k = 0; k < 3; k++)
        if (set_threads[k] && !(extra[n++] = tunep_asprintf("%s=%d", thread_vars[k], r->ct->cpu)))
            goto oom;
    *ret_n_extra = n;
    char why[600];
    int f = tunep_command_find_program(argv[0], cfg->cwd, path_env, ret_path, why, sizeof why);
    if (f == -2)
        goto oom;
    if (f) {
        tune_trial_set_error(t, "cannot run the command: %s", why);
        goto out;
    }
    rc = 0;
    goto out;
oom:
    tune_trial_set_error(t, "out of memory starting the command");
    rc = -2;
out:
    tune_free(params);
    return rc;
}

/* Frees a NULL-terminated array of strings (filled in order, so the first NULL ends it). */
static void free_strings(char **v)
{
    if (!v)
        return;
    for (size_t i = 0; v[i]; i++)
        tunep_free(v[i]);
    tunep_free(v);
}

/* Starts the program; 0, or -1 with the trial's error set. */
static int start(struct run *r, const char *path, char **argv, char **envp)
{
    const struct command_config *cfg = r->ct->cfg;
    int p_out[2] = {-1, -1}, p_err[2] = {-1, -1}, p_rep[2] = {-1, -1}, p_exec[2] = {-1, -1};
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int ok = devnull >= 0 && pipe2(p_out, O_CLOEXEC) == 0 && pipe2(p_err, O_CLOEXEC) == 0 &&
             pipe2(p_rep, O_CLOEXEC) == 0 && pipe2(p_exec, O_CLOEXEC) == 0;
    /* The child's ends above report_fd, so its dup2() calls cannot clobber one another. */
    int min = cfg->report_fd + 1;
    if (ok) {
        devnull = move_fd(devnull, min);
        p_out[1] = move_fd(p_out[1], min);
        p_err[1] = move_fd(p_err[1], min);
        p_rep[1] = move_fd(p_rep[1], min);
        p_exec[1] = move_fd(p_exec[1], min);
        ok = devnull >= 0 && p_out[1] >= 0 && p_err[1] >= 0 && p_rep[1] >= 0 && p_exec[1] >= 0;
    }
    long open_max = sysconf(_SC_OPEN_MAX);
    int max_fd = open_max > 0 && open_max < 65536 ? (int)open_max : 65536;
    pid_t pid = -1, tune_pid = getpid();
    int saved = 0;
    if (ok) {
        pid = fork();
        saved = errno;
        if (pid == 0)
            child_exec(path, argv, envp, cfg->cwd, devnull, p_out[1], p_err[1], p_rep[1],
                       cfg->report_fd, p_exec[1], max_fd, tune_pid);
    } else {
        saved = errno;
    }
    int child_side[5] = {devnull, p_out[1], p_err[1], p_rep[1], p_exec[1]};
    for (int i = 0; i < 5; i++)
        if (child_side[i] >= 0)
            close(child_side[i]);
    if (pid < 0) {
        int ours[4] = {p_out[0], p_err[0], p_rep[0], p_exec[0]};
        for (int i = 0; i < 4; i++)
            if (ours[i] >= 0)
                close(ours[i]);
        tune_trial_set_error(r->t, "cannot start the command: %s", strerror(saved));
        return -1;
    }
    setpgid(pid, pid); /* also here, so no signal can miss the group (EACCES after exec is fine) */
    r->pid = pid;
    r->in[S_OUT].fd = p_out[0];
    r->in[S_ERR].fd = p_err[0];
    r->in[S_REP].fd = p_rep[0];
    /* The exec pipe closes at execve (close-on-exec) or carries the child's errno. */
    int child_errno = 0;
    ssize_t got;
    do {
        got = read(p_exec[0], &child_errno, sizeof child_errno);
    } while (got < 0 && errno == EINTR);
    close(p_exec[0]);
    if (got == (ssize_t)sizeof child_errno) {
        int wstatus;
        while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
        }
        r->pid = 0;
        tune_trial_set_error(r->t, "cannot run '%s': %s", argv[0], strerror(child_errno));
        return -1;
    }
    return 0;
}

/* Has the program (the group's leader) exited? Left a zombie, so its pid stays the group's. */
static int leader_exited(pid_t pid)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0)
        return errno == ECHILD; /* reaped behind our back (SIGCHLD ignored): gone */
    return si.si_pid == pid;
}

/* Reads the program's pipes until it has exited; acts on reports, stops and timeouts. */
static void supervise(struct run *r)
{
    int exited = 0;
    double exit_at = 0;
    char chunk[65536];
    for (;;) {
        double now = tunep_now_monotonic();
        if (!exited && leader_exited(r->pid)) {
            exited = 1;
            exit_at = now;
            kill(-r->pid, SIGKILL); /* whatever it left running in its group */
        }
        int open_fds = 0;
        for (int i = 0; i < S_COUNT; i++)
            open_fds += r->in[i].fd >= 0;
        if (exited && (open_fds == 0 || now - exit_at > DRAIN_S))
            break;
        if (!exited) {
            if (r->stop != STOP_NONE && !r->killed && now >= r->kill_at) {
                kill(-r->pid, SIGKILL);
                r->killed = 1;
            }
            if (r->stop == STOP_NONE && tune_trial_should_stop(r->t))
                stop_program(r, STOP_INTERRUPT);
            if (r->stop == STOP_NONE && tune_trial_time_left(r->t) < 0) {
                tune_trial_set_error(r->t, "timed out after %g s (trial_timeout_s)",
                                     tune_trial_timeout_s(r->t));
                r->status = TUNE_EFAILED;
                stop_program(r, STOP_TIMEOUT);
            }
        }
        struct pollfd pfd[S_COUNT];
        int which[S_COUNT], n = 0;
        for (int i = 0; i < S_COUNT; i++) {
            if (r->in[i].fd >= 0) {
                pfd[n].fd = r->in[i].fd;
                pfd[n].events = POLLIN;
                pfd[n].revents = 0;
                which[n++] = i;
            }
        }
        /* Pipes wake us for output and end of file; the exit itself, stops and deadlines
         * are looked at every 20 ms once the pipes are closed, else every 100 ms. */
        int timeout_ms = n == 0 || exited ? 20 : 100;
        if (r->stop != STOP_NONE && !r->killed) {
            double left = r->kill_at - now;
            if (left * 1000 < timeout_ms)
                timeout_ms = left > 0 ? (int)(left * 1000) + 1 : 0;
        }
        int pr = poll(n ? pfd : NULL, (nfds_t)n, timeout_ms);
        if (pr < 0 && errno != EINTR) {
            /* Cannot watch it any more: end it rather than wait for it blind. */
            kill(-r->pid, SIGKILL);
            r->killed = 1;
            break;
        }
        for (int k = 0; pr > 0 && k < n; k++) {
            if (!(pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            enum stream st = (enum stream)which[k];
            ssize_t got = read(r->in[st].fd, chunk, sizeof chunk);
            if (got < 0 && (errno == EINTR || errno == EAGAIN))
                continue;
            if (got <= 0)
                finish_stream(r, st);
            else
                feed(r, st, chunk, (size_t)got);
        }
    }
}

static tune_status command_objective(tune_trial *trial, void *user_data)
{
    struct run run;
    struct run *r = &run;
    memset(r, 0, sizeof *r);
    r->ct = user_data;
    r->t = trial;
    for (int i = 0; i < S_COUNT; i++)
        r->in[i].fd = -1;
    tunep_buf_init(&r->arena);
    open_logs(r);

    const struct command_config *cfg = r->ct->cfg;
    char **argv = NULL, **extra = NULL, **envp = NULL;
    size_t n_extra = 0;
    char *path = NULL;
    tune_status ret = TUNE_EFAILED;
    int p = prepare(r, &argv, &extra, &n_extra, &path);
    if (p) {
        ret = p == -2 ? TUNE_ENOMEM : TUNE_EFAILED;
        goto out;
    }
    envp = build_env(extra, n_extra);
    if (!envp) {
        tune_trial_set_error(trial, "out of memory starting the command");
        ret = TUNE_ENOMEM;
        goto out;
    }
    struct tunep_buf line;
    tunep_buf_init(&line);
    for (size_t i = 0; i < cfg->argv.n; i++) {
        if (i)
            tunep_buf_puts(&line, " ");
        shell_quote(&line, argv[i]);
    }
    if (line.data)
        note(r, line.data);
    tunep_buf_done(&line);
    if (start(r, path, argv, envp)) {
        note(r, tune_trial_error(trial));
        goto out;
    }
    supervise(r);

    int wstatus = 0;
    pid_t w;
    while ((w = waitpid(r->pid, &wstatus, 0)) < 0 && errno == EINTR) {
    }
    if (r->stop == STOP_FAILED || r->stop == STOP_TIMEOUT) {
        ret = r->status;
    } else if (r->stop == STOP_ANSWER || r->stop == STOP_INTERRUPT) {
        /* Stopped by tune: however it ended is not a failure; an interrupted
         * trial goes back to PENDING. */
        ret = r->stop == STOP_INTERRUPT ? TUNE_EINTERRUPTED : TUNE_OK;
    } else if (w < 0 || (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0)) {
        ret = TUNE_OK; /* w < 0: reaped elsewhere (SIGCHLD ignored); its status is lost */
    } else {
        char how[96];
        if (WIFSIGNALED(wstatus))
            snprintf(how, sizeof how, "command killed by signal %d (%s)", WTERMSIG(wstatus),
                     strsignal(WTERMSIG(wstatus)));
        else
            snprintf(how, sizeof how, "command exited with status %d", WEXITSTATUS(wstatus));
        if (r->last_err[0])
            tune_trial_set_error(trial, "%s (stderr: %s)", how, r->last_err);
        else
            tune_trial_set_error(trial, "%s", how);
        ret = TUNE_EFAILED;
    }
    if (ret != TUNE_OK && ret != TUNE_EINTERRUPTED)
        note(r, tune_trial_error(trial));
    else if (r->stop == STOP_ANSWER)
        note(r, r->killed ? "stopped (SIGTERM, then SIGKILL after kill_grace_s)"
                          : "stopped (SIGTERM)");
    else if (r->stop == STOP_INTERRUPT)
        note(r, "interrupted: the study is stopping");
out:
    free_strings(argv);
    free_strings(extra);
    tunep_free(envp);
    tunep_free(path);
    run_done(r);
    return ret;
}

/* ---- the config ----------------------------------------------------------- */

/* Placeholder lookups at validation time: the name must be a parameter or a built-in. */
static int known_placeholder(void *ud, const char *name, struct tunep_buf *out)
{
    const struct tunep_trainer_check_ctx *ctx = ud;
    (void)out;
    if (strcmp(name, "trial_id") == 0 || strcmp(name, "trial_dir") == 0)
        return 0;
    for (size_t i = 0; i < ctx->n_params; i++)
        if (strcmp(ctx->param_names[i], name) == 0)
            return 0;
    return -1;
}

/* One argv or env template (at path): every placeholder must name a parameter. */
static tune_status check_template(const char *path, const char *tmpl,
                                  const struct tunep_trainer_check_ctx *ctx,
                                  struct tunep_opt_error *e)
{
    char bad[512];
    struct tunep_buf scratch;
    tunep_buf_init(&scratch);
    int r = tunep_command_expand(tmpl, known_placeholder, (void *)ctx, &scratch, bad, sizeof bad);
    tunep_buf_done(&scratch);
    if (r == -2)
        return tunep_opt_fail(e, path, 0,
                              "unterminated placeholder '%s' (write '{{' for a literal '{')", bad);
    if (r == 0)
        return TUNE_OK;
    const char *best = NULL;
    size_t best_d = 3;
    struct tunep_buf list;
    tunep_buf_init(&list);
    for (size_t i = 0; i < ctx->n_params; i++) {
        size_t d = tunep_edit_distance(bad, ctx->param_names[i]);
        if (d < best_d) {
            best_d = d;
            best = ctx->param_names[i];
        }
        tunep_buf_printf(&list, "%s, ", ctx->param_names[i]);
    }
    tune_status st;
    if (best)
        st = tunep_opt_fail(e, path, 0, "unknown placeholder '{%s}' (did you mean '{%s}'?)", bad,
                            best);
    else
        st = tunep_opt_fail(e, path, 0,
                            "unknown placeholder '{%s}' (expected a parameter: %strial_id or "
                            "trial_dir; write '{{' for a literal '{')",
                            bad, list.data ? list.data : "");
    tunep_buf_done(&list);
    return st;
}

static tune_status command_check(void *vcfg, const struct tunep_trainer_check_ctx *ctx,
                                 struct tunep_opt_error *e)
{
    const struct command_config *cmd = vcfg;
    if (!cmd->argv.v)
        return tunep_opt_fail(e, "", 0,
                              "missing key 'argv' (the program and its arguments, e.g. "
                              "[\"python3\", \"train.py\", \"--lr\", \"{lr}\"])");
    if (!strchr(cmd->argv.v[0], '{')) {
        /* A program that is not there fails every trial: say so before the first. */
        const char *path_env = NULL;
        for (size_t i = 0; i < cmd->env.n; i++)
            if (strcmp(cmd->env.names[i], "PATH") == 0)
                path_env = cmd->env.values[i];
        char why[600];
        char *found = NULL;
        int r =
            tunep_command_find_program(cmd->argv.v[0], cmd->cwd, path_env, &found, why, sizeof why);
        tunep_free(found);
        if (r == -2)
            return tunep_opt_oom(e);
        if (r)
            return tunep_opt_fail(e, "argv[0]", 0, "%s", why);
    }
    char path[sizeof e->path];
    for (size_t i = 0; i < cmd->argv.n; i++) {
        snprintf(path, sizeof path, "argv[%zu]", i);
        tune_status st = check_template(path, cmd->argv.v[i], ctx, e);
        if (st)
            return st;
    }
    for (size_t i = 0; i < cmd->env.n; i++) {
        snprintf(path, sizeof path, "env.%s", cmd->env.names[i]);
        tune_status st = check_template(path, cmd->env.values[i], ctx, e);
        if (st)
            return st;
    }
    return TUNE_OK;
}

const struct tunep_trainer_type tunep_trainer_command = {
    .name = "command",
    .options = command_options,
    .config_size = sizeof(struct command_config),
    .check = command_check,
    .create = command_create,
    .prepare = command_prepare,
    .objective = command_objective,
    .resources = command_resources,
    .free = command_free,
    .own_process = 1,
    .uses_cpu = 1,
    .uses_gpu = 1,
    .multi_gpu = 1,
};
