/*
 * plugin.c - "type": "plugin": the objective is a tune_objective_fn in a
 * shared library, loaded with dlopen() once per study.
 *
 *   "trainer": {"type": "plugin", "library": "./libobjective.so",
 *               "symbol": "my_objective", "init_symbol": "my_init",
 *               "fini_symbol": "my_fini", "data": {"any": "json"}}
 *
 * When the study is created, a forked child loads the library and looks its
 * symbols up, so `tune validate` and study creation report a missing library
 * or symbol (TUNE_ECONFIG at the key, with dlerror()'s text) before anything
 * runs or is written, and a constructor that crashes, exits or hangs fails
 * that check instead of the validating process. The library is loaded into
 * tune's own process before the first trial (so its constructors run twice in
 * a sweep: once in the child, once for real). The optional init function runs
 * once before the first trial:
 *   tune_status init(const char *data_json, void **ret_user_data, tune_error *err)
 * gets "data" as compact JSON text (NULL when absent) and returns the
 * user_data every call of the objective gets; the optional fini function
 *   void fini(void *user_data)
 * runs when the study is freed. Without init_symbol the objective's
 * user_data is the data text itself (a const char *, or NULL).
 * The plugin calls the public API (tune.h) of the program that loaded it:
 * that program exports it (`tune` is linked with --export-dynamic; a C
 * program links libtune.so, or libtune.a with -rdynamic). The library is
 * opened RTLD_NOW, so an unresolved symbol is an error at load, not a crash
 * in the middle of a sweep.
 */
#include "trainer.h"

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The trainer's section. */
struct plugin_config {
    char *library, *symbol;
    char *init_symbol, *fini_symbol; /* NULL: none */
    char *data;                      /* "data" as compact JSON text; NULL when absent */
    struct tunep_opt_pos pos[4];     /* of library, symbol, init_symbol, fini_symbol, for errors */
};

#define POS(i) (1 + offsetof(struct plugin_config, pos) + (i) * sizeof(struct tunep_opt_pos))
static const struct tunep_option plugin_options[] = {
    {.name = "library",
     .type = TUNEP_OPT_STRING,
     .offset = offsetof(struct plugin_config, library),
     .hi = 4000,
     .pos_offset = POS(0)},
    {.name = "symbol",
     .type = TUNEP_OPT_STRING,
     .offset = offsetof(struct plugin_config, symbol),
     .hi = 255,
     .pos_offset = POS(1)},
    {.name = "init_symbol",
     .type = TUNEP_OPT_STRING,
     .offset = offsetof(struct plugin_config, init_symbol),
     .hi = 255,
     .pos_offset = POS(2)},
    {.name = "fini_symbol",
     .type = TUNEP_OPT_STRING,
     .offset = offsetof(struct plugin_config, fini_symbol),
     .hi = 255,
     .pos_offset = POS(3)},
    {.name = "data", .type = TUNEP_OPT_JSON, .offset = offsetof(struct plugin_config, data)},
    {0},
};
#undef POS

static tune_status plugin_check(void *vcfg, const struct tunep_trainer_check_ctx *ctx,
                                struct tunep_opt_error *e)
{
    struct plugin_config *p = vcfg;
    (void)ctx;
    const char *const keys[3] = {"symbol", "init_symbol", "fini_symbol"};
    const char *const names[3] = {p->symbol, p->init_symbol, p->fini_symbol};
    for (int i = 0; i < 3; i++)
        if (names[i] && !tunep_is_identifier(names[i]))
            return tunep_opt_fail(e, keys[i], 0, "expected a C identifier (the function's name)");
    if (!p->library)
        return tunep_opt_fail(
            e, "", 0, "missing key 'library' (a shared library, e.g. \"./libobjective.so\")");
    if (!p->symbol)
        return tunep_opt_fail(e, "", 0,
                              "missing key 'symbol' (the tune_objective_fn's name in the library)");
    return TUNE_OK;
}

typedef tune_status (*plugin_init_fn)(const char *data_json, void **ret_user_data, tune_error *err);
typedef void (*plugin_fini_fn)(void *user_data);

struct plugin {
    const struct plugin_config *cfg; /* borrowed from the study's config */
    char *source;                    /* the config's name, for errors in prepare() */
    void *handle;                    /* NULL until prepare() */
    tune_objective_fn fn;
    plugin_init_fn init; /* NULL: none */
    plugin_fini_fn fini; /* NULL: none */
    void *user_data;
    int inited; /* init ran and succeeded: fini is owed */
};

/* ISO C has no conversion from void * to a function pointer; POSIX guarantees the bytes are one. */
static void *lookup(void *handle, const char *name, void *fn_ptr, size_t fn_size)
{
    void *sym = dlsym(handle, name);
    if (sym)
        memcpy(fn_ptr, &sym, fn_size);
    return sym;
}

/*
 * dlerror()'s text without the library's name in front (the message names it
 * already), plus a hint when the plugin needs the API its host did not export.
 */
static void load_error(const char *library, char *buf, size_t size)
{
    const char *why = dlerror(); /* thread-local in glibc */
    if (!why)
        why = "unknown error";
    size_t n = strlen(library);
    if (strncmp(why, library, n) == 0 && strncmp(why + n, ": ", 2) == 0)
        why += n + 2;
    snprintf(buf, size, "%s%s", why,
             strstr(why, "undefined symbol: tune_")
                 ? " (the program loading the plugin must export libtune's API: link it "
                   "with -rdynamic or against libtune.so)"
                 : "");
}

/* dlopen()s cfg->library into p and looks its symbols up; errors at their keys. */
static tune_status load(struct plugin *p, const char *source, tune_error *err)
{
    const struct plugin_config *cfg = p->cfg;
    char why[400];
    dlerror(); /* clear a stale message */
    p->handle = dlopen(cfg->library, RTLD_NOW | RTLD_LOCAL);
    if (!p->handle) {
        load_error(cfg->library, why, sizeof why);
        return tunep_error_set_at(err, TUNE_ECONFIG, source, cfg->pos[0].line, cfg->pos[0].column,
                                  "trainer.library: cannot load '%s': %s", cfg->library, why);
    }
    const char *const keys[3] = {"symbol", "init_symbol", "fini_symbol"};
    const char *const names[3] = {cfg->symbol, cfg->init_symbol, cfg->fini_symbol};
    void *const slots[3] = {&p->fn, &p->init, &p->fini};
    const size_t sizes[3] = {sizeof p->fn, sizeof p->init, sizeof p->fini};
    for (int i = 0; i < 3; i++) {
        if (!names[i])
            continue;
        dlerror();
        if (!lookup(p->handle, names[i], slots[i], sizes[i])) {
            load_error(cfg->library, why, sizeof why);
            tune_status st = tunep_error_set_at(
                err, TUNE_ECONFIG, source, cfg->pos[i + 1].line, cfg->pos[i + 1].column,
                "trainer.%s: '%s' is not in '%s' (%s)", keys[i], names[i], cfg->library, why);
            dlclose(p->handle);
            p->handle = NULL;
            return st;
        }
    }
    return TUNE_OK;
}

/* A constructor that hangs must not hang `tune validate`: the probe's limit. */
#define PROBE_TIMEOUT_MS 60000

/*
 * load() in a forked child, so that the library's constructors run there and
 * not in the process that creates the study (`tune validate` must survive a
 * constructor that crashes, exits or hangs). The child sends its tune_error
 * back through a pipe; a child that dies before sending it names how. When
 * no child can be made, the check waits for prepare() (which loads in-process).
 */
static tune_status probe(const struct plugin_config *cfg, const char *source, tune_error *err)
{
    int fds[2];
    if (pipe(fds) != 0)
        return TUNE_OK;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return TUNE_OK;
    }
    if (pid == 0) {
        close(fds[0]);
        struct plugin tmp = {.cfg = cfg};
        tune_error e;
        memset(&e, 0, sizeof e);
        e.code = load(&tmp, source, &e);
        ssize_t n = write(fds[1], &e, sizeof e);
        int code = n == (ssize_t)sizeof e ? 0 : 1;
        _exit(code); /* the forked child, never the caller's process: exit-lint-ok */
    }
    close(fds[1]);
    tune_error e;
    size_t got = 0;
    int timed_out = 0;
    while (got < sizeof e) {
        struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
        int r = poll(&pfd, 1, PROBE_TIMEOUT_MS);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0) {
            timed_out = 1;
            kill(pid, SIGKILL);
            break;
        }
        ssize_t n = r > 0 ? read(fds[0], (char *)&e + got, sizeof e - got) : -1;
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fds[0]);
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
        ;
    if (got == sizeof e) {
        if (e.code == TUNE_OK)
            return TUNE_OK;
        if (err)
            *err = e;
        return e.code;
    }
    const int line = cfg->pos[0].line, col = cfg->pos[0].column;
    if (timed_out)
        return tunep_error_set_at(err, TUNE_ECONFIG, source, line, col,
                                  "trainer.library: loading '%s' did not finish within %d s (its "
                                  "constructors hang)",
                                  cfg->library, PROBE_TIMEOUT_MS / 1000);
    if (WIFSIGNALED(ws))
        return tunep_error_set_at(err, TUNE_ECONFIG, source, line, col,
                                  "trainer.library: loading '%s' crashed (signal %d: %s)",
                                  cfg->library, WTERMSIG(ws), strsignal(WTERMSIG(ws)));
    return tunep_error_set_at(err, TUNE_ECONFIG, source, line, col,
                              "trainer.library: loading '%s' ended the process (exit status %d)",
                              cfg->library, WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
}

/*
 * Checks that the library loads and has its symbols, in a child process
 * (probe()), when the study is created: `tune validate` reports a missing
 * library or symbol at its key without running any of the plugin's code in
 * its own process. The library is loaded for real by prepare().
 */
static tune_status plugin_create(const void *vcfg, const char *source, void **ret_state,
                                 tune_error *err)
{
    const struct plugin_config *cfg = vcfg;
    if (!source)
        source = "<string>";
    tune_status st = probe(cfg, source, err);
    if (st)
        return st;
    struct plugin *p = tunep_calloc(1, sizeof *p);
    if (!p)
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    p->cfg = cfg;
    if (!(p->source = tunep_strdup(source))) {
        tunep_free(p);
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    }
    *ret_state = p;
    return TUNE_OK;
}

/* Calls init_symbol (once) before the first trial. */
static tune_status plugin_prepare(void *state, const struct tunep_trainer_env *env, tune_error *err)
{
    struct plugin *p = state;
    (void)env;
    tune_status st;
    if (!p->handle && (st = load(p, p->source, err)))
        return st;
    if (!p->init) {
        p->user_data = (void *)p->cfg->data;
        return TUNE_OK;
    }
    if (p->inited)
        return TUNE_OK;
    tune_error e = {0};
    void *ud = NULL;
    st = p->init(p->cfg->data, &ud, &e);
    if (st != TUNE_OK) {
        if (st < 0 || st >= TUNE_STATUS_COUNT)
            st = TUNE_EFAILED;
        return tunep_error_set(err, st, "trainer.init_symbol: '%s' failed: %s", p->cfg->init_symbol,
                               e.text[0] ? e.text : tune_strerror(st));
    }
    p->user_data = ud;
    p->inited = 1;
    return TUNE_OK;
}

/* Calls fini_symbol when init ran, then dlclose()s. */
static void plugin_free(void *state)
{
    struct plugin *p = state;
    if (!p)
        return;
    if (p->inited && p->fini)
        p->fini(p->user_data);
    if (p->handle)
        dlclose(p->handle);
    tunep_free(p->source);
    tunep_free(p);
}

static tune_status plugin_objective(tune_trial *trial, void *user_data)
{
    struct plugin *p = user_data;
    return p->fn(trial, p->user_data);
}

const struct tunep_trainer_type tunep_trainer_plugin = {
    .name = "plugin",
    .options = plugin_options,
    .config_size = sizeof(struct plugin_config),
    .check = plugin_check,
    .create = plugin_create,
    .prepare = plugin_prepare,
    .objective = plugin_objective,
    .free = plugin_free,
    /* Its objective reads the GPUs placed for it with tune_trial_gpu(). */
    .uses_gpu = 1,
    .multi_gpu = 1,
};
