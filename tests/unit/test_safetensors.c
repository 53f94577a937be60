/*
 * test_safetensors: writing and reading checkpoints (F32, BF16, shards with
 * an index), dtype conversions, and the messages for broken files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "../tap.h"

static char dir[256];

static void write_bytes(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	fwrite(p, 1, n, f);
	fclose(f);
}

/* A file with a hand-written header: [u64 len][header][data of n bytes]. */
static void write_raw(const char *path, const char *header, size_t data_len)
{
	size_t hl = strlen(header);
	unsigned char *b = calloc(1, 8 + hl + data_len);
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)((uint64_t)hl >> (8 * i));
	memcpy(b + 8, header, hl);
	write_bytes(path, b, 8 + hl + data_len);
	free(b);
}

/* f32 -> f16 bits for values f16 holds exactly (zero and normals), as the tests below use. */
static uint16_t to_f16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	uint16_t sign = (uint16_t)(u >> 16 & 0x8000);
	if ((u & 0x7fffffff) == 0)
		return sign;
	int exp = (int)(u >> 23 & 0xff) - 127 + 15;
	return (uint16_t)(sign | exp << 10 | (u >> 13 & 0x3ff));
}

/*
 * A whole model stored as F16 by hand (header written here, not by
 * st_write_dir, which writes only F32 and BF16): weights that F16 holds
 * exactly must load bit for bit.
 */
static void f16_model(void)
{
	struct err e = { 0 };
	struct model_config c;
	memset(&c, 0, sizeof c);
	model_config_defaults(&c, MODEL_QWEN3);
	c.C = 8, c.I = 12, c.L = 2, c.NH = 2, c.NKV = 1, c.HS = 4, c.V = 16, c.tied = 0;
	struct model m, m2;
	model_create(&m, &c, &e);
	for (size_t i = 0; i < m.w.n; i++)
		m.w.mem[i] = (float)((int)(i * 37 % 129) - 64) / 64.0f;   /* multiples of 1/64 in [-1, 1] */
	int n = model_tensors(&c, &m.w, NULL);
	struct model_tensor *ts = calloc((size_t)n, sizeof *ts);
	model_tensors(&c, &m.w, ts);
	struct buf hdr = { 0 }, data = { 0 };
	buf_printf(&hdr, "{\"__metadata__\":{\"format\":\"pt\"}");
	for (int i = 0; i < n; i++) {
		int64_t k = ts[i].shape[0] * (ts[i].ndim == 2 ? ts[i].shape[1] : 1);
		size_t at = data.len;
		for (int64_t j = 0; j < k; j++)
			buf_put_u16(&data, to_f16(ts[i].data[j]));
		if (ts[i].ndim == 2)
			buf_printf(&hdr, ",\"%s\":{\"dtype\":\"F16\",\"shape\":[%lld,%lld],\"data_offsets\":[%zu,%zu]}",
			           ts[i].name, (long long)ts[i].shape[0], (long long)ts[i].shape[1], at, data.len);
		else
			buf_printf(&hdr, ",\"%s\":{\"dtype\":\"F16\",\"shape\":[%lld],\"data_offsets\":[%zu,%zu]}",
			           ts[i].name, (long long)ts[i].shape[0], at, data.len);
	}
	buf_printf(&hdr, "}");
	char sub[512], path[600];
	snprintf(sub, sizeof sub, "%s/f16", dir);
	mkdir(sub, 0755);
	snprintf(path, sizeof path, "%s/model.safetensors", sub);
	struct buf file = { 0 };
	buf_put_u64(&file, hdr.len);
	buf_append(&file, hdr.data, hdr.len);
	buf_append(&file, data.data, data.len);
	write_bytes(path, file.data, file.len);
	struct buf cfg = { 0 };
	model_config_json(&c, "float16", &cfg);
	snprintf(path, sizeof path, "%s/config.json", sub);
	write_bytes(path, cfg.data, cfg.len);
	int r = model_load(&m2, sub, &e);
	if (!ok(r == 0, "a model stored as F16 loads"))
		diag("%s", e.msg);
	ok(r == 0 && m2.w.n == m.w.n && memcmp(m2.w.mem, m.w.mem, m.w.n * 4) == 0,
	   "every F16 weight converts exactly (%zu weights, %d tensors)", m.w.n, n);
	struct st_model st;
	ok(st_open(&st, sub, &e) == 0 && st_find(&st, "lm_head.weight")->dtype == ST_F16, "and they are F16 on disk");
	st_close(&st);
	if (r == 0)
		model_free(&m2);
	model_free(&m);
	free(ts);
	buf_free(&hdr), buf_free(&data), buf_free(&file), buf_free(&cfg);
}

static void rmrf(const char *d)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
	if (system(cmd) != 0)
		diag("could not remove %s", d);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/test_st.XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		skip_all("cannot make a temporary directory");
	struct err e = { 0 };
	char path[512], sub[512];

	/* conversions */
	is_float(st_bf16_to_f32(0x3f80), 1.0, 0, "bf16 0x3f80 is 1.0");
	is_float(st_bf16_to_f32(0xc040), -3.0, 0, "bf16 0xc040 is -3.0");
	is_int(st_f32_to_bf16(1.00390625f), 0x3f80, "1 + 2^-8 rounds to even (down) in bf16");
	is_int(st_f32_to_bf16(1.01171875f), 0x3f82, "1 + 3*2^-8 rounds to even (up) in bf16");
	ok(isnan(st_bf16_to_f32(st_f32_to_bf16(NAN))), "NaN stays NaN through bf16");
	/* the edges, by bits, as torch's round to nearest even gives them */
	static const struct { uint32_t f32; uint16_t bf16; const char *what; } edges[] = {
		{ 0x7f800000u, 0x7f80, "infinity stays infinity" },
		{ 0xff800000u, 0xff80, "-infinity stays -infinity" },
		{ 0x7f7fffffu, 0x7f80, "the largest float rounds up to infinity" },
		{ 0x7f7f7fffu, 0x7f7f, "just below the halfway point to infinity rounds down" },
		{ 0x80000000u, 0x8000, "-0 keeps its sign" },
		{ 0x00008000u, 0x0000, "a subnormal halfway between 0 and the least bf16 rounds to even, 0" },
		{ 0x00018000u, 0x0002, "a subnormal halfway between 1 and 2 ulps rounds to even, 2" },
		{ 0x00008001u, 0x0001, "a subnormal above halfway rounds up" },
		{ 0x007fffffu, 0x0080, "the largest subnormal rounds up to the least normal" },
	};
	for (size_t i = 0; i < sizeof edges / sizeof *edges; i++) {
		float f;
		memcpy(&f, &edges[i].f32, 4);
		is_int(st_f32_to_bf16(f), edges[i].bf16, "bf16: %s", edges[i].what);
	}
	{
		uint32_t u = 0x7f800001u;   /* a NaN whose payload is all in the bits bf16 drops */
		float f;
		memcpy(&f, &u, 4);
		ok(isnan(st_bf16_to_f32(st_f32_to_bf16(f))), "a NaN with a low payload stays NaN, not infinity");
	}
	is_float(st_f16_to_f32(0x3c00), 1.0, 0, "f16 0x3c00 is 1.0");
	is_float(st_f16_to_f32(0xc500), -5.0, 0, "f16 0xc500 is -5.0");
	is_float(st_f16_to_f32(0x0001), 5.9604644775390625e-08, 0, "f16 smallest subnormal");
	ok(isinf(st_f16_to_f32(0x7c00)), "f16 0x7c00 is infinity");

	/* F32 and BF16 round trips */
	float a[6] = { 1, -2, 3.5f, 0.1f, -0.25f, 1e-3f }, b[3] = { 7, 8, 9 }, out[6];
	struct st_entry ents[2] = {
		{ .name = "a.weight", .ndim = 2, .shape = { 2, 3 }, .data = a },
		{ .name = "b.bias", .ndim = 1, .shape = { 3 }, .data = b },
	};
	snprintf(path, sizeof path, "%s/f32.safetensors", dir);
	ok(st_write_file(path, ents, 2, ST_F32, &e) == 0, "write F32 file");
	struct st_model st;
	ok(st_open(&st, path, &e) == 0 && st.ntensors == 2, "read it back: 2 tensors");
	const int64_t s23[2] = { 2, 3 }, s3[1] = { 3 }, s32[2] = { 3, 2 };
	ok(st_read_f32(&st, "a.weight", s23, 2, out, &e) == 0 && memcmp(out, a, sizeof a) == 0, "F32 values exact");
	ok(st_read_f32(&st, "a.weight", s32, 2, out, &e) < 0 && strstr(e.msg, "a.weight") &&
	   strstr(e.msg, "[2, 3]") && strstr(e.msg, "[3, 2]"), "shape disagreeing: %s", e.msg);
	ok(st_read_f32(&st, "c.weight", s3, 1, out, &e) < 0 && strstr(e.msg, "missing tensor c.weight"),
	   "missing tensor: %s", e.msg);
	const struct st_tensor *t = st_find(&st, "b.bias");
	ok(t && t->dtype == ST_F32 && t->ndim == 1 && t->shape[0] == 3, "b.bias F32 [3]");
	FILE *f = fopen(path, "rb");
	unsigned char h8[8];
	size_t got = fread(h8, 1, 8, f);
	ok(got == 8 && h8[0] % 8 == 0, "header length is a multiple of 8 (%d)", h8[0] | h8[1] << 8);
	fclose(f);
	st_close(&st);

	snprintf(path, sizeof path, "%s/bf16.safetensors", dir);
	ok(st_write_file(path, ents, 2, ST_BF16, &e) == 0, "write BF16 file");
	ok(st_open(&st, path, &e) == 0 && st_find(&st, "a.weight")->dtype == ST_BF16, "read back as BF16");
	st_read_f32(&st, "a.weight", s23, 2, out, &e);
	int close_enough = 1;
	for (int i = 0; i < 6; i++)
		close_enough &= fabsf(out[i] - a[i]) <= fabsf(a[i]) / 256;
	ok(close_enough && out[0] == 1 && out[2] == 3.5f, "BF16 values within bf16 rounding, exact where representable");
	st_close(&st);

	/* a model in shards: same weights as in one file */
	struct model_config c;
	memset(&c, 0, sizeof c);
	model_config_defaults(&c, MODEL_QWEN3);
	c.C = 8, c.I = 12, c.L = 2, c.NH = 2, c.NKV = 1, c.HS = 6, c.V = 20, c.tied = 0;
	struct model m, m2;
	model_create(&m, &c, &e);
	model_init_random(&m, 1, NULL);
	snprintf(sub, sizeof sub, "%s/sharded", dir);
	mkdir(sub, 0755);
	ok(model_write_dir(&m, sub, ST_F32, 1000, &e) == 0, "write a model in shards of 1000 bytes");
	snprintf(path, sizeof path, "%s/model.safetensors.index.json", sub);
	ok(access(path, F_OK) == 0, "index written");
	snprintf(path, sizeof path, "%s/model.safetensors", sub);
	ok(access(path, F_OK) != 0, "no single model.safetensors beside the shards");
	int r = st_open(&st, sub, &e);
	ok(r == 0 && st.nfiles > 2, "open through the index: %d shards", st.nfiles);
	ok(st_find(&st, "lm_head.weight") != NULL, "an untied model has lm_head.weight");
	st_close(&st);
	ok(model_load(&m2, sub, &e) == 0, "model_load from the shards");
	ok(m2.w.n == m.w.n && memcmp(m2.w.mem, m.w.mem, m.w.n * 4) == 0, "same weights, bit for bit");
	model_free(&m2);

	/* a tied model has no lm_head.weight */
	model_free(&m);
	c.tied = 1;
	model_create(&m, &c, &e);
	model_init_random(&m, 1, NULL);
	snprintf(sub, sizeof sub, "%s/tied", dir);
	mkdir(sub, 0755);
	ok(model_write_dir(&m, sub, ST_BF16, 0, &e) == 0, "write a tied model in BF16");
	ok(st_open(&st, sub, &e) == 0 && st.nfiles == 1 && !st_find(&st, "lm_head.weight") &&
	   st_find(&st, "model.embed_tokens.weight"), "one file, embed_tokens and no lm_head.weight");
	st_close(&st);
	ok(model_load(&m2, sub, &e) == 0 && m2.cfg.tied && m2.w.lm_head == m2.w.embed, "reload: tied head is the embedding");
	model_free(&m2);

	/* missing tensor and wrong shape through model_load */
	snprintf(path, sizeof path, "%s/model.safetensors", sub);
	unlink(path);
	struct st_entry one = { .name = "model.embed_tokens.weight", .ndim = 2, .shape = { 20, 8 }, .data = m.w.embed };
	st_write_file(path, &one, 1, ST_F32, &e);
	ok(model_load(&m2, sub, &e) < 0 && strstr(e.msg, "missing tensor model.layers.0.self_attn.q_proj.weight"),
	   "missing tensor named: %s", e.msg);
	unlink(path);
	one.shape[0] = 10;
	st_write_file(path, &one, 1, ST_F32, &e);
	ok(model_load(&m2, sub, &e) < 0 && strstr(e.msg, "model.embed_tokens.weight") && strstr(e.msg, "[10, 8]") &&
	   strstr(e.msg, "[20, 8]"), "shape disagreeing with config.json: %s", e.msg);
	model_free(&m);

	/* F16, end to end: a hand-written header and known bit patterns */
	snprintf(path, sizeof path, "%s/f16.safetensors", dir);
	{
		const char *h = "{\"h\":{\"dtype\":\"F16\",\"shape\":[2,3],\"data_offsets\":[0,12]}}";
		/* 1, -2, 0.5, 65504 (largest), 2^-14 (smallest normal), 2^-24 (smallest subnormal) */
		const uint16_t bits[6] = { 0x3c00, 0xc000, 0x3800, 0x7bff, 0x0400, 0x0001 };
		const float want[6] = { 1, -2, 0.5f, 65504, 6.103515625e-05f, 5.9604644775390625e-08f };
		struct buf fb = { 0 };
		buf_put_u64(&fb, strlen(h));
		buf_append(&fb, h, strlen(h));
		for (int i = 0; i < 6; i++)
			buf_put_u16(&fb, bits[i]);
		write_bytes(path, fb.data, fb.len);
		buf_free(&fb);
		ok(st_open(&st, path, &e) == 0 && st_find(&st, "h")->dtype == ST_F16 && st_find(&st, "h")->nbytes == 12,
		   "an F16 file opens: tensor h, F16, 12 bytes");
		ok(st_read_f32(&st, "h", s23, 2, out, &e) == 0 && memcmp(out, want, sizeof want) == 0,
		   "F16 values exact: normals, the largest, the smallest normal and subnormal");
		ok(st_read_f32(&st, "h", s32, 2, out, &e) < 0 && strstr(e.msg, "[2, 3]"), "F16 shape checked: %s", e.msg);
		st_close(&st);
	}
	f16_model();

	/* broken files */
	snprintf(path, sizeof path, "%s/bad.safetensors", dir);
	write_bytes(path, "\x10\0\0", 3);
	ok(st_open(&st, path, &e) < 0 && strstr(e.msg, "too short"), "3-byte file: %s", e.msg);
	write_bytes(path, "\xff\xff\xff\xff\0\0\0\0{}", 10);
	ok(st_open(&st, path, &e) < 0 && strstr(e.msg, "out of range"), "header length beyond the file: %s", e.msg);
	write_raw(path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8);
	ok(st_open(&st, path, &e) < 0 && strstr(e.msg, "tensor w") && strstr(e.msg, "truncated"),
	   "truncated data: %s", e.msg);
	write_raw(path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,12]}}", 16);
	ok(st_open(&st, path, &e) < 0 && strstr(e.msg, "tensor w") && strstr(e.msg, "need 16"),
	   "size disagreeing with shape: %s", e.msg);
	write_raw(path, "{\"w\":{\"dtype\":\"Q4\",\"shape\":[4],\"data_offsets\":[0,4]}}", 4);
	ok(st_open(&st, path, &e) < 0 && strstr(e.msg, "unknown dtype Q4"), "unknown dtype: %s", e.msg);
	write_raw(path, "{\"w\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8);
	ok(st_open(&st, path, &e) == 0, "an I32 tensor opens");
	const int64_t s2[1] = { 2 };
	ok(st_read_f32(&st, "w", s2, 1, out, &e) < 0 && strstr(e.msg, "dtype I32"), "but is no float weight: %s", e.msg);
	st_close(&st);
	write_raw(path, "{\"__metadata__\":{\"format\":\"pt\"},\"e\":{\"dtype\":\"BF16\",\"shape\":[0],\"data_offsets\":[0,0]}}   ", 0);
	ok(st_open(&st, path, &e) == 0 && st.ntensors == 1 && st.tensors[0].nbytes == 0,
	   "an empty tensor and space padding are legal");
	st_close(&st);
	/* offsets that lie: the data must be the tensors' bytes, each once, in
	 * some order, as the reference reader demands (else weights load wrong) */
	write_raw(path, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
	          "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12);
	ok(st_open(&st, path, &e) < 0 && strstr(e.msg, "bad.safetensors: tensor b") && strstr(e.msg, "overlap"),
	   "two tensors sharing bytes: %s", e.msg);
	write_raw(path, "{\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]},"
	          "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 12);
	ok(st_open(&st, path, &e) < 0 && strstr(e.msg, "tensor b") && strstr(e.msg, "[4, 8)"),
	   "bytes no tensor holds between two: %s", e.msg);
	write_raw(path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 8);
	ok(st_open(&st, path, &e) < 0 && strstr(e.msg, "bad.safetensors") && strstr(e.msg, "4 bytes after"),
	   "bytes after the last tensor: %s", e.msg);
	write_raw(path, "{\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]},"
	          "\"z\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]},"
	          "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 8);
	ok(st_open(&st, path, &e) == 0 && st.ntensors == 3, "tensors in any order, an empty one among them");
	st_close(&st);
	write_raw(path, "{\"w\":", 0);
	ok(st_open(&st, path, &e) < 0 && strstr(e.msg, "bad.safetensors: header") && strstr(e.msg, "not valid JSON"),
	   "malformed header: %s", e.msg);
	/* the reference reader's rules for the header text: what it refuses,
	 * a checkpoint made elsewhere would not load there either */
#define W4 "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}"
	static const struct { const char *header, *says, *what; } refused[] = {
		{ " {" W4 "}", "header does not start with '{'", "a header opening with a blank" },
		{ "{" W4 "} x", "header: not valid JSON (text after the value, near byte 56)",
		  "text after the header's object" },
		{ "{" W4 ",\"w\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]}}",
		  "header: the key \"w\" appears twice in one object", "a tensor named twice" },
		{ "{\"w\xff\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", "header is not UTF-8 (byte 4)",
		  "a name that is not UTF-8" },
		{ "{\"__metadata__\":{\"format\":\"pt\",\"epochs\":3}," W4 "}",
		  "__metadata__: the value of \"epochs\" is not a string", "metadata that is not text" },
		{ "{\"__metadata__\":[\"pt\"]," W4 "}", "__metadata__ is not an object of strings",
		  "metadata that is no object" },
		/* transformers' rules for the format: its names, or refused there too */
		{ "{\"__metadata__\":{\"format\":\"tf\"}," W4 "}",
		  "__metadata__: format \"tf\": weights saved by TensorFlow, whose tensor names are not PyTorch's",
		  "TensorFlow's weights" },
		{ "{\"__metadata__\":{\"format\":\"flax\"}," W4 "}", "__metadata__: format \"flax\": weights saved by Flax",
		  "Flax's weights" },
		{ "{\"__metadata__\":{\"format\":\"np\"}," W4 "}",
		  "__metadata__: format \"np\" is none of pt, mlx, tf and flax, which transformers loads",
		  "a format transformers refuses" },
	};
	for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
		char want[256];
		snprintf(want, sizeof want, "bad.safetensors: %s", refused[i].says);
		write_raw(path, refused[i].header, 4);
		ok(st_open(&st, path, &e) < 0 && strstr(e.msg, want), "%s: %s", refused[i].what, e.msg);
	}
	write_raw(path, "{\"__metadata__\":null," W4 "}\n\t ", 4);
	ok(st_open(&st, path, &e) == 0 && st.ntensors == 1, "null metadata and blanks after the object are legal");
	st_close(&st);
	write_raw(path, "{\"__metadata__\":{\"format\":\"mlx\"}," W4 "}", 4);
	ok(st_open(&st, path, &e) == 0 && st.ntensors == 1, "MLX's format, PyTorch's names: loads");
	st_close(&st);
	write_raw(path, "{\"__metadata__\":{\"source\":\"x\"}," W4 "}", 4);
	ok(st_open(&st, path, &e) == 0 && st.ntensors == 1, "metadata without a format: loads");
	st_close(&st);

	rmrf(dir);
	return tap_done();
}
