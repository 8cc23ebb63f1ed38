/* build — one entry point that turns a report subcommand and its arguments into
 * a filled doc. Used by sixi-report's main and by the staleness check, which
 * rebuilds a report from the arguments recorded in its sidecar.
 * Arguments are borrowed; *out is the caller's to destroy. */
#ifndef SIXI_REPORT_BUILD_H
#define SIXI_REPORT_BUILD_H
#include <stddef.h>
#include <stdio.h>

struct report_doc;

/* command is "compare" or "bench"; argv are its arguments (including --db).
 * On error *out is NULL and err holds one message. */
__attribute__((warn_unused_result)) int report_build(const char *command, int argc, char **argv,
						     struct report_doc **out, char *err, size_t errlen);

/* Staleness check: reads REPORT's sidecar (REPORT.sixi.json, or BASE.sixi.json for
 * BASE.md / BASE.html), rebuilds the report against the DB (db overrides the
 * recorded path when not NULL) and prints one line per number whose value changed,
 * with its location, to out; also one line per number the Markdown beside no
 * longer shows at its recorded line (edited by hand). Returns 0 when every number matches, 1 when some
 * changed (*changed of *total), negative on error with err set. */
__attribute__((warn_unused_result)) int report_check(const char *report, const char *db, FILE *out,
						     size_t *changed, size_t *total, char *err, size_t errlen);
#endif
