// Writes three small SentencePiece-style BPE tokenizers and, for each,
// expected.jsonl lines with the ids Hugging Face's tokenizers gives a text
// (encode, no special tokens added) and its decode of them, with and
// without skip_special_tokens; lines without a text decode random ids.
//   legacy:   Llama 2 / TinyLlama / Mistral v0.1 layout: normalizer
//             Prepend("▁") + Replace(" " -> "▁"), no pre_tokenizer, all 256
//             <0xNN> tokens, byte_fallback, fuse_unk, decoder Replace,
//             ByteFallback, Fuse, Strip;
//   metaspace: Mistral v0.3 layout: no normalizer, Metaspace(first, no
//             split), the same decoder; <0xF0> .. <0xF4> are left out, so
//             emoji fall back to <unk>, fused;
//   always:   Metaspace(always, split) and decoder Metaspace, no
//             byte_fallback, fuse_unk false: each unknown character is <unk>;
//   never:    normalizer NFC and Replace("\t" -> "  "), Metaspace(never,
//             split), byte_fallback, decoder ByteFallback, Metaspace(never),
//             Fuse, Strip(" ", 2, 0).
// test_tokenizer_spm compares ours with them.
//
//   cd tests/data/tokspm && npm install tokenizers@0.23.2 && node make.mjs
// With a tokenizer.json's path (e.g. Llama 2's, not committed: its license)
// and an output file, writes that file for it over the same texts, the
// GSM8K test questions (../shared/data/gsm8k/test.jsonl beside the tree)
// and 300 random id lists instead; test_tokenizer_spm reads it when
// GRPO_LLAMA2_TOKENIZER and GRPO_LLAMA2_EXPECTED name the two:
//   node make.mjs /tmp/sp/package/models/tokenizer.json /tmp/llama2.jsonl
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
const { Tokenizer } = createRequire(import.meta.url)('tokenizers');

const hex = (b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`;

function build(skipBytes) {
  const vocab = { '<unk>': 0, '<s>': 1, '</s>': 2 };
  for (let b = 0; b < 256; b++)
    if (!skipBytes.includes(b)) vocab[hex(b)] = Object.keys(vocab).length;
  for (const c of ['▁', 'a', 'b', 'c', 'd', 'e', 'h', 'i', 'l', 'n', 'o', 'r', 's', 't', 'w', 'x', 'y',
    'T', 'H', '.', ',', '1', '2', 'é', '中', '文', '<', '>'])
    vocab[c] = Object.keys(vocab).length;
  const merges = [['▁', 't'], ['h', 'e'], ['▁t', 'he'], ['▁', '▁'], ['▁▁', '▁▁'], ['l', 'l'], ['o', 'r'],
    ['w', 'or'], ['l', 'd'], ['wor', 'ld'], ['▁', 'wor'], ['▁wor', 'ld'], ['h', 'e'], ['he', 'll'],
    ['hell', 'o'], ['▁', 'hello'], ['▁', 'a'], ['▁', 'c'], ['a', 't'], ['▁c', 'at'], ['中', '文'],
    ['▁', '中文'], ['e', 'r'], ['▁', 'x'], ['T', 'h'], ['▁', 'Th'], ['1', '2'], ['▁', '<']];
  for (const [a, b] of merges)
    if (!(a + b in vocab)) vocab[a + b] = Object.keys(vocab).length;
  return { vocab, merges };
}

const decoderSeq = { type: 'Sequence', decoders: [
  { type: 'Replace', pattern: { String: '▁' }, content: ' ' }, { type: 'ByteFallback' }, { type: 'Fuse' },
  { type: 'Strip', content: ' ', start: 1, stop: 0 }] };

function tokenizerJson(kind) {
  const { vocab, merges } = build(kind === 'metaspace' ? [0xF0, 0xF1, 0xF2, 0xF3, 0xF4] : []);
  if (kind === 'never') { merges.push(['▁', '▁▁']); vocab['▁▁▁'] = Object.keys(vocab).length; }
  let next = Object.keys(vocab).length;
  const added = [
    { id: 0, content: '<unk>', special: true }, { id: 1, content: '<s>', special: true },
    { id: 2, content: '</s>', special: true },
    { id: next++, content: '<x>', special: false, normalized: true },
    { id: next++, content: '[INST]', special: true, lstrip: true, rstrip: true },
  ].map((a) => ({ id: a.id, content: a.content, single_word: false, lstrip: !!a.lstrip, rstrip: !!a.rstrip,
    normalized: !!a.normalized, special: a.special }));
  const model = { type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: null,
    end_of_word_suffix: null, fuse_unk: kind !== 'always', byte_fallback: kind !== 'always', ignore_merges: false,
    vocab, merges: merges.map(([a, b]) => `${a} ${b}`) };
  const base = { version: '1.0', truncation: null, padding: null, added_tokens: added };
  if (kind === 'legacy')
    return { ...base, normalizer: { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: '▁' },
      { type: 'Replace', pattern: { String: ' ' }, content: '▁' }] }, pre_tokenizer: null,
      post_processor: null, decoder: decoderSeq, model };
  if (kind === 'metaspace')
    return { ...base, normalizer: null, pre_tokenizer: { type: 'Metaspace', replacement: '▁',
      prepend_scheme: 'first', split: false }, post_processor: null, decoder: decoderSeq, model };
  if (kind === 'never')
    return { ...base, normalizer: { type: 'Sequence', normalizers: [{ type: 'NFC' },
      { type: 'Replace', pattern: { String: '\t' }, content: '  ' }] },
      pre_tokenizer: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'never', split: true }, post_processor: null,
      decoder: { type: 'Sequence', decoders: [{ type: 'ByteFallback' },
        { type: 'Metaspace', replacement: '▁', prepend_scheme: 'never', split: true }, { type: 'Fuse' },
        { type: 'Strip', content: ' ', start: 2, stop: 0 }] }, model: { ...model, fuse_unk: false, byte_fallback: true } };
  return { ...base, normalizer: null, pre_tokenizer: { type: 'Metaspace', replacement: '▁',
    prepend_scheme: 'always', split: true }, post_processor: null,
    decoder: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true }, model };
}

// The texts: the cases named first, then pieces drawn at random (a fixed seed).
const pieces = ['the', ' the', 'hello', ' hello', 'world', ' world', 'cat', ' cat', 'x', ' ', '  ', '   ',
  '    ', '\n', '\n\n', '\t', '\r\n', '中文', '中', '日本語', '😀', '👍🏽', 'é', 'e\u0301', 'Th', '12', '3',
  '.', ',', '▁', '▁▁', '<0x41>', '<s>', '</s>', '<unk>', '<x>', ' <x>', '[INST]', ' [INST] ', 'Ω', '\u00a0',
  '\ufffd', 'ß', 'αβγ', 'ab', 'er', '<', '>'];
let seed = 0x2545f491;
const rand = (n) => {
  seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0;
  return seed % n;
};
const texts = ['', ' ', '  ', 'hello world', ' hello', 'hello ', '  hello  world  ', '\n', 'a\nb',
  '<s>hello', '<s> hello', 'hello<s>', 'hello <s> world', '<s></s>', '<x>', 'a<x>b', 'a <x> b',
  '[INST] hi [/INST]', 'x [INST]  y', '😀', '😀😀 a 😀', '中文 日本', 'the cat', '\t\tx', '▁the', '<0x41>'];
while (texts.length < 600) {
  let t = '';
  for (let k = 1 + rand(8); k > 0; k--) t += pieces[rand(pieces.length)];
  texts.push(t);
}

async function expected(tok, texts, nIds) {
  const lines = [];
  const dec = async (ids) => ({ dec: await tok.decode(ids, false), dec_skip: await tok.decode(ids, true) });
  for (const text of texts) {
    const ids = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
    lines.push(JSON.stringify({ text, ids, ...(await dec(ids)) }));
  }
  // random ids: cut characters, stray <0xNN>, added tokens between them
  const size = tok.getVocabSize(true);
  const bytes = [];
  for (let b = 0; b < 256; b++) if (tok.tokenToId(hex(b)) != null) bytes.push(tok.tokenToId(hex(b)));
  for (let i = 0; i < nIds; i++) {
    const ids = [];
    for (let k = rand(10); k > 0; k--)
      ids.push(rand(3) === 0 && bytes.length ? bytes[rand(bytes.length)] : rand(size));
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
  writeFileSync(process.argv[3], await expected(Tokenizer.fromString(json), [...texts, ...gsm], 300));
} else {
  for (const kind of ['legacy', 'metaspace', 'always', 'never']) {
    const json = tokenizerJson(kind);
    const tok = Tokenizer.fromString(JSON.stringify(json));
    // tokenizers numbers added tokens anew when it loads them
    for (const a of json.added_tokens)
      if (tok.tokenToId(a.content) !== a.id) throw new Error(`${a.content}: id ${tok.tokenToId(a.content)}, not ${a.id}`);
    mkdirSync(kind, { recursive: true });
    writeFileSync(`${kind}/tokenizer.json`, JSON.stringify(json, null, 1) + '\n');
    writeFileSync(`${kind}/expected.jsonl`, await expected(tok, texts, 300));
  }
}
