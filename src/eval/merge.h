/* merge — `sixi-eval merge OUT.db IN.db...`: the shard files of one run, written by
 * `sixi-eval run --shard K/N` on several machines, into one file that sixi-report
 * reads like any other.
 *
 * Rows are content-addressed by (configuration, task, repeat, attempt). The merged
 * run of a configuration is found in OUT by its merge key: the sha256 of the frozen
 * configuration without what may differ between machines serving one model (each
 * condition's endpoint, the server fingerprint; the fingerprints must still name one
 * model, session_fingerprint_model_diff). A row OUT already holds with the same
 * outcome is left as it is, so merging twice or merging overlapping shards changes
 * nothing, and the order of the inputs does not matter (of a row that two inputs
 * hold, the timing columns are the first merged one's).
 *
 * Refused with nothing written (-EINVAL, the message names what and what to do):
 * an input that does not exist or holds no eval run; inputs that hold different
 * configurations (the differing nested keys named, as sixi-report compare names
 * them); fingerprints of different models; one attempt that two inputs hold with
 * different outcomes. Everything is written in one transaction; an OUT that did not
 * exist is removed again when the merge fails.
 *
 * Coverage: every (task, repeat) of the frozen task order must have a row in the
 * merged run. The pairs without one are counted by the shard they fall in (of the N
 * recorded with the shards, summary_json.shard), the merged run is marked
 * 'incomplete' and the result says which shards are missing; never silently.
 * What each shard was (file, run, host facts, status) is kept in the merged run's
 * summary_json.merge. Arguments are borrowed. */
#ifndef SIXI_EVAL_MERGE_H
#define SIXI_EVAL_MERGE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Merges the eval runs of in[0..n) into out_path; prints one line per merged run on
 * msg (may be NULL) and, for each, the run summary (JSON when json). Returns 0 when
 * every merged run is complete; 1 when one is incomplete (written, marked
 * 'incomplete', err lists the missing shards); -EINVAL for bad input (nothing
 * written); another -errno with err when the files could not be read or written. */
int eval_merge(const char *out_path, const char *const *in, size_t n, FILE *msg, bool json, char *err,
	       size_t errlen);
/* The merge key of a frozen configuration (runs.protocol_json) into hex: the sha256
 * of it without the conditions' endpoints and the server fingerprint. 0, or -EINVAL
 * when it is not a JSON object. */
int eval_merge_key(const char *protocol_json, char hex[65]);
#endif
