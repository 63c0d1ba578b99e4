/*
 * report_html.h - report.html, the page that shows an experiment (report_html.c).
 */
#ifndef TUNE_REPORT_HTML_H
#define TUNE_REPORT_HTML_H

#include "store/store.h"

/*
 * Writes the report of the experiment in st (opened read-only or not) to
 * path, atomically (base/file_io.h); dir is the experiment folder as the
 * page names it. The store is read inside one snapshot.
 * @return TUNE_OK, TUNE_EINVAL, TUNE_ESTORE, TUNE_EIO (err->source names the file), TUNE_ENOMEM.
 */
tune_status tunep_report_html(struct tunep_store *st, const char *dir, const char *path,
                              tune_error *err);
/*
 * The same page in memory: *ret_page (NUL-terminated, *ret_len bytes; free
 * with tunep_free) on TUNE_OK. Errors as tunep_report_html() but for files,
 * named after dir.
 */
tune_status tunep_report_html_build(struct tunep_store *st, const char *dir, char **ret_page,
                                    size_t *ret_len, tune_error *err);

#endif /* TUNE_REPORT_HTML_H */
