/*
 * sfile.h: reading and writing spool files (grpo-spool(5)).
 *
 * A spool file is one zstd frame, content checksum on, whose content is a
 * 12-byte header followed by records:
 *
 *   header:  "GRPO"  u16 major (1)  u16 minor (1)  u32 extra_len, extra bytes
 *   record:  u32 kind  u32 flags (0)  u64 len  payload[len]
 *   payload: fields, each  u16 tag  u8 type  u8 encoding  u32 len  data[len]
 *
 * all little-endian. Token ids are int32 and logprobs float32. A reader skips
 * fields whose tag it does not know and records whose kind it does not know,
 * so a newer minor version never breaks an older reader. Arrays of 4- or
 * 8-byte elements may be stored byte-planar (all first bytes, then all
 * second bytes, ...), which lets zstd see the near-constant high bytes of
 * token ids and logprobs as long runs.
 *
 * Every record obeys the invariants of check.h (no NaN or infinite float, logprobs at most 0, positions restarting per sequence, ...): the writer refuses a record that does not
 * and the reader rejects it (group_check, mb_check in check.h), so whatever
 * reads a spool can trust every advantage, logprob and temperature.
 *
 * Concatenated files (`cat a.zst b.zst`) read as one stream: every frame
 * starts with its own header. The reader streams, so a pipe between two
 * tools passes records as soon as the writer flushes them, and it never
 * reads outside its buffers, whatever the input.
 *
 * Messages name a record by its number in the stream, counted from 1 as
 * lines are ("x.zst: record 1: ..."), the reader's and the writer's alike.
 *
 * Writer:  sfile_writer_init(&w, sink, ctx, level) ; sfile_write_group() /
 *          sfile_write_mb() ... ; sfile_writer_finish() ; sfile_writer_free()
 * Reader:  sfile_reader_open_fd() or _mem() ; while ((r = sfile_read()) > 0)
 *          {use rec; record_free(&rec);} ; sfile_reader_close()
 */
#ifndef GRPO_SFILE_H
#define GRPO_SFILE_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "data/check.h"
#include "data/traj.h"

#define SFILE_MAJOR 1
#define SFILE_MINOR 1
#define SFILE_MAX_RECORD (1ull << 31)   /* larger records are taken as corruption */

enum record_kind { REC_NONE = 0, REC_GROUP = 1, REC_MICROBATCH = 2, REC_TRAJ = 3 };

/* One record: which member is valid depends on kind. REC_TRAJ exists only in
 * the JSON view (a lone trajectory line); spool files hold groups. */
struct record {
	enum record_kind kind;
	struct group group;
	struct microbatch mb;
	struct traj traj;
};
void record_free(struct record *rec);

/* Where a writer's compressed bytes go; returns -1 with e filled on failure. */
typedef int (*sfile_sink)(void *ctx, const void *p, size_t n, struct err *e);
int sfile_sink_fd(void *fd_as_intptr, const void *p, size_t n, struct err *e);   /* ctx: (void *)(intptr_t)fd */
int sfile_sink_buf(void *struct_buf, const void *p, size_t n, struct err *e);

struct sfile_writer {
	void *cctx;                 /* ZSTD_CCtx */
	sfile_sink sink;
	void *sink_ctx;
	struct buf rec;             /* the record being encoded */
	struct buf out;             /* compressed bytes not yet given to the sink */
	uint64_t records, file_bytes;   /* records written; compressed bytes given to the sink */
	int started;
};

int sfile_writer_init(struct sfile_writer *w, sfile_sink sink, void *ctx, int level, struct err *e);
int sfile_write_group(struct sfile_writer *w, const struct group *g, struct err *e);
int sfile_write_mb(struct sfile_writer *w, const struct microbatch *mb, struct err *e);
int sfile_write_record(struct sfile_writer *w, const struct record *rec, struct err *e);
int sfile_writer_flush(struct sfile_writer *w, struct err *e);    /* all so far decodable */
int sfile_writer_finish(struct sfile_writer *w, struct err *e);   /* ends the frame */
void sfile_writer_free(struct sfile_writer *w);

struct sfile_reader {
	const char *name;           /* for messages; not owned */
	int fd;                     /* -1 when reading from memory */
	const unsigned char *mem;   /* memory input */
	size_t mem_len, mem_pos;
	void *dctx;                 /* ZSTD_DCtx */
	unsigned char *in;          /* compressed input window */
	size_t in_len, in_pos, in_cap;
	struct buf out;             /* decompressed, from out_pos on not yet parsed */
	size_t out_pos;
	int in_frame, frame_done, header_done, eof;
	uint64_t record_no;         /* records read so far: after a read, the number of the one read */
	uint64_t bytes_in, bytes_out;
	int major, minor;
};

int sfile_reader_open_fd(struct sfile_reader *r, int fd, const char *name, struct err *e);
/* A reader of fd whose first n bytes were already read (into head): they
 * are read first, then the rest of fd. */
int sfile_reader_open_fd_after(struct sfile_reader *r, int fd, const void *head, size_t n, const char *name,
			       struct err *e);
int sfile_reader_open_mem(struct sfile_reader *r, const void *p, size_t n, const char *name, struct err *e);
/* 1: a record in *rec (free it with record_free); 0: end of input; -1: error. */
int sfile_read(struct sfile_reader *r, struct record *rec, struct err *e);
void sfile_reader_close(struct sfile_reader *r);   /* does not close fd */
/*
 * Whether a reader stopped between records (grpo-cat --head) has read its
 * input to the end, so that bytes_in are those of the records read: the
 * decoder reads a block ahead, and a block's bytes cannot be told to a record.
 */
int sfile_reader_drained(const struct sfile_reader *r);
/*
 * Whether sfile_read may be called without waiting: r's buffers hold the
 * next record whole, or compressed bytes not yet decompressed (a producer
 * that flushes whole records never leaves those short of one), or its
 * descriptor has bytes waiting or its end (poll(2); a regular file always
 * has), or it reads memory. A reader of a pipe that must not block on a
 * producer still writing asks first.
 */
int sfile_reader_ready(const struct sfile_reader *r);

#endif
