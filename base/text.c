/*
 * text.c - UTF-8 validation and terminal-safe escaping of outside text.
 *
 * Program output, metric names and parameter values reach warnings, `tune
 * status` and the live table. A raw ESC (or the one-byte C1 CSI, U+009B,
 * which many terminals honour) would let a program clear the screen, retitle
 * the window or rewrite earlier lines, so what is shown goes through
 * tunep_escape_ctrl(). UTF-8 rules: RFC 3629 (the same strict form jansson
 * accepts).
 */
#include "base/text.h"

#include "base/base.h"

#include <math.h>
#include <string.h>

/* The length of the valid UTF-8 sequence at p (1 to 4), with its code point, or 0. */
static int utf8_seq(const unsigned char *p, unsigned *ret_cp)
{
    unsigned c = p[0];
    int n = c < 0x80                 ? 0
            : c >= 0xC2 && c <= 0xDF ? 1
            : c >= 0xE0 && c <= 0xEF ? 2
            : c >= 0xF0 && c <= 0xF4 ? 3
                                     : -1;
    if (n < 0)
        return 0;
    unsigned cp = n == 0 ? c : c & (0x3Fu >> n);
    for (int i = 1; i <= n; i++) {
        if ((p[i] & 0xC0) != 0x80) /* also stops at the NUL */
            return 0;
        cp = cp << 6 | (p[i] & 0x3Fu);
    }
    if ((n == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
        return 0;
    *ret_cp = cp;
    return n + 1;
}

int tunep_utf8_valid(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned cp;
        int n = utf8_seq(p, &cp);
        if (!n)
            return 0;
        p += n;
    }
    return 1;
}

size_t tunep_escape_ctrl(char *dst, size_t size, const char *src, const char *keep)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)src;
    size_t len = 0, written = 0;
    int cut = 0; /* once a unit did not fit, nothing more is written */
    while (*p) {
        unsigned cp = 0;
        int n = utf8_seq(p, &cp);
        int c0 = n == 1 && (cp < 0x20 || cp == 0x7F) && !(keep && strchr(keep, (int)cp));
        int escape = n == 0 || c0 || (n == 2 && cp <= 0x9F);
        int bytes = n ? n : 1;
        char unit[16];
        size_t ulen = 0;
        for (int i = 0; i < bytes; i++) {
            if (escape) {
                unit[ulen++] = '\\';
                unit[ulen++] = 'x';
                unit[ulen++] = hex[p[i] >> 4];
                unit[ulen++] = hex[p[i] & 15];
            } else {
                unit[ulen++] = (char)p[i];
            }
        }
        if (!cut && written + ulen < size) {
            memcpy(dst + written, unit, ulen);
            written += ulen;
        } else {
            cut = 1;
        }
        len += ulen;
        p += bytes;
    }
    if (size > 0)
        dst[written] = '\0';
    return len;
}

/* Appends s as a JSON string (quotes, backslashes and control bytes escaped; UTF-8 as is). */
void tunep_json_put_string(struct tunep_buf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    const char *run = s;
    tunep_buf_append(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        tunep_buf_append(b, run, (size_t)(s - run));
        run = s + 1;
        char esc[6] = {'\\', (char)c, 0, 0, 0, 0};
        size_t n = 2;
        switch (c) {
            case '"':
            case '\\': break;
            case '\n': esc[1] = 'n'; break;
            case '\r': esc[1] = 'r'; break;
            case '\t': esc[1] = 't'; break;
            default:
                esc[1] = 'u';
                esc[2] = '0';
                esc[3] = '0';
                esc[4] = hex[c >> 4];
                esc[5] = hex[c & 15];
                n = 6;
                break;
        }
        tunep_buf_append(b, esc, n);
    }
    tunep_buf_append(b, run, (size_t)(s - run));
    tunep_buf_append(b, "\"", 1);
}

void tunep_json_put_number(struct tunep_buf *b, double v)
{
    char num[40];
    if (isnan(v)) {
        tunep_buf_puts(b, "null");
    } else if (isinf(v)) {
        tunep_buf_puts(b, v > 0 ? "1e999" : "-1e999");
    } else {
        tunep_format_double(num, sizeof num, v);
        tunep_buf_puts(b, num);
    }
}
