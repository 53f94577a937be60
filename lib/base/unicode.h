/*
 * unicode.h: the little of Unicode that the tokenizer needs.
 *
 * UTF-8 decoding that is strict (shortest form only, no surrogates, nothing
 * above U+10FFFF) and reports how long an invalid sequence is, so that
 * uni_utf8_lossy() replaces each maximal invalid subsequence with one U+FFFD
 * exactly as Rust's String::from_utf8_lossy and Python's errors="replace" do.
 *
 * Character classes (letters \p{L}, numbers \p{N}, White_Space \s, word
 * characters \w) and NFC come from tables generated at development time from
 * Unicode data (tools/gen-unicode-tables.py, committed as
 * lib/base/unicode_tables.inc, which names its version in UNI_TABLES_VERSION).
 * Hugging Face tokenizers takes its classes from Oniguruma and its NFC from
 * the unicode-normalization-alignments crate, each with its own Unicode
 * version. NFC here is that crate's, Unicode 9.0: the NFC tables hold the
 * characters of 9.0 only (a later mark is a starter, as there). The classes
 * are Unicode 16.0's, as tokenizers 0.23's Oniguruma has them.
 */
#ifndef GRPO_UNICODE_H
#define GRPO_UNICODE_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

enum {
	UNI_L = 1,  /* \p{L}: general category L* */
	UNI_N = 2,  /* \p{N}: general category N* */
	UNI_S = 4,  /* \s: White_Space */
	UNI_W = 8,  /* \w: Alphabetic, Mark, Nd, Pc, Join_Control */
};

/* Decode the character at s[0..n), n >= 1. Returns its length (1 to 4) and
 * sets *cp; or, when the bytes do not begin a valid character, minus the
 * length of the maximal invalid subsequence (-1 to -3), leaving *cp alone. */
int uni_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);

/* Write cp (<= U+10FFFF) as UTF-8 into out; returns the length. */
int uni_utf8_encode(uint32_t cp, unsigned char out[4]);

/* Offset of the first byte of s that is not part of a valid character, or n. */
size_t uni_utf8_check(const unsigned char *s, size_t n);

/* Append s to out, replacing each maximal invalid subsequence with U+FFFD.
 * -1 only when memory runs out. */
int uni_utf8_lossy(struct buf *out, const unsigned char *s, size_t n);

/* The UNI_* classes of a code point (0 for unassigned ones). */
unsigned uni_class(uint32_t cp);

/* Canonical combining class. */
unsigned uni_ccc(uint32_t cp);

/* Append the NFC form of s (valid UTF-8, see uni_utf8_check) to out.
 * -1 only when memory runs out. */
int uni_nfc(struct buf *out, const unsigned char *s, size_t n);

#endif
