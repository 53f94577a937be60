/*
 * test_stopstr: stop strings end a response at the first token whose text
 * so far (the whole response decoded, special tokens left out) holds one.
 * stopstr_hit decodes only a window of the last tokens; the oracle here
 * decodes the whole response at every token. They must agree on where each
 * response ends, over byte-level BPE (GPT-2, with added tokens) and
 * SentencePiece-style tokenizers (Metaspace, byte fallback), committed in
 * tests/data, and Qwen3's and Llama 3's real ones where ../shared has them:
 * responses of random ids (split UTF-8, runs of byte tokens that are not
 * UTF-8, special tokens) and of encoded text, long enough that the window
 * slides, with stop strings cut from the response's own text (so that most
 * are met) at any byte, characters split included. Worked cases where a
 * window of the usual size holds too little text (special tokens), byte
 * runs with <0x00> in them, failed decodes, and the stop strings' bounds;
 * every response lies just before a page no one may read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tap.h"
#include "base/rng.h"
#include "model/stopstr.h"

static uint64_t rs = 42;

static uint64_t rnd(uint64_t n)
{
	return splitmix64(&rs) % n;
}

/* The first n at which decode(ids[0..n)) holds a stop string, or 0. */
static int oracle(const struct tokenizer *t, const int32_t *ids, int len, char *const *stops, int nstops)
{
	struct buf b = { 0 };
	struct err e;
	int at = 0;
	for (int n = 1; n <= len && !at; n++) {
		buf_reset(&b);
		if (tok_decode(t, ids, (size_t)n, 1, &b, &e) < 0)
			break;
		for (int i = 0; i < nstops && !at; i++)
			if (b.len && memmem(b.data, b.len, stops[i], strlen(stops[i])))
				at = n;
	}
	buf_free(&b);
	return at;
}

/* The len ids copied to end just before a page no one may read: a check
 * that looks at a token past the n it was given crashes on the last. */
static const int32_t *fenced(const int32_t *ids, int len)
{
	static char *base;
	static size_t room;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n = (size_t)len * sizeof *ids;
	if (n > room) {
		if (base)
			munmap(base, room + page);
		room = (n + page - 1) / page * page;
		base = mmap(NULL, room + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (base == MAP_FAILED || mprotect(base + room, page, PROT_NONE) < 0)
			abort();
	}
	return memcpy(base + room - n, ids, n);
}

/* Where stopstr_hit, asked token by token, ends the response, or 0. */
static int windowed(struct stopstr *s, const int32_t *ids, int len)
{
	const int32_t *at = fenced(ids, len);
	for (int n = 1; n <= len; n++)
		if (stopstr_hit(s, at, n))
			return n;
	return 0;
}

static const char *words[] = { "the", " answer", " is", " 42", "</answer>", "\n", " café", " 東京", " 🤖", "\xc3\xa9",
			       " <think>", "...", "  ", "ünïcödé", "\t", " 1,000", "=", "+" };

/* A response: random ids over the whole vocabulary, or encoded random words. */
static int response(const struct tokenizer *t, int32_t *ids, int cap, int kind)
{
	uint32_t V = tok_vocab_size(t);
	int len = 1 + (int)rnd((uint64_t)cap);
	if (kind == 0) {
		for (int i = 0; i < len; i++)
			ids[i] = (int32_t)rnd(V);
		return len;
	}
	struct buf text = { 0 };
	struct tok_ids out = { 0 };
	struct err e;
	while (text.len < (size_t)len * 3) {
		const char *w = words[rnd(sizeof words / sizeof *words)];
		buf_append(&text, w, strlen(w));
	}
	int n = 0;
	if (tok_encode(t, (const char *)text.data, text.len, &out, &e) == 0)
		for (n = 0; n < (int)out.n && n < cap; n++)
			ids[n] = out.v[n];
	tok_ids_free(&out);
	buf_free(&text);
	return n;
}

/* Stop strings: slices of the response's text, or text it lacks. */
static int pick_stops(const struct tokenizer *t, const int32_t *ids, int len, char stops[][40], char **sp)
{
	struct buf b = { 0 };
	struct err e;
	int n = 1 + (int)rnd(3);
	int have = tok_decode(t, ids, (size_t)len, 1, &b, &e) == 0 && b.len > 0;
	for (int i = 0; i < n; i++) {
		size_t l = 1 + rnd(24);
		if (have && rnd(5) != 0) {
			size_t at = rnd(b.len);
			if (at + l > b.len)
				l = b.len - at;
			memcpy(stops[i], b.data + at, l);
			stops[i][l] = 0;
			if (strlen(stops[i]) != l)   /* a decoded NUL byte: take what comes before it */
				l = strlen(stops[i]);
		} else {
			l = 0;
		}
		if (l == 0)
			strcpy(stops[i], "no such text \x01");
		sp[i] = stops[i];
	}
	buf_free(&b);
	return n;
}

static void differential(const char *name, const struct tokenizer *t, int cases, int cap)
{
	int32_t *ids = malloc((size_t)cap * sizeof *ids);
	int agree = 0, hits = 0, slid = 0, bad = 0;
	for (int c = 0; c < cases; c++) {
		int len = response(t, ids, cap, c % 2);
		if (len == 0)
			continue;
		char stops[3][40], *sp[3];
		int nstops = pick_stops(t, ids, len, stops, sp);
		struct stopstr s;
		struct err e;
		if (stopstr_init(&s, t, (const char *const *)sp, nstops, &e) < 0) {
			ok(0, "%s: stopstr_init: %s", name, e.msg);
			break;
		}
		int want = oracle(t, ids, len, sp, nstops), got = windowed(&s, ids, len);
		if (got == want && !stopstr_error(&s)) {
			agree++;
		} else if (bad++ < 5) {
			diag("%s case %d: %d tokens, stops \"%s\"%s: windowed ends at %d, the whole text at %d %s", name, c,
			     len, sp[0], nstops > 1 ? " and more" : "", got, want, stopstr_error(&s) ? stopstr_error(&s) : "");
		}
		hits += want > 0;
		slid += want > (int)(s.longest + 16) || (!want && len > (int)(s.longest + 16));
		stopstr_free(&s);
	}
	ok(bad == 0, "%s: %d responses end where the whole text first holds a stop string (%d do, %d with the window slid)",
	   name, agree, hits, slid);
	ok(hits > cases / 4 && slid > cases / 4, "%s: the cases meet stop strings (%d) and slide the window (%d)", name,
	   hits, slid);
	free(ids);
}

/* Byte fallback decodes a run of byte tokens as one: FF and 60 A's are not
 * UTF-8 as a whole, so each byte reads U+FFFD and no A is written, though
 * a window over the tail alone would decode AAAA. */
static void byte_run(const struct tokenizer *t)
{
	int32_t ids[64];
	ids[0] = tok_token_id(t, "<0xFF>");
	for (int i = 1; i <= 60; i++)
		ids[i] = tok_token_id(t, "<0x41>");
	const char *a4 = "AAAA", *fffd = "\xef\xbf\xbd";
	struct stopstr s;
	struct err e;
	stopstr_init(&s, t, &a4, 1, &e);
	int end = windowed(&s, ids, 61);
	ok(end == 0 && end == oracle(t, ids, 61, (char **)&a4, 1),
	   "a run of byte tokens that is not UTF-8 holds no AAAA for a window over its tail to find (ends at %d)", end);
	stopstr_free(&s);
	stopstr_init(&s, t, &fffd, 1, &e);
	end = windowed(&s, ids, 61);
	ok(end == 1, "but U+FFFD, which the lone FF decodes to, ends it at token 1 (at %d)", end);
	stopstr_free(&s);
	/* <0x00> is a byte token like the rest: FF, NUL and the A's are one run */
	ids[1] = tok_token_id(t, "<0x00>");
	stopstr_init(&s, t, &a4, 1, &e);
	end = windowed(&s, ids, 61);
	ok(end == 0 && end == oracle(t, ids, 61, (char **)&a4, 1),
	   "nor does one with <0x00> in it, which joins the run as the other bytes do (ends at %d)", end);
	stopstr_free(&s);
}

/* Special tokens add no text, so a window of as many tokens as the longest
 * stop string has bytes may hold too little text: it must grow until its
 * text before the new token is long enough, whatever its first tokens. The
 * response: head's tokens, m special tokens, then one token each of tail's
 * bytes; its last token completes stop, which spans the specials. */
static void across_specials(const struct tokenizer *t, const char *stop, const char *head, int m, const char *tail)
{
	int32_t ids[128];
	struct tok_ids h = { 0 };
	struct err e;
	int n = 0;
	tok_encode(t, head, strlen(head), &h, &e);
	for (size_t i = 0; i < h.n; i++)
		ids[n++] = h.v[i];
	for (int i = 0; i < m; i++)
		ids[n++] = tok_token_id(t, "<|endoftext|>");
	for (const char *c = tail; *c; c++) {
		char one[2] = { *c, 0 };
		ids[n++] = tok_token_id(t, one);
	}
	struct stopstr s;
	stopstr_init(&s, t, &stop, 1, &e);
	int end = windowed(&s, ids, n), want = oracle(t, ids, n, (char **)&stop, 1);
	ok(end == n && want == n, "\"%s\" across %d special tokens, %d tokens in all: ends at the last (at %d, whole text %d)",
	   stop, m, n, end, want);
	stopstr_free(&s);
	tok_ids_free(&h);
}

/* An id the tokenizer lacks, after byte tokens (which skip the look at the
 * last four tokens' text): the window's decode fails, and says so. */
static void bad_after_bytes(const struct tokenizer *t)
{
	int32_t ids[] = { tok_token_id(t, "<0x41>"), tok_token_id(t, "<0x42>"), (int32_t)tok_vocab_size(t) + 5 };
	const char *stop = "never";
	struct stopstr s;
	struct err e;
	stopstr_init(&s, t, &stop, 1, &e);
	int end = windowed(&s, ids, 3);
	ok(end == 3 && stopstr_error(&s), "after byte tokens too, an id the tokenizer lacks ends the response, said: %s",
	   stopstr_error(&s) ? stopstr_error(&s) : "none");
	stopstr_free(&s);
}

static struct tokenizer *load(const char *dir, const char *file)
{
	char path[4096];
	struct err e;
	snprintf(path, sizeof path, "%s/%s", dir, file);
	struct tokenizer *t = tok_load(path, &e);
	if (!t)
		diag("%s", e.msg);
	return t;
}

/* The token that completes "</answer>" is the last: hand-worked on GPT-2. */
static void worked(const struct tokenizer *t)
{
	const char *text = "so <answer>42</answer> and more text after it";
	struct tok_ids ids = { 0 };
	struct buf b = { 0 };
	struct err e;
	tok_encode(t, text, strlen(text), &ids, &e);
	const char *stop = "</answer>";
	struct stopstr s;
	stopstr_init(&s, t, &stop, 1, &e);
	int n = windowed(&s, ids.v, (int)ids.n);
	tok_decode(t, ids.v, (size_t)n, 1, &b, &e);
	ok(n > 0 && b.len == strlen("so <answer>42</answer>") && memcmp(b.data, text, b.len) == 0,
	   "\"%s\" ends with the token that completes </answer>: \"%.*s\"", text, (int)b.len, (const char *)b.data);
	stopstr_free(&s);
	buf_free(&b);
	tok_ids_free(&ids);
}

int main(void)
{
	const char *top = getenv("GRPO_TOP"), *shared = getenv("GRPO_SHARED");
	if (!top)
		skip_all("GRPO_TOP is not set (run through tests/run.sh)");
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/tests/data", top);

	struct err e;
	const char *two[] = { "a", "" }, *long_one[] = { NULL };
	char big[STOPSTR_MAX_LEN + 2];
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = 0;
	long_one[0] = big;
	struct stopstr s;
	ok(stopstr_init(&s, NULL, two, 2, &e) < 0 && strstr(e.msg, "stop string 2 is 0 bytes"), "an empty stop string: %s",
	   e.msg);
	ok(stopstr_init(&s, NULL, long_one, 1, &e) < 0 && strstr(e.msg, "257 bytes"), "one too long: %s", e.msg);
	ok(stopstr_init(&s, NULL, two, 0, &e) < 0, "none at all: %s", e.msg);

	struct tokenizer *t = load(dir, "tokregex/gpt2/tokenizer.json");
	if (t) {
		worked(t);
		big[STOPSTR_MAX_LEN] = 0;
		ok(stopstr_init(&s, t, long_one, 1, &e) == 0 && s.longest == STOPSTR_MAX_LEN,
		   "one of 256 bytes, the most, is taken");
		stopstr_free(&s);
		const char *many[STOPSTR_MAX + 1];
		for (int i = 0; i <= STOPSTR_MAX; i++)
			many[i] = "stop";
		ok(stopstr_init(&s, t, many, STOPSTR_MAX, &e) == 0, "16 stop strings, the most, are taken");
		stopstr_free(&s);
		ok(stopstr_init(&s, t, many, STOPSTR_MAX + 1, &e) < 0 && strstr(e.msg, "not 17"), "17 are not: %s", e.msg);
		differential("gpt2", t, 300, 400);
		int32_t ids[] = { 5, 6, (int32_t)tok_vocab_size(t) + 5 };
		const char *stop = "never";
		stopstr_init(&s, t, &stop, 1, &e);
		int end = windowed(&s, ids, 3);
		ok(end == 3 && stopstr_error(&s) && strstr(stopstr_error(&s), "id"),
		   "an id the tokenizer lacks ends the response and leaves the message: %s",
		   stopstr_error(&s) ? stopstr_error(&s) : "none");
		ok(windowed(&s, ids, 2) == 1, "after it, every response ends at its first token: the run is failing");
		stopstr_free(&s);
		across_specials(t, "ab", "a", 17, "b");
		across_specials(t, "aaaaaaaaaaaaaaaab", "aaaaaaaaaaaaaaa", 40, "ab");
		tok_free(t);
	}
	const char *fixtures[] = { "tokadded/tokenizer.json", "tokspm/metaspace/tokenizer.json",
				   "tokspm/legacy/tokenizer.json", "tokregex/smollm2/tokenizer.json" };
	for (size_t i = 0; i < sizeof fixtures / sizeof *fixtures; i++)
		if ((t = load(dir, fixtures[i]))) {
			if (strstr(fixtures[i], "legacy")) {
				byte_run(t);
				bad_after_bytes(t);
			}
			differential(fixtures[i], t, 300, 400);
			tok_free(t);
		}
	const char *real[] = { "tokenizers/qwen3/tokenizer.json", "tokenizers/llama3/tokenizer.json" };
	for (size_t i = 0; i < sizeof real / sizeof *real; i++) {
		char path[4096];
		snprintf(path, sizeof path, "%s/data", shared ? shared : "");
		snprintf(dir, sizeof dir, "%s/data/%s", shared ? shared : "", real[i]);
		FILE *f = shared ? fopen(dir, "r") : NULL;
		if (!f) {
			skip("../shared/data's real tokenizers are absent");
			continue;
		}
		fclose(f);
		if ((t = load(path, real[i]))) {
			differential(real[i], t, 120, 600);
			tok_free(t);
		}
	}
	return tap_done();
}
