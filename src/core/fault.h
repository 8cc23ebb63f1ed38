/* fault — test-only fault injection, off unless SIXI_FAULT is set.
 *
 * SIXI_FAULT="KIND=K[,KIND=K...]" fails the K-th event of each KIND once
 * (counting from 1, per process, from the first fault_init: store_open calls it):
 *   alloc   the K-th malloc/calloc/realloc returns NULL (ENOMEM)
 *   sqlite  the K-th SQLite file write returns SQLITE_IOERR_WRITE
 *   full    the K-th SQLite file write returns SQLITE_FULL (disk full)
 *   read    the K-th read of a response body (libcurl write callback) fails
 * KIND=K@T counts the events of thread T only: thread 0 is the one that calls
 * fault_init, the others are numbered 1, 2, ... in the order of their first
 * event of an armed kind after it. One thread's sequence of allocations does not
 * depend on how the scheduler interleaves it with the others, so a fault found
 * this way can be replayed; the plain count over all threads cannot promise that.
 * Each injected fault prints "sixi: fault injected: KIND #K" (plus " in thread T")
 * on stderr, so a test looping K over a run knows when K has passed the run's
 * last event.
 *
 * Production cost: with SIXI_FAULT unset, fault_hit is one load and branch,
 * and the allocator wrapper one more; no VFS is registered with SQLite.
 * The allocator wrapper (glibc's documented malloc replacement) is compiled
 * out under AddressSanitizer, which owns the allocator there.
 * Without @T counts are atomic, but which thread's event is the K-th depends
 * on scheduling. */
#ifndef SIXI_CORE_FAULT_H
#define SIXI_CORE_FAULT_H
#include <stdbool.h>

enum fault_kind { FAULT_ALLOC = 0, FAULT_SQLITE_IOERR, FAULT_SQLITE_FULL, FAULT_READ, FAULT_KINDS };

/* Reads SIXI_FAULT (once; later calls do nothing). The store registers its failing
 * VFS (store/fault.c) when sqlite or full are named, before it opens a database.
 * 0, or -EINVAL with a message on stderr when SIXI_FAULT is malformed. */
int fault_init(void);
/* True when SIXI_FAULT, read by fault_init, names kind k. */
bool fault_armed(enum fault_kind k);
/* True when this is the event of kind k to fail. */
bool fault_hit(enum fault_kind k);
#endif
