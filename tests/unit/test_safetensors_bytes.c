/*
 * test_safetensors_bytes: safetensors files against the format, byte for
 * byte, not through a round trip of this writer and this reader: the exact
 * bytes written (8-byte length, header padded with spaces to 8, offsets,
 * little-endian data), shards and their index text, BF16 rounding and F16
 * decoding by bits, every tensor read from its own offset, and each header
 * check refusing with the exact message that names the file and tensor.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "model/safetensors.h"
#include "tap.h"

static char dir[256];

static void write_bytes(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	fwrite(p, 1, n, f);
	fclose(f);
}

/* The whole file at path (malloc'd), its length in *n; NULL when unreadable. */
static unsigned char *read_all(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	struct buf b = { 0 };
	unsigned char chunk[4096];
	size_t k;
	while ((k = fread(chunk, 1, sizeof chunk, f)) > 0)
		buf_append(&b, chunk, k);
	fclose(f);
	*n = b.len;
	return b.data;
}

/* [u64 len][header][data_len bytes: 0, 1, 2, ...] at dir/name. */
static void write_raw(const char *name, const char *header, size_t data_len)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	struct buf b = { 0 };
	buf_put_u64(&b, strlen(header));
	buf_append(&b, header, strlen(header));
	for (size_t i = 0; i < data_len; i++)
		buf_put_u8(&b, (unsigned char)i);
	write_bytes(path, b.data, b.len);
	buf_free(&b);
}

/* Does the file at dir/name hold exactly want[0..n)? Says where it differs. */
static int same_bytes(const char *name, const void *want, size_t n)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	size_t got_n = 0;
	unsigned char *got = read_all(path, &got_n);
	size_t i = 0;
	while (got && i < n && i < got_n && got[i] == ((const unsigned char *)want)[i])
		i++;
	int same = got && got_n == n && i == n;
	if (!same)
		diag("%s: %zu bytes, want %zu; first difference at byte %zu", name, got_n, n, i);
	free(got);
	return same;
}

/* ok() on two strings being equal, showing both when not. */
static void same_str(const char *got, const char *want, const char *what)
{
	if (!ok(strcmp(got, want) == 0, "%s", what))
		diag("got  %s\n# want %s", got, want);
}

/* How many descriptors this process has open. */
static int open_fds(void)
{
	int n = 0;
	for (const char *s = dir_names("/proc/self/fd"); *s; s++)
		n += *s == ' ';
	return n;
}

static void expect(struct buf *b, const void *p, size_t n) { buf_append(b, p, n); }

/* F32 and BF16 files as the format says, a scalar and a 2x1 tensor */
static void written_bytes(void)
{
	struct err e = { 0 };
	char path[512];
	const float a[2] = { 1.0f, -2.5f }, s[1] = { 1.01171875f };   /* s: a tie in BF16, rounds up to even */
	struct st_entry ents[2] = {
		{ .name = "a.w", .ndim = 2, .shape = { 2, 1 }, .data = a },
		{ .name = "b", .ndim = 0, .data = s },
	};
	snprintf(path, sizeof path, "%s/f32.safetensors", dir);
	ok(st_write_file(path, ents, 2, ST_F32, &e) == 0, "write an F32 file");
	static const char h32[] =
		"{\"__metadata__\":{\"format\":\"pt\"},\"a.w\":{\"dtype\":\"F32\",\"shape\":[2,1],\"data_offsets\":[0,8]},"
		"\"b\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[8,12]}}  ";   /* 142 bytes + 2 spaces */
	struct buf want = { 0 };
	static const unsigned char len32[8] = { 144, 0, 0, 0, 0, 0, 0, 0 };
	static const unsigned char d32[12] = { 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x20, 0xc0, 0x00, 0x80, 0x81, 0x3f };
	expect(&want, len32, 8), expect(&want, h32, 144), expect(&want, d32, 12);
	ok(same_bytes("f32.safetensors", want.data, want.len),
	   "F32 file: length 144 little-endian, the header padded with 2 spaces, the floats little-endian");

	snprintf(path, sizeof path, "%s/bf16.safetensors", dir);
	ok(st_write_file(path, ents, 2, ST_BF16, &e) == 0, "write a BF16 file");
	static const char h16[] =
		"{\"__metadata__\":{\"format\":\"pt\"},\"a.w\":{\"dtype\":\"BF16\",\"shape\":[2,1],\"data_offsets\":[0,4]},"
		"\"b\":{\"dtype\":\"BF16\",\"shape\":[],\"data_offsets\":[4,6]}} ";   /* 143 bytes + 1 space */
	static const unsigned char len16[8] = { 144, 0, 0, 0, 0, 0, 0, 0 };
	static const unsigned char d16[6] = { 0x80, 0x3f, 0x20, 0xc0, 0x82, 0x3f };
	want.len = 0;
	expect(&want, len16, 8), expect(&want, h16, 144), expect(&want, d16, 6);
	ok(same_bytes("bf16.safetensors", want.data, want.len),
	   "BF16 file: offsets in 2-byte units, 1 space of padding, the tie rounded to even");
	buf_free(&want);

	ok(st_write_file(path, ents, 2, ST_F32, &e) < 0 && strstr(e.msg, "bf16.safetensors"),
	   "an existing file is not overwritten: %s", e.msg);
	snprintf(path, sizeof path, "%s/f16.safetensors", dir);
	ok(st_write_file(path, ents, 2, ST_F16, &e) < 0 && strstr(e.msg, "f16.safetensors: can only write F32 or BF16") &&
	   access(path, F_OK) != 0, "F16 is not written: %s", e.msg);
	static const char *const bad[] = { "a\"b", "a\\b", "a\nb", "" };
	for (int i = 0; i < 4; i++) {
		struct st_entry one = { .name = bad[i], .ndim = 0, .data = s };
		snprintf(path, sizeof path, "%s/name%d.safetensors", dir, i);
		ok(st_write_file(path, &one, 1, ST_F32, &e) < 0 && strstr(e.msg, "is empty or holds a quote, backslash") &&
		   access(path, F_OK) != 0, "a tensor name the header would need escaped is refused, nothing written: %s",
		   e.msg);
	}
}

/* BF16 in more than one staging buffer: every value where it belongs */
static void long_bf16(void)
{
	struct err e = { 0 };
	enum { N = 2 * 8192 + 5 };
	float *v = malloc(N * sizeof *v);
	for (int i = 0; i < N; i++)
		v[i] = (float)(i % 251) - 125;   /* integers BF16 holds exactly */
	struct st_entry ent = { .name = "long", .ndim = 1, .shape = { N }, .data = v };
	char path[512];
	snprintf(path, sizeof path, "%s/long.safetensors", dir);
	ok(st_write_file(path, &ent, 1, ST_BF16, &e) == 0, "write %d BF16 values", N);
	size_t n = 0;
	unsigned char *p = read_all(path, &n);
	size_t hl = p && n >= 8 ? p[0] | (size_t)p[1] << 8 : 0;
	int good = p && n == 8 + hl + 2 * (size_t)N;
	for (int i = 0; good && i < N; i++) {
		uint32_t u;
		memcpy(&u, &v[i], 4);
		good = p[8 + hl + 2 * i] == (unsigned char)(u >> 16) && p[8 + hl + 2 * i + 1] == (unsigned char)(u >> 24);
		if (!good)
			diag("value %d differs", i);
	}
	ok(good, "each of %d values is the high half of its float, in order", N);
	free(p);
	free(v);
}

static void rounding(void)
{
	static const struct { uint32_t f32; uint16_t bf16; const char *what; } cases[] = {
		{ 0x3f808000u, 0x3f80, "a tie to an even below rounds down" },
		{ 0x3f818000u, 0x3f82, "a tie to an even above rounds up" },
		{ 0x3f807fffu, 0x3f80, "just below a tie rounds down" },
		{ 0x3f808001u, 0x3f81, "just above a tie rounds up" },
		{ 0xbf808000u, 0xbf80, "a negative tie rounds to even, toward zero" },
		{ 0xbf818000u, 0xbf82, "a negative tie rounds to even, away from zero" },
		{ 0x3fff8000u, 0x4000, "a tie that carries into the exponent" },
		{ 0x7fc00000u, 0x7fc0, "the quiet NaN" },
		{ 0xffc00000u, 0xffc0, "a negative NaN keeps its sign" },
		{ 0x7f800001u, 0x7fc0, "a NaN with only low payload becomes the quiet NaN" },
		{ 0xff800000u, 0xff80, "-infinity" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		float f;
		memcpy(&f, &cases[i].f32, 4);
		is_int(st_f32_to_bf16(f), cases[i].bf16, "bf16 of 0x%08x: %s", cases[i].f32, cases[i].what);
	}
	static const struct { uint16_t f16; uint32_t f32; const char *what; } f16[] = {
		{ 0x8001, 0xb3800000u, "the least negative subnormal" },
		{ 0x03ff, 0x387fc000u, "the largest subnormal" },
		{ 0x8000, 0x80000000u, "-0" },
		{ 0xfc00, 0xff800000u, "-infinity" },
		{ 0x7e00, 0x7fc00000u, "a quiet NaN, payload kept" },
		{ 0x7c01, 0x7f802000u, "a signalling NaN, payload kept" },
		{ 0xfbff, 0xc77fe000u, "the most negative normal" },
		{ 0x0400, 0x38800000u, "the least normal" },
	};
	for (size_t i = 0; i < sizeof f16 / sizeof *f16; i++) {
		float f = st_f16_to_f32(f16[i].f16);
		uint32_t u;
		memcpy(&u, &f, 4);
		is_int(u, f16[i].f32, "f16 0x%04x: %s", f16[i].f16, f16[i].what);
	}
	is_int(st_bf16_to_f32(0x3f81) == 1.0078125f, 1, "bf16 0x3f81 keeps its low bits: 1.0078125");
}

/* three dtypes at nonzero offsets: each tensor read from its own bytes */
static void offsets(void)
{
	struct err e = { 0 };
	struct st_model st;
	/* data: 4 bytes of padding owned by "skip" (U8), then bf16 1.5, f16 -2, f32 0.25 */
	const char *h = "{\"f\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]},"
	                "\"skip\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
	                "\"h\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[6,8]},"
	                "\"bf\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":[4,6]}}";
	struct buf b = { 0 };
	buf_put_u64(&b, strlen(h));
	buf_append(&b, h, strlen(h));
	static const unsigned char data[12] = { 9, 9, 9, 9, 0xc0, 0x3f, 0x00, 0xc0, 0x00, 0x00, 0x80, 0x3e };
	buf_append(&b, data, 12);
	ok(st_open_mem(&st, b.data, b.len, "mem", &e) == 0 && st.ntensors == 4, "four tensors out of order open");
	const int64_t s1[1] = { 1 }, s11[2] = { 1, 1 };
	float x = 0;
	ok(st_read_f32(&st, "bf", s1, 1, &x, &e) == 0 && x == 1.5f, "BF16 at offset 4: %g", x);
	ok(st_read_f32(&st, "h", s1, 1, &x, &e) == 0 && x == -2.0f, "F16 at offset 6: %g", x);
	ok(st_read_f32(&st, "f", s1, 1, &x, &e) == 0 && x == 0.25f, "F32 at offset 8: %g", x);
	ok(st_read_f32(&st, "f", s11, 2, &x, &e) < 0 && strcmp(e.msg, "mem: tensor f: shape [1], but the config needs [1, 1]") == 0,
	   "a shape of other rank: %s", e.msg);
	ok(st_read_f32(&st, "skip", (const int64_t[]){ 4 }, 1, &x, &e) < 0 &&
	   strcmp(e.msg, "mem: tensor skip: dtype U8, expected F32, F16 or BF16") == 0, "U8 is no weight: %s", e.msg);
	ok(st_read_f32(&st, "g", s1, 1, &x, &e) < 0 && strcmp(e.msg, "mem: missing tensor g") == 0,
	   "a missing tensor names the file: %s", e.msg);
	const int64_t wide[8] = { 1000000000000000, 1000000000000000, 1000000000000000, 1000000000000000,
	                          1000000000000000, 1000000000000000, 1000000000000000, 1000000000000000 };
	ok(st_read_f32(&st, "f", wide, 8, &x, &e) < 0 &&
	   strstr(e.msg, "mem: tensor f: shape [1], but the config needs [1000000000000000, 1000000000000000, "),
	   "a shape too long to print whole is cut: %s", e.msg);
	st_close(&st);
	buf_free(&b);
}

/* every dtype's name and element size */
static void dtypes(void)
{
	static const struct { const char *name; enum st_dtype d; int size; } all[] = {
		{ "F32", ST_F32, 4 }, { "F16", ST_F16, 2 }, { "BF16", ST_BF16, 2 }, { "F64", ST_F64, 8 },
		{ "I64", ST_I64, 8 }, { "I32", ST_I32, 4 }, { "I16", ST_I16, 2 }, { "I8", ST_I8, 1 },
		{ "U8", ST_U8, 1 }, { "BOOL", ST_BOOL, 1 },
	};
	for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
		char h[200];
		snprintf(h, sizeof h, "{\"t\":{\"dtype\":\"%s\",\"shape\":[3],\"data_offsets\":[0,%d]}}", all[i].name,
		         3 * all[i].size);
		write_raw("dt.safetensors", h, 3 * (size_t)all[i].size);
		char path[512];
		snprintf(path, sizeof path, "%s/dt.safetensors", dir);
		struct st_model st;
		struct err e = { 0 };
		int r = st_open(&st, path, &e);
		ok(r == 0 && st.tensors[0].dtype == all[i].d && st.tensors[0].nbytes == 3 * (size_t)all[i].size &&
		   st_dtype_size(all[i].d) == (size_t)all[i].size, "%s: %d bytes each %s", all[i].name, all[i].size,
		   r < 0 ? e.msg : "");
		if (r == 0)
			st_close(&st);
	}
}

/* a header st_open must refuse, and the whole message it must give */
static void refused(const char *header, size_t data_len, const char *says, const char *what)
{
	write_raw("bad.safetensors", header, data_len);
	char path[512], want[512];
	snprintf(path, sizeof path, "%s/bad.safetensors", dir);
	snprintf(want, sizeof want, "%s: %s", path, says);
	struct st_model st;
	struct err e = { 0 };
	int r = st_open(&st, path, &e);
	ok(r < 0 && strcmp(e.msg, want) == 0, "%s: %s", what, r < 0 ? e.msg : "opened");
	if (r < 0 && strcmp(e.msg, want) != 0)
		diag("want %s", want);
	if (r == 0)
		st_close(&st);
}

static void header_checks(void)
{
#define T(body) "{\"w\":{" body "}}"
	refused(T("\"shape\":[1],\"data_offsets\":[0,4]"), 4, "tensor w: header entry needs dtype, shape and data_offsets",
	        "no dtype");
	refused(T("\"dtype\":\"F32\",\"data_offsets\":[0,4]"), 4,
	        "tensor w: header entry needs dtype, shape and data_offsets", "no shape");
	refused(T("\"dtype\":\"F32\",\"shape\":[1]"), 4, "tensor w: header entry needs dtype, shape and data_offsets",
	        "no data_offsets");
	refused(T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,4]"), 4,
	        "tensor w: header entry needs dtype, shape and data_offsets", "three data_offsets");
	refused(T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4]"), 4,
	        "tensor w: header entry needs dtype, shape and data_offsets", "one data_offset");
	refused(T("\"dtype\":32,\"shape\":[1],\"data_offsets\":[0,4]"), 4,
	        "tensor w: header entry needs dtype, shape and data_offsets", "a dtype that is no string");
	refused(T("\"dtype\":\"F32\",\"shape\":1,\"data_offsets\":[0,4]"), 4,
	        "tensor w: header entry needs dtype, shape and data_offsets", "a shape that is no array");
	refused("{\"w\":[\"F32\"]}", 0, "tensor w: header entry needs dtype, shape and data_offsets",
	        "an entry that is no object");
	refused(T("\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]"), 4, "tensor w: unknown dtype f32",
	        "dtype names are upper case");
	refused(T("\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]"), 1,
	        "tensor w: 9 dimensions, at most 8 supported", "nine dimensions");
	refused(T("\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]"), 4, "tensor w: bad shape", "a negative dimension");
	refused(T("\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]"), 4, "tensor w: bad shape", "a fractional dimension");
	refused(T("\"dtype\":\"F32\",\"shape\":[\"1\"],\"data_offsets\":[0,4]"), 4, "tensor w: bad shape", "a dimension in quotes");
	refused(T("\"dtype\":\"F32\",\"shape\":[1e16],\"data_offsets\":[0,4]"), 4, "tensor w: bad shape", "a dimension over 9e15");
	refused(T("\"dtype\":\"F32\",\"shape\":[4000000000,4000000000],\"data_offsets\":[0,4]"), 4,
	        "tensor w: shape too large", "a shape whose byte count overflows");
	refused(T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]"), 4, "tensor w: bad data_offsets",
	        "a negative offset");
	refused(T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]"), 4, "tensor w: bad data_offsets",
	        "an end before the start");
	refused(T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0.5,4.5]"), 5, "tensor w: bad data_offsets",
	        "fractional offsets");
	refused(T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4.5]"), 5, "tensor w: bad data_offsets",
	        "a fractional end");
	refused(T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[\"0\",4]"), 4, "tensor w: bad data_offsets",
	        "a start in quotes");
	refused(T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,\"4\"]"), 4, "tensor w: bad data_offsets",
	        "an end in quotes");
	refused(T("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]"), 7,
	        "tensor w: data_offsets [0, 8) beyond the 7 data bytes (truncated file?)", "a file one byte short");
	refused(T("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]"), 4,
	        "tensor w: 4 bytes, but shape and dtype F32 need 8", "too few bytes for the shape");
	refused(T("\"dtype\":\"BF16\",\"shape\":[2,3],\"data_offsets\":[0,16]"), 16,
	        "tensor w: 16 bytes, but shape and dtype BF16 need 12", "too many bytes for the shape");
	refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
	        "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[1,3]}}", 3,
	        "tensor b: data_offsets [1, 3) overlap another tensor's", "an overlap of one byte");
	refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
	        "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[3,5]}}", 5,
	        "tensor b: data_offsets [3, 5) leave bytes [2, 3) that no tensor holds", "a gap of one byte");
	refused("{\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[1,3]}}", 3,
	        "tensor b: data_offsets [1, 3) leave bytes [0, 1) that no tensor holds", "a first byte nobody holds");
	refused(T("\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]"), 3,
	        "1 bytes after the last tensor's data (which ends at 2)", "one byte after the data");
	refused("{}", 1, "1 bytes after the last tensor's data (which ends at 0)", "no tensors but one data byte");
#undef T
	/* empty tensors where a tensor starts, in every order: no overlap */
	static const char *parts[4] = {
		"\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}",
		"\"y\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}",
		"\"z\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[2,2]}",
		"\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]}",
	};
	char path[512];
	snprintf(path, sizeof path, "%s/ok.safetensors", dir);
	struct st_model st;
	struct err e = { 0 };
	int orders = 0, opened = 0;
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++)
			for (int k = 0; k < 4; k++) {
				int l = 6 - i - j - k;
				if (i == j || i == k || j == k || l < 0 || l > 3 || l == i || l == j || l == k)
					continue;
				char h[400];
				snprintf(h, sizeof h, "{%s,%s,%s,%s}", parts[i], parts[j], parts[k], parts[l]);
				write_raw("ok.safetensors", h, 4);
				int r = st_open(&st, path, &e);
				orders++, opened += r == 0;
				if (r == 0)
					st_close(&st);
				else
					diag("order %d%d%d%d: %s", i, j, k, l, e.msg);
			}
	ok(orders == 24 && opened == 24, "two empty tensors where tensors start: %d of %d orders open", opened, orders);
	unlink(path);
	/* the most dimensions, and a header that fills the file exactly */
	write_raw("ok.safetensors", "{\"w\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,2],\"data_offsets\":[0,2]}}", 2);
	ok(st_open(&st, path, &e) == 0 && st.tensors[0].ndim == 8 && st.tensors[0].shape[7] == 2,
	   "eight dimensions open: %s", e.msg);
	st_close(&st);
	unlink(path);
	write_raw("ok.safetensors", "{}", 0);
	ok(st_open(&st, path, &e) == 0 && st.ntensors == 0, "a header to the file's last byte and no tensors: %s", e.msg);
	st_close(&st);
}

/* the 8-byte length: every byte of it counts, and it must fit the file */
static void lengths(void)
{
	struct err e = { 0 };
	struct st_model st;
	unsigned char b[16] = { 2, 0, 0, 0, 0, 0, 0, 0, '{', '}' };
	ok(st_open_mem(&st, b, 10, "m", &e) == 0 && st.ntensors == 0, "length 2, \"{}\", 10 bytes: opens");
	st_close(&st);
	b[0] = 3;
	ok(st_open_mem(&st, b, 10, "m", &e) < 0 && strcmp(e.msg, "m: header length 3 out of range for a 10-byte file") == 0,
	   "a length one past the file: %s", e.msg);
	b[0] = 2, b[7] = 1;
	ok(st_open_mem(&st, b, 10, "m", &e) < 0 &&
	   strcmp(e.msg, "m: header length 72057594037927938 out of range for a 10-byte file") == 0,
	   "the length's last byte counts: %s", e.msg);
	b[7] = 0, b[3] = 1;
	ok(st_open_mem(&st, b, 10, "m", &e) < 0 && strstr(e.msg, "header length 16777218 out"), "its fourth too: %s", e.msg);
	b[3] = 0, b[0] = 0;
	ok(st_open_mem(&st, b, 10, "m", &e) < 0 && strcmp(e.msg, "m: header does not start with '{'") == 0,
	   "length 0: %s", e.msg);
	ok(st_open_mem(&st, b, 7, "m", &e) < 0 && strcmp(e.msg, "m: 7 bytes, too short for a safetensors header") == 0,
	   "7 bytes in memory: %s", e.msg);
	ok(st_open_mem(&st, b, 8, "m", &e) < 0 && strcmp(e.msg, "m: header does not start with '{'") == 0,
	   "8 bytes, length 0: %s", e.msg);
	char path[512];
	snprintf(path, sizeof path, "%s/short.safetensors", dir);
	write_bytes(path, b, 7);
	char want[600];
	snprintf(want, sizeof want, "%s: 7 bytes, too short for a safetensors header", path);
	int fds = open_fds();
	ok(st_open(&st, path, &e) < 0 && strcmp(e.msg, want) == 0, "a 7-byte file: %s", e.msg);
	is_int(open_fds(), fds, "and its descriptor closed");
	static const struct st_model empty = { 0 };
	ok(memcmp(&st, &empty, sizeof st) == 0, "a failed st_open leaves the model empty");
	write_raw("short.safetensors", "{\"w\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}", 1);
	ok(st_open(&st, path, &e) < 0 && memcmp(&st, &empty, sizeof st) == 0 && open_fds() == fds,
	   "so does one failing on a mapped file's header, its mapping and descriptor gone");
	memset(&st, 0x5a, sizeof st);
	ok(st_open_mem(&st, b, 7, "m", &e) < 0 && memcmp(&st, &empty, sizeof st) == 0,
	   "a failed st_open_mem leaves the model empty");
	b[0] = 2, b[8] = '{', b[9] = '}';
	write_bytes(path, b, 10);
	ok(st_open(&st, path, &e) == 0, "a file of no tensors opens");
	st_close(&st);
	is_int(open_fds(), fds, "and st_open keeps no descriptor beside its mapping");
	ok(memcmp(&st, &empty, sizeof st) == 0, "st_close leaves the model empty");
	b[0] = 0;
	write_bytes(path, b, 8);
	snprintf(want, sizeof want, "%s: header does not start with '{'", path);
	ok(st_open(&st, path, &e) < 0 && strcmp(e.msg, want) == 0, "an 8-byte file, length 0: %s", e.msg);
	b[0] = 5;
	memcpy(b + 8, "{} \xc3\x28", 5);
	ok(st_open_mem(&st, b, 13, "m", &e) < 0 && strcmp(e.msg, "m: header is not UTF-8 (byte 4)") == 0,
	   "a bad UTF-8 sequence at the header's 4th byte: %s", e.msg);
}

/* shards: names, which tensors go where, the index's exact text */
static void shards(void)
{
	struct err e = { 0 };
	float v[16] = { 0 };
	for (int i = 0; i < 16; i++)
		v[i] = (float)i;
	struct st_entry ents[3] = {
		{ .name = "a", .ndim = 1, .shape = { 4 }, .data = v },
		{ .name = "b", .ndim = 1, .shape = { 4 }, .data = v + 4 },
		{ .name = "c", .ndim = 1, .shape = { 4 }, .data = v + 8 },
	};
	char sub[512], p[600];
	snprintf(sub, sizeof sub, "%s/s32", dir);
	mkdir(sub, 0755);
	ok(st_write_dir(sub, ents, 3, ST_F32, 32, &e) == 0, "48 bytes in shards of 32");
	same_str(dir_names(sub), "model-00001-of-00002.safetensors model-00002-of-00002.safetensors model.safetensors.index.json",
	       "two shards (a and b fill the first exactly) and an index");
	snprintf(p, sizeof p, "%s/model.safetensors.index.json", sub);
	same_str(file_text(p),
	       "{\n  \"metadata\": {\n    \"total_size\": 48\n  },\n  \"weight_map\": {\n"
	       "    \"a\": \"model-00001-of-00002.safetensors\",\n    \"b\": \"model-00001-of-00002.safetensors\",\n"
	       "    \"c\": \"model-00002-of-00002.safetensors\"\n  }\n}\n", "the index, exactly");
	struct st_model st;
	ok(st_open(&st, sub, &e) == 0 && st.nfiles == 2 && st.ntensors == 3, "opens through the index: 2 files, 3 tensors");
	float x[4];
	const int64_t s4[1] = { 4 };
	ok(st_read_f32(&st, "c", s4, 1, x, &e) == 0 && x[0] == 8 && x[3] == 11, "c from the second shard");
	ok(st_read_f32(&st, "d", s4, 1, x, &e) < 0 && strcmp(e.msg, "checkpoint: missing tensor d") == 0,
	   "a tensor in no shard: %s", e.msg);
	st_close(&st);

	snprintf(sub, sizeof sub, "%s/s48", dir);
	mkdir(sub, 0755);
	ok(st_write_dir(sub, ents, 3, ST_F32, 48, &e) == 0 && strcmp(dir_names(sub), "model.safetensors") == 0,
	   "48 bytes with a limit of 48: one file (%s)", dir_names(sub));

	snprintf(sub, sizeof sub, "%s/bf", dir);
	mkdir(sub, 0755);
	ok(st_write_dir(sub, ents, 3, ST_BF16, 16, &e) == 0, "24 BF16 bytes in shards of 16");
	snprintf(p, sizeof p, "%s/model.safetensors.index.json", sub);
	ok(strstr(file_text(p), "\"total_size\": 24\n") && strstr(file_text(p), "\"b\": \"model-00001-of-00002"),
	   "BF16 sizes: total 24, a and b in the first");

	/* three tensors fill a shard, the fourth starts the next */
	struct st_entry four[4] = { ents[0], ents[1], ents[2], { .name = "d", .ndim = 1, .shape = { 4 }, .data = v + 12 } };
	snprintf(sub, sizeof sub, "%s/s48of64", dir);
	mkdir(sub, 0755);
	ok(st_write_dir(sub, four, 4, ST_F32, 48, &e) == 0, "64 bytes in shards of 48");
	snprintf(p, sizeof p, "%s/model.safetensors.index.json", sub);
	ok(strstr(file_text(p), "\"c\": \"model-00001-of-00002") && strstr(file_text(p), "\"d\": \"model-00002-of-00002"),
	   "a, b and c in the first shard, d in the second");

	snprintf(sub, sizeof sub, "%s/s32of64", dir);
	mkdir(sub, 0755);
	ok(st_write_dir(sub, four, 4, ST_F32, 32, &e) == 0, "64 bytes in shards of 32");
	same_str(dir_names(sub), "model-00001-of-00002.safetensors model-00002-of-00002.safetensors model.safetensors.index.json",
	         "two shards of two tensors each (the second shard counts from 0)");

	/* an empty tensor first, then one larger than a shard: one shard */
	struct st_entry big[2] = {
		{ .name = "e", .ndim = 1, .shape = { 0 }, .data = v },
		{ .name = "big", .ndim = 1, .shape = { 16 }, .data = v },
	};
	snprintf(sub, sizeof sub, "%s/big", dir);
	mkdir(sub, 0755);
	ok(st_write_dir(sub, big, 2, ST_F32, 32, &e) == 0, "an empty tensor and one of 64 bytes, shards of 32");
	same_str(dir_names(sub), "model-00001-of-00001.safetensors model.safetensors.index.json",
	       "the empty tensor shares the big one's shard");
}

/* an index that lies, or names what is not there */
static void bad_index(void)
{
	struct err e = { 0 };
	float v[4] = { 1, 2, 3, 4 };
	struct st_entry a = { .name = "a", .ndim = 1, .shape = { 4 }, .data = v };
	char sub[512], p[700], want[800];
	snprintf(sub, sizeof sub, "%s/idx", dir);
	mkdir(sub, 0755);
	snprintf(p, sizeof p, "%s/one.safetensors", sub);
	st_write_file(p, &a, 1, ST_F32, &e);
	snprintf(p, sizeof p, "%s/two.safetensors", sub);
	st_write_file(p, &a, 1, ST_F32, &e);
	snprintf(p, sizeof p, "%s/model.safetensors.index.json", sub);
	static const struct { const char *index, *says, *what; } cases[] = {
		{ "{\"weight_map\":{\"a\":\"one.safetensors\",\"b\":\"two.safetensors\"}}",
		  "two.safetensors: tensor a appears twice", "a tensor in two shards" },
		{ "{\"weight_map\":{\"a\":\"one.safetensors\",\"b\":\"one.safetensors\"}}",
		  "model.safetensors.index.json: tensor b: not in one.safetensors as the index says", "a tensor in no shard" },
		{ "{\"weight_map\":{\"a\":\"../idx/one.safetensors\"}}",
		  "model.safetensors.index.json: weight_map: a: bad file name", "a file name with a slash" },
		{ "{\"weight_map\":{\"a\":1}}", "model.safetensors.index.json: weight_map: a: bad file name",
		  "a file name that is no string" },
		{ "{\"weight_map\":[\"one.safetensors\"]}", "model.safetensors.index.json: no weight_map object",
		  "a weight_map that is no object" },
		{ "{\"weight_map\":", "model.safetensors.index.json: no weight_map object", "an index that is no JSON" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		unlink(p);
		write_bytes(p, cases[i].index, strlen(cases[i].index));
		struct st_model st;
		snprintf(want, sizeof want, "%s/%s", sub, cases[i].says);
		int r = st_open(&st, sub, &e);
		ok(r < 0 && strcmp(e.msg, want) == 0, "%s: %s", cases[i].what, r < 0 ? e.msg : "opened");
		if (r == 0)
			st_close(&st);
	}
	/* an index that cannot be read is an error, not an empty checkpoint */
	unlink(p);
	mkdir(p, 0755);
	struct st_model none;
	snprintf(want, sizeof want, "%s/model.safetensors.index.json", sub);
	ok(st_open(&none, sub, &e) < 0 && strncmp(e.msg, want, strlen(want)) == 0, "an index that is a directory: %s",
	   e.msg);
	rmdir(p);
	/* one shard named by many tensors is opened once; the index wins over model.safetensors */
	struct st_entry ab[2] = { a, { .name = "b", .ndim = 1, .shape = { 4 }, .data = v } };
	snprintf(p, sizeof p, "%s/ab.safetensors", sub);
	st_write_file(p, ab, 2, ST_F32, &e);
	snprintf(p, sizeof p, "%s/model.safetensors", sub);
	st_write_file(p, &a, 1, ST_F32, &e);
	snprintf(p, sizeof p, "%s/model.safetensors.index.json", sub);
	unlink(p);
	const char *idx = "{\"weight_map\":{\"a\":\"ab.safetensors\",\"b\":\"ab.safetensors\"}}";
	write_bytes(p, idx, strlen(idx));
	struct st_model st;
	ok(st_open(&st, sub, &e) == 0 && st.nfiles == 1 && st.ntensors == 2 && strstr(st.files[0].path, "/ab.safetensors"),
	   "the index's one shard, opened once, not model.safetensors: %s", e.msg);
	st_close(&st);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/test_stbytes.XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		skip_all("cannot make a temporary directory");
	written_bytes();
	long_bf16();
	rounding();
	offsets();
	dtypes();
	header_checks();
	lengths();
	shards();
	bad_index();
	if (shell("rm -rf '%s'", dir) != 0)
		diag("could not remove %s", dir);
	return tap_done();
}
