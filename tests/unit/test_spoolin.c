/*
 * test_spoolin.c: a spool stream and tar archives of spool files (none,
 * zstd, gzip, xz, bzip2 and lz4 compression), each read through a seekable
 * file, a pipe, and a socket that hands out one byte per read(): every
 * record and member comes back exactly once, byte for byte, the members
 * that are not spool files (dot components, DONE) passed over; a tar cut at
 * any block boundary is refused; text that is no archive is named for what
 * it looks like.
 *
 * The archives' top folder is GRPZ: a zstd tar's first decompressed bytes
 * are then "GRPZ", one byte from a spool file's "GRPO".
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../tap.h"
#include "base/buf.h"
#include "data/sfile.h"
#include "data/spoolin.h"

static char dir[64];

enum via { VIA_FILE, VIA_PIPE, VIA_BYTES };
static const char *via_name[] = { "a file", "a pipe", "one byte per read" };

/* fd reading path's bytes by `via`; *child: the writer's pid, or 0. */
static int open_via(const char *path, enum via via, pid_t *child)
{
	*child = 0;
	if (via == VIA_FILE)
		return open(path, O_RDONLY);
	int fds[2];
	if (via == VIA_PIPE ? pipe(fds) : socketpair(AF_UNIX, SOCK_SEQPACKET, 0, fds))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		struct buf b = { 0 };
		struct err e = { 0 };
		if (buf_read_file(&b, path, &e) < 0)
			_exit(1);
		size_t step = via == VIA_PIPE ? b.len : 1;   /* a packet of a seqpacket socket is one read */
		for (size_t i = 0; i < b.len; i += step)
			if (write(fds[1], b.data + i, step < b.len - i ? step : b.len - i) < 0)
				_exit(1);
		_exit(0);
	}
	close(fds[1]);
	*child = pid;
	return fds[0];
}

static void close_via(int fd, pid_t child)
{
	close(fd);
	if (child > 0) {
		kill(child, SIGTERM);   /* a reader that stopped early: the writer is done with */
		waitpid(child, NULL, 0);
	}
}

/* The records of a spool stream, written again into one zstd frame: equal
 * bytes, equal records. -1 when a record does not read or write. */
static int records_rewritten(struct sfile_reader *r, struct buf *out, size_t *n, struct err *e)
{
	struct sfile_writer w;
	struct record rec = { 0 };
	int st;
	*n = 0;
	if (sfile_writer_init(&w, sfile_sink_buf, out, 1, e) < 0)
		return -1;
	while ((st = sfile_read(r, &rec, e)) > 0) {
		st = sfile_write_record(&w, &rec, e);
		record_free(&rec);
		if (st < 0)
			break;
		(*n)++;
	}
	if (st == 0)
		st = sfile_writer_finish(&w, e);
	sfile_writer_free(&w);
	return st;
}

static void test_stream(void)
{
	char path[128];
	snprintf(path, sizeof path, "%s/stream.zst", dir);
	struct buf file = { 0 }, want = { 0 };
	struct err e = { 0 };
	struct sfile_reader r;
	size_t n_want = 0;
	buf_read_file(&file, path, &e);
	ok(sfile_reader_open_mem(&r, file.data, file.len, "mem", &e) == 0 && records_rewritten(&r, &want, &n_want, &e) == 0 &&
	   n_want == 4, "the stream, read from memory: 4 records (two spool files of 2)");
	sfile_reader_close(&r);
	for (enum via via = VIA_FILE; via <= VIA_BYTES; via++) {
		pid_t child;
		int fd = open_via(path, via, &child);
		struct spoolin in;
		struct buf got = { 0 };
		size_t n = 0;
		int st = spoolin_open(&in, fd, "stream", &e), spoolin_ok = st == 0;
		ok(st == 0 && in.kind == SPOOLIN_STREAM, "stream through %s: a spool stream", via_name[via]);
		if (st == 0 && spoolin_reader(&in, &r, &e) == 0) {
			st = records_rewritten(&r, &got, &n, &e);
			sfile_reader_close(&r);
		} else
			st = -1;
		if (!ok(st == 0 && n == n_want && got.len == want.len && !memcmp(got.data, want.data, got.len),
		        "stream through %s: every record, once, as written", via_name[via]))
			diag("status %d, %zu records of %zu: %s", st, n, n_want, e.msg);
		if (spoolin_ok)
			spoolin_close(&in);
		buf_free(&got);
		close_via(fd, child);
	}
	buf_free(&file);
	buf_free(&want);
}

/* The spool files an archive holds, in tar order: path and file under dir. */
static const char *members[] = { "GRPZ/step_0/rank_0/a.zst", "GRPZ/step_0/rank_1/b.zst", "GRPZ/step_1/rank_0/c.zst" };

/* Reads every member of an archive: 1 when they are members[] exactly,
 * byte for byte; 0 when not; -1 (e set) when spoolin says an error. */
static int archive_reads(int fd, const char *name, struct err *e)
{
	struct spoolin in;
	if (spoolin_open(&in, fd, name, e) < 0)
		return -1;
	struct buf data = { 0 }, want = { 0 };
	const char *member;
	int st, k = 0, same = in.kind == SPOOLIN_ARCHIVE;
	while (same && (st = spoolin_next(&in, &data, &member, e)) > 0) {
		char path[160];
		snprintf(path, sizeof path, "%s/%s", dir, members[k < 3 ? k : 2]);
		buf_reset(&want);
		buf_read_file(&want, path, e);
		same = k < 3 && !strcmp(member, members[k]) && data.len == want.len && !memcmp(data.data, want.data, want.len);
		if (!same)
			diag("member %d: %s (%zu bytes)", k, member, data.len);
		k++;
	}
	spoolin_close(&in);
	buf_free(&data);
	buf_free(&want);
	if (same && st < 0)
		return -1;
	return same && k == 3;
}

static void test_archives(void)
{
	static const char *kinds[] = { "tar", "tar.zst", "tar.gz", "tar.xz", "tar.bz2", "tar.lz4" };
	for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
		for (enum via via = VIA_FILE; via <= VIA_BYTES; via++) {
			char path[128];
			snprintf(path, sizeof path, "%s/arc.%s", dir, kinds[i]);
			pid_t child;
			int fd = open_via(path, via, &child);
			struct err e = { 0 };
			int st = archive_reads(fd, path, &e);
			if (!ok(st == 1, "%s through %s: each spool file once, byte for byte; .done/, .tmp/ and DONE passed over",
			        kinds[i], via_name[via]))
				diag("%d: %s", st, e.msg);
			close_via(fd, child);
		}
}

/* The plain tar (no padding after its end blocks) cut at each block boundary
 * before the end blocks are whole, as it is and zstd-compressed: an error. */
static void test_truncated(void)
{
	char path[128], cut[128];
	snprintf(path, sizeof path, "%s/arc.tar", dir);
	snprintf(cut, sizeof cut, "%s/cut.tar", dir);
	struct buf tar = { 0 };
	struct err e = { 0 };
	buf_read_file(&tar, path, &e);
	char bad[512] = "";
	for (size_t at = 512; at + 1024 <= tar.len; at += 512) {
		for (int z = 0; z < 2; z++) {
			if (shell("head -c %zu '%s' %s > '%s'", at, path, z ? "| zstd -q -c" : "", cut) != 0)
				continue;
			pid_t child;
			int fd = open_via(cut, z ? VIA_PIPE : VIA_FILE, &child);
			e.msg[0] = 0;
			int st = archive_reads(fd, "cut", &e);
			close_via(fd, child);
			if (st != -1 || strncmp(e.msg, "cut", 3) != 0)
				snprintf(bad + strlen(bad), sizeof bad - strlen(bad), " %zu%s:%d", at, z ? "z" : "", st);
		}
	}
	if (!ok(*bad == 0, "cut at each of %zu blocks, plain and zstd: an error naming the input", tar.len / 512 - 2))
		diag("read as whole or without a message at:%s", bad);
	pid_t child;
	int fd = open_via(path, VIA_FILE, &child);
	ok(archive_reads(fd, "whole", &e) == 1, "and uncut it reads");
	close_via(fd, child);
	buf_free(&tar);
}

/* A member far larger than one read of its data (64 KiB): whole, from a
 * file and from a pipe. */
static void test_big_member(void)
{
	char path[128], big[128];
	snprintf(path, sizeof path, "%s/big.tar.zst", dir);
	snprintf(big, sizeof big, "%s/GRPZ/big", dir);
	shell("cd '%s' && seq 1 100000 > GRPZ/big && tar -cf - GRPZ/big | zstd -q -c > big.tar.zst", dir);
	struct buf want = { 0 };
	struct err e = { 0 };
	buf_read_file(&want, big, &e);
	for (enum via via = VIA_FILE; via <= VIA_PIPE; via++) {
		pid_t child;
		int fd = open_via(path, via, &child);
		struct spoolin in;
		struct buf data = { 0 };
		const char *member = "";
		int st = spoolin_open(&in, fd, "big", &e);
		if (st == 0) {
			st = spoolin_next(&in, &data, &member, &e);
			if (st == 1)
				st = spoolin_next(&in, &data, &member, &e) == 0 ? 1 : -1;
			spoolin_close(&in);
		}
		close_via(fd, child);
		if (!ok(st == 1 && want.len > 500000 && data.len == want.len && !memcmp(data.data, want.data, want.len),
		        "a member of %zu bytes through %s: whole", want.len, via_name[via]))
			diag("%d %s: %zu bytes", st, e.msg, data.len);
		buf_free(&data);
	}
	buf_free(&want);
}

/* Members whose path has a dot name for a component are passed over; "."
 * and ".." are no dot names, nor is a name that ends in a dot. */
static void test_dot_members(void)
{
	char path[128];
	snprintf(path, sizeof path, "%s/dots.tar", dir);
	shell("cd '%s' && for i in 1 2 3 4 5 6 7 8; do echo $i > d$i; done && tar -b 1 -cf dots.tar --transform "
	      "'s,^d1$,./GRPZ/a.zst,;s,^d2$,GRPZ/./b.zst,;s,^d3$,GRPZ/../c.zst,;s,^d4$,GRPZ/..x/d.zst,;s,^d5$,GRPZ/.y,;"
	      "s,^d6$,GRPZ/e.,;s,^d7$,GRPZ/..,;s,^d8$,GRPZ/.z/f.zst,' d1 d2 d3 d4 d5 d6 d7 d8 2> /dev/null", dir);
	int fd = open(path, O_RDONLY);
	struct err e = { 0 };
	struct spoolin in;
	struct buf data = { 0 }, names = { 0 };
	const char *member;
	int st = spoolin_open(&in, fd, "dots", &e);
	if (st == 0) {
		while ((st = spoolin_next(&in, &data, &member, &e)) > 0)
			buf_printf(&names, "%s%s", names.len ? " " : "", member);
		spoolin_close(&in);
	}
	close(fd);
	buf_put_u8(&names, 0);
	const char *want = "./GRPZ/a.zst GRPZ/./b.zst GRPZ/../c.zst GRPZ/e. GRPZ/..";
	if (!ok(st == 0 && !strcmp((const char *)names.data, want), "dot names passed over; ., .. and e. read"))
		diag("%d %s: %s", st, e.msg, (const char *)names.data);
	buf_free(&data);
	buf_free(&names);
}

/* Text that is no archive: what it looks like, whitespace before it or not. */
static void test_not_archive(void)
{
	static const struct {
		const char *text, *looks;
	} cases[] = {
		{ "\t{\"group_id\": 1}\n", "(it looks like JSON text: grpo-cat --from-json reads that, grpo-collect imports a "
		                            "server's rollouts)" },
		{ "\r\n [1]\n", "(it looks like JSON text: grpo-cat --from-json reads that, grpo-collect imports a server's "
		                "rollouts)" },
		{ "\t\n{\"step\":3}\n", "(it looks like a step's DONE manifest, JSON text: cat or jq reads that)" },
		{ "hello\n", "(it looks like text)" },
		{ "x", "(it looks like gzip-compressed text)" },   /* one byte, gzip-compressed below */
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char path[128], want[512];
		snprintf(path, sizeof path, "%s/text", dir);
		FILE *f = fopen(path, "w");
		fputs(cases[i].text, f);
		fclose(f);
		if (strlen(cases[i].text) == 1 && shell("gzip -f '%s' && mv '%s.gz' '%s'", path, path, path) != 0)
			diag("gzip failed");
		int fd = open(path, O_RDONLY);
		struct err e = { 0 };
		struct spoolin in;
		struct buf data = { 0 };
		const char *member;
		int st = spoolin_open(&in, fd, "in", &e);
		if (st == 0) {
			st = spoolin_next(&in, &data, &member, &e);
			spoolin_close(&in);
		}
		close(fd);
		buf_free(&data);
		snprintf(want, sizeof want, "in: not a spool file or an archive of them %s", cases[i].looks);
		if (!ok(st == -1 && !strcmp(e.msg, want), "text %zu: %s", i, cases[i].looks))
			diag("%d: %s", st, e.msg);
	}
}

/* at exit, a failure's bail-out too (TAP_BAIL), not in a writer child (_exit) */
static void remove_dir(void)
{
	shell("rm -rf '%s'", dir);
}

int main(void)
{
	snprintf(dir, sizeof dir, "/tmp/test_spoolin.XXXXXX");
	if (!mkdtemp(dir))
		skip_all("no temporary folder");
	atexit(remove_dir);
	const char *bin = getenv("GRPO_BIN"), *top = getenv("GRPO_TOP");
	if (!bin || !top)
		skip_all("GRPO_BIN and GRPO_TOP unset: run through tests/run.sh");
	signal(SIGPIPE, SIG_IGN);
	/* 4 groups: two files of 2 make the stream; each member holds 2, 1, 1 */
	int made = shell("cd '%s' && ex='%s/examples/gsm8k-groups.jsonl' && mkdir -p GRPZ/step_0/rank_0/.done "
	                 "GRPZ/step_0/rank_1 GRPZ/step_1/rank_0 GRPZ/.tmp && "
	                 "head -n 2 \"$ex\" | '%s/grpo-cat' --from-json -o GRPZ/step_0/rank_0/a.zst && "
	                 "sed -n 3p \"$ex\" | '%s/grpo-cat' --from-json -o GRPZ/step_0/rank_1/b.zst && "
	                 "sed -n 4p \"$ex\" | '%s/grpo-cat' --from-json -o GRPZ/step_1/rank_0/c.zst && "
	                 "cat GRPZ/step_0/rank_0/a.zst GRPZ/step_0/rank_0/a.zst > stream.zst && "
	                 "cp GRPZ/step_0/rank_1/b.zst GRPZ/step_0/rank_0/.done/a.zst && "
	                 "cp GRPZ/step_0/rank_1/b.zst GRPZ/.tmp/x.zst && echo '{\"step\":0}' > GRPZ/step_0/DONE && "
	                 "tar -b 1 -cf arc.tar GRPZ/step_0/rank_0/a.zst GRPZ/step_0/rank_0/.done GRPZ/step_0/DONE "
	                 "GRPZ/step_0/rank_1/b.zst GRPZ/.tmp GRPZ/step_1 && "
	                 "zstd -q -c arc.tar > arc.tar.zst && gzip -c arc.tar > arc.tar.gz && xz -c arc.tar > arc.tar.xz && "
	                 "bzip2 -c arc.tar > arc.tar.bz2 && lz4 -q -c arc.tar > arc.tar.lz4",
	                 dir, top, bin, bin, bin);
	if (made != 0)
		skip_all("could not make the inputs (grpo-cat, tar, zstd, gzip, xz, bzip2, lz4)");
	test_stream();
	test_archives();
	test_truncated();
	test_big_member();
	test_dot_members();
	test_not_archive();
	return tap_done();
}
