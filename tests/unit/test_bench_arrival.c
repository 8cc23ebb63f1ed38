/* Unit tests for src/bench/arrival: schedules have the rate asked for (gamma with
 * any burstiness keeps the mean gap 1/rate; its gaps' CV is 1/sqrt(B), vLLM's
 * definition), constant gaps are exact, ramps start slow; traces load from
 * Mooncake JSONL and BurstGPT CSV, and a decreasing timestamp or a bad line is
 * refused naming FILE:LINE. */
#include "test.h"
#include "bench/arrival.h"
#include <gsl/gsl_errno.h>
#include <stdbool.h>
#include <unistd.h>

static void gaps(const struct arrival *a, double rate, double *mean, double *cv, size_t *n)
{
	double *t;
	CHECK(arrival_schedule(a, rate, 2000, 100000, 7, &t, n) == 0);
	double s = 0, ss = 0, prev = 0;
	for (size_t i = 0; i < *n; i++) {
		double g = t[i] - prev;
		CHECK(g >= 0);
		prev = t[i];
		s += g;
		ss += g * g;
	}
	*mean = s / (double)*n;
	*cv = sqrt(ss / (double)*n - *mean * *mean) / *mean;
	free(t);
}

static void test_schedules(void)
{
	struct arrival a = { .kind = ARRIVAL_POISSON, .burstiness = 1 };
	char err[512];
	double mean, cv;
	size_t n;
	gaps(&a, 10, &mean, &cv, &n);
	CHECK(fabs(mean - 0.1) < 0.002 && fabs(cv - 1) < 0.03);
	CHECK(arrival_parse("gamma:0.25", &a, err, sizeof err) == 0 && a.kind == ARRIVAL_GAMMA);
	gaps(&a, 10, &mean, &cv, &n);
	CHECK(fabs(mean - 0.1) < 0.004 && fabs(cv - 2) < 0.1); /* CV = 1/sqrt(0.25) */
	CHECK(arrival_parse("gamma:4", &a, err, sizeof err) == 0);
	gaps(&a, 10, &mean, &cv, &n);
	CHECK(fabs(mean - 0.1) < 0.001 && fabs(cv - 0.5) < 0.02);
	CHECK(arrival_parse("constant", &a, err, sizeof err) == 0);
	double *t;
	CHECK(arrival_schedule(&a, 4, 10, 1000, 1, &t, &n) == 0);
	CHECK_EQ_INT(n, 40);
	for (size_t i = 0; i < n; i++)
		CHECK_NEAR(t[i], 0.25 * (double)i, 1e-9);
	free(t);
	/* max_n bounds the count */
	CHECK(arrival_schedule(&a, 4, 1e9, 30, 1, &t, &n) == 0 && n == 30);
	free(t);
	/* a linear ramp from 1 to 10 req/s over 10 s: early gaps ~1 s, late ones 0.1 s */
	CHECK(arrival_parse_ramp("linear:1,10", &a, err, sizeof err) == 0 && a.ramp == RAMP_LINEAR);
	CHECK(arrival_schedule(&a, 10, 20, 10000, 1, &t, &n) == 0);
	CHECK(n > 100 && t[1] - t[0] > 0.5 && t[n - 1] - t[n - 2] < 0.11);
	free(t);
	CHECK(arrival_parse_ramp("exp:0.5,5", &a, err, sizeof err) == 0 && a.ramp == RAMP_EXP);
	static const char *bad_a[] = { "gamma", "gamma:0", "gamma:-1", "uniform", "gamma:x" };
	for (size_t i = 0; i < 5; i++)
		CHECK(arrival_parse(bad_a[i], &a, err, sizeof err) == -EINVAL && strstr(err, "gamma:B"));
	static const char *bad_r[] = { "linear", "linear:1", "exp:0,5", "step:1,2", "linear:1,0" };
	for (size_t i = 0; i < 5; i++)
		CHECK(arrival_parse_ramp(bad_r[i], &a, err, sizeof err) == -EINVAL && strstr(err, "linear:FROM,SECONDS"));
}

static const char *write_tmp(const char *text)
{
	static char path[64];
	snprintf(path, sizeof path, "/tmp/sixi-arrival-XXXXXX");
	int fd = mkstemp(path);
	CHECK(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
	return path;
}

static void test_traces(void)
{
	struct arrival_trace tr;
	char err[512], want[128];
	const char *p = write_tmp("{\"timestamp\": 1000, \"input_length\": 300, \"output_length\": 20}\n"
				  "{\"timestamp\": 1500, \"input_length\": 50, \"output_length\": 7, \"hash_ids\": [1]}\n\n"
				  "{\"timestamp\": 1500}\n");
	CHECK(arrival_trace_load(p, 1, 100, &tr, err, sizeof err) == 0);
	CHECK_EQ_INT(tr.n, 3);
	CHECK(tr.n == 3 && tr.t_s[0] == 0 && fabs(tr.t_s[1] - 0.5) < 1e-12 && tr.t_s[2] == tr.t_s[1]);
	CHECK(tr.n == 3 && tr.input_tokens[0] == 300 && tr.output_tokens[1] == 7 && tr.input_tokens[2] == -1);
	arrival_trace_finish(&tr);
	CHECK(arrival_trace_load(p, 2, 100, &tr, err, sizeof err) == 0 && fabs(tr.t_s[1] - 0.25) < 1e-12);
	arrival_trace_finish(&tr);
	unlink(p);
	p = write_tmp("{\"timestamp\": 1000}\n{\"timestamp\": 2000}\n{\"timestamp\": 1999}\n");
	CHECK(arrival_trace_load(p, 1, 100, &tr, err, sizeof err) == -EINVAL);
	snprintf(want, sizeof want, "%s:3: timestamp", p);
	CHECK(strstr(err, want) && strstr(err, "sorted by time"));
	unlink(p);
	p = write_tmp("{\"timestamp\": 1000}\n{\"time\": 2000}\n");
	CHECK(arrival_trace_load(p, 1, 100, &tr, err, sizeof err) == -EINVAL);
	snprintf(want, sizeof want, "%s:2: not a Mooncake trace record", p);
	CHECK(strstr(err, want) != NULL);
	unlink(p);
	p = write_tmp("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
		      "5,ChatGPT,472,18,490,Conversation log\n5.5,GPT-4,1087,230,1317,API log\n");
	CHECK(arrival_trace_load(p, 1, 100, &tr, err, sizeof err) == 0);
	CHECK(tr.n == 2 && fabs(tr.t_s[1] - 0.5) < 1e-12 && tr.input_tokens[1] == 1087 && tr.output_tokens[0] == 18);
	arrival_trace_finish(&tr);
	unlink(p);
	p = write_tmp("Timestamp,Model,Request tokens,Response tokens\n9,a,1,1\n8,a,1,1\n");
	CHECK(arrival_trace_load(p, 1, 100, &tr, err, sizeof err) == -EINVAL);
	snprintf(want, sizeof want, "%s:3: timestamp 8.000 s is before", p);
	CHECK(strstr(err, want) != NULL);
	unlink(p);
	p = write_tmp("when,what\n1,2\n");
	CHECK(arrival_trace_load(p, 1, 100, &tr, err, sizeof err) == -EINVAL);
	snprintf(want, sizeof want, "%s:1: not a BurstGPT CSV header", p);
	CHECK(strstr(err, want) != NULL);
	unlink(p);
	CHECK(arrival_trace_load("/nonexistent/trace", 1, 10, &tr, err, sizeof err) == -ENOENT);
}

int main(void)
{
	gsl_set_error_handler_off();
	test_schedules();
	test_traces();
	return test_done();
}
