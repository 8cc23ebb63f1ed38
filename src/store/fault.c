/* fault — the store's half of fault injection (core/fault.h): when SIXI_FAULT
 * names sqlite or full, a VFS that wraps SQLite's default one and fails the K-th
 * xWrite with SQLITE_IOERR_WRITE or SQLITE_FULL is registered as the default.
 * Tests only; with SIXI_FAULT unset nothing is registered. store_open calls
 * store_fault_install after fault_init, before opening the file. */
#include "store/internal.h"
#include "core/fault.h"
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

static sqlite3_vfs *base_vfs;
static sqlite3_vfs shim_vfs;

struct shim_file {
	sqlite3_file base;      /* must be first: SQLite sees this */
	sqlite3_file *real;     /* the wrapped file, allocated after this struct */
};

static struct sqlite3_io_methods shim_io;

static sqlite3_file *real_of(sqlite3_file *f) { return ((struct shim_file *)f)->real; }

static int shim_close(sqlite3_file *f)
{
	sqlite3_file *r = real_of(f);
	return r->pMethods ? r->pMethods->xClose(r) : SQLITE_OK;
}
static int shim_read(sqlite3_file *f, void *p, int n, sqlite3_int64 off)
{
	return real_of(f)->pMethods->xRead(real_of(f), p, n, off);
}
static int shim_write(sqlite3_file *f, const void *p, int n, sqlite3_int64 off)
{
	if (fault_hit(FAULT_SQLITE_FULL))
		return SQLITE_FULL;
	if (fault_hit(FAULT_SQLITE_IOERR))
		return SQLITE_IOERR_WRITE;
	return real_of(f)->pMethods->xWrite(real_of(f), p, n, off);
}
static int shim_truncate(sqlite3_file *f, sqlite3_int64 size) { return real_of(f)->pMethods->xTruncate(real_of(f), size); }
static int shim_sync(sqlite3_file *f, int flags) { return real_of(f)->pMethods->xSync(real_of(f), flags); }
static int shim_size(sqlite3_file *f, sqlite3_int64 *size) { return real_of(f)->pMethods->xFileSize(real_of(f), size); }
static int shim_lock(sqlite3_file *f, int l) { return real_of(f)->pMethods->xLock(real_of(f), l); }
static int shim_unlock(sqlite3_file *f, int l) { return real_of(f)->pMethods->xUnlock(real_of(f), l); }
static int shim_check(sqlite3_file *f, int *out) { return real_of(f)->pMethods->xCheckReservedLock(real_of(f), out); }
static int shim_fcntl(sqlite3_file *f, int op, void *arg) { return real_of(f)->pMethods->xFileControl(real_of(f), op, arg); }
static int shim_sector(sqlite3_file *f) { return real_of(f)->pMethods->xSectorSize(real_of(f)); }
static int shim_caps(sqlite3_file *f) { return real_of(f)->pMethods->xDeviceCharacteristics(real_of(f)); }
static int shim_shm_map(sqlite3_file *f, int pg, int pgsz, int extend, void volatile **pp)
{
	return real_of(f)->pMethods->xShmMap(real_of(f), pg, pgsz, extend, pp);
}
static int shim_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
	return real_of(f)->pMethods->xShmLock(real_of(f), offset, n, flags);
}
static void shim_shm_barrier(sqlite3_file *f) { real_of(f)->pMethods->xShmBarrier(real_of(f)); }
static int shim_shm_unmap(sqlite3_file *f, int del) { return real_of(f)->pMethods->xShmUnmap(real_of(f), del); }

static int shim_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out_flags)
{
	struct shim_file *sf = (struct shim_file *)f;
	sf->real = (sqlite3_file *)(sf + 1);
	memset(sf->real, 0, (size_t)base_vfs->szOsFile);
	f->pMethods = NULL;
	int rc = base_vfs->xOpen(base_vfs, name, sf->real, flags, out_flags);
	if (rc == SQLITE_OK) {
		/* the shim offers what the real file offers, at its io version */
		shim_io.iVersion = sf->real->pMethods->iVersion < 2 ? sf->real->pMethods->iVersion : 2;
		f->pMethods = &shim_io;
	}
	return rc;
}
static int shim_delete(sqlite3_vfs *v, const char *n, int sync) { return base_vfs->xDelete(base_vfs, n, sync); }
static int shim_access(sqlite3_vfs *v, const char *n, int flags, int *out) { return base_vfs->xAccess(base_vfs, n, flags, out); }
static int shim_fullpath(sqlite3_vfs *v, const char *n, int len, char *out) { return base_vfs->xFullPathname(base_vfs, n, len, out); }
static void *shim_dlopen(sqlite3_vfs *v, const char *n) { return base_vfs->xDlOpen(base_vfs, n); }
static void shim_dlerror(sqlite3_vfs *v, int n, char *msg) { base_vfs->xDlError(base_vfs, n, msg); }
static void (*shim_dlsym(sqlite3_vfs *v, void *h, const char *s))(void) { return base_vfs->xDlSym(base_vfs, h, s); }
static void shim_dlclose(sqlite3_vfs *v, void *h) { base_vfs->xDlClose(base_vfs, h); }
static int shim_random(sqlite3_vfs *v, int n, char *out) { return base_vfs->xRandomness(base_vfs, n, out); }
static int shim_sleep(sqlite3_vfs *v, int us) { return base_vfs->xSleep(base_vfs, us); }
static int shim_time(sqlite3_vfs *v, double *t) { return base_vfs->xCurrentTime(base_vfs, t); }
static int shim_lasterr(sqlite3_vfs *v, int n, char *s) { return base_vfs->xGetLastError ? base_vfs->xGetLastError(base_vfs, n, s) : 0; }
static int shim_time64(sqlite3_vfs *v, sqlite3_int64 *t) { return base_vfs->xCurrentTimeInt64(base_vfs, t); }

int store_fault_install(void)
{
	static atomic_bool claimed; /* the first store_open registers it; later ones find it there */
	if (!fault_armed(FAULT_SQLITE_IOERR) && !fault_armed(FAULT_SQLITE_FULL))
		return 0;
	if (atomic_exchange(&claimed, true))
		return 0;
	base_vfs = sqlite3_vfs_find(NULL);
	if (!base_vfs)
		return -ENOSYS;
	shim_io = (struct sqlite3_io_methods){
		.iVersion = 2, .xClose = shim_close, .xRead = shim_read, .xWrite = shim_write,
		.xTruncate = shim_truncate, .xSync = shim_sync, .xFileSize = shim_size, .xLock = shim_lock,
		.xUnlock = shim_unlock, .xCheckReservedLock = shim_check, .xFileControl = shim_fcntl,
		.xSectorSize = shim_sector, .xDeviceCharacteristics = shim_caps, .xShmMap = shim_shm_map,
		.xShmLock = shim_shm_lock, .xShmBarrier = shim_shm_barrier, .xShmUnmap = shim_shm_unmap,
	};
	shim_vfs = (sqlite3_vfs){
		.iVersion = 2, .szOsFile = (int)sizeof(struct shim_file) + base_vfs->szOsFile,
		.mxPathname = base_vfs->mxPathname, .zName = "sixi-fault", .xOpen = shim_open,
		.xDelete = shim_delete, .xAccess = shim_access, .xFullPathname = shim_fullpath,
		.xDlOpen = shim_dlopen, .xDlError = shim_dlerror, .xDlSym = shim_dlsym, .xDlClose = shim_dlclose,
		.xRandomness = shim_random, .xSleep = shim_sleep, .xCurrentTime = shim_time,
		.xGetLastError = shim_lasterr, .xCurrentTimeInt64 = shim_time64,
	};
	return sqlite3_vfs_register(&shim_vfs, 1) == SQLITE_OK ? 0 : -EIO;
}

