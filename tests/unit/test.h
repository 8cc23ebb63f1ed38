/* test.h — the tiny helper every unit test includes.
 * CHECK* record a failure with file:line and go on; test_done() prints the
 * counts and returns the exit code meson expects (0 pass, 1 fail, 77 skip). */
#ifndef SIXI_TEST_H
#define SIXI_TEST_H
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_checks, test_failures;

#define CHECK(cond) test_check_((cond), #cond, __FILE__, __LINE__)
#define CHECK_EQ_INT(a, b) test_check_eq_int_((long long)(a), (long long)(b), #a, #b, __FILE__, __LINE__)
#define CHECK_EQ_STR(a, b) test_check_eq_str_((a), (b), #a, __FILE__, __LINE__)
#define CHECK_NEAR(a, b, rel) test_check_near_((double)(a), (double)(b), (rel), #a, __FILE__, __LINE__)

static inline int test_check_(int ok, const char *what, const char *file, int line)
{
	test_checks++;
	if (!ok) {
		test_failures++;
		fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
	}
	return ok;
}

static inline int test_check_eq_int_(long long a, long long b, const char *sa, const char *sb, const char *file, int line)
{
	test_checks++;
	if (a != b) {
		test_failures++;
		fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", file, line, sa, sb, a, b);
		return 0;
	}
	return 1;
}

static inline int test_check_eq_str_(const char *a, const char *b, const char *sa, const char *file, int line)
{
	test_checks++;
	if (!a || !b || strcmp(a, b) != 0) {
		test_failures++;
		fprintf(stderr, "%s:%d: %s: got \"%s\", expected \"%s\"\n", file, line, sa, a ? a : "(null)",
			b ? b : "(null)");
		return 0;
	}
	return 1;
}

/* Relative tolerance against the larger magnitude; exact equality also passes (incl. inf). */
static inline int test_check_near_(double a, double b, double rel, const char *sa, const char *file, int line)
{
	test_checks++;
	double scale = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
	int ok = a == b || (isnan(a) && isnan(b)) || fabs(a - b) <= rel * (scale > 1e-300 ? scale : 1e-300);
	if (!ok) {
		test_failures++;
		fprintf(stderr, "%s:%d: %s: got %.17g, expected %.17g (rel %g)\n", file, line, sa, a, b, rel);
	}
	return ok;
}

/* Exit code 77 tells meson the test was skipped; say why on stdout. */
static inline int test_skip(const char *why)
{
	printf("SKIP: %s\n", why);
	return 77;
}

static inline int test_done(void)
{
	printf("%d checks, %d failed\n", test_checks, test_failures);
	return test_failures ? 1 : 0;
}

/* A whole file, NUL-terminated, malloc'd (caller frees); NULL if unreadable.
 * *n (optional) receives its length. */
static inline char *test_slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *p = NULL;
	long len = -1;
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0)
		p = malloc((size_t)len + 1);
	if (p && fread(p, 1, (size_t)len, f) != (size_t)len) {
		free(p);
		p = NULL;
	}
	if (p) {
		p[len] = 0;
		if (n)
			*n = (size_t)len;
	}
	fclose(f);
	return p;
}

/* Path of a file in the source tree (SIXI_SOURCE_ROOT is set by meson). Static buffer. */
static inline const char *test_src_path(const char *rel)
{
	static char buf[4096];
	const char *root = getenv("SIXI_SOURCE_ROOT");
	snprintf(buf, sizeof buf, "%s/%s", root ? root : ".", rel);
	return buf;
}
#endif
