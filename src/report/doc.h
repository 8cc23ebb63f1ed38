/* doc — a report as data: headings, paragraphs, tables of tracked numbers, and
 * plots; rendered to Markdown, one self-contained HTML page, CSV per table and
 * a sidecar JSON that says where every number came from.
 *
 * Builders (compare, bench) only fill a doc; they never format files. Every
 * number goes in through report_doc_num() with the id of the SQL query it was
 * computed from, so the sidecar can list, for each number, its location in the
 * Markdown (line) and HTML (element id), its value as printed, and the query;
 * `sixi-report check` rebuilds the doc from the same arguments and compares.
 * Errors are sticky, like a FILE's error flag: adders return nothing, the first
 * failure (ENOMEM) is kept and report_doc_error() returns it, so builders stay
 * readable. Plots are rendered by gnuplot run as a child process; without
 * gnuplot the tables still render and the page says how to get plots.
 * Strings passed in are copied; struct report_doc is opaque. */
#ifndef SIXI_REPORT_DOC_H
#define SIXI_REPORT_DOC_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct report_doc;
struct cJSON;

struct report_doc *report_doc_create(const char *title);
void report_doc_destroy(struct report_doc *d);
/* First error of any adder (0 or -errno). */
int report_doc_error(const struct report_doc *d);

/* What rebuilds this doc: the subcommand and its arguments (kept in the sidecar). */
void report_doc_source(struct report_doc *d, const char *command, int argc, char *const *argv);
/* Registers the text of a query that numbers refer to by id. */
void report_doc_query(struct report_doc *d, const char *id, const char *sql);

void report_doc_heading(struct report_doc *d, const char *text);
void report_doc_para(struct report_doc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Starts a table; the following rows and cells belong to it. id is a short slug
 * (file names, number ids); headers has ncols entries. */
void report_doc_table(struct report_doc *d, const char *id, const char *title, int ncols,
		      const char *const *headers);
void report_doc_row(struct report_doc *d);
void report_doc_cell(struct report_doc *d, const char *text);
/* A number computed from query query_id, printed with fmt (printf, one double).
 * Non-finite values print as "n/a". */
void report_doc_num(struct report_doc *d, const char *query_id, const char *fmt, double v);
/* A note under the current table (assumptions, what was excluded). */
void report_doc_note(struct report_doc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Starts a line plot; points are added per series (0 .. nseries-1). NaN y is a gap.
 * A series whose name starts with "invalid" is drawn as red crosses, never joined. */
void report_doc_plot(struct report_doc *d, const char *id, const char *title, const char *xlabel,
		     const char *ylabel, bool logx, int nseries, const char *const *series);
void report_doc_point(struct report_doc *d, int series, double x, double y);
/* The current plot's x axis is continuous (gnuplot's own tics), not one tic per
 * whole number (times, latencies). */
void report_doc_plot_free_x(struct report_doc *d);

enum {
	REPORT_MD = 1,
	REPORT_HTML = 2,
	REPORT_CSV = 4,
};
/* Writes BASE.md, BASE.html, BASE-<table>.csv (as formats says), BASE.sixi.json
 * (the sidecar) and, when plots and gnuplot are available, BASE-<plot>.{gp,dat,svg,png}.
 * Files appear only when everything succeeded (written as .tmp, then renamed).
 * gnuplot is looked up on PATH, or taken from $SIXI_GNUPLOT. note receives a
 * line for the user when plots were skipped (empty otherwise). */
__attribute__((warn_unused_result)) int report_doc_render(struct report_doc *d, const char *base, unsigned formats,
							  bool plots, char *note, size_t notelen, char *err,
							  size_t errlen);

/* The doc as JSON (tables as arrays of rows), for --json; caller frees. */
struct cJSON *report_doc_json(const struct report_doc *d);

/* Reading numbers back (check). Index 0 .. count-1 in document order. */
size_t report_doc_num_count(const struct report_doc *d);
/* id is "table/row-label/column"; value as printed. Borrowed. */
void report_doc_num_get(const struct report_doc *d, size_t i, const char **id, const char **value,
			const char **query_id);
#endif
