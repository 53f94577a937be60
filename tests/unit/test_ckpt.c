/*
 * test_ckpt: the policy queue's checkpoints (train/ckpt.h) as a reader of
 * the queue sees them: which step is the newest; step_0 hard-linked from
 * the input model, or copied whole from another file system; each file
 * system call of a publish failing in turn (a full or failing disk), which
 * publishes the whole step or nothing and leaves no temporary; config.json
 * with its dtype set and every other byte kept; a step of optim.bin alone
 * resumed from; --keep with steps without weights; the sweep of a dead
 * process's temporaries; whether a model is the queue's step_0; and the
 * first weight or moment that is not finite, by its tensor's name.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fsys.h"
#include "base/tempfile.h"
#include "model/model.h"
#include "tap.h"
#include "train/ckpt.h"

static char root[512];

static int write_text(const char *dir, const char *name, const char *text)
{
	char p[1024];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

/* The whole file dir/name into b (b->len 0 when there is none). */
static void read_text(const char *dir, const char *name, struct buf *b)
{
	char p[1024];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	b->len = 0;
	if (buf_read_file(b, p, NULL) < 0)
		b->len = 0;
}

static void tiny(struct model *m, uint64_t seed)
{
	struct model_config c;
	memset(&c, 0, sizeof c);
	model_config_defaults(&c, MODEL_QWEN2);
	c.C = 16, c.I = 24, c.L = 2, c.NH = 4, c.NKV = 2, c.HS = 4, c.V = 40, c.tied = 1, c.init_std = 0.3f;
	c.eps = 1e-5f;
	struct err e = { 0 };
	if (model_create(m, &c, &e) < 0 || model_init_random(m, seed, &e) < 0) {
		diag("%s", e.msg);
		exit(1);
	}
}

/* An optimizer over m's weights whose moments and step are not a fresh one's. */
static void busy_optim(struct optim *op, const struct model *m)
{
	struct optim_opts o;
	optim_opts_default(&o);
	struct err e = { 0 };
	if (optim_init(op, &o, m->w.n, &e) < 0) {
		diag("%s", e.msg);
		exit(1);
	}
	for (size_t i = 0; i < m->w.n; i++)
		op->m[i] = (float)i * 1e-3f, op->v[i] = (float)i * 1e-6f;
	op->step = 3;
}

/* The names in dir, sorted, one space after each ("" when none or no dir). */
static const char *ls(const char *dir)
{
	static char out[2048];
	char **names = NULL;
	size_t n = 0;
	out[0] = 0;
	if (fsys_list_dir(dir, FSYS_ANY, &names, &n, NULL) != 0)
		return out;
	for (size_t i = 0; i < n; i++)
		snprintf(out + strlen(out), sizeof out - strlen(out), "%s ", names[i]);
	fsys_free_names(names, n);
	return out;
}

/* Whether the directories a and b hold the same names and bytes. */
static int same_dirs(const char *a, const char *b)
{
	return shell("diff -r '%s' '%s' > /dev/null 2>&1", a, b) == 0;
}

static void latest(void)
{
	char q[600];
	int64_t k = 1000;
	struct err e = { 0 };
	snprintf(q, sizeof q, "%s/latest", root);
	ok(ckpt_latest(q, INT64_MAX, &k, &e) == 1, "no queue: no step");
	shell("mkdir -p '%s/step_0' '%s/step_3' '%s/step_10' '%s/step_x' && touch '%s/step_20'", q, q, q, q, q);
	static const struct {
		int64_t below, want;
	} c[] = { { INT64_MAX, 10 }, { 10, 10 }, { 9, 3 }, { 3, 3 }, { 2, 0 }, { 0, 0 } };
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		k = 1000;
		ok(ckpt_latest(q, c[i].below, &k, &e) == 0 && k == c[i].want, "the newest step at most %lld: %lld",
		   (long long)c[i].below, (long long)c[i].want);
	}
	k = 1000;
	ok(ckpt_latest(q, -1, &k, &e) == 1 && k == 1000, "none below step 0: 1, *step untouched");
	ok(ckpt_exists(q, 3, &e) == 1 && ckpt_exists(q, 4, &e) == 0, "step_3 exists, step_4 does not");
	fsys_test_fail_at(1, EIO);
	int r = ckpt_latest(q, INT64_MAX, &k, &e);
	fsys_test_fail_at(0, 0);
	ok(r == -1 && strstr(e.msg, strerror(EIO)), "a queue that cannot be listed: an error, not \"no step\" (%s)",
	   e.msg);
}

/* The input model: config.json, generation_config.json, the weights, a
 * tokenizer, a file larger than a copy's 1 MiB chunk, a hidden file and an
 * optim.bin (neither of which step_0 takes). */
static int make_model(const char *dir, const struct model *m)
{
	struct err e = { 0 };
	if (shell("mkdir -p '%s'", dir) != 0 || model_write_dir(m, dir, ST_F32, 0, &e) < 0)
		return -1;
	if (write_text(dir, "tokenizer.json", "{\"model\":{}}\n") < 0 || write_text(dir, ".hidden", "x") < 0 ||
	    write_text(dir, "optim.bin", "not this run's") < 0 ||
	    write_text(dir, "generation_config.json", "{\"eos_token_id\": [7, 9], \"temperature\": 0.6}\n") < 0)
		return -1;
	/* numbers in text: no 1 MiB of it repeats another */
	return shell("seq 1 200000 | head -c 1048579 > '%s/big.bin'", dir) == 0 ? 0 : -1;
}

static int is_step0_of(const char *q, const char *src)
{
	char s0[1024];
	snprintf(s0, sizeof s0, "%s/step_0", q);
	return strcmp(ls(s0), "big.bin config.json generation_config.json model.safetensors tokenizer.json ") == 0 &&
	       shell("for f in big.bin config.json generation_config.json model.safetensors tokenizer.json; do "
	             "cmp -s '%s'/$f '%s'/$f || exit 1; done", src, s0) == 0;
}

/* A publish of step into queue q whose kth file system call of n failed
 * with EIO (0: none), which returned r with e: NULL when it returned what a
 * failure of that call returns and said why, and left the step whole
 * (published: it holds what it should) or nothing at all; else what is
 * wrong. */
static const char *fault_verdict(int r, long k, long n, struct err *e, const char *q, int64_t step, int published)
{
	char tmp[800];
	snprintf(tmp, sizeof tmp, "%s/.tmp", q);
	int said = strstr(e->msg, strerror(EIO)) != NULL;
	if (r != (k == 0 ? 0 : k < n ? -1 : CKPT_UNFLUSHED))
		return "not what a failure of that call returns";
	if (r != -1)
		return !published ? "a step published, not the step"
		       : *ls(tmp) ? "a temporary left"
		       : k && !said ? "unflushed without saying why"
		       : NULL;
	if (!said)
		return "a failure that does not say why";
	return *ls(tmp) || ckpt_exists(q, step, e) != 0 ? "a failure that leaves the step or a temporary" : NULL;
}

/* ckpt_publish_initial from src into fresh queues, the kth file system call
 * failing (0: none) with EIO: NULL when, with none failing, it published
 * step_0 whole; with any but the last failing, it failed saying why and left
 * neither step_0 nor a temporary; with the last (the flush of the queue after
 * the rename) failing, step_0 is published and it says it is unflushed; else
 * what is wrong. */
static const char *initial_faults(const char *src, const char *name, long *calls)
{
	const char *why = NULL;
	long n = 0;
	for (long k = 0; k <= n && !why; k++) {
		char q[700];
		struct err e = { 0 };
		snprintf(q, sizeof q, "%s/%s%ld", root, name, k);
		fsys_test_fail_at(k, EIO);
		int r = ckpt_publish_initial(q, src, &e);
		if (k == 0)
			n = fsys_calls_made();
		fsys_test_fail_at(0, 0);
		why = fault_verdict(r, k, n, &e, q, 0, r != -1 && is_step0_of(q, src));
		if (why)
			diag("  call %ld of %ld failing: %s (%d: %s)", k, n, why, r, e.msg);
	}
	*calls = n;
	return why;
}

static void initial(void)
{
	char src[600], q[600], p[700];
	struct err e = { 0 };
	struct model m;
	struct stat st;
	tiny(&m, 11);
	snprintf(src, sizeof src, "%s/model", root);
	snprintf(q, sizeof q, "%s/linked", root);
	if (!ok(make_model(src, &m) == 0, "an input model"))
		return;
	ok(ckpt_publish_initial(q, src, &e) == 0 && is_step0_of(q, src), "step_0: the model's files, not its "
	   "optim.bin nor hidden ones (%s)", e.msg);
	snprintf(p, sizeof p, "%s/step_0/big.bin", q);
	ok(stat(p, &st) == 0 && st.st_nlink == 2, "hard-linked");
	long n;
	const char *why = initial_faults(src, "lf", &n);
	ok(!why && n >= 8, "linking, each of its %ld file system calls failing: step_0 whole, or nothing", n);

	/* copied from another file system: the same bytes, in chunks of 1 MiB */
	char shm[] = "/dev/shm/test_ckpt.XXXXXX";
	int other_fs = access("/dev/shm", W_OK) == 0 && mkdtemp(shm) &&
	               shell("test \"$(stat -f -c %%T /dev/shm)\" != \"$(stat -f -c %%T '%s')\"", root) == 0;
	if (!other_fs) {
		skip("no /dev/shm on another file system than the queue");
		skip("no /dev/shm on another file system than the queue");
		skip("no /dev/shm on another file system than the queue");
	} else {
		char far[700];
		snprintf(far, sizeof far, "%s/model", shm);
		snprintf(q, sizeof q, "%s/copied", root);
		ok(make_model(far, &m) == 0 && ckpt_publish_initial(q, far, &e) == 0 && is_step0_of(q, far),
		   "a model on another file system: step_0 has its files byte for byte (%s)", e.msg);
		snprintf(p, sizeof p, "%s/step_0/big.bin", q);
		ok(stat(p, &st) == 0 && st.st_nlink == 1 && st.st_size == 1048579, "copied, 1 MiB and 3 bytes whole");
		why = initial_faults(far, "cf", &n);
		ok(!why && n >= 20, "copying, each of its %ld file system calls failing: step_0 whole, or nothing", n);
	}
	if (shm[sizeof shm - 2] != 'X')
		shell("rm -rf '%s'", shm);
	model_free(&m);
}

/* The dtype of a step's config.json, and every other byte as step_0's. */
static void config_dtype(void)
{
	char src[600], q[600], dir[700];
	struct err e = { 0 };
	struct model m;
	struct optim op;
	tiny(&m, 12);
	busy_optim(&op, &m);
	snprintf(src, sizeof src, "%s/cfgmodel", root);
	snprintf(q, sizeof q, "%s/cfg", root);
	shell("mkdir -p '%s'", src);
	static const struct {
		const char *in, *f32, *bf16;
	} c[] = {
		/* absent: both added first */
		{ "{\"a\": 4.0, \"rope_scaling\": {\"factor\": 4.0}}",
		  "{\n  \"dtype\": \"float32\",\n  \"torch_dtype\": \"float32\",\"a\": 4.0, \"rope_scaling\": {\"factor\": 4.0}}",
		  "{\n  \"dtype\": \"bfloat16\",\n  \"torch_dtype\": \"bfloat16\",\"a\": 4.0, \"rope_scaling\": {\"factor\": 4.0}}" },
		/* a string and null replaced where they are; a nested one and a value "dtype" left */
		{ "{\"torch_dtype\":\"float16\",\"text_config\":{\"dtype\":\"float16\"},\"k\":\"dtype\",\"dtype\":null}",
		  "{\"torch_dtype\":\"float32\",\"text_config\":{\"dtype\":\"float16\"},\"k\":\"dtype\",\"dtype\":\"float32\"}",
		  "{\"torch_dtype\":\"bfloat16\",\"text_config\":{\"dtype\":\"float16\"},\"k\":\"dtype\",\"dtype\":\"bfloat16\"}" },
		/* a key with an escaped quote; an array before; an object as the value: the member added */
		{ "{\"x\\\"\": [1, {\"torch_dtype\": 1}], \"torch_dtype\" : \"float32\" , \"dtype\": {}}",
		  "{\n  \"dtype\": \"float32\",\"x\\\"\": [1, {\"torch_dtype\": 1}], \"torch_dtype\" : \"float32\" , \"dtype\": {}}",
		  "{\n  \"dtype\": \"bfloat16\",\"x\\\"\": [1, {\"torch_dtype\": 1}], \"torch_dtype\" : \"bfloat16\" , \"dtype\": {}}" },
	};
	struct buf b = { 0 };
	int64_t step = 1;
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		write_text(src, "config.json", c[i].in);
		for (int bf = 0; bf < 2; bf++, step++) {
			snprintf(dir, sizeof dir, "%s/step_%lld", q, (long long)step);
			int r = ckpt_publish(q, step, &m, &op, 1, bf ? ST_BF16 : ST_F32, 0, src, &e);
			read_text(dir, "config.json", &b);
			const char *want = bf ? c[i].bf16 : c[i].f32;
			if (!ok(r == 0 && b.len == strlen(want) && memcmp(b.data, want, b.len) == 0,
			        "config.json %zu in %s: its dtype set, every other byte kept (%s)", i,
			        bf ? "bfloat16" : "float32", e.msg))
				diag("  got '%.*s'", (int)b.len, b.len ? (const char *)b.data : "");
		}
	}
	write_text(src, "config.json", "[\"torch_dtype\"]");
	snprintf(dir, sizeof dir, "%s/step_%lld", q, (long long)step);
	ok(ckpt_publish(q, step, &m, &op, 1, ST_F32, 0, src, &e) == -1 && strstr(e.msg, "config.json: not a JSON "
	   "object") && ckpt_exists(q, step, &e) == 0 && !*ls(dir), "a config.json that is no object: refused "
	   "naming it, nothing published (%s)", e.msg);
	buf_free(&b);
	optim_free(&op);
	model_free(&m);
}

/* ckpt_publish of step 1 into fresh queues, the kth call failing (0: none):
 * NULL when it did as initial_faults says, the step published being the one
 * ref holds; else what is wrong. */
static const char *publish_faults(const struct model *m, const struct optim *op, int weights, size_t shard,
                                  const char *tok, const char *ref, const char *name, long *calls)
{
	const char *why = NULL;
	long n = 0;
	for (long k = 0; k <= n && !why; k++) {
		char q[700], s1[800];
		struct err e = { 0 };
		snprintf(q, sizeof q, "%s/%s%ld", root, name, k);
		snprintf(s1, sizeof s1, "%s/step_1", q);
		fsys_test_fail_at(k, EIO);
		int r = ckpt_publish(q, 1, m, op, weights, ST_BF16, shard, tok, &e);
		if (k == 0)
			n = fsys_calls_made();
		fsys_test_fail_at(0, 0);
		why = fault_verdict(r, k, n, &e, q, 1, r != -1 && same_dirs(ref, s1));
		if (why)
			diag("  call %ld of %ld failing: %s (%d: %s)", k, n, why, r, e.msg);
	}
	*calls = n;
	return why;
}

/* What a published step holds, and each of its file system calls failing. */
static void publish(void)
{
	char src[600], q[600], ref[700];
	struct err e = { 0 };
	struct model m, back;
	struct optim op, oback;
	struct optim_opts oo;
	optim_opts_default(&oo);
	tiny(&m, 13);
	busy_optim(&op, &m);
	snprintf(src, sizeof src, "%s/pubmodel", root);
	snprintf(q, sizeof q, "%s/pub", root);
	if (!ok(make_model(src, &m) == 0, "an input model"))
		return;
	write_text(src, "merges.txt", "a b\n");
	ok(ckpt_publish(q, 1, &m, &op, 1, ST_BF16, 0, src, &e) == 0, "step 1 published (%s)", e.msg);
	snprintf(ref, sizeof ref, "%s/step_1", q);
	is_int(strcmp(ls(ref), "config.json generation_config.json merges.txt model.safetensors optim.bin "
	       "tokenizer.json "), 0, "it holds the weights, config, the model's generation config and tokenizer "
	       "files, and optim.bin (%s)", ls(ref));
	ok(shell("cmp -s '%s/generation_config.json' '%s/generation_config.json' && cmp -s '%s/merges.txt' "
	         "'%s/merges.txt'", src, ref, src, ref) == 0, "the model's generation_config.json and merges.txt, "
	   "byte for byte");
	int resumed = -1;
	ok(ckpt_load(&back, &oback, &oo, q, 1, &resumed, &e) == 0 && resumed == 1 && oback.step == op.step &&
	   memcmp(back.w.mem, m.w.mem, m.w.n * 4) == 0 && memcmp(oback.m, op.m, m.w.n * 4) == 0 &&
	   memcmp(oback.v, op.v, m.w.n * 4) == 0, "it loads back: the fp32 weights, moments and step (%s)", e.msg);
	optim_free(&oback);
	model_free(&back);
	char bad[800];
	snprintf(bad, sizeof bad, "%s/badopt", root);
	shell("mkdir -p '%s' && cp -r '%s' '%s/step_1' && truncate -s 100 '%s/step_1/optim.bin'", bad, ref, bad, bad);
	ok(ckpt_load(&back, &oback, &oo, bad, 1, &resumed, &e) == -1 && strstr(e.msg, "optim.bin"),
	   "an optim.bin cut short: refused naming it, not a fresh optimizer (%s)", e.msg);
	long n;
	const char *why = publish_faults(&m, &op, 1, 0, src, ref, "pf", &n);
	ok(!why && n >= 15, "each of its %ld file system calls failing: the whole step, or nothing", n);

	/* a step without weights (--save-every): optim.bin alone, resumed from with step_0's shapes */
	char s2[700];
	snprintf(s2, sizeof s2, "%s/step_2", q);
	ok(ckpt_publish(q, 2, &m, &op, 0, ST_BF16, 0, src, &e) == 0 && strcmp(ls(s2), "optim.bin ") == 0 &&
	   ckpt_has_weights(q, 2) == 0 && ckpt_has_weights(q, 1) == 1, "a step without weights: optim.bin alone");
	why = publish_faults(&m, &op, 0, 0, src, s2, "pw", &n);
	ok(!why && n >= 6, "each of its %ld file system calls failing: the whole step, or nothing", n);
	ok(ckpt_load(&back, &oback, &oo, q, 2, &resumed, &e) == -1 && strstr(e.msg, "step_0"),
	   "it needs step_0's config (%s)", e.msg);
	shell("cp -r '%s' '%s/step_0' && rm '%s/step_0/optim.bin'", src, q, q);
	ok(ckpt_load(&back, &oback, &oo, q, 2, &resumed, &e) == 0 && resumed == 1 &&
	   memcmp(back.w.mem, m.w.mem, m.w.n * 4) == 0 && oback.step == op.step,
	   "with it, the weights and state come from optim.bin (%s)", e.msg);
	optim_free(&oback);
	model_free(&back);
	ok(ckpt_load(&back, &oback, &oo, q, 0, &resumed, &e) == 0 && resumed == 0 && oback.step == 0,
	   "step_0 loads with a fresh optimizer (%s)", e.msg);
	optim_free(&oback);
	model_free(&back);
	shell("mkdir '%s/step_3'", q);
	ok(ckpt_load(&back, &oback, &oo, q, 3, &resumed, &e) == -1 &&
	   strstr(e.msg, "step_3: neither weights (config.json) nor optimizer state (optim.bin)"),
	   "a step of neither: refused saying so (%s)", e.msg);

	/* a model directory without config.json: nothing published */
	char nocfg[700];
	snprintf(nocfg, sizeof nocfg, "%s/nocfg", root);
	shell("mkdir -p '%s' && cp '%s/tokenizer.json' '%s/'", nocfg, src, nocfg);
	ok(ckpt_publish(q, 5, &m, &op, 1, ST_BF16, 0, nocfg, &e) == -1 && strstr(e.msg, "nocfg/config.json") &&
	   ckpt_exists(q, 5, &e) == 0, "a model directory without config.json: refused naming it (%s)", e.msg);

	/* sharded, without a tokenizer directory */
	char s4[700];
	snprintf(s4, sizeof s4, "%s/step_4", q);
	ok(ckpt_publish(q, 4, &m, &op, 1, ST_BF16, 3000, NULL, &e) == 0 &&
	   strstr(ls(s4), "model-00001-of-") && strstr(ls(s4), "model.safetensors.index.json") &&
	   !strstr(ls(s4), "tokenizer"), "sharded above --shard-size, no tokenizer without a model directory (%s)",
	   ls(s4));
	why = publish_faults(&m, &op, 1, 3000, NULL, s4, "ps", &n);
	ok(!why && n >= 15, "sharded, each of its %ld file system calls failing: the whole step, or nothing", n);
	optim_free(&op);
	model_free(&m);
}

/* --keep: the newest K with weights and every step after the oldest of them stay, and step_0 */
static void prune(void)
{
	char q[600];
	struct err e = { 0 };
	int removed = -1;
	snprintf(q, sizeof q, "%s/prune", root);
	/* weights at 0, 1, 3, 6; optim.bin alone at 2, 4, 5, 7 */
	shell("for k in 0 1 3 6; do mkdir -p '%s'/step_$k && touch '%s'/step_$k/config.json '%s'/step_$k/optim.bin; "
	      "done; for k in 2 4 5 7; do mkdir -p '%s'/step_$k && touch '%s'/step_$k/optim.bin; done", q, q, q, q, q);
	ok(ckpt_prune(q, 0, &removed, &e) == -1 && strstr(e.msg, "--keep must be at least 1 (got 0)") &&
	   removed == 0, "--keep 0: refused (%s)", e.msg);
	ok(ckpt_prune(q, 5, &removed, &e) == 0 && removed == 0 &&
	   strcmp(ls(q), "step_0 step_1 step_2 step_3 step_4 step_5 step_6 step_7 ") == 0,
	   "--keep 5 of 3 with weights: nothing removed");
	ok(ckpt_prune(q, 2, &removed, &e) == 0 && removed == 2 &&
	   strcmp(ls(q), ".tmp step_0 step_3 step_4 step_5 step_6 step_7 ") == 0,
	   "--keep 2: steps 3 and 6 with weights and those after 3 stay, step_0 too (%s)", ls(q));
	char tmp[700];
	snprintf(tmp, sizeof tmp, "%s/.tmp", q);
	ok(!*ls(tmp), "the removed steps gone whole, nothing left in .tmp");
	ok(ckpt_prune(q, 1, &removed, &e) == 0 && removed == 3 &&
	   strcmp(ls(q), ".tmp step_0 step_6 step_7 ") == 0, "--keep 1: step 6 and step 7 after it (%s)", ls(q));

	/* each call failing: it says so, and a step it removed is gone from the queue whole */
	const char *why = NULL;
	long n = 0;
	for (long k = 0; k <= n && !why; k++) {
		char qk[700], tk[800];
		snprintf(qk, sizeof qk, "%s/prunef%ld", root, k);
		snprintf(tk, sizeof tk, "%s/.tmp", qk);
		shell("for s in 0 1 2 3; do mkdir -p '%s'/step_$s && touch '%s'/step_$s/config.json; done", qk, qk);
		fsys_test_fail_at(k, EIO);
		int r = ckpt_prune(qk, 1, &removed, &e);
		if (k == 0)
			n = fsys_calls_made();
		fsys_test_fail_at(0, 0);
		const char *left = ls(qk);
		if (k == 0 && (r != 0 || removed != 2 || strcmp(left, ".tmp step_0 step_3 ") != 0))
			why = "not steps 1 and 2 removed";
		else if (k > 0 && (r != -1 || !strstr(e.msg, strerror(EIO))))
			why = "a failure not said";
		else if (k > 0 && (removed < 0 || removed > 2 || strstr(left, removed ? "step_1" : "XX") ||
		                   !strstr(left, "step_3")))
			why = "removed says not what is gone";
		else if (r == 0 && *ls(tk))
			why = "something left in .tmp";
		if (why)
			diag("  call %ld of %ld failing: %s (%d, %d removed: %s; %s)", k, n, why, r, removed, e.msg, left);
	}
	ok(!why && n >= 4, "--keep 1 with each of its %ld file system calls failing: said, nothing half in the queue",
	   n);
	shell("mkdir -p '%s/step_8/sub' '%s/step_9' && touch '%s/step_8/config.json' '%s/step_9/config.json'", q, q, q, q);
	ok(ckpt_prune(q, 1, &removed, &e) == -1 && strstr(e.msg, "cannot remove directory") && removed == 3 &&
	   strcmp(ls(q), ".tmp step_0 step_9 ") == 0, "a step holding a directory: out of the queue, and "
	   "said to stay in .tmp (%s)", e.msg);

	/* steps past 9, which a listing sorts as text (step_10 before step_9) */
	snprintf(q, sizeof q, "%s/prune10", root);
	shell("for k in 0 8 9 10 11; do mkdir -p '%s'/step_$k && touch '%s'/step_$k/config.json; done", q, q);
	ok(ckpt_prune(q, 2, &removed, &e) == 0 && removed == 2 && strcmp(ls(q), ".tmp step_0 step_10 step_11 ") == 0,
	   "--keep 2 of steps 8 to 11: 10 and 11 stay, by number (%s)", ls(q));
}

/* ckpt_sweep removes the temporaries of this host's dead processes only */
static void sweep(void)
{
	char q[600], me[128], t[1024];
	struct err e = { 0 };
	snprintf(q, sizeof q, "%s/sweep", root);
	tempfile_unique_name(me, sizeof me);
	size_t hl = strcspn(me, ".");
	pid_t dead = fork();
	if (dead == 0)
		_exit(0);
	waitpid(dead, NULL, 0);
	int removed = -1;
	ok(ckpt_sweep(q, &removed, &e) == 0 && removed == 0, "no .tmp: nothing to do");
	/* dead: this host, a pid no longer running; the rest are kept */
	/* step_1's pid does not fit a long (strtol sets errno), and the dead step_2 follows it */
	const char *fmt[] = { "step_1.%.*s.%d99999999999999999999.1.1", "step_2.%.*s.%d.1.1", "step_3.%.*s.%d.1.1", "step_4.%.*s.%d.1.1", "step_5.%.*s9%d.1.1", "zother.%.*s.%d.1.1",
	                      "step_6.%.*s.%dx.1.1", "step_7.%.*s.0.1.1", "steps.%.*s.%d.1.1", "step_8%.*s%d" };
	int pids[] = { (int)dead, (int)dead, (int)dead, (int)getpid(), (int)dead, (int)dead, (int)dead, 0, (int)dead, (int)dead };
	for (size_t i = 0; i < sizeof pids / sizeof pids[0]; i++) {
		char name[300];
		snprintf(name, sizeof name, fmt[i], (int)hl, me, pids[i]);
		snprintf(t, sizeof t, "%s/.tmp/%s", q, name);
		shell("mkdir -p '%s' && touch '%s/model.safetensors'", t, t);
	}
	snprintf(t, sizeof t, "%s/.tmp", q);
	ok(ckpt_sweep(q, &removed, &e) == 0 && removed == 2, "the two of a dead process removed (%s)", e.msg);
	char want[1024];
	snprintf(want, sizeof want, "step_1.%.*s.%d99999999999999999999.1.1 step_4.%.*s.%d.1.1 step_5.%.*s9%d.1.1 "
	         "step_6.%.*s.%dx.1.1 step_7.%.*s.0.1.1 step_8%.*s%d steps.%.*s.%d.1.1 zother.%.*s.%d.1.1 ", (int)hl, me,
	         (int)dead, (int)hl, me, (int)getpid(), (int)hl, me,
	         (int)dead, (int)hl, me, (int)dead, (int)hl, me, (int)hl, me, (int)dead, (int)hl, me, (int)dead, (int)hl,
	         me, (int)dead);
	if (!ok(strcmp(ls(t), want) == 0, "a dead process's of this host; a live one's, another host's, and "
	        "names of no temporary stay"))
		diag("  got  %s\n#   want %s", ls(t), want);
	fsys_test_fail_at(1, EIO);
	int r = ckpt_sweep(q, &removed, &e);
	fsys_test_fail_at(0, 0);
	ok(r == -1 && strstr(e.msg, strerror(EIO)), ".tmp that cannot be listed: said (%s)", e.msg);
}

/* Whether --model is the queue's step_0: the same file, or the same size,
 * first and last MiB, for every file step_0 takes */
static void initial_differs(void)
{
	char src[600], q[600], cp[600], why[256];
	struct err e = { 0 };
	struct model m;
	tiny(&m, 14);
	snprintf(src, sizeof src, "%s/idmodel", root);
	snprintf(q, sizeof q, "%s/idq", root);
	snprintf(cp, sizeof cp, "%s/idcopy", root);
	if (!ok(make_model(src, &m) == 0 && shell("seq 1 500000 | head -c 3145728 > '%s/big.bin'", src) == 0 &&
	        write_text(src, "one.txt", "a") == 0 &&
	        ckpt_publish_initial(q, src, &e) == 0, "a queue of a model with a 3 MiB file"))
		return;
	ok(ckpt_initial_differs(q, src, why, sizeof why, &e) == 0, "its own model: the same");
	shell("cp -r '%s' '%s' && echo other > '%s/optim.bin' && echo y > '%s/.hidden'", src, cp, cp, cp);
	ok(ckpt_initial_differs(q, cp, why, sizeof why, &e) == 0, "a copy (optim.bin and hidden files apart): the same");
	static const struct {
		const char *edit, *why;
	} c[] = {
		{ "printf x >> big.bin", "its big.bin is not step_0's" },
		{ "printf x | dd of=big.bin bs=1 seek=0 conv=notrunc", "its big.bin is not step_0's" },
		{ "printf x | dd of=big.bin bs=1 seek=1048575 conv=notrunc", "its big.bin is not step_0's" },
		{ "printf x | dd of=big.bin bs=1 seek=2097152 conv=notrunc", "its big.bin is not step_0's" },
		{ "printf x | dd of=big.bin bs=1 seek=3145727 conv=notrunc", "its big.bin is not step_0's" },
		{ "printf x | dd of=big.bin bs=1 seek=1048576 conv=notrunc", NULL },
		{ "echo '{}' > vocab.json", "step_0 has no vocab.json" },
		{ "printf b > one.txt", "its one.txt is not step_0's" },
		{ "rm .hidden && printf x >> big.bin", "its big.bin is not step_0's" },
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		shell("rm -rf '%s' && cp -r '%s' '%s' && cd '%s' && { %s; } 2> /dev/null", cp, src, cp, cp, c[i].edit);
		why[0] = 0;
		int r = ckpt_initial_differs(q, cp, why, sizeof why, &e);
		ok(c[i].why ? r == 1 && strcmp(why, c[i].why) == 0 : r == 0, "%s: %s (%s)", c[i].edit,
		   c[i].why ? c[i].why : "the same: a byte between the first and last MiB is not looked at", why);
	}
	char qf[700];
	snprintf(qf, sizeof qf, "%s/idfile", root);
	shell("mkdir -p '%s' && touch '%s/step_0'", qf, qf);
	ok(ckpt_initial_differs(qf, src, why, sizeof why, &e) == -1 && strstr(e.msg, "step_0/"),
	   "a queue whose step_0 is a file: an error naming it (%s)", e.msg);
	fsys_test_fail_at(1, EIO);
	int r = ckpt_initial_differs(q, src, why, sizeof why, &e);
	fsys_test_fail_at(0, 0);
	ok(r == -1 && strstr(e.msg, strerror(EIO)), "a model directory that cannot be listed: an error (%s)", e.msg);
	model_free(&m);
}

/* The first weight or moment that is inf or NaN, by tensor and element */
static void not_finite(void)
{
	struct model m;
	struct optim op;
	struct err e = { 0 };
	tiny(&m, 15);
	busy_optim(&op, &m);
	ok(ckpt_check_finite(&m, &op, &e) == 0 && ckpt_check_finite(&m, NULL, &e) == 0, "all finite: 0");
	int nt = model_tensors(&m.cfg, &m.w, NULL);
	struct model_tensor *ts = malloc((size_t)nt * sizeof *ts);
	model_tensors(&m.cfg, &m.w, ts);
	const struct model_tensor *t = &ts[nt / 2];
	size_t at = (size_t)(t->data - m.w.mem) + 3;
	char want[256];
	float *arr[3] = { m.w.mem, op.m, op.v };
	const char *what[3] = { "", "the first moment of ", "the second moment of " };
	float bad[3] = { NAN, INFINITY, -INFINITY };
	for (int k = 0; k < 3; k++) {
		arr[k][at] = bad[k];
		arr[k][at + 1] = NAN;
		snprintf(want, sizeof want, "%s%s is not finite (element 3: %g)", what[k], t->name, bad[k]);
		ok(ckpt_check_finite(&m, &op, &e) == -1 && strcmp(e.msg, want) == 0, "%s", e.msg);
		arr[k][at] = arr[k][at + 1] = 0;
	}
	/* the first and last element of each tensor, by its name */
	int named = 0;
	for (int j = 0; j < nt; j++) {
		size_t len = (size_t)ts[j].shape[0] * (size_t)(ts[j].ndim == 2 ? ts[j].shape[1] : 1);
		size_t end[2] = { 0, len - 1 };
		for (int s = 0; s < 2; s++) {
			ts[j].data[end[s]] = NAN;
			snprintf(want, sizeof want, "%s is not finite (element %zu: nan)", ts[j].name, end[s]);
			if (ckpt_check_finite(&m, &op, &e) == -1 && strcmp(e.msg, want) == 0)
				named++;
			else
				diag("  got '%s', want '%s'", e.msg, want);
			ts[j].data[end[s]] = 0;
		}
	}
	is_int(named, 2 * nt, "a NaN at the first or last element of each of the %d tensors: named with its element",
	       nt);
	/* the tensor that ends the weights: its last element */
	int last = -1;
	for (int j = 0; j < nt; j++)
		if (ts[j].data && ts[j].data + ts[j].shape[0] * (ts[j].ndim == 2 ? ts[j].shape[1] : 1) == m.w.mem + m.w.n)
			last = j;
	m.w.mem[m.w.n - 1] = NAN;
	ok(last >= 0 && ckpt_check_finite(&m, NULL, &e) == -1 && strstr(e.msg, ts[last].name) == e.msg &&
	   strstr(e.msg, " is not finite (element "), "the last weight of all (%s)", e.msg);
	free(ts);
	optim_free(&op);
	model_free(&m);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(root, sizeof root, "%s/test_ckpt.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(root))
		skip_all("no temporary directory");
	latest();
	initial();
	config_dtype();
	publish();
	prune();
	sweep();
	initial_differs();
	not_finite();
	shell("rm -rf '%s'", root);
	return tap_done();
}
