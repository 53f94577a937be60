/*
 * test_jsonview: the JSON view's per-token arrays, which json_parse_line
 * keeps as text rather than a cJSON node per number, read exactly as the
 * node-per-number parse reads them: the same values (a line whose strings
 * hold \u0001, which is parsed with a node per number, is the reference),
 * the same messages for elements that are not numbers, and what cJSON
 * refuses still refused with its position.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "data/jsonview.h"
#include "tap.h"

static int parse(const char *line, struct record *rec, struct err *e)
{
	return json_parse_record(line, strlen(line), rec, e);
}

/* A trajectory line with these arrays (response_mask optional) and a
 * string field that, with tag, forbids cutting the arrays out. */
static void line_of(char *out, size_t size, const char *resp, const char *lp, const char *mask, int tag)
{
	snprintf(out, size,
		 "{\"prompt_tokens\":[7],\"response_tokens\":%s,\"logprobs\":%s%s%s,\"sequence_id\":%s}", resp, lp,
		 mask ? ",\"response_mask\":" : "", mask ? mask : "", tag ? "\"s\\u0001\"" : "1");
}

static int same_traj(const struct traj *a, const struct traj *b)
{
	if (a->n_response != b->n_response || a->n_prompt != b->n_prompt ||
	    memcmp(a->response_tokens, b->response_tokens, a->n_response * sizeof(int32_t)) != 0)
		return 0;
	for (uint32_t i = 0; i < a->n_response; i++)
		if (memcmp(&a->logprobs[i], &b->logprobs[i], sizeof(float)) != 0 ||
		    (!a->response_mask) != (!b->response_mask) ||
		    (a->response_mask && a->response_mask[i] != b->response_mask[i]))
			return 0;
	return 1;
}

int main(void)
{
	struct err e = { 0 }, e2 = { 0 };
	struct record a, b;
	char la[512], lb[512];

	/* values: cut out, and the node-per-number reference */
	static const char *const same[][3] = {
		{ "[1,2,3]", "[-0.5,-1e-3,-2]", NULL },
		{ "[ 1 , 2\t,\n3 ]", "[ -0.5 ,-1E-3 , -2.0 ]", "[1, 0 ,1]" },
		{ "[2147483647,0,-0]", "[null,-1e999,-0.0]", "[true,0,1]" },
		{ "[5]", "[-1.00000000000000000000000000000000000000000000000000000001]", NULL },
	};
	for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
		line_of(la, sizeof la, same[i][0], same[i][1], same[i][2], 0);
		line_of(lb, sizeof lb, same[i][0], same[i][1], same[i][2], 1);
		int ra = parse(la, &a, &e), rb = parse(lb, &b, &e2);
		ok(ra == 0 && rb == 0 && a.kind == REC_TRAJ && same_traj(&a.traj, &b.traj), "the same trajectory, case %zu (%s%s)", i,
		   e.msg, e2.msg);
		record_free(&a);
		record_free(&b);
	}
	line_of(la, sizeof la, "[1,2,3]", "[null,-1e999,-0.0]", NULL, 0);
	ok(parse(la, &a, &e) == 0 && isnan(a.traj.logprobs[0]) && isinf(a.traj.logprobs[1]) &&
	   signbit(a.traj.logprobs[2]), "null reads as NaN, 1e999 as infinity, -0 keeps its sign");
	record_free(&a);

	/* elements that are not what the field holds: the messages of the node-per-number parse */
	static const char *const bad[][4] = {
		{ "[1,2.5,3]", "[-1,-1,-1]", NULL, "response_tokens[1]: expected a 32-bit integer" },
		{ "[1,null,3]", "[-1,-1,-1]", NULL, "response_tokens[1]: expected a 32-bit integer" },
		{ "[1,2,2147483648]", "[-1,-1,-1]", NULL, "response_tokens[2]: expected a 32-bit integer" },
		{ "[1,2,3]", "[-1,-1,-1]", "[0,2,1]", "response_mask[1]: expected 0, 1, false or true" },
		{ "[1,2,3]", "[-1,-1,-1]", "[0,null,1]", "response_mask[1]: expected 0, 1, false or true" },
		{ "[1,2,3]", "[-1,\"x\",-1]", NULL, "logprobs[1]: expected a number" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		for (int tag = 0; tag < 2; tag++) {
			line_of(la, sizeof la, bad[i][0], bad[i][1], bad[i][2], tag);
			ok(parse(la, &a, &e) < 0 && strstr(e.msg, bad[i][3]), "%s: %s", tag ? "by node" : "cut out", e.msg);
		}
	}

	/* what cJSON refuses, refused where cJSON says */
	static const char *const invalid[] = { "[1,]", "[1 2]", "[1,,2]", "[1-2]", "[01x]", "[1,2" };
	for (size_t i = 0; i < sizeof invalid / sizeof *invalid; i++) {
		line_of(la, sizeof la, invalid[i], "[-1]", NULL, 0);
		line_of(lb, sizeof lb, invalid[i], "[-1]", NULL, 1);
		char ma[256];
		int ra = parse(la, &a, &e);
		snprintf(ma, sizeof ma, "%s", e.msg);
		int rb = parse(lb, &b, &e2);
		ok(ra < 0 && rb < 0 && strstr(ma, "not valid JSON (near byte ") && (i == 5 || strcmp(ma, e2.msg) == 0),
		   "%s refused, at the same byte: %s", invalid[i], ma);
	}

	/* a marker in the input is a string, not an array */
	ok(parse("{\"prompt_tokens\":[1],\"response_tokens\":\"\\u00010\",\"logprobs\":[-1]}", &a, &e) < 0 &&
	   strstr(e.msg, "response_tokens: expected an array"), "a forged marker: %s", e.msg);
	ok(parse("{\"prompt_tokens\":[1],\"response_tokens\":[1],\"logprobs\":[-1],\"x\":\"\\u00010\"}", &a, &e) == 0 &&
	   a.traj.n_response == 1, "a marker elsewhere: parsed by node");
	record_free(&a);

	/* a group and a micro-batch, their arrays cut out */
	ok(parse("{\"group_id\":1,\"trajectories\":[{\"prompt_tokens\":[1,2],\"response_tokens\":[3],\"logprobs\":[-1]},"
		 "{\"prompt_tokens\":[4],\"response_tokens\":[5,6],\"logprobs\":[-2,-3]}]}", &a, &e) == 0 &&
	   a.kind == REC_GROUP && a.group.n == 2 && a.group.trajs[1].response_tokens[1] == 6 &&
	   a.group.trajs[1].logprobs[1] == -3, "a group (%s)", e.msg);
	record_free(&a);
	ok(parse("{\"input_ids\":[1,2,3,4],\"position_ids\":[0,1,0,1],\"seq_lens\":[2,2],\"loss_mask\":[0,1,0,1],"
		 "\"advantages\":[0,1,0,-1],\"inference_logprobs\":[0,-1,0,-2],\"temperatures\":[1,1,1,1],"
		 "\"sequence_ids\":[1,2],\"group_ids\":[1,1]}", &a, &e) == 0 &&
	   a.kind == REC_MICROBATCH && a.mb.n_tokens == 4 && a.mb.advantages[3] == -1 && a.mb.loss_mask[1] == 1,
	   "a micro-batch (%s)", e.msg);
	record_free(&a);

	/* json_parse_line itself: the node of a cut-out array is raw, the rest parsed */
	struct json_line l;
	size_t at;
	const char *t = "{\"logprobs\":[-1,-2],\"n\":3}";
	cJSON *o = json_parse_line(t, strlen(t), &at, &l);
	float *f = NULL;
	uint32_t n = 0;
	ok(o && cJSON_IsRaw(cJSON_GetObjectItemCaseSensitive(o, "logprobs")) &&
	   cJSON_GetObjectItemCaseSensitive(o, "n")->valuedouble == 3 &&
	   json_get_f32_array(cJSON_GetObjectItemCaseSensitive(o, "logprobs"), "logprobs", &f, &n, &e) == 0 && n == 2 &&
	   f[1] == -2, "json_parse_line: a raw node json_get_f32_array reads");
	free(f);
	cJSON_Delete(o);
	json_line_free(&l);
	o = json_parse_line("{\"a\":", 5, &at, &l);
	ok(!o && at >= 1 && at <= 6, "and where a line ends too soon (byte %zu)", at);
	json_line_free(&l);
	return tap_done();
}
