/*
 * test_file_io.c - base/file_io.c: the atomic writer (whole and streamed) and
 * the whole-file reader. A write that fails leaves the old file as it was and
 * no temporary file behind; errors name the file that failed; every
 * allocation failure is TUNE_ENOMEM and leaves nothing behind either.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
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

/* How many temporary files of name ("." name ".tmp." ...) tmpdir holds. */
/* Checks text is "<head>'<pattern with its six random characters>'<tail>". */
static void check_tmp_msg(const char *text, const char *head, const char *pattern, const char *tail)
{
    char want[1400];
    snprintf(want, sizeof want, "%s'%.*s", head, (int)strlen(pattern) - 6, pattern);
    ck_assert_msg(strncmp(text, want, strlen(want)) == 0, "%s", text);
    ck_assert_msg(strlen(text) == strlen(want) + 7 + strlen(tail), "%s", text);
    ck_assert_msg(text[strlen(want) + 6] == '\'', "%s", text);
    ck_assert_str_eq(text + strlen(want) + 6 + 1, tail);
}

static int n_tmp(const char *name)
{
    char prefix[300];
    snprintf(prefix, sizeof prefix, ".%s.tmp.", name);
    DIR *d = opendir(tmpdir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

/* The name tunep_atomic_open() gives a temporary file of tmpdir/<sub>name,
 * with its random part as XXXXXX. */
static const char *tmp_pattern(const char *sub, const char *name)
{
    static char buf[700];
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    unsigned h = 2166136261u;
    for (const char *p = host; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    snprintf(buf, sizeof buf, "%s/%s.%s.tmp.%08x-%ld.XXXXXX", tmpdir, sub, name, h, (long)getpid());
    return buf;
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
    ck_assert_int_eq(n_tmp("out.txt"), 0);
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
    ck_assert(exists(f.tmp));
    ck_assert_int_eq(n_tmp("big.bin"), 1);
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
    ck_assert_int_eq(n_tmp("big.bin"), 0);
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
    ck_assert_int_eq(n_tmp("big.bin"), 0);
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
    snprintf(want, sizeof want, "cannot create '%s': No such file or directory",
             tmp_pattern("no/such/", "out.txt"));
    ck_assert_str_eq(err.text, want);
    tunep_atomic_abort(&f);
    ck_assert_int_eq(tunep_write_file_atomic(nodir, "x", 1, &err), TUNE_EIO);

    /* The target is a folder: the rename fails, and the temporary file is removed. */
    snprintf(folder, sizeof folder, "%s", at("folder"));
    ck_assert_int_eq(mkdir(folder, 0755), 0);
    ck_assert_int_eq(tunep_write_file_atomic(folder, "x", 1, &err), TUNE_EIO);
    ck_assert_str_eq(err.source, folder);
    check_tmp_msg(err.text, "cannot rename ", tmp_pattern("", "folder"),
                  " into place: Is a directory");
    ck_assert_int_eq(n_tmp("folder"), 0);

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
        check_tmp_msg(err.text, "cannot write ", tmp_pattern("", "full"),
                      ": No space left on device");
        ck_assert_ptr_null(f.path);
        ck_assert_int_eq(n_tmp("full"), 0);
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
        ck_assert_int_eq(n_tmp("chaos.txt"), 0);
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

/* Two writers of one path at once each get their own temporary file, and
 * each commit puts a whole file in place. */
START_TEST(test_tmp_unique)
{
    tune_error err;
    char path[600];
    snprintf(path, sizeof path, "%s", at("both.csv"));
    struct tunep_atomic_file a, b;
    ck_assert_int_eq(tunep_atomic_open(&a, path, &err), TUNE_OK);
    ck_assert_int_eq(tunep_atomic_open(&b, path, &err), TUNE_OK);
    ck_assert_str_ne(a.tmp, b.tmp);
    ck_assert_int_eq(n_tmp("both.csv"), 2);
    static char big[200000];
    memset(big, 'a', sizeof big);
    ck_assert_int_eq(tunep_atomic_write(&a, big, sizeof big, &err), TUNE_OK);
    ck_assert_int_eq(tunep_atomic_write(&b, "b\n", 2, &err), TUNE_OK);
    ck_assert_int_eq(tunep_atomic_commit(&b, &err), TUNE_OK);
    check_content(path, "b\n");
    ck_assert_int_eq(tunep_atomic_commit(&a, &err), TUNE_OK);
    char *data = NULL;
    size_t size = 0;
    ck_assert_int_eq(tunep_read_file(path, 0, &data, &size, &err), TUNE_OK);
    ck_assert_uint_eq(size, sizeof big);
    ck_assert(memcmp(data, big, size) == 0);
    tunep_free(data);
    ck_assert_int_eq(n_tmp("both.csv"), 0);
}
END_TEST

/* A temporary file whose writer was killed is removed by the next write of the
 * same path; a live writer's, another host's and another file's stay. */
START_TEST(test_tmp_stale)
{
    tune_error err;
    char path[600], dead[700], live[700], other_host[700], other_file[700];
    snprintf(path, sizeof path, "%s", at("out.csv"));
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(0);
    ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
    /* pid is reaped and gone; the writer of "dead" was that process */
    const char *pat = tmp_pattern("", "out.csv");
    const char *dash = strrchr(pat, '-');
    snprintf(dead, sizeof dead, "%.*s-%ld.Ab12Cd", (int)(dash - pat), pat, (long)pid);
    snprintf(live, sizeof live, "%.*s-1.Ab12Cd", (int)(dash - pat), pat); /* init */
    snprintf(other_host, sizeof other_host, "%s/.out.csv.tmp.%08x-%ld.Ab12Cd", tmpdir,
             (unsigned)strtoul(dash - 8, NULL, 16) ^ 1u, (long)pid);
    snprintf(other_file, sizeof other_file, "%s/.out.csv2.tmp.%.*s", tmpdir, 30,
             strstr(pat, ".tmp.") + 5);
    put(dead, "half");
    put(live, "half");
    put(other_host, "half");
    put(other_file, "half");
    ck_assert_int_eq(tunep_write_file_atomic(path, "new", 3, &err), TUNE_OK);
    check_content(path, "new");
    ck_assert(!exists(dead));
    ck_assert(exists(live));
    ck_assert(exists(other_host));
    ck_assert(exists(other_file));
}
END_TEST

static void expect_refused(const char *path, const char *text)
{
    tune_error err;
    struct tunep_atomic_file f;
    char want[1400];
    ck_assert_int_eq(tunep_atomic_open_output(&f, path, NULL, 0, NULL, &err), TUNE_EINVAL);
    snprintf(want, sizeof want,
             "refusing to write '%s': it is %s, and outputs are written only to regular files "
             "('-' is standard output)",
             path, text);
    ck_assert_str_eq(err.text, want);
    ck_assert_str_eq(err.source, path);
    ck_assert_ptr_null(f.path);
    tunep_atomic_abort(&f);
}

/* Outputs named by a user: only regular files; links written through. */
START_TEST(test_output_kinds)
{
    tune_error err;
    struct tunep_atomic_file f;
    char folder[600], fifo[600], sock[600];
    snprintf(folder, sizeof folder, "%s", at("folder"));
    ck_assert_int_eq(mkdir(folder, 0755), 0);
    expect_refused(folder, "a directory");
    snprintf(fifo, sizeof fifo, "%s", at("fifo"));
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    expect_refused(fifo, "a FIFO");
    snprintf(sock, sizeof sock, "%s", at("sock"));
    int sfd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(sock) < sizeof sa.sun_path) {
        memcpy(sa.sun_path, sock, strlen(sock) + 1);
        ck_assert_int_eq(bind(sfd, (struct sockaddr *)&sa, sizeof sa), 0);
        expect_refused(sock, "a socket");
    }
    close(sfd);
    expect_refused("/dev/null", "a character device");
    /* /dev/stdout is a link to the terminal or to a pipe: refused either way. */
    ck_assert_int_eq(tunep_atomic_open_output(&f, "/dev/stdout", NULL, 0, NULL, &err), TUNE_EINVAL);
    ck_assert_int_eq(n_tmp("folder") + n_tmp("fifo") + n_tmp("sock"), 0);

    /* A link to a regular file: the target is replaced, the link stays a link. */
    char target[600], link[600], dangling[600];
    snprintf(target, sizeof target, "%s", at("target.csv"));
    snprintf(link, sizeof link, "%s", at("link.csv"));
    put(target, "old");
    ck_assert_int_eq(symlink(target, link), 0);
    ck_assert_int_eq(tunep_atomic_open_output(&f, link, NULL, 0, NULL, &err), TUNE_OK);
    ck_assert_int_eq(tunep_atomic_write(&f, "new", 3, &err), TUNE_OK);
    ck_assert_int_eq(tunep_atomic_commit(&f, &err), TUNE_OK);
    struct stat sb;
    ck_assert_int_eq(lstat(link, &sb), 0);
    ck_assert(S_ISLNK(sb.st_mode));
    check_content(target, "new");
    ck_assert_int_eq(n_tmp("target.csv") + n_tmp("link.csv"), 0);
    /* A link to a folder is refused like the folder; a dangling link too. */
    snprintf(dangling, sizeof dangling, "%s", at("to-folder"));
    ck_assert_int_eq(symlink(folder, dangling), 0);
    ck_assert_int_eq(tunep_atomic_open_output(&f, dangling, NULL, 0, NULL, &err), TUNE_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.text, "it is a directory"));
    snprintf(dangling, sizeof dangling, "%s", at("dangling"));
    ck_assert_int_eq(symlink(at("nowhere"), dangling), 0);
    ck_assert_int_eq(tunep_atomic_open_output(&f, dangling, NULL, 0, NULL, &err), TUNE_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.text, "cannot write through the symbolic link"));
    ck_assert_int_eq(lstat(dangling, &sb), 0);
    ck_assert(S_ISLNK(sb.st_mode));
    ck_assert(!exists(at("nowhere")));
}
END_TEST

/* Files to keep are recognised by identity (any name, hard links) and, when
 * they do not exist yet, by folder and name. */
START_TEST(test_output_keep)
{
    tune_error err;
    struct tunep_atomic_file f;
    char db[600], wal[600], hard[600], sub[600], via[600];
    snprintf(db, sizeof db, "%s", at("experiment.db"));
    snprintf(wal, sizeof wal, "%s", at("experiment.db-wal"));
    put(db, "SQLite format 3");
    const char *keep[] = {db, wal};
    ck_assert_int_eq(tunep_atomic_open_output(&f, db, keep, 2, "the experiment's store", &err),
                     TUNE_EINVAL);
    char want[1400];
    snprintf(want, sizeof want, "refusing to write '%s': it is the experiment's store '%s'", db,
             db);
    ck_assert_str_eq(err.text, want);
    snprintf(hard, sizeof hard, "%s", at("innocent.csv"));
    ck_assert_int_eq(link(db, hard), 0);
    ck_assert_int_eq(tunep_atomic_open_output(&f, hard, keep, 2, "it", &err), TUNE_EINVAL);
    /* The same folder by another spelling; -wal does not exist yet. */
    snprintf(sub, sizeof sub, "%s", at("sub"));
    ck_assert_int_eq(mkdir(sub, 0755), 0);
    snprintf(via, sizeof via, "%s/sub/../experiment.db-wal", tmpdir);
    ck_assert_int_eq(tunep_atomic_open_output(&f, via, keep, 2, "it", &err), TUNE_EINVAL);
    ck_assert(!exists(wal));
    check_content(db, "SQLite format 3");
    ck_assert_int_eq(n_tmp("experiment.db") + n_tmp("innocent.csv"), 0);
    /* Anything else is fine. */
    ck_assert_int_eq(tunep_atomic_open_output(&f, at("results.csv"), keep, 2, "it", &err), TUNE_OK);
    ck_assert_int_eq(tunep_atomic_commit(&f, &err), TUNE_OK);
    check_content(at("results.csv"), "");
}
END_TEST

/* "-" is standard output: written as it comes, no file anywhere. */
START_TEST(test_output_stdout)
{
    tune_error err;
    struct tunep_atomic_file f;
    char out[600];
    snprintf(out, sizeof out, "%s", at("captured"));
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_ge(dup2(fd, STDOUT_FILENO), 0);
    close(fd);
    tune_status a = tunep_atomic_open_output(&f, "-", NULL, 0, NULL, &err);
    tune_status b = a ? a : tunep_atomic_write(&f, "a,b\r\n", 5, &err);
    tune_status c = b ? b : tunep_atomic_commit(&f, &err);
    tunep_atomic_abort(&f);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    ck_assert_int_eq(c, TUNE_OK);
    check_content(out, "a,b\r\n");
    ck_assert_int_ne(fcntl(STDOUT_FILENO, F_GETFD), -1); /* still open */
    ck_assert(!exists(at("-")));
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
    tcase_add_test(tc, test_tmp_unique);
    tcase_add_test(tc, test_tmp_stale);
    tcase_add_test(tc, test_output_kinds);
    tcase_add_test(tc, test_output_keep);
    tcase_add_test(tc, test_output_stdout);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(file_io_suite)
