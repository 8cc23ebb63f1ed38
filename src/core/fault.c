/* fault — see fault.h. The failing SQLite VFS is the store's (store/fault.c). */
#include "core/fault.h"
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[FAULT_KINDS] = {"alloc", "sqlite", "full", "read"};
static long long fault_at[FAULT_KINDS];          /* 0: off */
static atomic_llong fault_count[FAULT_KINDS];
static atomic_bool fault_any;                    /* any kind armed */
static atomic_int fault_state;                   /* 0 not read, 1 reading, 2 done */
static int fault_thread[FAULT_KINDS];            /* -1: count over all threads */
static atomic_int fault_threads;                 /* threads numbered so far */
static _Thread_local int thread_no = -1;         /* this thread's number, from its first event */
static _Thread_local long long thread_count[FAULT_KINDS];

static bool hit(enum fault_kind k)
{
	long long n;
	if (fault_thread[k] >= 0) {
		if (thread_no < 0)
			thread_no = atomic_fetch_add(&fault_threads, 1);
		if (thread_no != fault_thread[k])
			return false;
		n = ++thread_count[k];
	} else {
		n = atomic_fetch_add(&fault_count[k], 1) + 1;
	}
	if (n != fault_at[k])
		return false;
	/* fprintf may allocate: a one-off write(2) of a fixed buffer */
	char line[96];
	int len = fault_thread[k] >= 0
		? snprintf(line, sizeof line, "sixi: fault injected: %s #%lld in thread %d\n", kind_names[k], n,
			   fault_thread[k])
		: snprintf(line, sizeof line, "sixi: fault injected: %s #%lld\n", kind_names[k], n);
	fwrite(line, 1, (size_t)len, stderr);
	return true;
}

bool fault_hit(enum fault_kind k)
{
	if (!atomic_load_explicit(&fault_any, memory_order_relaxed))
		return false;
	return fault_at[k] > 0 && hit(k);
}

bool fault_armed(enum fault_kind k)
{
	return atomic_load(&fault_state) == 2 && fault_at[k] > 0;
}

int fault_init(void)
{
	int expect = 0;
	if (!atomic_compare_exchange_strong(&fault_state, &expect, 1))
		return 0;
	const char *spec = getenv("SIXI_FAULT");
	int rc = 0;
	for (int k = 0; k < FAULT_KINDS; k++)
		fault_thread[k] = -1;
	thread_no = 0; /* the thread that reads SIXI_FAULT is thread 0 */
	atomic_store(&fault_threads, 1);
	for (const char *p = spec; p && *p && rc == 0;) {
		size_t len = strcspn(p, ",");
		bool ok = false;
		for (int k = 0; k < FAULT_KINDS && !ok; k++) {
			size_t kl = strlen(kind_names[k]);
			char *end;
			if (len > kl + 1 && strncmp(p, kind_names[k], kl) == 0 && p[kl] == '=') {
				long long v = strtoll(p + kl + 1, &end, 10), t = -1;
				if (end < p + len && *end == '@' && end[1] >= '0' && end[1] <= '9')
					t = strtoll(end + 1, &end, 10);
				if (end == p + len && v > 0 && t < 64) {
					fault_at[k] = v;
					fault_thread[k] = (int)t;
					ok = true;
				}
			}
		}
		if (!ok) {
			fprintf(stderr, "SIXI_FAULT=%s: expected KIND=K[@T][,KIND=K[@T]] with KIND alloc, sqlite, full or read "
				"and K >= 1; unset it to run normally\n", spec);
			rc = -EINVAL;
		}
		p += len + (p[len] == ',');
	}
	if (rc == 0)
		for (int k = 0; k < FAULT_KINDS; k++)
			if (fault_at[k])
				atomic_store(&fault_any, true);
	atomic_store(&fault_state, 2);
	return rc;
}

/* ---- the allocator: glibc's documented replacement of malloc, calloc, realloc, free ---- */
#if !defined(__SANITIZE_ADDRESS__) && !defined(__has_feature)
#define SIXI_FAULT_ALLOC 1
#elif defined(__has_feature)
#if !__has_feature(address_sanitizer)
#define SIXI_FAULT_ALLOC 1
#endif
#endif

#if defined(SIXI_FAULT_ALLOC) && defined(__GLIBC__)
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);

static bool alloc_fails(void)
{
	if (!atomic_load_explicit(&fault_any, memory_order_relaxed) || fault_at[FAULT_ALLOC] <= 0 ||
	    atomic_load_explicit(&fault_state, memory_order_relaxed) != 2)
		return false;
	if (!hit(FAULT_ALLOC))
		return false;
	errno = ENOMEM;
	return true;
}

void *malloc(size_t n) { return alloc_fails() ? NULL : __libc_malloc(n); }
void *calloc(size_t n, size_t size) { return alloc_fails() ? NULL : __libc_calloc(n, size); }
void *realloc(void *p, size_t n) { return n && alloc_fails() ? NULL : __libc_realloc(p, n); }
void free(void *p) { __libc_free(p); }
#endif
