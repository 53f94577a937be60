/*
 * jsonview.h: the JSON view of spool records (grpo-cat, grpo-collect).
 *
 * One record per line. A group is {"group_id": G, "trajectories": [T, ...]},
 * a trajectory T carries the data model's field names, and a micro-batch is
 * one object with input_ids, position_ids, seq_lens, loss_mask, advantages,
 * inference_logprobs, ref_logprobs, temperatures, sequence_ids, group_ids
 * (every per-token field one value per token). Floats are printed with the
 * fewest digits that read back to the same float32, so a round trip through
 * JSON is bit-exact. Masks print as 0/1 and parse from 0/1 or false/true.
 *
 * Ids (sequence_id, group_id and the micro-batch's lists) print as they
 * were given, a JSON string or an integer.
 *
 * Parsing accepts a group, a micro-batch or a lone trajectory object. In a
 * trajectory only prompt_tokens and response_tokens are required here;
 * logprobs absent or null leave it without (t->logprobs NULL), as
 * grpo-cat prints one, which grpo-collect refuses unless given
 * --allow-missing-logprobs; the defaults of the rest are those of
 * traj_init() (grpo-spool(5)).
 * Integers beyond 2^53 - 1 (TRAJ_INT_MAX) are refused, not rounded (cJSON
 * keeps numbers as doubles).
 * NaN, Infinity and -Infinity read as those floats, null in a float array as
 * NaN; the spool writer then refuses them with the record and field named.
 */
#ifndef GRPO_JSONVIEW_H
#define GRPO_JSONVIEW_H

#include <stddef.h>

#include "base/buf.h"
#include "base/err.h"
#include "data/sfile.h"
#include "data/traj.h"

struct cJSON;
struct long_arrays;

/* Append one line (with its '\n'); -1 only when memory runs out. */
int json_print_group(struct buf *out, const struct group *g);

/* As json_print_group, calling extra() inside each trajectory's object after
 * its own fields, so a tool can add fields of its own (decoded text, a
 * model's logprobs). extra appends `,"key":value` pairs; -1 stops printing. */
typedef int (*json_traj_extra)(struct buf *out, const struct traj *t, uint32_t index, void *ctx);
int json_print_group_with(struct buf *out, const struct group *g, json_traj_extra extra, void *ctx);
/* An array of floats in the view's float format, e.g. for extra fields. */
int json_print_floats(struct buf *out, const float *a, uint32_t n);
int json_print_mb(struct buf *out, const struct microbatch *mb);
int json_print_record(struct buf *out, const struct record *rec);

/* Shortest decimal form of f that reads back to the same float32; returns length.
 * NaN and infinities, which JSON lacks, print as Python's json module writes
 * them (NaN, Infinity, -Infinity), never as null; a spool file holds none
 * (sfile.h), so only a tool's own values can print so. */
int json_format_float(char out[32], float f);
/* A JSON string literal, quotes included; _n takes s[0..n), which may hold
 * NUL bytes (decoded text can), written as \u0000. */
int json_print_string(struct buf *out, const char *s);
int json_print_string_n(struct buf *out, const char *s, size_t n);

/* Rewrite Python's NaN, Infinity and -Infinity outside strings into what
 * cJSON reads: null (which number arrays read as NaN), 1e999 and -1e999
 * (which strtod reads as infinities). Returns 1 and a new malloc'd text in
 * *out (length *out_n) when something changed, 0 when nothing did, -1 when
 * memory runs out. */
int json_fix_nonfinite(const char *text, size_t n, char **out, size_t *out_n);

/* What cJSON would change silently in a line: a NUL, raw or as \u0000, cuts
 * its string there, bytes that are not UTF-8 would be stored raw, and a
 * number JSON forbids is read as some other (json_check_numbers). All are
 * refused (the caller names the line), and so is a lone surrogate escape,
 * which cJSON refuses with no reason: 0, or -1 with the message in e. */
int json_check_text(const char *line, size_t n, struct err *e);
/* Numbers that cJSON reads but JSON forbids, outside strings: a leading
 * zero ("05", read as 5), a '.' or an exponent without digits after it
 * ("5.", "1e"), a '+' ("[1,+5]": cJSON stops there, but a long array's
 * reader of this file would take it). A writer making them is not writing
 * JSON, so what it meant is unknown: refused, naming the byte. 0 or -1. */
int json_check_numbers(const char *line, size_t n, struct err *e);

/* Whether JSON text stops inside a value: in a string, or with an object or
 * array still open. Text cut short always does, a whole value never,
 * whether or not it is good JSON otherwise. */
int json_cut_short(const char *s, size_t n);

/*
 * cJSON_ParseWithLengthOpts(text, n, end, 0), telling memory running out
 * from text that is not JSON, which cJSON does not (it returns NULL for
 * both, and a reader would call a good file bad): NULL with errno ENOMEM
 * when one of its allocations failed, else NULL with errno EINVAL. cJSON
 * allocates through a hook of this module that notes it, set before main.
 * Every reader of JSON parses through this, or through the functions
 * below, which do.
 */
struct cJSON *json_parse_n(const char *text, size_t n, const char **end);

/*
 * Parse one line as cJSON_ParseWithLengthOpts does (NULL on failure, with
 * *bad_at the byte, from 1, near which it failed, or 0 when memory ran
 * out), refusing text after the value but blanks (l->after set), Python's
 * NaN and Infinity read as
 * json_fix_nonfinite says, and with the view's per-token arrays (token
 * ids, logprobs, masks, ...) that hold only numbers kept as their text
 * instead of a node per number (about 80 bytes each): those nodes are
 * cJSON_Raw, for json_get_*_array alone to read. l holds that text:
 * json_line_free(l) after cJSON_Delete, in either order after the last
 * read. A line of a few million numbers takes about its own size again,
 * not ten times it.
 */
struct json_line {
	char *fixed;              /* the line with NaN rewritten, when it had any */
	struct long_arrays *arrays;
	int after;                /* refused for text after its value (*bad_at there) */
};
struct cJSON *json_parse_line(const char *text, size_t n, size_t *bad_at, struct json_line *l);
void json_line_free(struct json_line *l);

/* A plain cJSON tree of text, which must hold one value and blanks around
 * it, and no key twice in an object: NULL with the message in e (the byte,
 * from 1, near which cJSON stopped, or the first byte after the value, or
 * the key) otherwise. For small lines
 * (prompts, answers, a reward program's replies) that json_parse_line's
 * view of token arrays does not fit. */
struct cJSON *json_parse_one(const char *text, size_t n, struct err *e);

/* -1 with the key in e where one object of o, at any depth, holds a key
 * twice: readers disagree on which counts (cJSON's lookup the first,
 * Python's json and jq the last), so json_parse_one and json_parse_record
 * refuse it. (grpo-collect's importers do not: their fast path never sees
 * the keys it skips, and must agree with the tree of every key.) */
int json_duplicate_key(const struct cJSON *o, struct err *e);

/* Parse one line of the JSON view into rec (REC_GROUP, REC_MICROBATCH or REC_TRAJ). */
int json_parse_record(const char *text, size_t n, struct record *rec, struct err *e);

/* Building blocks for other input formats (grpo-collect). Each fills its
 * output only on success; messages name the field and index. */
int json_parse_traj(const struct cJSON *obj, struct traj *t, struct err *e);
int json_get_i32_array(const struct cJSON *arr, const char *what, int32_t **out, uint32_t *n, struct err *e);
int json_get_f32_array(const struct cJSON *arr, const char *what, float **out, uint32_t *n, struct err *e);
int json_get_mask_array(const struct cJSON *arr, const char *what, uint8_t **out, uint32_t *n, struct err *e);
int json_get_i64(const struct cJSON *v, const char *what, int64_t *out, struct err *e);
/* An id as given: a JSON string, or an integer (json_get_i64's range). */
int json_get_id(const struct cJSON *v, const char *what, struct traj_id *out, struct err *e);
/* An id as it was given: a JSON string or an integer. */
int json_print_id(struct buf *out, const struct traj_id *id);

#endif
