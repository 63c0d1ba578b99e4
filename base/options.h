/*
 * options.h - option tables: how one section of the config file maps onto a
 * C struct, described as data.
 *
 * A trainer or scheduler lists its keys once (name, type, range, default,
 * where the value goes); the config layer reads the section with that table
 * and reports errors at the file position of the offending value, and this
 * file applies the defaults and frees what the table owns. Nothing here
 * knows JSON: the table is the contract between a component and the parser.
 */
#ifndef TUNE_OPTIONS_H
#define TUNE_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

enum tunep_opt_type {
    TUNEP_OPT_BOOL = 0, /* int: true or false */
    TUNEP_OPT_INT,      /* int in [lo, hi] */
    TUNEP_OPT_INT64,    /* int64_t in [lo, hi]; hi 0 means INT64_MAX */
    TUNEP_OPT_NUMBER,   /* double in [lo, hi]; an integer in the file is fine */
    TUNEP_OPT_STRING,   /* char *, owned: non-empty, at most hi bytes (0: 4000) */
    TUNEP_OPT_TEXT,     /* char[size] inside the struct: non-empty, shorter than size (hi) */
    TUNEP_OPT_FILE,     /* char *, owned: the path of a readable file */
    TUNEP_OPT_DIR,      /* char *, owned: the path of a readable folder; null leaves it NULL */
    TUNEP_OPT_CHOICE,   /* int: the index of the value in choices (NULL-terminated) */
    TUNEP_OPT_ARGV,     /* struct tunep_strv: a non-empty array of strings, the first non-empty */
    TUNEP_OPT_ENV,      /* struct tunep_strmap: an object of strings keyed by variable names */
    TUNEP_OPT_JSON,     /* char *, owned: any JSON value, as compact text */
    TUNEP_OPT_OBJECT,   /* a nested object, read with its own table (sub) into the same struct */
    TUNEP_OPT_REAL,     /* double: a finite number in [lo, hi] (hi HUGE_VAL: no upper bound), the
                         * rule said in words: "must be >= 0", "must be between 0 and 0.5" */
    TUNEP_OPT_REAL_GT,  /* double: as REAL, but lo itself is refused: "must be > 0" */
    TUNEP_OPT_WHOLE,    /* int: a number without a fraction (2.0 is 2) in [lo, hi]: "expected an
                         * integer", "must be >= 1", "must be at most 64" */
    TUNEP_OPT_NAME,     /* char[hi] inside the struct: a non-empty string without NUL bytes,
                         * shorter than hi: "must not be empty", "must be a name of at most
                         * 127 bytes" */
    TUNEP_OPT_TUPLE,    /* an array of exactly as many values as sub has rows, value i read with
                         * sub's row i into the same struct (a double[2] as two REAL rows);
                         * anything else is "expected <expected>" */
    /* struct tunep_mutations: parameters of param_space (groups nest as in param_space), each
     * a list of values or a distribution to draw from (PBT's hyperparam_mutations); names are
     * matched to the space once it is known (tunep_config_resolve_scheduler()) */
    TUNEP_OPT_MUTATIONS,
    TUNEP_OPT_TYPE_COUNT
};

/* An owned list of owned strings (TUNEP_OPT_ARGV). */
struct tunep_strv {
    char **v;
    size_t n;
};

/* Owned names and values (TUNEP_OPT_ENV), in the file's order. */
struct tunep_strmap {
    char **names, **values;
    size_t n;
};

struct tunep_mutation; /* one parameter's values or distribution: schedulers/scheduler.h */

/*
 * An owned list of mutations (TUNEP_OPT_MUTATIONS). Whoever fills it sets
 * free to the function that releases v (a mutation holds values and a space
 * that this layer does not know), so that tunep_options_done() can free it;
 * free NULL means v is borrowed.
 */
struct tunep_mutations {
    struct tunep_mutation *v;
    size_t n;
    void (*free)(struct tunep_mutation *v, size_t n);
};

/* Where a value stood in the config file (1-based; 0 when unknown). */
struct tunep_opt_pos {
    int line, column;
};

struct tunep_option {
    const char *name; /* the key; NULL ends a table */
    enum tunep_opt_type type;
    size_t offset;                  /* of the field in the struct */
    double lo, hi;                  /* numbers: the range; STRING, TEXT, NAME: see above */
    double def;                     /* the default of BOOL, INT, INT64, NUMBER, CHOICE, REAL,
                                     * REAL_GT and WHOLE */
    const char *def_text;           /* the default of STRING, TEXT and NAME; NULL: none */
    const char *const *choices;     /* CHOICE: the accepted strings, NULL-terminated */
    const struct tunep_option *sub; /* OBJECT: the nested table; TUPLE: one row per element */
    const char *expected;           /* OBJECT, ARGV, ENV, TUPLE, MUTATIONS: what to say of a value
                                     * of the wrong kind,
                                     * e.g. "an object such as {\"layers\": 2}" */
    size_t pos_offset;              /* 0, or 1 + the offset of a struct tunep_opt_pos that receives
                                     * the value's position (for errors found later) */
};

/* Shorthands for table rows: TUNEP_OPT_ROW_INT("epochs", struct cfg, epochs, 1, 1000, 3). */
#define TUNEP_OPT_ROW(name_, type_, st, field, lo_, hi_, def_)                                     \
    {                                                                                              \
        .name = (name_), .type = (type_), .offset = offsetof(st, field), .lo = (lo_), .hi = (hi_), \
        .def = (def_)                                                                              \
    }

/*
 * A failure found by a component's own check of its parsed section (a rule
 * across keys, a value only it understands). path is relative to the
 * section: "" for the section itself, "model", "argv[0]", "env.PATH"; at_key
 * puts the position at the key rather than its value.
 */
struct tunep_opt_error {
    char path[128];
    int at_key;
    tune_status code; /* TUNE_ECONFIG, or TUNE_ENOMEM */
    char text[256];
};

/* Fills e and returns TUNE_ECONFIG, so that `return tunep_opt_fail(e, "x", 0, ...)` reads well. */
tune_status tunep_opt_fail(struct tunep_opt_error *e, const char *path, int at_key, const char *fmt,
                           ...) TUNEP_PRINTF(4, 5);
/* Fills e for an allocation failure and returns TUNE_ENOMEM. */
tune_status tunep_opt_oom(struct tunep_opt_error *e);

/* Writes every default of table (and of its nested tables) into cfg. 0, or -1 on OOM. */
int tunep_options_default(const struct tunep_option *table, void *cfg);
/* Frees what table's owned fields hold in cfg and clears them. */
void tunep_options_done(const struct tunep_option *table, void *cfg);
/* The row named name in table (nested tables included), or NULL. */
const struct tunep_option *tunep_options_find(const struct tunep_option *table, const char *name);

/*
 * 1 when s is an identifier: a letter or '_', then letters, digits and '_'
 * (what a POSIX shell takes as a variable name and dlsym() as a C symbol).
 */
int tunep_is_identifier(const char *s);

/* Levenshtein distance of two names, for "did you mean" hints (64 when either is over 63 bytes). */
size_t tunep_edit_distance(const char *a, const char *b);

#endif /* TUNE_OPTIONS_H */
