/* replay — a bounded driver for the libFuzzer targets that have no driver of
 * their own, so that every compiler (and ASan, valgrind) runs them: each file
 * named on the command line (a folder: each file in it) is fed as is, then
 * 300 seeded mutations of it (fuzz_mutate.h), with the punctuation of JSON,
 * HTTP and Jinja as the bytes that mean something. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_mutate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static long runs;

static int replay_file(const char *path)
{
	size_t n;
	uint8_t *src = fuzz_read_file(path, &n);
	if (!src) {
		fprintf(stderr, "replay: cannot read %s\n", path);
		return 1;
	}
	uint64_t s = 0x5eed ^ n;
	runs += fuzz_mutate_run(LLVMFuzzerTestOneInput, src, n, 300, 0, "{}[]\":,\\ \n\r0123456789-.eE%#+~|()'=<>!", &s);
	free(src);
	return 0;
}

int main(int argc, char **argv)
{
	int bad = 0;
	for (int a = 1; a < argc; a++) {
		struct stat st;
		if (stat(argv[a], &st) == 0 && S_ISDIR(st.st_mode)) {
			DIR *d = opendir(argv[a]);
			struct dirent *e;
			while (d && (e = readdir(d))) {
				if (e->d_name[0] == '.')
					continue;
				char p[4096];
				snprintf(p, sizeof p, "%s/%s", argv[a], e->d_name);
				bad |= replay_file(p);
			}
			if (d)
				closedir(d);
		} else {
			bad |= replay_file(argv[a]);
		}
	}
	printf("replay: %ld inputs, no crash\n", runs);
	return bad;
}
