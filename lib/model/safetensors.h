/*
 * safetensors.h: read and write Hugging Face safetensors checkpoints.
 *
 * A safetensors file is [u64 N little-endian][N bytes of JSON header][data].
 * The header maps each tensor name to {"dtype", "shape", "data_offsets":
 * [begin, end)} with offsets relative to the start of the data. A model
 * directory holds either one `model.safetensors` or shards listed in
 * `model.safetensors.index.json` ({"weight_map": {name: file}}).
 *
 * Reading maps every file read-only and never copies a tensor until asked:
 * st_read_f32() converts one tensor (F32, F16 or BF16) into a caller's float
 * array after checking its shape, so the caller owns the only copy it keeps.
 * Every header is validated when the file is opened as the reference reader
 * does (UTF-8 JSON opening with '{', blanks only after the object, no key
 * twice, string metadata, offsets inside the file, sizes agreeing with dtype
 * and shape, the tensors holding every data byte once), so a truncated or
 * malformed file fails at st_open() with a message naming the file and the
 * tensor.
 *
 * Writing takes a list of named float arrays and writes them as F32 or BF16
 * (rounded to nearest even), in one file or in shards with an index when the
 * total exceeds a size; the header is padded with spaces to a multiple of 8
 * as the reference writer does. Tensor data is assumed little-endian, which
 * is every machine this project targets.
 */
#ifndef GRPO_SAFETENSORS_H
#define GRPO_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define ST_MAX_DIMS 8

enum st_dtype { ST_F32, ST_F16, ST_BF16, ST_F64, ST_I64, ST_I32, ST_I16, ST_I8, ST_U8, ST_BOOL };

struct st_tensor {
	char *name;
	enum st_dtype dtype;
	int ndim;
	int64_t shape[ST_MAX_DIMS];
	const unsigned char *data;  /* into the file's read-only mapping */
	size_t nbytes;
	int file;                   /* index into st_model.files */
};

struct st_file {
	char *path;
	void *map;
	size_t size;
};

struct st_model {
	struct st_file *files;
	int nfiles;
	struct st_tensor *tensors;
	int ntensors;
};

/*
 * Open a checkpoint: `path` is a .safetensors file, or a directory holding
 * model.safetensors.index.json (preferred when present) or model.safetensors.
 * On failure m is left empty and needs no st_close().
 */
int st_open(struct st_model *m, const char *path, struct err *e);
void st_close(struct st_model *m);
/* The same for the bytes of one file in memory, which must outlive m (for tests and fuzzing). */
int st_open_mem(struct st_model *m, const void *data, size_t size, const char *name, struct err *e);

/* The tensor called `name`, or NULL. */
const struct st_tensor *st_find(const struct st_model *m, const char *name);

/*
 * Convert tensor `name` into out[] (float, row-major) after checking that its
 * shape is exactly shape[0..ndim). Errors name the file and the tensor.
 */
int st_read_f32(const struct st_model *m, const char *name, const int64_t *shape, int ndim,
                float *out, struct err *e);

size_t st_dtype_size(enum st_dtype d);

float st_bf16_to_f32(uint16_t h);
uint16_t st_f32_to_bf16(float f);   /* round to nearest even; NaN stays NaN */
float st_f16_to_f32(uint16_t h);

/* One tensor to write: `data` holds the product of shape[] floats. */
struct st_entry {
	const char *name;
	int ndim;
	int64_t shape[ST_MAX_DIMS];
	const float *data;
};

/* Write one safetensors file at `path` (created, must not exist; fsynced).
 * A tensor name that is empty or would need escaping in the JSON header
 * (a quote, a backslash, a control character) is refused, nothing written. */
int st_write_file(const char *path, const struct st_entry *ents, int n, enum st_dtype dtype,
                  struct err *e);

/*
 * Write a checkpoint into directory `dir`: model.safetensors when the data
 * fit in shard_bytes (0: no limit), else model-0000K-of-0000N.safetensors
 * shards of at most shard_bytes each (a larger single tensor gets a shard of
 * its own) plus model.safetensors.index.json. dtype is ST_F32 or ST_BF16.
 */
int st_write_dir(const char *dir, const struct st_entry *ents, int n, enum st_dtype dtype,
                 size_t shard_bytes, struct err *e);

#endif
