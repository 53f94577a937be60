/* libFuzzer target: grpo-collect's --cursor file (collect/cursor.h) from
 * arbitrary bytes. A re-run reads it to know what a killed run sampled and
 * may have published, so a damaged one must be refused, never crash; one
 * that is accepted, kept again as grpo-collect keeps it (cursor_save),
 * reads back to the same place and the same pending batch. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect/cursor.h"

static char dir[] = "/tmp/fuzz_cursor.XXXXXX";

static int same_text(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* A copy of b for cursor_save, which takes what it is given. */
static int copy_batch(struct cursor_batch *to, const struct cursor_batch *b)
{
	*to = *b;
	to->output = b->output ? strdup(b->output) : NULL;
	to->model = b->model ? strdup(b->model) : NULL;
	memset(&to->lines, 0, sizeof to->lines);
	if ((b->output && !to->output) || (b->model && !to->model) ||
	    (b->lines.len && buf_append(&to->lines, b->lines.data, b->lines.len) < 0)) {
		cursor_batch_free(to);
		return -1;
	}
	return 0;
}

static void round_trip(const struct cursor *c)
{
	char path[64];
	snprintf(path, sizeof path, "%s/again", dir);
	struct cursor keep = { 0 }, back;
	struct cursor_batch b;
	struct err e;
	if (!(keep.path = strdup(path)) || copy_batch(&b, &c->batch) < 0) {
		free(keep.path);
		return;
	}
	keep.row = c->row;
	if (cursor_save(&keep, &b, &e) < 0) {
		cursor_free(&keep);
		return;   /* a batch whose header cannot be written again (out of memory) */
	}
	if (cursor_load(&back, path, &e) < 0)
		abort();
	const struct cursor_batch *x = &c->batch, *y = &back.batch;
	if (back.row != c->row || !back.pending || x->from != y->from || x->prompts != y->prompts ||
	    x->next != y->next || x->policy_version != y->policy_version || !same_text(x->output, y->output) ||
	    x->rank != y->rank || x->max_groups != y->max_groups || x->n_lines != y->n_lines ||
	    x->lines.len != y->lines.len || (x->lines.len && memcmp(x->lines.data, y->lines.data, x->lines.len) != 0) ||
	    !same_text(x->model, y->model) || (x->model && (x->names != y->names || x->batch != y->batch ||
							     x->step != y->step)))
		abort();
	cursor_free(&back);
	cursor_free(&keep);
	unlink(path);
}

static void remove_dir(void)
{
	rmdir(dir);   /* empty: every input's files are removed after it */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int made;
	if (!made) {
		if (!mkdtemp(dir))
			abort();
		made = 1;
		atexit(remove_dir);
	}
	char path[64];
	snprintf(path, sizeof path, "%s/cursor", dir);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		abort();
	struct cursor c;
	struct err e;
	if (cursor_load(&c, path, &e) == 0) {
		if (c.pending)
			round_trip(&c);
		cursor_free(&c);
	}
	unlink(path);
	return 0;
}
