/*
 * json_pos.c - where a value sits in a JSON document, for error messages.
 *
 * jansson reports positions for syntax errors only; a value that parses but
 * breaks a rule (a loguniform with low <= 0) has no position once it is a
 * json_t. So the text is scanned again, following the key path, to find the
 * 1-based line and column of the value (columns count UTF-8 characters, as
 * jansson's do). The scan is only run on the error path and assumes the text
 * is valid JSON (jansson accepted it); it fails softly (position 0) if not.
 */
#include "base/base.h"

#include <stdio.h>
#include <string.h>

struct scan {
    const char *s;
    size_t len, pos;
    int line, col;
};

static int peek(const struct scan *sc)
{
    return sc->pos < sc->len ? (unsigned char)sc->s[sc->pos] : -1;
}

static void adv(struct scan *sc)
{
    if (sc->pos >= sc->len)
        return;
    unsigned char c = (unsigned char)sc->s[sc->pos++];
    if (c == '\n') {
        sc->line++;
        sc->col = 1;
    } else if ((c & 0xC0) != 0x80) {
        sc->col++;
    }
}

static void skip_ws(struct scan *sc)
{
    for (int c = peek(sc); c == ' ' || c == '\t' || c == '\n' || c == '\r'; c = peek(sc))
        adv(sc);
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Reads a string at the cursor into out (decoded, truncated to cap). */
static int read_string(struct scan *sc, char *out, size_t cap)
{
    size_t n = 0;
    if (peek(sc) != '"')
        return -1;
    adv(sc);
    for (;;) {
        int c = peek(sc);
        if (c < 0)
            return -1;
        adv(sc);
        if (c == '"')
            break;
        if (c == '\\') {
            int e = peek(sc);
            adv(sc);
            switch (e) {
                case 'n': c = '\n'; break;
                case 't': c = '\t'; break;
                case 'r': c = '\r'; break;
                case 'b': c = '\b'; break;
                case 'f': c = '\f'; break;
                case 'u': {
                    unsigned cp = 0;
                    for (int i = 0; i < 4; i++) {
                        int h = hexval(peek(sc));
                        if (h < 0)
                            return -1;
                        cp = cp * 16 + (unsigned)h;
                        adv(sc);
                    }
                    /* Keys with \u escapes are rare; encode the BMP code point as UTF-8. */
                    char u[3];
                    size_t un = 0;
                    if (cp < 0x80) {
                        u[un++] = (char)cp;
                    } else if (cp < 0x800) {
                        u[un++] = (char)(0xC0 | (cp >> 6));
                        u[un++] = (char)(0x80 | (cp & 0x3F));
                    } else {
                        u[un++] = (char)(0xE0 | (cp >> 12));
                        u[un++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                        u[un++] = (char)(0x80 | (cp & 0x3F));
                    }
                    for (size_t i = 0; i < un; i++)
                        if (n + 1 < cap)
                            out[n++] = u[i];
                    continue;
                }
                default: c = e; break;
            }
        }
        if (n + 1 < cap)
            out[n++] = (char)c;
    }
    if (cap)
        out[n] = '\0';
    return 0;
}

static int skip_value(struct scan *sc, int depth)
{
    if (depth > 512)
        return -1;
    skip_ws(sc);
    int c = peek(sc);
    if (c == '"')
        return read_string(sc, NULL, 0);
    if (c == '{' || c == '[') {
        int close = c == '{' ? '}' : ']';
        adv(sc);
        skip_ws(sc);
        if (peek(sc) == close) {
            adv(sc);
            return 0;
        }
        for (;;) {
            if (c == '{') {
                skip_ws(sc);
                if (read_string(sc, NULL, 0))
                    return -1;
                skip_ws(sc);
                if (peek(sc) != ':')
                    return -1;
                adv(sc);
            }
            if (skip_value(sc, depth + 1))
                return -1;
            skip_ws(sc);
            int d = peek(sc);
            adv(sc);
            if (d == close)
                return 0;
            if (d != ',')
                return -1;
        }
    }
    /* number, true, false, null */
    while ((c = peek(sc)) >= 0 && c != ',' && c != '}' && c != ']' && c != ' ' && c != '\n' &&
           c != '\t' && c != '\r')
        adv(sc);
    return 0;
}

static int find(struct scan *sc, const struct tunep_cfgpath *path, int i, int at_key, int *line,
                int *col)
{
    skip_ws(sc);
    if (i == path->depth) {
        *line = sc->line;
        *col = sc->col;
        return 0;
    }
    int c = peek(sc);
    if (path->keys[i]) {
        if (c != '{')
            return -1;
        adv(sc);
        for (;;) {
            char key[512];
            skip_ws(sc);
            if (peek(sc) == '}')
                return -1;
            int kline = sc->line, kcol = sc->col;
            if (read_string(sc, key, sizeof key))
                return -1;
            skip_ws(sc);
            if (peek(sc) != ':')
                return -1;
            adv(sc);
            if (strcmp(key, path->keys[i]) == 0) {
                if (at_key && i + 1 == path->depth) {
                    *line = kline;
                    *col = kcol;
                    return 0;
                }
                return find(sc, path, i + 1, at_key, line, col);
            }
            if (skip_value(sc, 0))
                return -1;
            skip_ws(sc);
            int d = peek(sc);
            adv(sc);
            if (d != ',')
                return -1;
        }
    }
    if (c != '[')
        return -1;
    adv(sc);
    for (long idx = 0;; idx++) {
        skip_ws(sc);
        if (peek(sc) == ']')
            return -1;
        if (idx == path->index[i])
            return find(sc, path, i + 1, at_key, line, col);
        if (skip_value(sc, 0))
            return -1;
        skip_ws(sc);
        int d = peek(sc);
        adv(sc);
        if (d != ',')
            return -1;
    }
}

int tunep_json_locate(const char *text, size_t len, const struct tunep_cfgpath *path, int at_key,
                      int *ret_line, int *ret_column)
{
    struct scan sc = {text, len, 0, 1, 1};
    int line = 0, col = 0;
    if (!text || find(&sc, path, 0, at_key, &line, &col))
        return -1;
    *ret_line = line;
    *ret_column = col;
    return 0;
}

void tunep_cfgpath_format(const struct tunep_cfgpath *path, char *buf, size_t size)
{
    size_t n = 0;
    if (size == 0)
        return;
    buf[0] = '\0';
    for (int i = 0; i < path->depth && n < size; i++) {
        int w;
        if (path->keys[i])
            w = snprintf(buf + n, size - n, "%s%s", n ? "." : "", path->keys[i]);
        else
            w = snprintf(buf + n, size - n, "[%ld]", path->index[i]);
        if (w < 0)
            break;
        n += (size_t)w;
    }
}

void tunep_cfgpath_push_key(struct tunep_cfgpath *path, const char *key)
{
    if (path->depth < (int)(sizeof path->keys / sizeof path->keys[0])) {
        path->keys[path->depth] = key;
        path->index[path->depth] = -1;
    }
    path->depth++;
}

void tunep_cfgpath_push_index(struct tunep_cfgpath *path, long index)
{
    if (path->depth < (int)(sizeof path->keys / sizeof path->keys[0])) {
        path->keys[path->depth] = NULL;
        path->index[path->depth] = index;
    }
    path->depth++;
}

void tunep_cfgpath_pop(struct tunep_cfgpath *path)
{
    if (path->depth > 0)
        path->depth--;
}

tune_status tunep_cfg_error(const struct tunep_cfgctx *ctx, const struct tunep_cfgpath *path,
                            int at_key, const char *fmt, ...)
{
    if (!ctx->err)
        return TUNE_ECONFIG;
    /* Deeper than the recorded path: report at the deepest element we know. */
    struct tunep_cfgpath p = *path;
    int max = (int)(sizeof p.keys / sizeof p.keys[0]);
    if (p.depth > max)
        p.depth = max;
    int line = 0, col = 0;
    tunep_json_locate(ctx->text, ctx->len, &p, at_key, &line, &col);
    char where[512], msg[512];
    tunep_cfgpath_format(&p, where, sizeof where);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (where[0])
        return tunep_error_set_at(ctx->err, TUNE_ECONFIG, ctx->source, line, col, "%s: %s", where,
                                  msg);
    return tunep_error_set_at(ctx->err, TUNE_ECONFIG, ctx->source, line, col, "%s", msg);
}
