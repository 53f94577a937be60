/*
 * test_err: messages that do not fit in struct err keep their beginning and
 * their end, where what went wrong is said, cut between UTF-8 characters;
 * short ones are as formatted, and errno survives err_sys, which keeps it
 * as errnum until err_set.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "tap.h"
#include "base/err.h"

/* 1 when s is valid UTF-8 (enough for the two- and three-byte characters used here) */
static int utf8(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		int k = *p < 0x80 ? 0 : (*p & 0xe0) == 0xc0 ? 1 : (*p & 0xf0) == 0xe0 ? 2 : -1;
		if (k < 0)
			return 0;
		for (p++; k > 0; k--, p++)
			if ((*p & 0xc0) != 0x80)
				return 0;
	}
	return 1;
}

static int ends_with(const char *s, const char *end)
{
	size_t n = strlen(s), m = strlen(end);
	return n >= m && strcmp(s + n - m, end) == 0;
}

int main(void)
{
	struct err e = { 0 };
	char path[PATH_MAX];
	memset(path, 'p', sizeof path - 1);
	path[0] = '/', path[sizeof path - 1] = '\0';

	ok(err_set(&e, "%s:%d: expected %s", "a.jsonl", 3, "a number") == -1 &&
	   strcmp(e.msg, "a.jsonl:3: expected a number") == 0, "a short message as formatted: %s", e.msg);
	ok(err_set(NULL, "x") == -1, "no err: -1 all the same");

	err_set(&e, "%s: path too long", path);
	ok(strlen(e.msg) == sizeof e.msg - 1 && strncmp(e.msg, "/ppp", 4) == 0 &&
	   ends_with(e.msg, "ppp: path too long") && strstr(e.msg, "p...p"),
	   "a path of %zu bytes: its beginning, \"...\" and the end of the message (%zu bytes)", strlen(path),
	   strlen(e.msg));

	errno = ENOSPC;
	err_sys(&e, "%s: write", path);
	ok(ends_with(e.msg, ": write: No space left on device") && errno == ENOSPC,
	   "err_sys after a long path keeps strerror's words, and errno: ...%s", e.msg + strlen(e.msg) - 40);

	ok(e.errnum == ENOSPC, "err_sys keeps errno as errnum, so a full disk can be told apart: %d", e.errnum);
	err_prefix(&e, "%s", "grpo-score");
	ok(e.errnum == ENOSPC, "err_prefix keeps errnum: %d", e.errnum);
	errno = EIO;
	err_set(&e, "record 7: %s is not a number", "x");
	ok(e.errnum == 0, "err_set says no errno, whatever errno holds, or an earlier err_sys kept: %d", e.errnum);
	char before[sizeof e.msg];
	memcpy(before, e.msg, sizeof before);
	ok(err_later(&e) == -1 && e.errnum == EAGAIN && strcmp(e.msg, before) == 0,
	   "err_later marks the message as one a later run may get past, and leaves its words: %d", e.errnum);
	ok(err_later(NULL) == -1, "err_later of no message is -1 still");
	err_prefix(&e, "%s", path);
	ok(ends_with(e.msg, ": record 7: x is not a number") && strncmp(e.msg, "/ppp", 4) == 0,
	   "err_prefix with a long prefix keeps the message it prefixes: ...%s", e.msg + strlen(e.msg) - 40);
	err_set(&e, "%s: record 7", path);
	err_prefix(&e, "grpo-pack");
	ok(strncmp(e.msg, "grpo-pack: /ppp", 15) == 0 && ends_with(e.msg, ": record 7"),
	   "err_prefix before a long message: the prefix and the message's end");

	err_set(&e, "reward '%s' unknown", "a\033[2J\nb\tc\x7f");
	ok(strcmp(e.msg, "reward 'a?[2J?b?c?' unknown") == 0,
	   "a control byte quoted from the data is '?': one printable line (%s)", e.msg);
	err_prefix(&e, "%s", "x\ny");
	ok(strcmp(e.msg, "x?y: reward 'a?[2J?b?c?' unknown") == 0, "err_prefix's too (%s)", e.msg);
	errno = EIO;
	err_sys(&e, "%s", "f\r");
	ok(strcmp(e.msg, "f?: Input/output error") == 0, "err_sys's too (%s)", e.msg);
	err_set(&e, "caf\xc3\xa9 \xe2\x82\xac");
	ok(strcmp(e.msg, "caf\xc3\xa9 \xe2\x82\xac") == 0, "UTF-8 is kept whole (%s)", e.msg);

	/* err_printable, the rule the tools' own lines follow too: every byte but NUL, once */
	char all[256];
	for (int c = 1; c < 256; c++)
		all[c - 1] = (char)c;
	all[255] = '\0';
	err_printable(all);
	int kept = 1;
	for (int c = 1; c < 256; c++)
		if ((unsigned char)all[c - 1] != (c < 0x20 || c == 0x7f ? '?' : c))
			kept = 0;
	ok(kept, "err_printable: the 33 control bytes are '?', the other 222 bytes stay as they were");

	/* "é" is two bytes and "€" three: every cut point falls inside a character for some offset */
	int clean = 1;
	for (int shift = 0; shift < 6; shift++) {
		char s[3000] = "";
		memset(s, 'a', (size_t)shift);
		s[shift] = '\0';
		while (strlen(s) < sizeof s - 8)
			strcat(s, strlen(s) % 2 ? "\xc3\xa9" : "\xe2\x82\xac");
		err_set(&e, "%s: bad", s);
		if (!utf8(e.msg) || !ends_with(e.msg, ": bad") || strlen(e.msg) >= sizeof e.msg ||
		    strlen(e.msg) < sizeof e.msg - 4)
			clean = 0;
	}
	ok(clean, "a long message cut only between UTF-8 characters, at most 3 bytes short of the room");
	return tap_done();
}
