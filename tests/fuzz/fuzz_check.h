/* fuzz_check — the assertion the fuzz targets share beyond "no crash": a failed check
 * prints the target, what broke and the input as text, then aborts, so that libFuzzer
 * keeps the input as a reproducer. A target defines FUZZ_NAME before including this. */
#ifndef SIXI_FUZZ_CHECK_H
#define SIXI_FUZZ_CHECK_H
#include <stdio.h>
#include <stdlib.h>

#define FUZZ_CHECK_ON(ok, why, in, len)                                                                   \
	do {                                                                                              \
		if (!(ok)) {                                                                              \
			fprintf(stderr, "%s: %s on: %.*s\n", FUZZ_NAME, why, (int)(len), (const char *)(in)); \
			abort();                                                                          \
		}                                                                                         \
	} while (0)
#endif
