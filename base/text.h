/*
 * text.h - text that comes from outside (program output, metric and
 * parameter names, values): UTF-8 checks and the escaping that keeps it from
 * steering a terminal when shown.
 */
#ifndef TUNE_TEXT_H
#define TUNE_TEXT_H

#include <stddef.h>

/* Whether s is strict UTF-8: no overlong forms, surrogates or code points past U+10FFFF. */
int tunep_utf8_valid(const char *s);

/*
 * Copies src into dst (size bytes, always NUL-terminated when size > 0)
 * with every byte that could steer a terminal written as the four
 * characters \xNN (lowercase hex): the C0 controls except those in keep
 * (e.g. "\n"; NULL for none), DEL, both bytes of a C1 control (U+0080 to
 * U+009F, which terminals take for ESC [ and the like) and every byte that is
 * not part of valid UTF-8. Everything else, backslashes included, is copied
 * as it is: the result is for reading, not for parsing back. A result that
 * does not fit is cut before the first character or escape that does not
 * fit whole. dst may be NULL when size is 0.
 * @return the length of the whole result (as snprintf), so that a return
 *         equal to strlen(src) means nothing needed escaping
 */
size_t tunep_escape_ctrl(char *dst, size_t size, const char *src, const char *keep);

struct tunep_buf;
/* Appends s as a JSON string: quotes, backslashes and control bytes escaped, UTF-8 as is. */
void tunep_json_put_string(struct tunep_buf *b, const char *s);
/* Appends v as a JSON number, exact (shortest round trip); NaN as null and the
 * infinities as 1e999 and -1e999, which JSON readers (JSON.parse, jansson,
 * Python) read back as infinities, as the store keeps them. */
void tunep_json_put_number(struct tunep_buf *b, double v);

#endif /* TUNE_TEXT_H */
