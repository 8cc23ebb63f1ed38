/* doc — see doc.h.
 *
 * Storage: every string lives in one arena freed by report_doc_destroy(); the
 * block, cell, number and point lists are realloc'd arrays. A report has at most
 * a few thousand numbers, so linear scans (duplicate ids) are fine. */
#include "report/doc.h"
#include "core/err.h"
#include "core/buf.h"
#include "core/clock.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum block_kind { B_HEADING, B_PARA, B_TABLE, B_PLOT };

struct cell {
	const char *text;
	long num; /* index into numbers, -1 for a label */
};

struct number {
	const char *id, *value, *query;
	int md_line; /* 1-based line in the Markdown; 0 when not rendered */
};

struct point {
	int series;
	double x, y;
};

struct block {
	enum block_kind kind;
	const char *id, *text;  /* table/plot id and title; heading/para text */
	int ncols;
	const char **headers;   /* (ncols) */
	struct cell *cells;     /* (nrows, ncols) row-major; missing cells are "" */
	size_t nrows, ncells, cells_cap;
	const char **notes;
	size_t nnotes;
	/* plots */
	const char *xlabel, *ylabel;
	bool logx;
	bool free_x; /* gnuplot's own x tics */
	int nseries;
	const char **series;    /* (nseries) */
	struct point *points;
	size_t npoints, points_cap;
};

struct report_doc {
	struct arena arena;
	int error;
	const char *title;
	const char *command;
	int argc;
	const char **argv;
	const char **query_ids, **query_sql;
	size_t nqueries;
	struct block *blocks;
	size_t nblocks, blocks_cap;
	struct number *numbers;
	size_t nnumbers, numbers_cap;
};

/* ---- building ---- */

static const char *sdup(struct report_doc *d, const char *s)
{
	char *r = arena_strdup(&d->arena, s ? s : "");
	if (!r && !d->error)
		d->error = -ENOMEM;
	return r ? r : "";
}

static const char *vfmt(struct report_doc *d, const char *fmt, va_list ap)
{
	char tmp[4096];
	vsnprintf(tmp, sizeof tmp, fmt, ap);
	return sdup(d, tmp);
}

/* Grows *p (of *cap elements of size sz) to hold n; sets the sticky error on OOM. */
static bool grow(struct report_doc *d, void **p, size_t *cap, size_t n, size_t sz)
{
	if (n <= *cap)
		return true;
	size_t nc = *cap ? *cap * 2 : 16;
	while (nc < n)
		nc *= 2;
	void *q = realloc(*p, nc * sz);
	if (!q) {
		if (!d->error)
			d->error = -ENOMEM;
		return false;
	}
	*p = q;
	*cap = nc;
	return true;
}

static struct block *add_block(struct report_doc *d, enum block_kind k)
{
	if (!grow(d, (void **)&d->blocks, &d->blocks_cap, d->nblocks + 1, sizeof *d->blocks))
		return NULL;
	struct block *b = &d->blocks[d->nblocks++];
	memset(b, 0, sizeof *b);
	b->kind = k;
	return b;
}

static struct block *last(struct report_doc *d, enum block_kind k)
{
	for (size_t i = d->nblocks; i > 0; i--)
		if (d->blocks[i - 1].kind == k)
			return &d->blocks[i - 1];
	return NULL;
}

struct report_doc *report_doc_create(const char *title)
{
	struct report_doc *d = calloc(1, sizeof *d);
	if (!d)
		return NULL;
	arena_init(&d->arena, 64 * 1024);
	d->title = sdup(d, title);
	if (d->error) {
		report_doc_destroy(d);
		errno = ENOMEM;
		return NULL;
	}
	return d;
}

void report_doc_destroy(struct report_doc *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nblocks; i++) {
		free(d->blocks[i].cells);
		free(d->blocks[i].points);
	}
	free(d->blocks);
	free(d->numbers);
	arena_finish(&d->arena);
	free(d);
}

int report_doc_error(const struct report_doc *d) { return d->error; }

static const char **dup_list(struct report_doc *d, int n, const char *const *v)
{
	const char **r = arena_alloc(&d->arena, (size_t)(n ? n : 1) * sizeof *r);
	if (!r) {
		d->error = d->error ? d->error : -ENOMEM;
		return NULL;
	}
	for (int i = 0; i < n; i++)
		r[i] = sdup(d, v[i]);
	return r;
}

void report_doc_source(struct report_doc *d, const char *command, int argc, char *const *argv)
{
	d->command = sdup(d, command);
	d->argc = argc;
	d->argv = dup_list(d, argc, (const char *const *)argv);
}

void report_doc_query(struct report_doc *d, const char *id, const char *sql)
{
	for (size_t i = 0; i < d->nqueries; i++)
		if (strcmp(d->query_ids[i], id) == 0)
			return;
	const char **ids = arena_alloc(&d->arena, (d->nqueries + 1) * sizeof *ids);
	const char **sqls = arena_alloc(&d->arena, (d->nqueries + 1) * sizeof *sqls);
	if (!ids || !sqls) {
		d->error = d->error ? d->error : -ENOMEM;
		return;
	}
	if (d->nqueries) {
		memcpy(ids, d->query_ids, d->nqueries * sizeof *ids);
		memcpy(sqls, d->query_sql, d->nqueries * sizeof *sqls);
	}
	ids[d->nqueries] = sdup(d, id);
	sqls[d->nqueries] = sdup(d, sql);
	d->query_ids = ids;
	d->query_sql = sqls;
	d->nqueries++;
}

void report_doc_heading(struct report_doc *d, const char *text)
{
	struct block *b = add_block(d, B_HEADING);
	if (b)
		b->text = sdup(d, text);
}

void report_doc_para(struct report_doc *d, const char *fmt, ...)
{
	struct block *b = add_block(d, B_PARA);
	if (!b)
		return;
	va_list ap;
	va_start(ap, fmt);
	b->text = vfmt(d, fmt, ap);
	va_end(ap);
}

void report_doc_table(struct report_doc *d, const char *id, const char *title, int ncols,
		      const char *const *headers)
{
	struct block *b = add_block(d, B_TABLE);
	if (!b)
		return;
	b->id = sdup(d, id);
	b->text = sdup(d, title);
	b->ncols = ncols;
	b->headers = dup_list(d, ncols, headers);
}

static struct cell *next_cell(struct report_doc *d)
{
	struct block *t = last(d, B_TABLE);
	if (!t || t->nrows == 0 || d->error)
		return NULL;
	if (t->ncells >= t->nrows * (size_t)t->ncols)
		return NULL; /* more cells than columns: dropped (a builder bug, caught by tests) */
	return &t->cells[t->ncells++];
}

void report_doc_row(struct report_doc *d)
{
	struct block *t = last(d, B_TABLE);
	if (!t || d->error)
		return;
	size_t want = (t->nrows + 1) * (size_t)t->ncols;
	if (!grow(d, (void **)&t->cells, &t->cells_cap, want, sizeof *t->cells))
		return;
	/* pad the previous row, then open the new one */
	for (; t->ncells < t->nrows * (size_t)t->ncols; t->ncells++)
		t->cells[t->ncells] = (struct cell){ "", -1 };
	for (size_t i = t->ncells; i < want; i++)
		t->cells[i] = (struct cell){ "", -1 };
	t->nrows++;
}

void report_doc_cell(struct report_doc *d, const char *text)
{
	struct cell *c = next_cell(d);
	if (c)
		*c = (struct cell){ sdup(d, text), -1 };
}

void report_doc_num(struct report_doc *d, const char *query_id, const char *fmt, double v)
{
	struct cell *c = next_cell(d);
	if (!c)
		return;
	struct block *t = last(d, B_TABLE);
	char text[128], id[512];
	if (isfinite(v))
		snprintf(text, sizeof text, fmt, v);
	else
		snprintf(text, sizeof text, "n/a");
	size_t col = (t->ncells - 1) % (size_t)t->ncols;
	const char *label = t->cells[(t->nrows - 1) * (size_t)t->ncols].text;
	if (col == 0 || !*label)
		snprintf(id, sizeof id, "%s/row %zu/%s", t->id, t->nrows, t->headers[col]);
	else
		snprintf(id, sizeof id, "%s/%s/%s", t->id, label, t->headers[col]);
	if (!grow(d, (void **)&d->numbers, &d->numbers_cap, d->nnumbers + 1, sizeof *d->numbers))
		return;
	/* ids are unique: a repeated label gets #2, #3, ... */
	int dupn = 1;
	for (size_t i = 0; i < d->nnumbers; i++)
		if (strncmp(d->numbers[i].id, id, strlen(id)) == 0 &&
		    (d->numbers[i].id[strlen(id)] == 0 || d->numbers[i].id[strlen(id)] == '#'))
			dupn++;
	if (dupn > 1) {
		size_t l = strlen(id);
		snprintf(id + l, sizeof id - l, "#%d", dupn);
	}
	d->numbers[d->nnumbers] = (struct number){ sdup(d, id), sdup(d, text), sdup(d, query_id), 0 };
	*c = (struct cell){ d->numbers[d->nnumbers].value, (long)d->nnumbers };
	d->nnumbers++;
}

void report_doc_note(struct report_doc *d, const char *fmt, ...)
{
	struct block *t = last(d, B_TABLE);
	if (!t || d->error)
		return;
	const char **notes = arena_alloc(&d->arena, (t->nnotes + 1) * sizeof *notes);
	if (!notes) {
		d->error = -ENOMEM;
		return;
	}
	if (t->nnotes)
		memcpy(notes, t->notes, t->nnotes * sizeof *notes);
	va_list ap;
	va_start(ap, fmt);
	notes[t->nnotes++] = vfmt(d, fmt, ap);
	va_end(ap);
	t->notes = notes;
}

void report_doc_plot(struct report_doc *d, const char *id, const char *title, const char *xlabel,
		     const char *ylabel, bool logx, int nseries, const char *const *series)
{
	struct block *b = add_block(d, B_PLOT);
	if (!b)
		return;
	b->id = sdup(d, id);
	b->text = sdup(d, title);
	b->xlabel = sdup(d, xlabel);
	b->ylabel = sdup(d, ylabel);
	b->logx = logx;
	b->nseries = nseries;
	b->series = dup_list(d, nseries, series);
}

void report_doc_plot_free_x(struct report_doc *d)
{
	struct block *p = last(d, B_PLOT);
	if (p)
		p->free_x = true;
}

void report_doc_point(struct report_doc *d, int series, double x, double y)
{
	struct block *p = last(d, B_PLOT);
	if (!p || series < 0 || series >= p->nseries ||
	    !grow(d, (void **)&p->points, &p->points_cap, p->npoints + 1, sizeof *p->points))
		return;
	p->points[p->npoints++] = (struct point){ series, x, y };
}

size_t report_doc_num_count(const struct report_doc *d) { return d->nnumbers; }

void report_doc_num_get(const struct report_doc *d, size_t i, const char **id, const char **value,
			const char **query_id)
{
	*id = d->numbers[i].id;
	*value = d->numbers[i].value;
	*query_id = d->numbers[i].query;
}

/* ---- rendering ---- */

/* Files being written: each is PATH.tmp until every one succeeded. */
struct outputs {
	char **paths;
	size_t n, cap;
};

static int out_add(struct outputs *o, const char *path)
{
	if (o->n == o->cap) {
		size_t nc = o->cap ? o->cap * 2 : 16;
		char **p = realloc(o->paths, nc * sizeof *p);
		if (!p)
			return -ENOMEM;
		o->paths = p;
		o->cap = nc;
	}
	o->paths[o->n] = strdup(path);
	return o->paths[o->n++] ? 0 : -ENOMEM;
}

/* Renames every PATH.tmp to PATH on success, removes them otherwise. */
static int out_finish(struct outputs *o, bool ok)
{
	int rc = 0;
	for (size_t i = 0; i < o->n; i++) {
		char tmp[4200];
		snprintf(tmp, sizeof tmp, "%s.tmp", o->paths[i]);
		if (ok && rc == 0 && rename(tmp, o->paths[i]) != 0)
			rc = -errno;
		else if (!ok || rc)
			unlink(tmp);
		free(o->paths[i]);
	}
	free(o->paths);
	return rc;
}

static int write_file(struct outputs *o, const char *path, const char *data, size_t n)
{
	char tmp[4200];
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	int rc = out_add(o, path);
	if (rc)
		return rc;
	FILE *f = fopen(tmp, "w");
	if (!f)
		return -errno;
	size_t w = fwrite(data, 1, n, f);
	rc = fclose(f);
	return w == n && rc == 0 ? 0 : -EIO;
}

static int count_lines(const struct buf *b)
{
	int n = 1;
	for (size_t i = 0; i < b->len; i++)
		n += b->data[i] == '\n';
	return n;
}

static const char *basename_of(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static int md_escape(struct buf *b, const char *s)
{
	int rc = 0;
	for (; *s && rc == 0; s++)
		rc = *s == '|' ? buf_puts(b, "\\|") : buf_append(b, s, 1);
	return rc;
}

static int render_md(struct report_doc *d, const char *base, const bool *plotted, struct buf *b)
{
	int rc = buf_printf(b, "# %s\n\n", d->title);
	for (size_t i = 0; i < d->nblocks && rc == 0; i++) {
		const struct block *k = &d->blocks[i];
		switch (k->kind) {
		case B_HEADING:
			rc = buf_printf(b, "## %s\n\n", k->text);
			break;
		case B_PARA:
			rc = buf_printf(b, "%s\n\n", k->text);
			break;
		case B_TABLE:
			rc = buf_printf(b, "### %s\n\n|", k->text);
			for (int c = 0; c < k->ncols && rc == 0; c++) {
				rc = buf_puts(b, " ");
				rc = rc ? rc : md_escape(b, k->headers[c]);
				rc = rc ? rc : buf_puts(b, " |");
			}
			rc = rc ? rc : buf_puts(b, "\n|");
			for (int c = 0; c < k->ncols && rc == 0; c++)
				rc = buf_puts(b, c == 0 ? "---|" : "---:|");
			rc = rc ? rc : buf_puts(b, "\n");
			for (size_t r = 0; r < k->nrows && rc == 0; r++) {
				int line = count_lines(b);
				rc = buf_puts(b, "|");
				for (int c = 0; c < k->ncols && rc == 0; c++) {
					const struct cell *cl = &k->cells[r * (size_t)k->ncols + (size_t)c];
					if (cl->num >= 0)
						d->numbers[cl->num].md_line = line;
					rc = buf_puts(b, " ");
					rc = rc ? rc : md_escape(b, cl->text);
					rc = rc ? rc : buf_puts(b, " |");
				}
				rc = rc ? rc : buf_puts(b, "\n");
			}
			rc = rc ? rc : buf_puts(b, "\n");
			for (size_t n = 0; n < k->nnotes && rc == 0; n++)
				rc = buf_printf(b, "%s\n\n", k->notes[n]);
			break;
		case B_PLOT:
			if (plotted[i])
				rc = buf_printf(b, "![%s](%s-%s.svg)\n\n", k->text, basename_of(base), k->id);
			break;
		}
	}
	return rc;
}

static int html_escape(struct buf *b, const char *s)
{
	int rc = 0;
	for (; *s && rc == 0; s++) {
		switch (*s) {
		case '<': rc = buf_puts(b, "&lt;"); break;
		case '>': rc = buf_puts(b, "&gt;"); break;
		case '&': rc = buf_puts(b, "&amp;"); break;
		case '"': rc = buf_puts(b, "&quot;"); break;
		default: rc = buf_append(b, s, 1);
		}
	}
	return rc;
}

static int render_html(struct report_doc *d, const char *base, const bool *plotted, const char *note,
		       struct buf *b)
{
	int rc = buf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>");
	rc = rc ? rc : html_escape(b, d->title);
	rc = rc ? rc : buf_puts(b, "</title>\n<style>\n"
			      "body{font-family:system-ui,sans-serif;max-width:72em;margin:2em auto;padding:0 1em;color:#222}\n"
			      "table{border-collapse:collapse;margin:.5em 0 1em}\n"
			      "th,td{border:1px solid #ccc;padding:.25em .6em}td.n{text-align:right;font-variant-numeric:tabular-nums}\n"
			      "th{background:#f3f3f3}p.note{color:#555;font-size:.9em}svg{max-width:100%;height:auto}\n"
			      "</style>\n</head>\n<body>\n<h1>");
	rc = rc ? rc : html_escape(b, d->title);
	rc = rc ? rc : buf_puts(b, "</h1>\n");
	if (rc == 0 && note && *note) {
		rc = buf_puts(b, "<p class=\"note\">");
		rc = rc ? rc : html_escape(b, note);
		rc = rc ? rc : buf_puts(b, "</p>\n");
	}
	for (size_t i = 0; i < d->nblocks && rc == 0; i++) {
		const struct block *k = &d->blocks[i];
		switch (k->kind) {
		case B_HEADING:
			rc = buf_puts(b, "<h2>");
			rc = rc ? rc : html_escape(b, k->text);
			rc = rc ? rc : buf_puts(b, "</h2>\n");
			break;
		case B_PARA:
			rc = buf_puts(b, "<p>");
			rc = rc ? rc : html_escape(b, k->text);
			rc = rc ? rc : buf_puts(b, "</p>\n");
			break;
		case B_TABLE:
			rc = buf_printf(b, "<h3 id=\"t-%s\">", k->id);
			rc = rc ? rc : html_escape(b, k->text);
			rc = rc ? rc : buf_puts(b, "</h3>\n<table>\n<tr>");
			for (int c = 0; c < k->ncols && rc == 0; c++) {
				rc = buf_puts(b, "<th>");
				rc = rc ? rc : html_escape(b, k->headers[c]);
				rc = rc ? rc : buf_puts(b, "</th>");
			}
			rc = rc ? rc : buf_puts(b, "</tr>\n");
			for (size_t r = 0; r < k->nrows && rc == 0; r++) {
				rc = buf_puts(b, "<tr>");
				for (int c = 0; c < k->ncols && rc == 0; c++) {
					const struct cell *cl = &k->cells[r * (size_t)k->ncols + (size_t)c];
					if (cl->num >= 0)
						rc = buf_printf(b, "<td class=\"n\" id=\"n%ld\" data-query=\"%s\">", cl->num,
								d->numbers[cl->num].query);
					else
						rc = buf_puts(b, "<td>");
					rc = rc ? rc : html_escape(b, cl->text);
					rc = rc ? rc : buf_puts(b, "</td>");
				}
				rc = rc ? rc : buf_puts(b, "</tr>\n");
			}
			rc = rc ? rc : buf_puts(b, "</table>\n");
			for (size_t n = 0; n < k->nnotes && rc == 0; n++) {
				rc = buf_puts(b, "<p class=\"note\">");
				rc = rc ? rc : html_escape(b, k->notes[n]);
				rc = rc ? rc : buf_puts(b, "</p>\n");
			}
			break;
		case B_PLOT:
			if (plotted[i]) {
				char path[4200];
				size_t n = 0;
				snprintf(path, sizeof path, "%s-%s.svg.tmp", base, k->id);
				char *svg = buf_load_file(path, &n);
				if (!svg)
					return -EIO;
				/* drop the XML prolog and doctype: inline SVG starts at <svg */
				char *start = strstr(svg, "<svg");
				rc = buf_printf(b, "<figure id=\"p-%s\">\n", k->id);
				rc = rc ? rc : buf_puts(b, start ? start : svg);
				rc = rc ? rc : buf_puts(b, "<figcaption>");
				rc = rc ? rc : html_escape(b, k->text);
				/* the files beside the page, for slides and papers */
				rc = rc ? rc : buf_puts(b, " (<a href=\"");
				rc = rc ? rc : html_escape(b, basename_of(base));
				rc = rc ? rc : buf_printf(b, "-%s.png\">PNG</a>, <a href=\"", k->id);
				rc = rc ? rc : html_escape(b, basename_of(base));
				rc = rc ? rc : buf_printf(b, "-%s.svg\">SVG</a>, <a href=\"", k->id);
				rc = rc ? rc : html_escape(b, basename_of(base));
				rc = rc ? rc : buf_printf(b, "-%s.dat\">data</a>)", k->id);
				rc = rc ? rc : buf_puts(b, "</figcaption>\n</figure>\n");
				free(svg);
			}
			break;
		}
	}
	rc = rc ? rc : buf_puts(b, "</body>\n</html>\n");
	return rc;
}

static int csv_field(struct buf *b, const char *s)
{
	if (!strpbrk(s, ",\"\n"))
		return buf_puts(b, s);
	int rc = buf_puts(b, "\"");
	for (; *s && rc == 0; s++)
		rc = *s == '"' ? buf_puts(b, "\"\"") : buf_append(b, s, 1);
	return rc ? rc : buf_puts(b, "\"");
}

static int render_csv(const struct block *k, struct buf *b)
{
	int rc = 0;
	for (int c = 0; c < k->ncols && rc == 0; c++) {
		rc = c ? buf_puts(b, ",") : 0;
		rc = rc ? rc : csv_field(b, k->headers[c]);
	}
	rc = rc ? rc : buf_puts(b, "\n");
	for (size_t r = 0; r < k->nrows && rc == 0; r++) {
		for (int c = 0; c < k->ncols && rc == 0; c++) {
			rc = c ? buf_puts(b, ",") : 0;
			rc = rc ? rc : csv_field(b, k->cells[r * (size_t)k->ncols + (size_t)c].text);
		}
		rc = rc ? rc : buf_puts(b, "\n");
	}
	return rc;
}

/* ---- plots ---- */

/* The gnuplot to run: $SIXI_GNUPLOT when set (empty: none), else the first on PATH. */
static bool find_gnuplot(char *out, size_t n)
{
	const char *env = getenv("SIXI_GNUPLOT");
	if (env) {
		snprintf(out, n, "%s", env);
		return *env && access(env, X_OK) == 0;
	}
	const char *path = getenv("PATH");
	char dirs[4096];
	snprintf(dirs, sizeof dirs, "%s", path ? path : "/usr/bin:/bin");
	char *save, *dir = strtok_r(dirs, ":", &save);
	for (; dir; dir = strtok_r(NULL, ":", &save)) {
		snprintf(out, n, "%s/gnuplot", dir);
		if (access(out, X_OK) == 0)
			return true;
	}
	return false;
}

static int gp_string(struct buf *b, const char *s)
{
	int rc = buf_puts(b, "\"");
	for (; *s && rc == 0; s++)
		rc = (*s == '"' || *s == '\\') ? buf_printf(b, "\\%c", *s) : buf_append(b, s, 1);
	return rc ? rc : buf_puts(b, "\"");
}

/* Writes BASE-ID.dat and BASE-ID.gp (script and data beside the output). The
 * script names the final files; run_gnuplot() runs a copy that writes .tmp ones. */
static int plot_files(const struct block *k, const char *base, struct outputs *o)
{
	struct buf dat, gp;
	buf_init(&dat);
	buf_init(&gp);
	const char *bn = basename_of(base);
	int rc = 0;
	for (int s = 0; s < k->nseries && rc == 0; s++) {
		rc = buf_printf(&dat, "# %s\n", k->series[s]);
		for (size_t i = 0; i < k->npoints && rc == 0; i++)
			if (k->points[i].series == s)
				rc = isfinite(k->points[i].y) ? buf_printf(&dat, "%.17g %.17g\n", k->points[i].x, k->points[i].y)
							      : buf_printf(&dat, "%.17g NaN\n", k->points[i].x);
		rc = rc ? rc : buf_puts(&dat, "\n\n");
	}
	rc = rc ? rc : buf_printf(&gp, "# Plot '%s' of %s.md; run from this folder: gnuplot %s-%s.gp\n", k->id, bn, bn, k->id);
	rc = rc ? rc : buf_puts(&gp, "set datafile missing 'NaN'\nset grid\nset offsets graph 0.03, graph 0.03, graph 0.08, 0\nset key outside right top\nset title ");
	rc = rc ? rc : gp_string(&gp, k->text);
	rc = rc ? rc : buf_puts(&gp, "\nset xlabel ");
	rc = rc ? rc : gp_string(&gp, k->xlabel);
	rc = rc ? rc : buf_puts(&gp, "\nset ylabel ");
	rc = rc ? rc : gp_string(&gp, k->ylabel);
	rc = rc ? rc : buf_printf(&gp, "\n%sset yrange [0:*]\n",
				  k->logx ? "set logscale x 2\n" : k->free_x ? "" : "set xtics 1\n");
	rc = rc ? rc : buf_printf(&gp, "set terminal svg size 800,450 dynamic font 'sans,12' background rgb 'white'\n"
				  "set output '%s-%s.svg'\nplot ", bn, k->id);
	for (int s = 0; s < k->nseries && rc == 0; s++) {
		bool invalid = strncmp(k->series[s], "invalid", 7) == 0;
		rc = buf_printf(&gp, "%s'%s-%s.dat' index %d using 1:2 with %s title ", s ? ", " : "", bn, k->id, s,
				invalid ? "points pointtype 2 pointsize 2 linecolor rgb 'red'" : "linespoints pointtype 7");
		rc = rc ? rc : gp_string(&gp, k->series[s]);
	}
	rc = rc ? rc : buf_printf(&gp, "\nif (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
				  "  set terminal pngcairo size 800,450 font 'sans,10'\n"
				  "} else {\n  set terminal png size 800,450\n}\n"
				  "set output '%s-%s.png'\nreplot\nset output\n",
				  bn, k->id);
	char path[4200];
	if (rc == 0) {
		snprintf(path, sizeof path, "%s-%s.dat", base, k->id);
		rc = write_file(o, path, dat.data, dat.len);
	}
	if (rc == 0) {
		snprintf(path, sizeof path, "%s-%s.gp", base, k->id);
		rc = write_file(o, path, gp.data, gp.len);
	}
	buf_finish(&dat);
	buf_finish(&gp);
	return rc;
}

/* Runs gnuplot on BASE-ID.gp.tmp in BASE's folder; the .dat it reads is still
 * .tmp too, so the script is run on a copy pointing at the .tmp names. */
static int run_gnuplot(const char *gnuplot, const struct block *k, const char *base, struct outputs *o)
{
	char dir[4096], script[4200], tmpdat[4200], path[4200];
	snprintf(dir, sizeof dir, "%s", base);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	else
		snprintf(dir, sizeof dir, ".");
	const char *bn = basename_of(base);
	/* point the script at the .dat.tmp for this run only */
	snprintf(path, sizeof path, "%s-%s.gp.tmp", base, k->id);
	size_t n = 0;
	char *gp = buf_load_file(path, &n);
	if (!gp)
		return -EIO;
	/* the script names BASE-ID.{dat,svg,png}; this run reads and writes the .tmp ones */
	struct buf run;
	buf_init(&run);
	int rc = 0;
	for (char *p = gp; *p && rc == 0;) {
		static const char *const ext[] = { "dat", "svg", "png" };
		char *hit = NULL;
		size_t hitlen = 0;
		for (int e = 0; e < 3; e++) {
			snprintf(tmpdat, sizeof tmpdat, "'%s-%s.%s'", bn, k->id, ext[e]);
			char *h = strstr(p, tmpdat);
			if (h && (!hit || h < hit)) {
				hit = h;
				hitlen = strlen(tmpdat);
			}
		}
		if (!hit) {
			rc = buf_puts(&run, p);
			break;
		}
		rc = buf_append(&run, p, (size_t)(hit - p) + hitlen - 1);
		rc = rc ? rc : buf_puts(&run, ".tmp'");
		p = hit + hitlen;
	}
	free(gp);
	snprintf(script, sizeof script, "%s-%s.run.gp", base, k->id);
	FILE *f = rc ? NULL : fopen(script, "w");
	if (!f) {
		buf_finish(&run);
		return rc ? rc : -errno;
	}
	fputs(run.data ? run.data : "", f);
	fclose(f);
	buf_finish(&run);
	pid_t pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);
		if (devnull >= 0) {
			dup2(devnull, 1);
			dup2(devnull, 2);
		}
		if (chdir(dir) != 0)
			_exit(126);
		char name[4200];
		snprintf(name, sizeof name, "%s-%s.run.gp", bn, k->id);
		execl(gnuplot, "gnuplot", name, (char *)NULL);
		_exit(127);
	}
	int status = 0;
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		rc = -errno;
	unlink(script);
	if (rc == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
		rc = -ECHILD;
	static const char *const made[] = { "svg", "png" };
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof path, "%s-%s.%s", base, k->id, made[i]);
		if (rc) {
			/* a failed run leaves no half-drawn plot behind */
			char tmp[4300];
			snprintf(tmp, sizeof tmp, "%s.tmp", path);
			unlink(tmp);
		} else {
			/* renamed (or removed) with the rest of the files */
			rc = out_add(o, path);
		}
	}
	return rc;
}

/* ---- sidecar ---- */

static cJSON *sidecar(const struct report_doc *d, const char *base)
{
	cJSON *root = cJSON_CreateObject();
	char now[32];
	clock_wall_iso(now, sizeof now);
	cJSON_AddNumberToObject(root, "sidecar_version", 1);
	cJSON_AddStringToObject(root, "title", d->title);
	cJSON_AddStringToObject(root, "generated", now);
	cJSON_AddStringToObject(root, "report", basename_of(base));
	cJSON_AddStringToObject(root, "command", d->command ? d->command : "");
	cJSON *argv = cJSON_AddArrayToObject(root, "argv");
	for (int i = 0; i < d->argc; i++)
		cJSON_AddItemToArray(argv, cJSON_CreateString(d->argv[i]));
	cJSON *q = cJSON_AddObjectToObject(root, "queries");
	for (size_t i = 0; i < d->nqueries; i++)
		cJSON_AddStringToObject(q, d->query_ids[i], d->query_sql[i]);
	cJSON *nums = cJSON_AddArrayToObject(root, "numbers");
	for (size_t i = 0; i < d->nnumbers; i++) {
		cJSON *n = cJSON_CreateObject();
		char where[4200], anchor[32];
		snprintf(where, sizeof where, "%s.md:%d", basename_of(base), d->numbers[i].md_line);
		snprintf(anchor, sizeof anchor, "n%zu", i);
		cJSON_AddStringToObject(n, "id", d->numbers[i].id);
		cJSON_AddStringToObject(n, "value", d->numbers[i].value);
		cJSON_AddStringToObject(n, "query", d->numbers[i].query);
		cJSON_AddStringToObject(n, "md", where);
		cJSON_AddStringToObject(n, "html_id", anchor);
		cJSON_AddItemToArray(nums, n);
	}
	return root;
}

int report_doc_render(struct report_doc *d, const char *base, unsigned formats, bool plots, char *note,
		      size_t notelen, char *err, size_t errlen)
{
	if (d->error) {
		err_set(err, errlen, "building the report failed: %s", strerror(-d->error));
		return d->error;
	}
	struct outputs o = { 0 };
	struct buf b;
	buf_init(&b);
	bool *plotted = calloc(d->nblocks + 1, sizeof *plotted);
	int rc = plotted ? 0 : -ENOMEM;
	char path[4200], gnuplot[4096];
	const char *what = "";
	note[0] = 0;
	size_t nplots = 0;
	for (size_t i = 0; i < d->nblocks; i++)
		nplots += d->blocks[i].kind == B_PLOT;
	bool have_gp = plots && nplots && find_gnuplot(gnuplot, sizeof gnuplot);
	if (plots && nplots && !have_gp)
		snprintf(note, notelen,
			 "Plots were skipped: gnuplot was not found (install it, e.g. apt-get install gnuplot-nox, "
			 "or set SIXI_GNUPLOT), then render again.");
	for (size_t i = 0; i < d->nblocks && rc == 0; i++) {
		const struct block *k = &d->blocks[i];
		if (k->kind == B_TABLE && (formats & REPORT_CSV)) {
			what = "CSV";
			buf_reset(&b);
			snprintf(path, sizeof path, "%s-%s.csv", base, k->id);
			rc = render_csv(k, &b);
			rc = rc ? rc : write_file(&o, path, b.data ? b.data : "", b.len);
		} else if (k->kind == B_PLOT && plots && nplots) {
			what = "plot files";
			rc = plot_files(k, base, &o);
			if (rc == 0 && have_gp && k->npoints) {
				int g = run_gnuplot(gnuplot, k, base, &o);
				if (g == 0)
					plotted[i] = true;
				else if (!note[0])
					snprintf(note, notelen, "gnuplot failed on %s-%s.gp; the tables are complete, run "
						 "gnuplot on that script to see why.", basename_of(base), k->id);
			}
		}
	}
	if (rc == 0 && (formats & REPORT_MD)) {
		what = "Markdown";
		buf_reset(&b);
		rc = render_md(d, base, plotted, &b);
		if (rc == 0 && note[0])
			rc = buf_printf(&b, "%s\n", note);
		snprintf(path, sizeof path, "%s.md", base);
		rc = rc ? rc : write_file(&o, path, b.data, b.len);
	}
	if (rc == 0 && (formats & REPORT_HTML)) {
		what = "HTML";
		buf_reset(&b);
		rc = render_html(d, base, plotted, note, &b);
		snprintf(path, sizeof path, "%s.html", base);
		rc = rc ? rc : write_file(&o, path, b.data, b.len);
	}
	if (rc == 0) {
		what = "sidecar";
		cJSON *sc = sidecar(d, base);
		char *s = sc ? cJSON_Print(sc) : NULL;
		snprintf(path, sizeof path, "%s.sixi.json", base);
		rc = s ? write_file(&o, path, s, strlen(s)) : -ENOMEM;
		free(s);
		cJSON_Delete(sc);
	}
	if (rc)
		err_set(err, errlen, "%s: writing the %s failed (%s); nothing was written", base, what, strerror(-rc));
	int frc = out_finish(&o, rc == 0);
	if (rc == 0 && frc) {
		err_set(err, errlen, "%s: renaming the finished files failed: %s", base, strerror(-frc));
		rc = frc;
	}
	buf_finish(&b);
	free(plotted);
	return rc;
}

cJSON *report_doc_json(const struct report_doc *d)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "title", d->title);
	cJSON *tables = cJSON_AddObjectToObject(root, "tables");
	for (size_t i = 0; i < d->nblocks; i++) {
		const struct block *k = &d->blocks[i];
		if (k->kind != B_TABLE)
			continue;
		cJSON *t = cJSON_AddObjectToObject(tables, k->id);
		cJSON_AddStringToObject(t, "title", k->text);
		cJSON *rows = cJSON_AddArrayToObject(t, "rows");
		for (size_t r = 0; r < k->nrows; r++) {
			cJSON *row = cJSON_CreateObject();
			for (int c = 0; c < k->ncols; c++) {
				const struct cell *cl = &k->cells[r * (size_t)k->ncols + (size_t)c];
				char *end;
				double v = strtod(cl->text, &end);
				if (cl->num >= 0 && end != cl->text && *end == 0)
					cJSON_AddNumberToObject(row, k->headers[c], v);
				else
					cJSON_AddStringToObject(row, k->headers[c], cl->text);
			}
			cJSON_AddItemToArray(rows, row);
		}
		if (k->nnotes) {
			cJSON *notes = cJSON_AddArrayToObject(t, "notes");
			for (size_t n = 0; n < k->nnotes; n++)
				cJSON_AddItemToArray(notes, cJSON_CreateString(k->notes[n]));
		}
	}
	return root;
}
