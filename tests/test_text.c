/*
 * test_text.c - base/text.c: strict UTF-8 and the terminal-safe escaping of
 * outside text (\xNN for C0 controls, DEL, C1 controls and invalid bytes;
 * truncation at whole characters and escapes), and the two places it is
 * applied in base/: log messages and tune_error_format().
 */
#include <math.h>

#include "check_util.h"
#include "base/base.h"
#include "base/text.h"

static char *escaped(const char *s, const char *keep)
{
    static char buf[512];
    size_t n = tunep_escape_ctrl(buf, sizeof buf, s, keep);
    ck_assert_uint_eq(n, strlen(buf));
    return buf;
}

START_TEST(test_utf8)
{
    ck_assert(tunep_utf8_valid(""));
    ck_assert(tunep_utf8_valid("plain ascii"));
    ck_assert(tunep_utf8_valid("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
    ck_assert(!tunep_utf8_valid("\xc3("));            /* a cut sequence */
    ck_assert(!tunep_utf8_valid("\xc0\xaf"));         /* overlong '/' */
    ck_assert(!tunep_utf8_valid("\xed\xa0\x80"));     /* a surrogate */
    ck_assert(!tunep_utf8_valid("\xf4\x90\x80\x80")); /* past U+10FFFF */
    ck_assert(!tunep_utf8_valid("\xff"));
    ck_assert(!tunep_utf8_valid("ok\xc3")); /* cut at the end */
}
END_TEST

START_TEST(test_escape)
{
    ck_assert_str_eq(escaped("plain, \"quoted\" \\ text", NULL), "plain, \"quoted\" \\ text");
    ck_assert_str_eq(escaped("caf\xc3\xa9", NULL), "caf\xc3\xa9");
    /* ESC [ 2 J clears a terminal; OSC retitles it; BEL rings. */
    ck_assert_str_eq(escaped("a\x1b[2Jb", NULL), "a\\x1b[2Jb");
    ck_assert_str_eq(escaped("\x1b]0;owned\x07", NULL), "\\x1b]0;owned\\x07");
    ck_assert_str_eq(escaped("cr\rlf\ntab\tdel\x7f", NULL), "cr\\x0dlf\\x0atab\\x09del\\x7f");
    ck_assert_str_eq(escaped("l1\nl2\r", "\n"), "l1\nl2\\x0d");
    /* The C1 CSI (U+009B) as UTF-8, and as a lone byte (not UTF-8). */
    ck_assert_str_eq(escaped("x\xc2\x9b"
                             "2J",
                             NULL),
                     "x\\xc2\\x9b2J");
    ck_assert_str_eq(escaped("x\x9b"
                             "2J",
                             NULL),
                     "x\\x9b2J");
    ck_assert_str_eq(escaped("\xc2\xa0", NULL), "\xc2\xa0"); /* U+00A0 is text */
    ck_assert_str_eq(escaped("\xe2\x82", NULL), "\\xe2\\x82");
}
END_TEST

START_TEST(test_escape_truncation)
{
    char buf[8];
    /* snprintf's contract: the whole length back, a cut that splits nothing. */
    ck_assert_uint_eq(tunep_escape_ctrl(buf, sizeof buf, "abcd\x1b", NULL), 8);
    ck_assert_str_eq(buf, "abcd");
    ck_assert_uint_eq(tunep_escape_ctrl(buf, sizeof buf, "abcdef\xc3\xa9", NULL), 8);
    ck_assert_str_eq(buf, "abcdef");
    ck_assert_uint_eq(tunep_escape_ctrl(buf, sizeof buf, "\x01\x02", NULL), 8);
    ck_assert_str_eq(buf, "\\x01");
    ck_assert_uint_eq(tunep_escape_ctrl(NULL, 0, "\x1b", NULL), 4);
    ck_assert_uint_eq(tunep_escape_ctrl(buf, 1, "abc", NULL), 3);
    ck_assert_str_eq(buf, "");
}
END_TEST

static char logged[2048];
static void keep_log(tune_log_level level, const char *msg, void *ud)
{
    (void)level, (void)ud;
    snprintf(logged, sizeof logged, "%s", msg);
}

START_TEST(test_applied)
{
    tune_error err;
    tunep_error_set_at(&err, TUNE_EINVAL, "trial\x1b[31m 3", 0, 0, "stderr: \x1b[2J\x9b%s", "x");
    char buf[256];
    ck_assert_str_eq(tune_error_format(&err, buf, sizeof buf),
                     "trial\\x1b[31m 3: stderr: \\x1b[2J\\x9bx");
    tune_set_log_callback(keep_log, TUNE_LOG_DEBUG, NULL);
    tunep_log(TUNE_LOG_WARN, "program said '%s'", "\x1b]2;title\x07\n");
    tune_set_log_callback(NULL, TUNE_LOG_ERROR, NULL);
    ck_assert_str_eq(logged, "program said '\\x1b]2;title\\x07\\x0a'");
}
END_TEST

/* JSON numbers and strings as every writer of JSON in tune puts them. */
START_TEST(test_json_put)
{
    struct tunep_buf b;
    tunep_buf_init(&b);
    tunep_json_put_number(&b, 0.1);
    tunep_buf_puts(&b, " ");
    tunep_json_put_number(&b, -2.5e-300);
    tunep_buf_puts(&b, " ");
    tunep_json_put_number(&b, (double)NAN);
    tunep_buf_puts(&b, " ");
    tunep_json_put_number(&b, (double)INFINITY);
    tunep_buf_puts(&b, " ");
    tunep_json_put_number(&b, -(double)INFINITY);
    tunep_buf_puts(&b, " ");
    tunep_json_put_number(&b, 3.0);
    tunep_buf_puts(&b, " ");
    tunep_json_put_string(&b, "a\"b\\c\nd\x01\xc3\xa9");
    ck_assert_str_eq(b.data,
                     "0.1 -2.5e-300 null 1e999 -1e999 3 \"a\\\"b\\\\c\\nd\\u0001\xc3\xa9\"");
    tunep_buf_done(&b);
}
END_TEST

static Suite *text_suite(void)
{
    Suite *s = suite_create("text");
    TCase *tc = tcase_create("text");
    tcase_add_test(tc, test_utf8);
    tcase_add_test(tc, test_escape);
    tcase_add_test(tc, test_escape_truncation);
    tcase_add_test(tc, test_applied);
    tcase_add_test(tc, test_json_put);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(text_suite)
