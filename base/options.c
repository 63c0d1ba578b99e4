/*
 * options.c - defaults and cleanup for option tables (options.h), and the
 * edit distance behind "did you mean" hints.
 */
#include "base/options.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

tune_status tunep_opt_fail(struct tunep_opt_error *e, const char *path, int at_key, const char *fmt,
                           ...)
{
    snprintf(e->path, sizeof e->path, "%s", path ? path : "");
    e->at_key = at_key;
    e->code = TUNE_ECONFIG;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->text, sizeof e->text, fmt, ap);
    va_end(ap);
    return TUNE_ECONFIG;
}

tune_status tunep_opt_oom(struct tunep_opt_error *e)
{
    e->path[0] = '\0';
    e->at_key = 0;
    e->code = TUNE_ENOMEM;
    snprintf(e->text, sizeof e->text, "out of memory");
    return TUNE_ENOMEM;
}

static void *field(void *cfg, const struct tunep_option *o)
{
    return (char *)cfg + o->offset;
}

int tunep_options_default(const struct tunep_option *table, void *cfg)
{
    for (const struct tunep_option *o = table; o->name; o++) {
        void *f = field(cfg, o);
        switch (o->type) {
            case TUNEP_OPT_BOOL:
            case TUNEP_OPT_INT:
            case TUNEP_OPT_CHOICE: *(int *)f = (int)o->def; break;
            case TUNEP_OPT_INT64: *(int64_t *)f = (int64_t)o->def; break;
            case TUNEP_OPT_NUMBER: *(double *)f = o->def; break;
            case TUNEP_OPT_TEXT:
                snprintf((char *)f, (size_t)o->hi, "%s", o->def_text ? o->def_text : "");
                break;
            case TUNEP_OPT_STRING:
            case TUNEP_OPT_FILE:
            case TUNEP_OPT_DIR:
            case TUNEP_OPT_JSON:
                *(char **)f = NULL;
                if (o->def_text && !(*(char **)f = tunep_strdup(o->def_text)))
                    return -1;
                break;
            case TUNEP_OPT_ARGV: memset(f, 0, sizeof(struct tunep_strv)); break;
            case TUNEP_OPT_ENV: memset(f, 0, sizeof(struct tunep_strmap)); break;
            case TUNEP_OPT_OBJECT:
                if (tunep_options_default(o->sub, cfg))
                    return -1;
                break;
            case TUNEP_OPT_TUPLE:
                if (tunep_options_default(o->sub, cfg))
                    return -1;
                break;
            case TUNEP_OPT_REAL:
            case TUNEP_OPT_REAL_GT: *(double *)f = o->def; break;
            case TUNEP_OPT_WHOLE: *(int *)f = (int)o->def; break;
            case TUNEP_OPT_NAME:
                snprintf((char *)f, (size_t)o->hi, "%s", o->def_text ? o->def_text : "");
                break;
            case TUNEP_OPT_MUTATIONS: memset(f, 0, sizeof(struct tunep_mutations)); break;
            case TUNEP_OPT_TYPE_COUNT: break;
        }
    }
    return 0;
}

void tunep_options_done(const struct tunep_option *table, void *cfg)
{
    for (const struct tunep_option *o = table; o->name; o++) {
        void *f = field(cfg, o);
        switch (o->type) {
            case TUNEP_OPT_STRING:
            case TUNEP_OPT_FILE:
            case TUNEP_OPT_DIR:
            case TUNEP_OPT_JSON:
                tunep_free(*(char **)f);
                *(char **)f = NULL;
                break;
            case TUNEP_OPT_ARGV: {
                struct tunep_strv *sv = f;
                for (size_t i = 0; sv->v && i < sv->n; i++)
                    tunep_free(sv->v[i]);
                tunep_free(sv->v);
                memset(sv, 0, sizeof *sv);
                break;
            }
            case TUNEP_OPT_ENV: {
                struct tunep_strmap *m = f;
                for (size_t i = 0; i < m->n; i++) {
                    tunep_free(m->names[i]);
                    tunep_free(m->values[i]);
                }
                tunep_free(m->names);
                tunep_free(m->values);
                memset(m, 0, sizeof *m);
                break;
            }
            case TUNEP_OPT_OBJECT: tunep_options_done(o->sub, cfg); break;
            case TUNEP_OPT_TUPLE: tunep_options_done(o->sub, cfg); break;
            case TUNEP_OPT_MUTATIONS: {
                struct tunep_mutations *m = f;
                if (m->free)
                    m->free(m->v, m->n);
                memset(m, 0, sizeof *m);
                break;
            }
            default: break;
        }
    }
}

const struct tunep_option *tunep_options_find(const struct tunep_option *table, const char *name)
{
    for (const struct tunep_option *o = table; o->name; o++) {
        if (strcmp(o->name, name) == 0)
            return o;
        if (o->type == TUNEP_OPT_OBJECT) {
            const struct tunep_option *in = tunep_options_find(o->sub, name);
            if (in)
                return in;
        }
    }
    return NULL;
}

int tunep_is_identifier(const char *s)
{
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
        return 0;
    for (const char *p = s + 1; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_'))
            return 0;
    return 1;
}

size_t tunep_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return 64;
    size_t row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t prev = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cur = row[j];
            size_t sub = prev + (a[i - 1] != b[j - 1]);
            size_t del = row[j] + 1, ins = row[j - 1] + 1;
            row[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
            prev = cur;
        }
    }
    return row[lb];
}
