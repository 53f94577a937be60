/*
 * test_ckpt_dtype: the dtype grpo-step saves a policy in when --save-dtype
 * is not given, from the model's config.json: bfloat16 when torch_dtype (or
 * transformers 5's dtype) says so, else float32; a config.json that cannot
 * be read or is no JSON object is an error naming it, never a quiet float32.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "train/ckpt.h"

static char dir[] = "/tmp/test_ckpt_dtype.XXXXXX";

/* ckpt_model_dtype over a config.json holding text (none when NULL) */
static int dtype_of(const char *text, enum st_dtype *d, struct err *e)
{
	char p[sizeof dir + 16];
	snprintf(p, sizeof p, "%s/config.json", dir);
	unlink(p);
	if (text) {
		FILE *f = fopen(p, "w");
		if (!f || fputs(text, f) < 0 || fclose(f) != 0)
			return -2;
	}
	*d = (enum st_dtype)-1;
	return ckpt_model_dtype(dir, d, e);
}

int main(void)
{
	if (!mkdtemp(dir))
		skip_all("no temporary directory");
	static const struct {
		const char *config;
		enum st_dtype want;
	} c[] = {
		{ "{\"torch_dtype\": \"bfloat16\"}", ST_BF16 },
		{ "{\"dtype\": \"bfloat16\"}", ST_BF16 },
		{ "{\"torch_dtype\": \"float32\", \"dtype\": \"bfloat16\"}", ST_F32 },
		{ "{\"torch_dtype\": \"float16\"}", ST_F32 },
		{ "{\"torch_dtype\": null, \"dtype\": \"bfloat16\"}", ST_BF16 },
		{ "{}", ST_F32 },
	};
	struct err e = { 0 };
	enum st_dtype d;
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		int r = dtype_of(c[i].config, &d, &e);
		ok(r == 0 && d == c[i].want, "%s: %s", c[i].config, c[i].want == ST_BF16 ? "bfloat16" : "float32");
	}
	ok(dtype_of(NULL, &d, &e) < 0 && strstr(e.msg, "config.json") && strstr(e.msg, dir),
	   "no config.json: an error naming it (%s)", e.msg);
	ok(dtype_of("[\"bfloat16\"]", &d, &e) < 0 && strstr(e.msg, "config.json: not a JSON object"),
	   "a config.json that is no object: an error naming it (%s)", e.msg);
	ok(dtype_of("{\"torch_dtype\": \"bfloat16\"", &d, &e) < 0 && strstr(e.msg, "not a JSON object"),
	   "a config.json cut short: an error, not float32 (%s)", e.msg);
	char p[sizeof dir + 16];
	snprintf(p, sizeof p, "%s/config.json", dir);
	unlink(p);
	rmdir(dir);
	return tap_done();
}
