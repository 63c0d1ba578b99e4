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

#endif /* TUNE_REPORT_HTML_H */
