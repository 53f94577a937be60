/*
 * test_jsonview_bytes: the JSON view held to jsonview.h text for text.
 * Lines holding every field of a group, a lone trajectory and a micro-batch
 * print back exactly as written; floats print in their shortest form and
 * read back to the same bits (subnormals, -0, the largest float, NaN and
 * the infinities); every refusal is named by its whole message, with the
 * field and where it is; integers stop at exactly 2^53 - 1 and ids keep
 * their type.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "data/jsonview.h"
#include "tap.h"

/* The line parsed and printed again, as a string (static; "" when refused). */
static const char *reprint(const char *line, struct err *e)
{
	static char text[4096];
	struct record rec;
	struct buf out = { 0 };
	text[0] = 0;
	if (json_parse_record(line, strlen(line), &rec, e) < 0)
		return text;
	if (rec.kind == REC_TRAJ) {
		struct group g = { rec.traj.group_id, 1, &rec.traj };
		json_print_group(&out, &g);
	} else
		json_print_record(&out, &rec);
	record_free(&rec);
	snprintf(text, sizeof text, "%.*s", (int)out.len, out.data ? (char *)out.data : "");
	buf_free(&out);
	return text;
}

static void prints_as(const char *line, const char *want, const char *what)
{
	struct err e = { 0 };
	const char *got = reprint(line, &e);
	ok(strcmp(got, want) == 0, "%s", what);
	if (strcmp(got, want) != 0)
		diag("got  %s# want %s# (%s)", got, want, e.msg);
}

/* The line refused with exactly this message. */
static void refused(const char *line, const char *msg)
{
	struct err e = { 0 };
	struct record rec;
	int r = json_parse_record(line, strlen(line), &rec, &e);
	ok(r < 0 && strcmp(e.msg, msg) == 0, "refused: %s", msg);
	if (r == 0)
		record_free(&rec);
	else if (strcmp(e.msg, msg) != 0)
		diag("got %s", e.msg);
}

static void float_text(float f, const char *want)
{
	char s[32];
	int n = json_format_float(s, f);
	ok(strcmp(s, want) == 0 && n == (int)strlen(want), "%a prints as %s (%s, %d)", (double)f, want, s, n);
}

static uint32_t bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

static float of_bits(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

/* f prints with the fewest digits that read back to its bits. */
static int shortest_exact(float f)
{
	char s[32], fewer[32];
	json_format_float(s, f);
	if (bits(strtof(s, NULL)) != bits(f))
		return 0;
	int digits = 0;   /* significant: from the first nonzero digit of the mantissa */
	for (const char *p = s; *p && *p != 'e'; p++)
		digits += digits ? *p >= '0' && *p <= '9' : *p >= '1' && *p <= '9';
	if (digits <= 1)
		return 1;
	snprintf(fewer, sizeof fewer, "%.*g", digits - 1, (double)f);
	return strtof(fewer, NULL) != f;
}

static void test_floats(void)
{
	float_text(0.0f, "0");
	float_text(-0.0f, "-0");
	float_text(1.0f, "1");
	float_text(-2.5f, "-2.5");
	float_text(0.1f, "0.1");
	float_text(1.0f / 3.0f, "0.33333334");
	float_text(16777216.0f, "16777216");
	float_text(1e10f, "1e+10");
	float_text(FLT_MAX, "3.4028235e+38");
	float_text(-FLT_MAX, "-3.4028235e+38");
	float_text(FLT_MIN, "1.1754944e-38");
	float_text(of_bits(1), "1e-45");
	float_text(of_bits(0x007fffff), "1.1754942e-38");
	float_text(NAN, "NaN");
	float_text(INFINITY, "Infinity");
	float_text(-INFINITY, "-Infinity");

	/* every exponent, with random mantissas: bit-exact and shortest */
	uint32_t x = 12345, bad = 0;
	for (uint32_t i = 0; i < 20000; i++) {
		x = x * 1103515245u + 12345u;
		uint32_t u = ((i % 255) << 23) | (x >> 9) | (i & 1u) << 31;
		if (!shortest_exact(of_bits(u)) && bad++ < 3)
			diag("0x%08x", u);
	}
	ok(bad == 0, "20000 floats of every exponent print shortest and read back bit-exact (%u not)", bad);

	/* the same through a line (a lone trajectory: group_check refuses NaN):
	 * -0, subnormals, the largest float, NaN, infinities */
#define FLOATS_TRAJ "{\"prompt_tokens\":[1],\"response_tokens\":[2,3,4,5,6,7,8]," \
	"\"logprobs\":[-0,-1e-45,-1.1754942e-38,-3.4028235e+38,NaN,-Infinity,0]," \
	"\"sequence_id\":1,\"group_id\":1,\"policy_version\":0,\"temperature\":1.1754944e-38," \
	"\"rewards\":[1e-45,3.4028235e+38,Infinity,NaN],\"advantages\":-1.1754942e-38}"
	const char *line = FLOATS_TRAJ;
	prints_as(line, "{\"group_id\":1,\"trajectories\":[" FLOATS_TRAJ "]}\n",
		  "-0, subnormals, FLT_MAX, NaN and infinities print back as written");
	struct record rec;
	struct err e = { 0 };
	static const uint32_t want[7] = { 0x80000000u, 0x80000001u, 0x807fffffu, 0xff7fffffu, 0, 0xff800000u, 0 };
	static const uint32_t want_r[4] = { 1, 0x7f7fffffu, 0x7f800000u, 0 };
	int same = json_parse_record(line, strlen(line), &rec, &e) == 0;
	const struct traj *t = same ? &rec.traj : NULL;
	for (int i = 0; same && i < 7; i++)
		same = i == 4 ? isnan(t->logprobs[i]) : bits(t->logprobs[i]) == want[i];
	for (int i = 0; same && i < 4; i++)
		same = i == 3 ? isnan(t->rewards[i]) : bits(t->rewards[i]) == want_r[i];
	ok(same && bits(t->temperature) == bits(FLT_MIN) && bits(t->advantage) == 0x807fffffu, "and read to those bits");
	if (same)
		record_free(&rec);
	/* a float whose double is between two floats rounds to the nearer */
	prints_as("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[0.1000000001]}",
		  "{\"group_id\":-1,\"trajectories\":[{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[0.1],"
		  "\"sequence_id\":-1,\"group_id\":-1,\"policy_version\":-1,\"temperature\":1}]}\n",
		  "a lone trajectory takes traj_init's defaults; 0.1000000001 reads as 0.1f");
}

static void test_print(void)
{
	/* every field of a scored trajectory, string and integer ids, and one bare */
	const char *g = "{\"group_id\":\"g-7\",\"trajectories\":["
			"{\"prompt_tokens\":[1,0],\"response_tokens\":[2147483647,0,5],"
			"\"logprobs\":[-0.5,-1,-0.25],\"response_mask\":[1,0,1],\"answer\":\"4\\n\\\"x\\\"\","
			"\"sequence_id\":\"s\\\\1\",\"group_id\":\"g-7\",\"policy_version\":9007199254740991,"
			"\"temperature\":0.7,\"finish_reason\":\"length\",\"run\":\"r1\",\"ref_logprobs\":[-0.5,-2,-0.125],"
			"\"rewards\":[1,0.5],\"reward_names\":[\"acc\",\"fmt\"],\"advantages\":-1.5,\"successes\":[1,0]},"
			"{\"prompt_tokens\":[],\"response_tokens\":[],\"logprobs\":[],\"sequence_id\":9007199254740991,"
			"\"group_id\":\"g-7\",\"policy_version\":-1,\"temperature\":1}]}\n";
	prints_as(g, g, "a group with every trajectory field prints back as written");
	const char *unscored = "{\"group_id\":12,\"trajectories\":[{\"prompt_tokens\":[1],\"response_tokens\":[2],"
			       "\"logprobs\":null,\"sequence_id\":0,\"group_id\":12,\"policy_version\":0,\"temperature\":1}]}\n";
	prints_as(unscored, unscored, "logprobs null (none given) prints as null");
	prints_as("{\"group_id\":12,\"trajectories\":[{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],"
		  "\"rewards\":3,\"successes\":true}]}",
		  "{\"group_id\":12,\"trajectories\":[{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],"
		  "\"sequence_id\":-1,\"group_id\":12,\"policy_version\":-1,\"temperature\":1,\"rewards\":[3],"
		  "\"advantages\":0,\"successes\":[1]}]}\n",
		  "a bare reward and success are lists of one; the group's id is the trajectory's");
	prints_as("{\"group_id\":12,\"trajectories\":[{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],"
		  "\"rewards\":[3,4],\"successes\":0}]}",
		  "{\"group_id\":12,\"trajectories\":[{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],"
		  "\"sequence_id\":-1,\"group_id\":12,\"policy_version\":-1,\"temperature\":1,\"rewards\":[3,4],"
		  "\"advantages\":0}]}\n",
		  "a bare success for two rewards is dropped");
	prints_as("{\"group_id\":12,\"trajectories\":[{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],"
		  "\"response_mask\":[true],\"advantages\":2,\"answer\":null,\"run\":null,\"finish_reason\":null,"
		  "\"sequence_id\":null,\"group_id\":null,\"ref_logprobs\":null,\"reward_names\":null,\"successes\":null}]}",
		  "{\"group_id\":12,\"trajectories\":[{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],"
		  "\"response_mask\":[1],\"sequence_id\":-1,\"group_id\":12,\"policy_version\":-1,\"temperature\":1,"
		  "\"rewards\":[],\"advantages\":2}]}\n",
		  "nulls are absent fields, a mask of true is 1");

	const char *mb = "{\"input_ids\":[1,2,3,0],\"position_ids\":[0,0,1,0],\"seq_lens\":[1,2,1],"
			 "\"loss_mask\":[0,0,1,0],\"advantages\":[0,0.5,-0.5,0],\"inference_logprobs\":[0,-0.5,-1e-45,0],"
			 "\"ref_logprobs\":[0,-0.75,-2,0],\"temperatures\":[1,1,0.5,1],\"sequence_ids\":[\"a\",0],"
			 "\"group_ids\":[9007199254740991,\"g\"],\"prompt_lens\":[1,0],\"policy_versions\":[-1,9007199254740991],"
			 "\"rewards\":[1,-0],\"finish_reasons\":[\"stop\",null],\"logprobs_missing\":[0,1],"
			 "\"step\":9007199254740991,\"rank\":2147483647,\"index\":-2147483648,\"run\":\"r\"}\n";
	prints_as(mb, mb, "a micro-batch with every field prints back as written");
	const char *bare = "{\"input_ids\":[5],\"position_ids\":[0],\"seq_lens\":[1],\"loss_mask\":[0],\"advantages\":[0],"
			   "\"inference_logprobs\":[0],\"temperatures\":[1],\"sequence_ids\":[3],\"group_ids\":[\"x\"],"
			   "\"step\":0,\"rank\":0,\"index\":0}\n";
	prints_as(bare, bare, "a micro-batch without its optional fields prints none of them");
	prints_as("{\"input_ids\":[5],\"position_ids\":[0],\"seq_lens\":[1],\"loss_mask\":[false],\"advantages\":[0],"
		  "\"inference_logprobs\":[0],\"temperatures\":[1],\"sequence_ids\":[3],\"group_ids\":[\"x\"],"
		  "\"ref_logprobs\":null,\"prompt_lens\":null,\"policy_versions\":null,\"rewards\":null,"
		  "\"finish_reasons\":null,\"logprobs_missing\":null}",
		  "{\"input_ids\":[5],\"position_ids\":[0],\"seq_lens\":[1],\"loss_mask\":[0],\"advantages\":[0],"
		  "\"inference_logprobs\":[0],\"temperatures\":[1],\"sequence_ids\":[3],\"group_ids\":[\"x\"],"
		  "\"step\":0,\"rank\":0,\"index\":0}\n",
		  "a micro-batch's nulls are absent fields, step, rank and index 0 by default");

	/* strings: JSON's escapes, control bytes as \\u00XX, NUL kept by _n, UTF-8 as it is */
	struct buf out = { 0 };
	json_print_string_n(&out, "a\"b\\c\n\r\t\x01\x1f\x7f\xc3\xa9\0z", 15);
	ok(out.len == 37 && memcmp(out.data, "\"a\\\"b\\\\c\\n\\r\\t\\u0001\\u001f\x7f\xc3\xa9\\u0000z\"", 37) == 0,
	   "json_print_string_n escapes exactly what JSON needs (%.*s)", (int)out.len, out.data);
	buf_free(&out);
	json_print_floats(&out, (const float[]){ -0.0f, 1.5f, NAN }, 3);
	ok(out.len == 12 && memcmp(out.data, "[-0,1.5,NaN]", 12) == 0,
	   "json_print_floats (%.*s)", (int)out.len, out.data);
	buf_free(&out);
	struct record none = { 0 };
	ok(json_print_record(&out, &none) == -1 && out.len == 0, "a record of no kind is not printed");
	buf_free(&out);
}

static void test_refusals(void)
{
	/* a trajectory: each field missing or of the wrong type, named */
	refused("{\"response_tokens\":[2],\"logprobs\":[-1]}", "prompt_tokens: expected an array");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":7,\"logprobs\":[-1]}", "response_tokens: expected an array");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":-1}", "logprobs: expected an array");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2,3],\"logprobs\":[-1]}", "1 logprobs for 2 response_tokens");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"response_mask\":[1,1]}",
		"2 response_mask entries for 1 response_tokens");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"response_mask\":[2]}",
		"response_mask[0]: expected 0, 1, false or true");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"response_mask\":[0.5]}",
		"response_mask[0]: expected 0, 1, false or true");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"response_mask\":[\"1\"]}",
		"response_mask[0]: expected 0, 1, false or true");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[true]}", "logprobs[0]: expected a number");
	refused("{\"prompt_tokens\":[1,-2147483649],\"response_tokens\":[2],\"logprobs\":[-1]}",
		"prompt_tokens[1]: expected a 32-bit integer");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[false],\"logprobs\":[-1]}",
		"response_tokens[0]: expected a 32-bit integer");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"answer\":4}", "answer: expected a string");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"run\":[]}", "run: expected a string");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"group_id\":true}",
		"group_id: expected a string or an integer");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"sequence_id\":1.5}",
		"sequence_id: 1.5 is not an integer");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"policy_version\":\"3\"}",
		"policy_version: expected an integer");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"policy_version\":2.5}",
		"policy_version: 2.5 is not an integer");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"temperature\":\"1\"}",
		"temperature: expected a number");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"temperature\":NaN}",
		"temperature is NaN or null, not a finite number");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"finish_reason\":\"\"}",
		"finish_reason: expected a string such as \"stop\" or \"length\"");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"finish_reason\":1}",
		"finish_reason: expected a string such as \"stop\" or \"length\"");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"advantages\":[1]}",
		"advantages: expected a number");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"advantages\":null}",
		"advantages is NaN or null, not a finite number");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"ref_logprobs\":[-1,-2]}",
		"2 ref_logprobs for 1 response_tokens");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"ref_logprobs\":{}}",
		"ref_logprobs: expected an array");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"rewards\":\"1\"}", "rewards: expected an array");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"rewards\":[1,\"x\"]}",
		"rewards[1]: expected a number");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"rewards\":[1],\"reward_names\":[\"a\",\"b\"]}",
		"2 reward_names for 1 rewards");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"rewards\":[1,2],\"reward_names\":[\"a\",2]}",
		"reward_names[1]: expected a string");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"rewards\":[1],\"reward_names\":\"a\"}",
		"reward_names: expected an array");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"rewards\":[1],\"successes\":[1,0]}",
		"2 successes for 1 rewards: one per reward function");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"rewards\":[1],\"successes\":\"yes\"}",
		"successes: expected a number");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"rewards\":[1],\"successes\":[\"yes\"]}",
		"successes[0]: expected a number");

	/* a group: its own fields, and a trajectory's error with its index */
	refused("{\"group_id\":1,\"trajectories\":{}}", "trajectories: expected an array");
	refused("{\"group_id\":1,\"trajectories\":[]}", "trajectories: a group needs at least one");
	refused("{\"group_id\":[1],\"trajectories\":[]}", "group_id: expected a string or an integer");
	refused("{\"group_id\":1,\"trajectories\":[{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1]},"
		"{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"temperature\":null}]}",
		"trajectories[1]: temperature is NaN or null, not a finite number");
	refused("{\"group_id\":1,\"trajectories\":[{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1]},5]}",
		"trajectories[1]: a trajectory must be a JSON object");

	/* a micro-batch: each field, named */
	static const char *const mbs[][2] = {
		{ "\"input_ids\":{}", "input_ids: expected an array" },
		{ "\"position_ids\":[0,1]", "position_ids has 2 entries, input_ids 1" },
		{ "\"position_ids\":[0.5]", "position_ids[0]: expected a 32-bit integer" },
		{ "\"loss_mask\":[]", "loss_mask has 0 entries, input_ids 1" },
		{ "\"loss_mask\":[3]", "loss_mask[0]: expected 0, 1, false or true" },
		{ "\"advantages\":[0,0]", "advantages has 2 entries, input_ids 1" },
		{ "\"inference_logprobs\":null", "inference_logprobs: expected an array" },
		{ "\"inference_logprobs\":[]", "inference_logprobs has 0 entries, input_ids 1" },
		{ "\"ref_logprobs\":[0,0]", "ref_logprobs has 2 entries, input_ids 1" },
		{ "\"temperatures\":[\"1\"]", "temperatures[0]: expected a number" },
		{ "\"temperatures\":[1,1]", "temperatures has 2 entries, input_ids 1" },
		{ "\"seq_lens\":[-1]", "seq_lens[0]: negative" },
		{ "\"seq_lens\":[1,0]", "seq_lens[1] is 0" },
		{ "\"seq_lens\":null", "seq_lens: expected an array" },
		{ "\"sequence_ids\":{}", "sequence_ids: expected an array" },
		{ "\"group_ids\":7", "group_ids: expected an array" },
		{ "\"group_ids\":[1,2]", "2 group_ids for 1 sequence_ids" },
		{ "\"sequence_ids\":[[3]]", "sequence_ids[0]: expected a string or an integer" },
		{ "\"group_ids\":[9007199254740992]",
		  "group_ids[0]: an integer beyond +-9007199254740991 (2^53 - 1), which JSON numbers do not hold exactly "
		  "(it reads as 9007199254740992); give it as a string" },
		{ "\"prompt_lens\":[-1]", "prompt_lens[0]: negative" },
		{ "\"prompt_lens\":[0,0]", "2 prompt_lens for 1 sequences" },
		{ "\"policy_versions\":[1,2]", "2 policy_versions for 1 sequences" },
		{ "\"policy_versions\":{}", "policy_versions: expected an array" },
		{ "\"policy_versions\":[0.5]", "policy_versions[0]: 0.5 is not an integer" },
		{ "\"rewards\":[1,1]", "2 rewards for 1 sequences" },
		{ "\"rewards\":[\"1\"]", "rewards[0]: expected a number" },
		{ "\"prompt_lens\":[0.5]", "prompt_lens[0]: expected a 32-bit integer" },
		{ "\"prompt_lens\":1", "prompt_lens: expected an array" },
		{ "\"finish_reasons\":\"stop\"", "finish_reasons: expected an array" },
		{ "\"logprobs_missing\":{}", "logprobs_missing: expected an array" },
		{ "\"finish_reasons\":[\"a\",\"b\"]", "2 finish_reasons for 1 sequences" },
		{ "\"finish_reasons\":[\"\"]", "finish_reasons[0]: expected a string or null" },
		{ "\"finish_reasons\":[1]", "finish_reasons[0]: expected a string or null" },
		{ "\"logprobs_missing\":[1,0]", "2 logprobs_missing for 1 sequences" },
		{ "\"logprobs_missing\":[2]", "logprobs_missing[0]: expected 0, 1, false or true" },
		{ "\"step\":\"1\"", "step: expected an integer" },
		{ "\"rank\":0.5", "rank: 0.5 is not an integer" },
		{ "\"index\":null", "index: expected an integer" },
		{ "\"run\":1", "run: expected a string" },
	};
	for (size_t i = 0; i < sizeof mbs / sizeof *mbs; i++) {
		char line[1024];
		/* the field under test first: cJSON's lookup takes the first of two
		 * keys, but a duplicate is refused, so the defaults are left out */
		const char *fields[] = { "\"input_ids\":[5]", "\"position_ids\":[0]", "\"seq_lens\":[1]", "\"loss_mask\":[0]",
					 "\"advantages\":[0]", "\"inference_logprobs\":[0]", "\"temperatures\":[1]",
					 "\"sequence_ids\":[3]", "\"group_ids\":[\"x\"]" };
		int n = snprintf(line, sizeof line, "{%s", mbs[i][0]);
		for (size_t k = 0; k < sizeof fields / sizeof *fields; k++) {
			size_t klen = (size_t)(strchr(fields[k], ':') - fields[k]);
			if (strncmp(fields[k], mbs[i][0], klen + 1) != 0)
				n += snprintf(line + n, sizeof line - (size_t)n, ",%s", fields[k]);
		}
		snprintf(line + n, sizeof line - (size_t)n, "}");
		refused(line, mbs[i][1]);
	}

	/* lines that are no record */
	refused("[1]", "expected a JSON object");
	refused("{\"prompt_tokens\":[1]}",
		"neither a group (\"trajectories\"), a micro-batch (\"input_ids\") nor a trajectory (\"response_tokens\")");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"run\":\"a\",\"run\":\"b\"}",
		"the key \"run\" appears twice in one object");
	refused("{\"group_id\":1,\"trajectories\":[{\"prompt_tokens\":[1],\"prompt_tokens\":[1],\"response_tokens\":[2]}]}",
		"the key \"prompt_tokens\" appears twice in one object");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2,3,4]} x", "not valid JSON (text after the value, near byte 49)");
	refused("{\"prompt_tokens\":[1] \"response_tokens\":[2]}", "not valid JSON (near byte 22)");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2]}{\"a\":[1]}", "not valid JSON (text after the value, near byte 44)");
	refused("{\"prompt_tokens\":[1,2,3,4,5,6,7,8,9,10,11,12],\"response_tokens\":[2]} [1]",
		"not valid JSON (text after the value, near byte 70)");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2]} {\"prompt_tokens\":[1,2,3,4,5,6,7,8,9,10,11,12]}",
		"not valid JSON (text after the value, near byte 45)");
	/* lines cut short: the bytes after n are not the line's */
	struct record rec;
	struct err e = { 0 };
	const char *whole = "{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1]}";
	ok(json_parse_record(whole, strlen(whole) - 2, &rec, &e) < 0 && strcmp(e.msg, "not valid JSON (near byte 57)") == 0,
	   "a line cut before its last ']' is refused, though a ']' follows in memory: %s", e.msg);
	refused("{\"logprobs\":[1],\"answer\":\"x", "not valid JSON (near byte 27)");
	refused("{\"logprobs\":[1],\"answer\":\"x\\", "not valid JSON (near byte 27)");
	const char *blanks = "{\"prompt_tokens\":[1],\"response_tokens\":[2,3,4]} \t\r\n";
	ok(json_parse_record(blanks, strlen(blanks), &rec, &e) == 0 && rec.kind == REC_TRAJ && rec.traj.n_response == 3,
	   "blanks after the value are no text after it (%s)", e.msg);
	record_free(&rec);
}

static void test_integers(void)
{
	struct record rec;
	struct err e = { 0 };
	const char *top = "{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"policy_version\":9007199254740991,"
			  "\"sequence_id\":-9007199254740991,\"group_id\":\"9007199254740993\"}";
	ok(json_parse_record(top, strlen(top), &rec, &e) == 0 && rec.traj.policy_version == 9007199254740991ll &&
	   !rec.traj.sequence_id.str && rec.traj.sequence_id.num == -9007199254740991ll && rec.traj.group_id.str &&
	   strcmp(rec.traj.group_id.str, "9007199254740993") == 0,
	   "2^53 - 1 read exactly; an id as a string stays a string (%s)", e.msg);
	record_free(&rec);
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"policy_version\":9007199254740992}",
		"policy_version: an integer beyond +-9007199254740991 (2^53 - 1), which JSON numbers do not hold exactly "
		"(it reads as 9007199254740992)");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"policy_version\":-9007199254740992}",
		"policy_version: an integer beyond +-9007199254740991 (2^53 - 1), which JSON numbers do not hold exactly "
		"(it reads as -9007199254740992)");
	refused("{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"sequence_id\":9007199254740993}",
		"sequence_id: an integer beyond +-9007199254740991 (2^53 - 1), which JSON numbers do not hold exactly "
		"(it reads as 9007199254740992); give it as a string");
	refused("{\"input_ids\":[5],\"position_ids\":[0],\"seq_lens\":[1],\"loss_mask\":[0],\"advantages\":[0],"
		"\"inference_logprobs\":[0],\"temperatures\":[1],\"sequence_ids\":[3],\"group_ids\":[\"x\"],"
		"\"policy_versions\":[-9007199254740992]}",
		"policy_versions[0]: an integer beyond +-9007199254740991 (2^53 - 1), which JSON numbers do not hold "
		"exactly (it reads as -9007199254740992)");
	refused("{\"input_ids\":[5],\"position_ids\":[0],\"seq_lens\":[1],\"loss_mask\":[0],\"advantages\":[0],"
		"\"inference_logprobs\":[0],\"temperatures\":[1],\"sequence_ids\":[3],\"group_ids\":[\"x\"],"
		"\"step\":9007199254740992}",
		"step: an integer beyond +-9007199254740991 (2^53 - 1), which JSON numbers do not hold exactly "
		"(it reads as 9007199254740992)");

	/* json_get_i64 and json_get_id by themselves */
	cJSON *v = cJSON_CreateNumber(9007199254740991.0);
	int64_t x = 0;
	struct traj_id id = traj_id_none();
	ok(json_get_i64(v, "n", &x, &e) == 0 && x == 9007199254740991ll, "json_get_i64 at 2^53 - 1");
	v->valuedouble = -9007199254740991.0;
	ok(json_get_id(v, "id", &id, &e) == 0 && !id.str && id.num == -9007199254740991ll, "json_get_id at -(2^53 - 1)");
	cJSON_Delete(v);
	v = cJSON_CreateString("7");
	ok(json_get_id(v, "id", &id, &e) == 0 && id.str && strcmp(id.str, "7") == 0, "json_get_id of \"7\" is a string");
	cJSON_Delete(v);
	v = cJSON_CreateNumber(7);
	ok(json_get_id(v, "id", &id, &e) == 0 && !id.str && id.num == 7, "then of 7 an integer again");
	cJSON_Delete(v);
	traj_id_free(&id);

	/* the int32 and mask arrays' edges */
	cJSON *a = cJSON_Parse("[2147483647,-2147483648,0,-0]");
	int32_t *i32 = NULL;
	uint32_t n = 0;
	ok(json_get_i32_array(a, "t", &i32, &n, &e) == 0 && n == 4 && i32[0] == INT32_MAX && i32[1] == INT32_MIN &&
	   i32[3] == 0, "32-bit integers to their limits");
	cJSON_Delete(a);
	a = cJSON_Parse("[2147483648]");
	ok(json_get_i32_array(a, "t", &i32, &n, &e) < 0 && strcmp(e.msg, "t[0]: expected a 32-bit integer") == 0 &&
	   n == 4 && i32[0] == INT32_MAX, "2^31 refused, the output left as it was");
	cJSON_Delete(a);
	free(i32);
	a = cJSON_Parse("[true,false,1,0,-0]");
	uint8_t *m = NULL;
	ok(json_get_mask_array(a, "m", &m, &n, &e) == 0 && n == 5 && m[0] == 1 && m[1] == 0 && m[2] == 1 && m[3] == 0 &&
	   m[4] == 0, "masks of true, false, 1, 0, -0");
	cJSON_Delete(a);
	free(m);
	a = cJSON_Parse("[]");
	float *f = NULL;
	ok(json_get_f32_array(a, "f", &f, &n, &e) == 0 && n == 0 && f, "an empty array is an allocation of none");
	cJSON_Delete(a);
	free(f);
}

static void test_text_checks(void)
{
	struct err e = { 0 };
	static const char *const bad[][2] = {
		{ "[05]", "not valid JSON (near byte 2: 05 is not a number as JSON writes one)" },
		{ "[1,5.]", "not valid JSON (near byte 4: 5. is not a number as JSON writes one)" },
		{ "{\"a\":1e}", "not valid JSON (near byte 6: 1e is not a number as JSON writes one)" },
		{ "[1,+5]", "not valid JSON (near byte 4: +5 is not a number as JSON writes one)" },
		{ "[.5]", "not valid JSON (near byte 2: .5 is not a number as JSON writes one)" },
		{ "[-.5]", "not valid JSON (near byte 2: -.5 is not a number as JSON writes one)" },
		{ "[1e+]", "not valid JSON (near byte 2: 1e+ is not a number as JSON writes one)" },
		{ "[1.5e-3,1234567890123456789012345.]",
		  "not valid JSON (near byte 9: 123456789012345678901234... is not a number as JSON writes one)" },
		{ "\"a\\\"\"05", "not valid JSON (near byte 6: 05 is not a number as JSON writes one)" },
		{ "[\"aaaaaaaaaaaaaaaaaaaaaaaaa\",05,1]", "not valid JSON (near byte 30: 05 is not a number as JSON writes one)" },
		{ "[\"\\ud800\"]", "a lone surrogate \\ud800 at byte 3 (half of a UTF-16 pair, not a character)" },
		{ "[\"\\udc00\\udc00\"]", "a lone surrogate \\udc00 at byte 3 (half of a UTF-16 pair, not a character)" },
		{ "[\"\\ud800\\u0041\"]", "a lone surrogate \\ud800 at byte 3 (half of a UTF-16 pair, not a character)" },
		{ "[\"x\\uDBFF\"]", "a lone surrogate \\uDBFF at byte 4 (half of a UTF-16 pair, not a character)" },
		{ "[\"\\uDFFF\"]", "a lone surrogate \\uDFFF at byte 3 (half of a UTF-16 pair, not a character)" },
		{ "[\"a\\u0000\"]", "a NUL character (\\u0000) in a string is not supported (it would be cut there)" },
		{ "[\"\xc3\"]", "byte 3 is not UTF-8 (JSON text is UTF-8; it would be stored raw)" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		int r = json_check_text(bad[i][0], strlen(bad[i][0]), &e);
		ok(r < 0 && strcmp(e.msg, bad[i][1]) == 0, "json_check_text refuses %s: %s", bad[i][0], e.msg);
	}
	ok(json_check_text("[\"a\0\"]", 5, &e) < 0 && strcmp(e.msg, "a NUL byte (strings would be cut there)") == 0,
	   "a raw NUL: %s", e.msg);
	static const char *const good[] = {
		"[0,-0,0.5,-1.25e-3,1E+9,10,true,null,-Infinity,NaN]", "[\"05 +5 .5 \\\" 1e\"]", "[\"\\ud83d\\ude00\"]", "[\"\\uDBFF\\uDFFF\"]", "[\"\\ud800\\udc00\"]",
		"[\"\\\\ud800\"]", "[\"\\u00e9\\\\\"]", "{\"k\":\"\xc3\xa9\"}",
	};
	for (size_t i = 0; i < sizeof good / sizeof *good; i++)
		ok(json_check_text(good[i], strlen(good[i]), &e) == 0, "json_check_text takes %s", good[i]);

	/* json_cut_short */
	ok(json_cut_short("{\"a\":[1,2", 9) && json_cut_short("{\"a\":\"x}", 8) && json_cut_short("[\"\\\"]", 5) &&
	   json_cut_short("[", 1), "text cut inside an array, an object or a string is cut short");
	ok(!json_cut_short("{\"a\":[1,2]}", 11) && !json_cut_short("[\"]\\\\\"]", 7) && !json_cut_short("]", 1) &&
	   !json_cut_short("", 0) && !json_cut_short("5", 1), "whole values, and too many closings, are not");

	/* json_fix_nonfinite: words outside strings only, whole words only */
	char *out = NULL;
	size_t n = 0;
	const char *s = "[NaN,-Infinity,Infinity,\"NaN\\\"Infinity\",NaNa,Infinity_]";
	ok(json_fix_nonfinite(s, strlen(s), &out, &n) == 1 && n == strlen(out) &&
	   strcmp(out, "[null,-1e999,1e999,\"NaN\\\"Infinity\",NaNa,Infinity_]") == 0,
	   "NaN and Infinity rewritten as words, not inside strings or names (%s)", out ? out : "");
	free(out);
	out = NULL;
	ok(json_fix_nonfinite("[NaN", 4, &out, &n) == 1 && n == 5 && strcmp(out, "[null") == 0, "a NaN at the line's end");
	free(out);
	out = NULL;
	ok(json_fix_nonfinite("[NaNx]", 6, &out, &n) == 0 && !out, "nothing to rewrite: 0, nothing made");
	/* only the n bytes given: what follows them is another line's */
	ok(json_fix_nonfinite("[NaN]NaN", 6, &out, &n) == 1 && n == 7 && strcmp(out, "[null]N") == 0,
	   "a word cut by the line's end is not rewritten (%s)", out ? out : "");
	free(out);
	out = NULL;
	ok(json_fix_nonfinite("[NaN,\"\\x\"", 7, &out, &n) == 1 && n == 8 && memcmp(out, "[null,\"\\", 9) == 0,
	   "a backslash that ends the line is copied alone (%zu bytes)", n);
	free(out);

	/* json_parse_one: one value, no key twice at any depth */
	cJSON *o = json_parse_one(" {\"a\":[{\"b\":1}]}\n", 17, &e);
	ok(o && cJSON_IsObject(o), "json_parse_one takes a value with blanks around it");
	cJSON_Delete(o);
	ok(!json_parse_one("{\"a\":[{\"b\":1,\"b\":2}]}", 21, &e) &&
	   strcmp(e.msg, "the key \"b\" appears twice in one object") == 0, "json_parse_one: a key twice, deep: %s", e.msg);
	o = json_parse_one("[{\"b\":1},{\"b\":2}]", 17, &e);
	ok(o != NULL, "the same key in two objects is no duplicate (%s)", e.msg);
	cJSON_Delete(o);
	o = json_parse_one("[\"b\",\"b\"]", 9, &e);
	ok(o != NULL, "nor the same string twice in an array");
	cJSON_Delete(o);
	ok(!json_parse_one("[1] 2", 5, &e) && strcmp(e.msg, "not valid JSON (text after the value, near byte 5)") == 0,
	   "json_parse_one: %s", e.msg);
	ok(!json_parse_one("[1,,2]", 6, &e) && strcmp(e.msg, "not valid JSON (near byte 4)") == 0, "json_parse_one: %s",
	   e.msg);
}

/* Whether json_parse_line keeps the line's "logprobs" array as text (a raw
 * node), and its values read through json_get_f32_array. */
static int kept_as_text(const char *line, float *first, uint32_t *n)
{
	struct json_line l;
	struct err e = { 0 };
	size_t at;
	cJSON *o = json_parse_line(line, strlen(line), &at, &l);
	const cJSON *a = o ? cJSON_GetObjectItemCaseSensitive(o, "logprobs") : NULL;
	int raw = a && cJSON_IsRaw(a);
	float *f = NULL;
	*n = 0;
	if (a && json_get_f32_array(a, "logprobs", &f, n, &e) == 0 && *n)
		*first = f[0];
	free(f);
	cJSON_Delete(o);
	json_line_free(&l);
	return raw;
}

static void test_kept_as_text(void)
{
	float f = 0;
	uint32_t n = 0;
	ok(kept_as_text("{\"logprobs\":[null, -1 ,null]}", &f, &n) && n == 3 && isnan(f),
	   "an array with nulls is kept as text, null read as NaN");
	/* a number token of 63 characters is the longest kept as text */
	char line[200], num[80];
	snprintf(num, sizeof num, "-0.%060d", 5);
	ok(strlen(num) == 63 && (snprintf(line, sizeof line, "{\"logprobs\":[%s]}", num), kept_as_text(line, &f, &n)) &&
	   n == 1 && f == strtof(num, NULL), "a 63-character number is kept as text");
	ok(kept_as_text("{\"logprobs\": \t[1]}", &f, &n) && n == 1 && f == 1, "blanks between the key and the array");
	ok(kept_as_text("{\"s\":\"\\\\0001\",\"logprobs\":[2]}", &f, &n) && n == 1 && f == 2,
	   "a string holding \\\\0001, no marker, does not stop it");
	ok(!kept_as_text("{\"s\":\"\\u0001\",\"logprobs\":[2]}", &f, &n) && n == 1 && f == 2,
	   "a string holding \\u0001 does: read by node");
	snprintf(num, sizeof num, "-0.%061d", 5);
	ok(!kept_as_text((snprintf(line, sizeof line, "{\"logprobs\":[%s]}", num), line), &f, &n) && n == 1 &&
	   f == strtof(num, NULL), "one of 64 is parsed by cJSON, to the same value");
}

/* A group of 300 trajectories: 900 arrays kept as text in one line. */
static void test_many_arrays(void)
{
	struct buf line = { 0 };
	buf_printf(&line, "{\"group_id\":1,\"trajectories\":[");
	for (int i = 0; i < 300; i++)
		buf_printf(&line, "%s{\"prompt_tokens\":[%d],\"response_tokens\":[%d,%d],\"logprobs\":[-%d,-0.5]}", i ? "," : "",
			   i, i + 1, i + 2, i);
	buf_printf(&line, "]}");
	struct record rec;
	struct err e = { 0 };
	int good = json_parse_record((char *)line.data, line.len, &rec, &e) == 0 && rec.group.n == 300;
	for (uint32_t i = 0; good && i < 300; i++) {
		const struct traj *t = &rec.group.trajs[i];
		good = t->n_prompt == 1 && t->prompt_tokens[0] == (int32_t)i && t->n_response == 2 &&
		       t->response_tokens[1] == (int32_t)i + 2 && t->logprobs[0] == -(float)i;
	}
	ok(good, "a group of 300 trajectories, 900 arrays, reads back (%s)", e.msg);
	if (good)
		record_free(&rec);
	buf_free(&line);
}

int main(void)
{
	test_floats();
	test_print();
	test_refusals();
	test_integers();
	test_text_checks();
	test_kept_as_text();
	test_many_arrays();
	return tap_done();
}
