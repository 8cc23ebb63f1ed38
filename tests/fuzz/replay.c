/* replay — a bounded driver for the libFuzzer targets that have no driver of
 * their own, so that every compiler (and ASan, valgrind) runs them: each file
 * named on the command line (a folder: each file in it) is fed as is, then
 * 300 seeded mutations of it (bytes changed, truncated, a byte inserted). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static long runs;

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "replay: cannot read %s\n", path);
		return 1;
	}
	static char src[1 << 16], buf[(1 << 16) + 1];
	size_t n = fread(src, 1, sizeof src, f);
	fclose(f);
	LLVMFuzzerTestOneInput((const uint8_t *)src, n);
	runs++;
	static const char punct[] = "{}[]\":,\\ \n\r0123456789-.eE";
	uint64_t s = 0x5eed ^ n;
	for (int it = 0; it < 300 && n; it++, runs++) {
		memcpy(buf, src, n);
		size_t m = n;
		for (int k = 0; k < 1 + it % 4; k++) {
			s = s * 6364136223846793005ULL + 1442695040888963407ULL;
			size_t pos = (s >> 33) % m;
			switch ((s >> 16) % 4) {
			case 0: buf[pos] = punct[(s >> 40) % (sizeof punct - 1)]; break;
			case 1: m = pos ? pos : 1; break;
			case 2:
				if (m < sizeof buf) {
					memmove(buf + pos + 1, buf + pos, m - pos);
					buf[pos] = punct[(s >> 40) % (sizeof punct - 1)];
					m++;
				}
				break;
			default: buf[pos] = (char)(s >> 24); break;
			}
		}
		LLVMFuzzerTestOneInput((const uint8_t *)buf, m);
	}
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
