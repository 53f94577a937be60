/*
 * tokenizer.h: Hugging Face tokenizer.json BPE, encode and decode: the
 * byte-level kind and the SentencePiece-converted kind.
 *
 * What is supported is what the Qwen2/Qwen2.5/Qwen3, Llama 3, GPT-2,
 * SmolLM2 and DeepSeek V3/R1 files (byte-level) and the Llama 2, TinyLlama
 * and Mistral v0.1-v0.3 files (SentencePiece-style) use, and anything else
 * is refused at load with a message naming it, never tokenized differently:
 *   - model: BPE, vocab and merges, merges as "a b" strings or as [a, b]
 *     pairs (a merge's rank is its index; a pair listed twice keeps its last
 *     rank, as tokenizers' HashMap does), ignore_merges (Llama 3: a
 *     pre-token that is itself in the vocab is emitted whole), unk_token and
 *     fuse_unk (a symbol the vocab lacks is unk_token, a run of them one
 *     with fuse_unk); the vocab need not hold all 256 bytes (examples/addition
 *     has the digits, + and = only), and with no unk_token, text with a byte
 *     it lacks is an error naming the byte, where Hugging Face would drop the
 *     byte silently;
 *   - SentencePiece-style only: byte_fallback (a character the vocab lacks
 *     is its UTF-8 bytes as <0xNN> tokens when the vocab has all of them);
 *     vocab tokens are UTF-8 strings ("▁the"), a word's first symbols its
 *     characters;
 *   - added_tokens, special or not, lstrip, rstrip, single_word and
 *     normalized, with the ids tokenizers gives them whatever the file
 *     says (a token's vocab id, else the next after the vocab's count), so
 *     a file whose ids differ from those is refused; a normalized one is
 *     matched, and SentencePiece-style decoded, as the normalizer makes it
 *     (Prepend: "<x>" as "▁<x>");
 *   - normalizer: null, NFC, Prepend, Replace (of a String, or of a Regex
 *     through Oniguruma as below: every match, an empty one too, becomes the
 *     content, taken literally), or a Sequence of those (Llama 2:
 *     Prepend("▁") then Replace(" " -> "▁")), applied to
 *     each stretch of text between added tokens on its own, as tokenizers
 *     does (so Prepend puts "▁" before each);
 *   - pre_tokenizer, byte-level: Split, ByteLevel and Digits, alone or in
 *     a Sequence (nested ones too), in any order, each step splitting the
 *     pieces the one before made, as tokenizers' Sequence does: Split on a
 *     {"Regex": R} or a {"String": s} (a literal), with any behavior
 *     (Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous)
 *     and invert; ByteLevel (one) with or without its own regex (GPT-2's)
 *     and add_prefix_space (a space before each piece that lacks one); a
 *     step after ByteLevel sees its characters ("\u0120" for a space), as
 *     there; Digits, individual_digits or not. Regexes run in Oniguruma
 *     (libonig), the engine tokenizers uses, compiled as its onig crate
 *     does (UTF-8, Oniguruma's syntax, no options) and searched as its
 *     find_iter does (an empty match right after a match is skipped); one
 *     that does not compile is a load error naming the field. Qwen's and
 *     Llama 3's Sequence[Split(R, Isolated), ByteLevel(no regex, no prefix
 *     space)] are matched by a hand-written scanner instead (they differ in
 *     \p{N} versus \p{N}{1,3}), which splits as Oniguruma does
 *     (test_tokenizer_regex compares the two on GSM8K and random text).
 *     Oniguruma's Unicode classes are its version's: Debian 12's 6.9.8 has
 *     Unicode 14, tokenizers 0.23's 6.9.10 Unicode 16, so a character first
 *     assigned since 14 may split otherwise than there.
 *     SentencePiece-style: Metaspace (any replacement character,
 *     prepend_scheme first, always or never, split or not; Mistral v0.3) or
 *     null (each stretch is one word);
 *   - decoder: ByteLevel with the ByteLevel pre_tokenizer; otherwise
 *     Replace (a String or a Regex), ByteFallback, Fuse, Strip, Metaspace, or a
 *     Sequence of those (Llama 2: Replace("▁" -> " "), ByteFallback, Fuse,
 *     Strip(" ", 1, 0)), each step as tokenizers' on the list of token
 *     strings (ByteFallback: a run of <0xNN> that is not UTF-8 is one U+FFFD
 *     per byte).
 * As in tokenizers, a file with a top-level key other than version,
 * truncation, padding, added_tokens, normalizer, pre_tokenizer,
 * post_processor, decoder and model is refused, and so is an id written
 * otherwise than as a whole number (258.0, 2.58e2); truncation and padding
 * must be null (tokenizers' encode would cut and pad by them).
 *
 * tok_encode() is Tokenizer.encode(text, add_special_tokens=False): added
 * tokens are split out of the raw text first (leftmost, then longest), the
 * rest is normalized, pre-tokenized, mapped to bytes or characters and
 * merged by rank; merging is O(n log n) in a word's length, so a long text
 * that is one word (no pre_tokenizer) is no trouble. Input must be valid
 * UTF-8 (Hugging Face takes only str); anything else is an error naming the
 * byte offset. tok_decode() is Tokenizer.decode(ids): byte-level, added
 * tokens as their content, other tokens as their bytes, then any byte
 * sequence that is not valid UTF-8 becomes U+FFFD (maximal subparts, as
 * from_utf8_lossy); SentencePiece-style, the tokens' strings through the
 * decoder. An id the tokenizer does not have is an error, where Hugging
 * Face would drop it silently: a model's vocab_size often exceeds the
 * tokenizer's, and such an id means the sampler and the tokenizer disagree.
 *
 * Internally every byte-level vocab token is held as the bytes it stands
 * for, so encoding never builds the byte-level strings. A loaded tokenizer
 * is read-only: several threads may encode and decode with it at once.
 * Unicode data: see unicode.h.
 */
#ifndef GRPO_TOKENIZER_H
#define GRPO_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"

struct tokenizer;

/* A growable array of token ids; a zeroed struct is empty and valid. */
struct tok_ids {
	int32_t *v;     /* (n) */
	size_t n, cap;
};

int tok_ids_push(struct tok_ids *a, int32_t id);  /* -1 when memory runs out */
void tok_ids_free(struct tok_ids *a);

/* Load tokenizer.json from a file or from memory (name is used in messages).
 * NULL with the message in e. */
struct tokenizer *tok_load(const char *path, struct err *e);
struct tokenizer *tok_load_mem(const char *json, size_t n, const char *name, struct err *e);
void tok_free(struct tokenizer *t);

/* Append the ids of text[0..n) to out (no special tokens added). */
int tok_encode(const struct tokenizer *t, const char *text, size_t n, struct tok_ids *out, struct err *e);

/* Append the text of ids to out (UTF-8, not NUL-terminated: a decoded byte
 * may be NUL). skip_special leaves out added tokens marked special. */
int tok_decode(const struct tokenizer *t, const int32_t *ids, size_t n, int skip_special,
	       struct buf *out, struct err *e);

/* The pieces the pre_tokenizer cuts text[0..n) into (no normalizer, no
 * added tokens), for tests: each piece's bytes appended to out, and its end
 * there to ends. scanner: Qwen's and Llama 3's split by the hand-written
 * scanner (an error for any other pre_tokenizer); else through Oniguruma.
 * An error for Metaspace or no pre_tokenizer. */
int tok_pre_tokenize(const struct tokenizer *t, const char *text, size_t n, int scanner, struct buf *out,
		     struct tok_ids *ends, struct err *e);

/* 1 + the largest id (vocab and added tokens). */
uint32_t tok_vocab_size(const struct tokenizer *t);

/* The id of an added token or vocab token spelled as in tokenizer.json
 * ("<|im_end|>", "Ġthe"), or -1. */
int32_t tok_token_id(const struct tokenizer *t, const char *token);

/* 1 if id is an added token marked special. */
int tok_is_special(const struct tokenizer *t, int32_t id);

#endif
