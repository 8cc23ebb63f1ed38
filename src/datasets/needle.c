/* needle — see needle.h. splitmix64 drives every choice, so a seed gives the
 * same prompt on every machine. */
#include "datasets/needle.h"
#include "core/buf.h"
#include "text/reply.h"
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

#define PICK(arr, s) (arr[next(s) % (sizeof arr / sizeof arr[0])])

static const char *const subjects[] = {
	"the ferry clerk", "a retired surveyor", "the night baker", "our orchard keeper", "the river pilot",
	"a visiting glazier", "the archive porter", "the choir tailor", "a young cartographer", "the mill owner",
	"the lamp inspector", "a travelling cooper", "the quarry foreman", "the harbour nurse", "a wool merchant",
	"the bell founder", "the canal warden", "a patient beekeeper", "the market weigher", "the salt carrier",
};
static const char *const verbs[] = {
	"counted", "repaired", "painted", "carried", "measured", "sorted", "polished", "described", "sketched",
	"wrapped", "folded", "stacked", "weighed", "labelled", "inspected", "borrowed", "returned", "mended",
};
static const char *const adjectives[] = {
	"seven", "faded", "crooked", "copper", "heavy", "narrow", "glazed", "striped", "hollow", "quiet",
	"oaken", "salted", "dusty", "bright", "twisted", "woollen", "cracked", "silver", "amber", "plain",
};
static const char *const objects[] = {
	"lanterns", "barrels", "ledgers", "shutters", "ropes", "baskets", "kettles", "tiles", "maps", "sacks",
	"oars", "bells", "benches", "candles", "crates", "jugs", "nets", "saddles", "spindles", "windows",
};
static const char *const places[] = {
	"near the east gate", "by the old weir", "behind the granary", "under the clock tower",
	"along the tow path", "beside the chapel", "at the fish market", "past the toll bridge",
	"inside the rope walk", "on the upper terrace", "below the windmill", "across the square",
};
static const char *const times[] = {
	"before dawn", "after the rain", "on market day", "at low tide", "during the fair", "late that evening",
	"in early spring", "at noon", "before the frost", "after the bells",
};
static const char *const vault_sides[] = {"north", "south", "east", "west", "upper", "lower", "inner", "outer"};
static const char *const vault_towns[] = {
	"Amber Harbour", "Fenwick Cross", "Lowmoor", "Ashgrove", "Tillbury Quay", "Harrowdale",
	"Marlow Reach", "Stonebridge", "Kestrel Point", "Wyndham",
};

static int sentence(struct buf *b, uint64_t serial, uint64_t *s)
{
	const char *subj = PICK(subjects, s), *verb = PICK(verbs, s), *adj = PICK(adjectives, s),
		   *obj = PICK(objects, s), *place = PICK(places, s), *when = PICK(times, s);
	unsigned n = 2 + (unsigned)(next(s) % 97);
	/* the serial number makes every sentence of a prompt distinct */
	return buf_printf(b, "Note %llu: %c%s %s %u %s %s %s %s. ", (unsigned long long)serial,
			  toupper((unsigned char)subj[0]), subj + 1, verb, n, adj, obj, place, when);
}

int needle_make(const struct needle_spec *sp, struct needle_case *c)
{
	memset(c, 0, sizeof *c);
	if (sp->context_tokens < 64 || sp->context_tokens > 2000000 || !(sp->depth >= 0 && sp->depth <= 1))
		return -EINVAL;
	uint64_t s = sp->seed ^ 0x6E6565646C65ull; /* "needle" */
	snprintf(c->key, sizeof c->key, "the %s vault of %s", PICK(vault_sides, &s), PICK(vault_towns, &s));
	snprintf(c->answer, sizeof c->answer, "%07llu", (unsigned long long)(1000000 + next(&s) % 9000000));
	/* the serial starts at a seed-dependent number: prompts differ from the first note */
	uint64_t serial = 100 + next(&s) % 900000;
	size_t target = (size_t)sp->context_tokens * NEEDLE_BYTES_PER_TOKEN;

	struct buf hay, out;
	buf_init(&hay);
	buf_init(&out);
	size_t *starts = NULL, n = 0, cap = 0;
	int rc = 0;
	while (hay.len < target) {
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			size_t *t = realloc(starts, cap * sizeof *t);
			if (!t) {
				rc = -ENOMEM;
				goto out;
			}
			starts = t;
		}
		starts[n++] = hay.len;
		if ((rc = sentence(&hay, serial++, &s)) != 0)
			goto out;
	}
	/* the sentence boundary nearest depth * length */
	size_t want = (size_t)(sp->depth * (double)hay.len), at = hay.len;
	size_t best = (size_t)-1;
	for (size_t i = 0; i <= n; i++) {
		size_t pos = i < n ? starts[i] : hay.len;
		size_t d = pos > want ? pos - want : want - pos;
		if (d < best) {
			best = d;
			at = pos;
		}
	}
	static const char head[] = "Below is a long record of notes. Exactly one of them gives an access code. "
				   "Read all of it, then answer the question at the end.\n\n";
	if ((rc = buf_puts(&out, head)) || (rc = buf_append(&out, hay.data, at)))
		goto out;
	c->needle_at_bytes = out.len;
	c->depth_actual = hay.len ? (double)at / (double)hay.len : 0;
	if ((rc = buf_printf(&out, "Note: the access code for %s is %s. ", c->key, c->answer)) ||
	    (rc = buf_append(&out, hay.data + at, hay.len - at)) ||
	    (rc = buf_printf(&out, "\n\nQuestion: what is the access code for %s? Reply with the code only.",
			     c->key)))
		goto out;
	c->prompt_bytes = out.len;
	c->prompt = buf_steal(&out);
out:
	free(starts);
	buf_finish(&hay);
	buf_finish(&out);
	return rc;
}

void needle_case_finish(struct needle_case *c)
{
	if (!c)
		return;
	free(c->prompt);
	c->prompt = NULL;
}

bool needle_check(const struct needle_case *c, const char *reply)
{
	const char *s = text_after_reasoning(reply ? reply : "");
	size_t n = strlen(c->answer);
	for (const char *p = strstr(s, c->answer); p; p = strstr(p + 1, c->answer)) {
		bool left = p == s || !isdigit((unsigned char)p[-1]);
		bool right = !isdigit((unsigned char)p[n]);
		if (left && right)
			return true;
	}
	return false;
}
