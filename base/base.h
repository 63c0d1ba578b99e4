/*
 * internal.h - declarations shared between libtune's modules, never installed.
 *
 * Private cross-module symbols are prefixed tunep_ (as jansson's jsonp_) and
 * have hidden visibility; only TUNE_API symbols from tune.h are exported.
 */
#ifndef TUNE_INTERNAL_H
#define TUNE_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "tune.h"

#if defined(__GNUC__)
#define TUNEP_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TUNEP_PRINTF(a, b)
#endif

/* ---- limits every layer agrees on --------------------------------------- */

#define TUNEP_SPACE_MAX_NAME  255 /* a parameter's (flattened) name, in bytes */
#define TUNEP_MAX_METRIC_NAME 128 /* a metric's name, in bytes */

/* ---- status.c: errors ---------------------------------------------------- */

/*
 * Fills err (when not NULL) with code, no position, and the formatted text,
 * then returns code, so that `return tunep_error_set(err, TUNE_EIO, ...)` sets
 * and returns in one statement.
 */
tune_status tunep_error_set(tune_error *err, tune_status code, const char *fmt, ...)
    TUNEP_PRINTF(3, 4);
/* As tunep_error_set() with a source and a position (0 for none). */
tune_status tunep_error_set_at(tune_error *err, tune_status code, const char *source, int line,
                               int column, const char *fmt, ...) TUNEP_PRINTF(6, 7);
/* Prepends "prefix: " to err->text (used to add a key path to a lower-level message). */
void tunep_error_prefix(tune_error *err, const char *prefix);

/* ---- alloc.c: the replaceable allocator ---------------------------------- */

void *tunep_malloc(size_t size);
void *tunep_calloc(size_t n, size_t size);
/* realloc through the hooks: new block, copy old_size bytes, free the old one. */
void *tunep_realloc(void *ptr, size_t old_size, size_t new_size);
void tunep_free(void *ptr);
char *tunep_strdup(const char *s);
char *tunep_strndup(const char *s, size_t n);
/* printf into a fresh buffer from tunep_malloc; NULL on OOM. */
char *tunep_asprintf(const char *fmt, ...) TUNEP_PRINTF(1, 2);

/* A growable byte buffer for building text (CSV rows, JSON, progress tables). */
struct tunep_buf {
    char *data; /* NUL-terminated when len > 0 */
    size_t len, cap;
    int oom; /* set once an append failed: later appends are no-ops */
};
void tunep_buf_init(struct tunep_buf *b);
void tunep_buf_done(struct tunep_buf *b);
void tunep_buf_append(struct tunep_buf *b, const char *s, size_t n);
void tunep_buf_puts(struct tunep_buf *b, const char *s);
void tunep_buf_printf(struct tunep_buf *b, const char *fmt, ...) TUNEP_PRINTF(2, 3);
/* Hands the text over (caller frees with tunep_free) and resets b; NULL after OOM. */
char *tunep_buf_take(struct tunep_buf *b);

/* ---- log.c ---------------------------------------------------------------- */

void tunep_log(tune_log_level level, const char *fmt, ...) TUNEP_PRINTF(2, 3);

/* ---- numfmt.c: locale-independent number formatting --------------------- */

/*
 * Shortest "%.17g"-style text that reads back to the same double, always with
 * '.' as the decimal point; "nan", "inf", "-inf" for the specials. buf >= 32.
 */
void tunep_format_double(char *buf, size_t size, double v);

/* ---- rng.c: per-trial random streams ------------------------------------- */

/*
 * Every random draw of a trial comes from a GSL generator seeded from
 * (study seed, trial id, purpose), so a trial's configuration depends on
 * nothing else: not on concurrency, completion order or other trials.
 * The generator is tunep_rng_xoshiro256, a gsl_rng_type with a full 64-bit
 * seed (GSL's own generators take 32-bit seeds, which collide after ~2^16
 * trials), so all of GSL's distributions work on it.
 */
enum tunep_rng_purpose {
    TUNEP_RNG_SAMPLE = 1,    /* drawing the configuration */
    TUNEP_RNG_SCHEDULER = 2, /* scheduler choices, e.g. ASHA's bracket */
    TUNEP_RNG_OBJECTIVE = 3, /* handed to the objective as tune_trial_seed() */
    TUNEP_RNG_EXPLORE = 4,   /* PBT's explored configuration (mixed with the exploit count) */
};
uint64_t tunep_splitmix64(uint64_t x);
uint64_t tunep_trial_seed(uint64_t study_seed, int64_t trial_id, enum tunep_rng_purpose purpose);

/* ---- positions in a JSON text (json_pos.c) ------------------------------ */

/*
 * What a config parser needs to report "file:line:col: key.path: message":
 * the raw text (positions are found by scanning it again, since jansson keeps
 * none for values it parsed) and where to put the error.
 */
struct tunep_cfgctx {
    const char *text; /* the whole JSON document */
    size_t len;
    const char *source; /* file name or "<string>" */
    tune_error *err;
};

/* A path into the document: object keys, or array indexes when key is NULL. */
struct tunep_cfgpath {
    const char *keys[16];
    long index[16];
    int depth;
};

/*
 * Sets ctx->err to TUNE_ECONFIG at the position of the value at `path`
 * (or of the key itself when at_key is set), with text "a.b[2].c: message",
 * and returns TUNE_ECONFIG.
 */
tune_status tunep_cfg_error(const struct tunep_cfgctx *ctx, const struct tunep_cfgpath *path,
                            int at_key, const char *fmt, ...) TUNEP_PRINTF(4, 5);
/* Finds the 1-based line and column of the value (or key) at path; 0 if found. */
int tunep_json_locate(const char *text, size_t len, const struct tunep_cfgpath *path, int at_key,
                      int *ret_line, int *ret_column);
/* Writes the dotted form of path ("param_space.lr", "search.points[2]") into buf. */
void tunep_cfgpath_format(const struct tunep_cfgpath *path, char *buf, size_t size);
/* Push and pop path elements (push fails silently past the depth limit). */
void tunep_cfgpath_push_key(struct tunep_cfgpath *path, const char *key);
void tunep_cfgpath_push_index(struct tunep_cfgpath *path, long index);
void tunep_cfgpath_pop(struct tunep_cfgpath *path);

/* ---- time ---------------------------------------------------------------- */

/* Seconds on a monotonic clock, and since the Unix epoch. */
double tunep_now_monotonic(void);
double tunep_now_wall(void);

#endif /* TUNE_INTERNAL_H */
