/*
 * test_file_io.c - base/file_io.c: the atomic writer (whole and streamed) and
 * the whole-file reader. A write that fails leaves the old file as it was and
 * no temporary file behind; errors name the file that failed; every
 * allocation failure is TUNE_ENOMEM and leaves nothing behind either.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "check_util.h"
#include "base/file_io.h"

static char *tmpdir;

static void setup(void)
{
    tmpdir = tune_test_mkdtemp();
    ck_assert_ptr_nonnull(tmpdir);
}

static void teardown(void)
{
    tune_test_rmtree(tmpdir);
    free(tmpdir);
    tmpdir = NULL;
}

/* tmpdir/name; valid for the next 15 calls (tests copy the paths they keep). */
static const char *at(const char *name)
{
    static char buf[16][600];
    static int k;
    k = (k + 1) % 16;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void check_content(const char *path, const char *expected)
{
    char *got = tune_test_slurp(path);
    ck_assert_msg(got != NULL, "cannot read %s", path);
    ck_assert_str_eq(got, expected);
    free(got);
}

static int exists(const char *path)
{
    return access(path, F_OK) == 0;
}

START_TEST(test_write_whole)
{
    tune_error err;
    char path[600];
    snprintf(path, sizeof path, "%s", at("out.txt"));
    ck_assert_int_eq(tunep_write_file_atomic(path, "first\n", 6, &err), TUNE_OK);
    check_content(path, "first\n");
    ck_assert_int_eq(tunep_write_file_atomic(path, "second", 6, &err), TUNE_OK);
    check_content(path, "second");
    ck_assert(!exists(at("out.txt.tmp")));
    ck_assert_int_eq(tunep_write_file_atomic(path, NULL, 0, &err), TUNE_OK);
    check_content(path, "");
    /* Not made for the file: the mode is the process's default (0666 less the umask). */
    mode_t mask = umask(022);
    umask(mask);
    struct stat sb;
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_uint_eq(sb.st_mode & 0777, 0666 & ~mask);
}
END_TEST

START_TEST(test_write_streamed)
{
    tune_error err;
    char path[600];
    snprintf(path, sizeof path, "%s", at("big.bin"));
    put(path, "old");
    struct tunep_atomic_file f;
    ck_assert_int_eq(tunep_atomic_open(&f, path, &err), TUNE_OK);
    ck_assert(exists(at("big.bin.tmp")));
    static char block[100000];
    size_t total = 0;
    for (int i = 0; i < 30; i++) {
        memset(block, 'a' + i % 26, sizeof block);
        ck_assert_int_eq(tunep_atomic_write(&f, block, sizeof block, &err), TUNE_OK);
        total += sizeof block;
    }
    check_content(path, "old"); /* nothing visible before the commit */
    ck_assert_int_eq(tunep_atomic_commit(&f, &err), TUNE_OK);
    ck_assert_ptr_null(f.path);
    tunep_atomic_abort(&f); /* a no-op after a commit */
    ck_assert(!exists(at("big.bin.tmp")));
    char *data = NULL;
    size_t size = 0;
    ck_assert_int_eq(tunep_read_file(path, 0, &data, &size, &err), TUNE_OK);
    ck_assert_uint_eq(size, total);
    for (size_t i = 0; i < total; i += 99991)
        ck_assert_int_eq(data[i], 'a' + (int)(i / sizeof block) % 26);
    ck_assert_int_eq(data[size], '\0');
    tunep_free(data);

    /* Aborted: the old file stays, the temporary one goes. */
    ck_assert_int_eq(tunep_atomic_open(&f, path, &err), TUNE_OK);
    ck_assert_int_eq(tunep_atomic_write(&f, "new", 3, &err), TUNE_OK);
    tunep_atomic_abort(&f);
    ck_assert(!exists(at("big.bin.tmp")));
    ck_assert_int_eq(tunep_read_file(path, 0, &data, &size, &err), TUNE_OK);
    ck_assert_uint_eq(size, total);
    tunep_free(data);

    struct tunep_atomic_file zero = {0};
    tunep_atomic_abort(&zero); /* a zeroed one holds nothing, not fd 0 */
    ck_assert_int_ne(fcntl(0, F_GETFD), -1);
}
END_TEST

START_TEST(test_write_errors)
{
    tune_error err;
    /* A missing folder: the temporary file cannot be created. */
    char nodir[600], folder[600];
    snprintf(nodir, sizeof nodir, "%s", at("no/such/out.txt"));
    struct tunep_atomic_file f;
    ck_assert_int_eq(tunep_atomic_open(&f, nodir, &err), TUNE_EIO);
    ck_assert_int_eq(f.error, ENOENT);
    ck_assert_int_eq(err.code, TUNE_EIO);
    ck_assert_str_eq(err.source, nodir);
    char want[1400];
    snprintf(want, sizeof want, "cannot create '%s.tmp': No such file or directory", nodir);
    ck_assert_str_eq(err.text, want);
    tunep_atomic_abort(&f);
    ck_assert_int_eq(tunep_write_file_atomic(nodir, "x", 1, &err), TUNE_EIO);

    /* The target is a folder: the rename fails, and the temporary file is removed. */
    snprintf(folder, sizeof folder, "%s", at("folder"));
    ck_assert_int_eq(mkdir(folder, 0755), 0);
    ck_assert_int_eq(tunep_write_file_atomic(folder, "x", 1, &err), TUNE_EIO);
    ck_assert_str_eq(err.source, folder);
    snprintf(want, sizeof want, "cannot rename '%s.tmp' into place: Is a directory", folder);
    ck_assert_str_eq(err.text, want);
    ck_assert(!exists(at("folder.tmp")));

    /* A full device: the write fails, the old file stays and no temporary one is left. */
    if (access("/dev/full", W_OK) == 0) {
        ck_assert_int_eq(tunep_atomic_open(&f, at("full"), &err), TUNE_OK);
        int fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_ge(dup2(fd, f.fd), 0); /* the writes now go to /dev/full */
        close(fd);
        ck_assert_int_eq(tunep_atomic_write(&f, "x", 1, &err), TUNE_EIO);
        ck_assert_int_eq(f.error, ENOSPC);
        ck_assert_str_eq(err.source, at("full"));
        snprintf(want, sizeof want, "cannot write '%s.tmp': No space left on device", at("full"));
        ck_assert_str_eq(err.text, want);
        ck_assert_ptr_null(f.path);
        ck_assert(!exists(at("full.tmp")));
        ck_assert(!exists(at("full")));
        tunep_atomic_abort(&f);
    }
}
END_TEST

START_TEST(test_read)
{
    tune_error err;
    char *data = NULL;
    size_t size = 1;
    char path[600];
    snprintf(path, sizeof path, "%s", at("in.txt"));
    put(path, "0123456789");
    ck_assert_int_eq(tunep_read_file(path, 0, &data, &size, &err), TUNE_OK);
    ck_assert_uint_eq(size, 10);
    ck_assert_str_eq(data, "0123456789");
    tunep_free(data);
    /* The limit: exactly at it is fine, one byte over is a config error. */
    ck_assert_int_eq(tunep_read_file(path, 10, &data, &size, &err), TUNE_OK);
    ck_assert_str_eq(data, "0123456789");
    tunep_free(data);
    data = NULL;
    ck_assert_int_eq(tunep_read_file(path, 9, &data, &size, &err), TUNE_ECONFIG);
    ck_assert_str_eq(err.source, path);
    ck_assert_str_eq(err.text, "file is larger than the limit of 9 bytes");
    ck_assert_ptr_null(data);

    put(path, "");
    ck_assert_int_eq(tunep_read_file(path, 0, &data, &size, &err), TUNE_OK);
    ck_assert_uint_eq(size, 0);
    ck_assert_str_eq(data, "");
    tunep_free(data);
    data = NULL;

    ck_assert_int_eq(tunep_read_file(at("missing"), 0, &data, &size, &err), TUNE_ENOTFOUND);
    ck_assert_str_eq(err.text, "cannot open: No such file or directory");
    ck_assert_int_eq(tunep_read_file(tmpdir, 0, &data, &size, &err), TUNE_EIO);
    ck_assert_str_eq(err.text, "cannot read: Is a directory");
    ck_assert_ptr_null(data);
}
END_TEST

/* Something that is not a regular file has no size up front: read until its end. */
START_TEST(test_read_pipe)
{
    tune_error err;
    char fifo[600];
    snprintf(fifo, sizeof fifo, "%s", at("fifo"));
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    enum { N = 300000 }; /* several times the first 64 KiB */
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        FILE *f = fopen(fifo, "wb");
        for (int i = 0; f && i < N; i++)
            putc('0' + i % 10, f);
        _exit(f && fclose(f) == 0 ? 0 : 1);
    }
    char *data = NULL;
    size_t size = 0;
    tune_status st = tunep_read_file(fifo, 0, &data, &size, &err);
    int wstatus;
    ck_assert_int_eq(waitpid(pid, &wstatus, 0), pid);
    ck_assert_int_eq(st, TUNE_OK);
    ck_assert(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
    ck_assert_uint_eq(size, N);
    for (size_t i = 0; i < size; i++)
        if (data[i] != '0' + (int)(i % 10))
            ck_abort_msg("byte %zu is '%c'", i, data[i]);
    ck_assert_int_eq(data[size], '\0');
    tunep_free(data);

    /* Over the limit: refused after limit + 1 bytes, without reading to the end. */
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        signal(SIGPIPE, SIG_DFL);
        FILE *f = fopen(fifo, "wb");
        for (int i = 0; f && i < N; i++)
            putc('x', f);
        _exit(0);
    }
    data = NULL;
    st = tunep_read_file(fifo, 100000, &data, &size, &err);
    ck_assert_int_eq(waitpid(pid, &wstatus, 0), pid);
    ck_assert_int_eq(st, TUNE_ECONFIG);
    ck_assert_ptr_null(data);
}
END_TEST

/* Every allocation that fails is TUNE_ENOMEM, with no file left half-written. */
START_TEST(test_alloc_failures)
{
    tune_error err;
    char path[600];
    snprintf(path, sizeof path, "%s", at("chaos.txt"));
    put(path, "old");
    int completed = 0;
    long runs = 0;
    for (long fail_at = 0; fail_at < 100 && !completed; fail_at++, runs++) {
        char *data = NULL;
        size_t size = 0;
        tune_test_alloc_fail_after(fail_at);
        tune_status st = tunep_write_file_atomic(path, "new", 3, &err);
        if (!st)
            st = tunep_read_file(path, 0, &data, &size, &err);
        tune_test_alloc_reset();
        ck_assert(!exists(at("chaos.txt.tmp")));
        if (st == TUNE_OK) {
            completed = !tune_test_alloc_failed();
            ck_assert_str_eq(data, "new");
            tunep_free(data);
        } else {
            ck_assert_msg(st == TUNE_ENOMEM, "fail_at %ld: %d %s", fail_at, (int)st, err.text);
            char *now = tune_test_slurp(path);
            ck_assert(strcmp(now, "old") == 0 || strcmp(now, "new") == 0);
            free(now);
        }
        put(path, "old");
    }
    ck_assert(completed);
    ck_assert_int_gt(runs, 1);
}
END_TEST

static Suite *file_io_suite(void)
{
    Suite *s = suite_create("file_io");
    TCase *tc = tcase_create("file_io");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_write_whole);
    tcase_add_test(tc, test_write_streamed);
    tcase_add_test(tc, test_write_errors);
    tcase_add_test(tc, test_read);
    tcase_add_test(tc, test_read_pipe);
    tcase_add_test(tc, test_alloc_failures);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(file_io_suite)
