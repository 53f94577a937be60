// Writes tokenizer.json (a small byte-level BPE whose added tokens use
// every flag tokenizers has: special, normalized, single_word, lstrip,
// rstrip) and expected.jsonl: texts that put those tokens next to white
// space, words and one another, with the ids Hugging Face's tokenizers
// gives them. test_tokenizer_added compares ours with them.
//
//   cd tests/data/tokadded && npm install tokenizers@0.23.2 && node make.mjs
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
const { Tokenizer } = createRequire(import.meta.url)('tokenizers');

// GPT-2's map from bytes to the characters byte-level vocabularies use
const byteChar = [];
for (let b = 0, k = 0; b < 256; b++) {
  const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  byteChar.push(String.fromCodePoint(printable ? b : 256 + k++));
}
const vocab = {};
byteChar.forEach((c, b) => { vocab[c] = b; });
const merges = [['Ġ', 't'], ['h', 'e'], ['Ġt', 'he'], ['w', 'o'], ['r', 'd'], ['wo', 'rd'], ['Ġ', 'Ġ']];
for (const [a, b] of merges) vocab[a + b] = Object.keys(vocab).length;

let next = Object.keys(vocab).length;
const added = [
  { content: '<|end|>', special: true, rstrip: true },
  { content: '<|end|> x', special: true },           // longer than <|end|>: leftmost-longest
  { content: '<|s|>', special: true, lstrip: true },
  { content: '<|b|>', special: true, lstrip: true, rstrip: true },
  { content: ' ##', special: false, normalized: false },
  { content: '##', special: false, normalized: true, single_word: true },
  { content: 'cat', special: false, normalized: true, single_word: true },
  { content: 'né', special: false, normalized: true },  // with U+00E9, which e + U+0301 becomes under NFC
  { content: '\n\n', special: false, normalized: false },
  { content: '<x>', special: false, normalized: true, rstrip: true },
  { content: ' <y>', special: false, normalized: true, lstrip: true },
].map((a) => ({
  id: next++, content: a.content, single_word: !!a.single_word, lstrip: !!a.lstrip,
  rstrip: !!a.rstrip, normalized: a.normalized ?? !a.special, special: a.special,
}));

const QWEN = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const json = {
  version: '1.0', truncation: null, padding: null, added_tokens: added,
  normalizer: { type: 'NFC' },
  pre_tokenizer: { type: 'Sequence', pretokenizers: [
    { type: 'Split', pattern: { Regex: QWEN }, behavior: 'Isolated', invert: false },
    { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false }] },
  post_processor: null,
  decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
  model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '',
           fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab, merges },
};
writeFileSync('tokenizer.json', JSON.stringify(json, null, 1) + '\n');

// The texts: pieces drawn at random (a fixed seed), and the cases that
// once differed.
const pieces = ['<|end|>', '<|end|> x', '<|end', '|>', '<|s|>', '<|b|>', ' ##', '##', '#', 'word', 'words',
  '_word', 'word_', 'cat', 'cats', '_cat', 'the', ' the', 'x', ' x', 'né', 'ne\u0301', 'n', 'é', '\n\n', '\n', ' ', '  ', '   ', '\t', '\u3000',
  '\u00a0', '<x>', ' <y>', '<y>', '7', '.', 'a'];
let seed = 0x9e3779b9;
const rand = (n) => {
  seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0;
  return seed % n;
};
const texts = ['<|end|>  ## b', '<|end|> \n\n\n x', 'a <|b|>  <|s|> b', '<x>  <y>', 'word ## word', 'cat ## cat', '_cat##', 'ne\u0301e\u0301', ''];
while (texts.length < 800) {
  let t = '';
  for (let k = 1 + rand(8); k > 0; k--) t += pieces[rand(pieces.length)];
  texts.push(t);
}
const tok = Tokenizer.fromString(JSON.stringify(json));
// tokenizers numbers added tokens anew when it loads them; the file's ids
// must be the ones it keeps, or the fixture tests nothing
for (const a of added)
  if (tok.tokenToId(a.content) !== a.id) throw new Error(`${a.content}: id ${tok.tokenToId(a.content)}, not ${a.id}`);
const lines = [];
for (const text of texts) {
  const enc = await tok.encode(text, null, { addSpecialTokens: false });
  lines.push(JSON.stringify({ text, ids: enc.getIds() }));
}
writeFileSync('expected.jsonl', lines.join('\n') + '\n');
