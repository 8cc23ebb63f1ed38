// tokenizer_hf_ref.js — reference ids for test_tokenizer_hf.c, from Hugging Face's tokenizers
// library (its Node binding, the npm package "tokenizers": the Rust library itself) or from
// transformers.js's tokenizers (the @lenml/tokenizers port).
// usage: node tokenizer_hf_ref.js huggingface|transformers CACHE_DIR TEXTS.json OUT.json TOKENIZER.json...
// CACHE_DIR holds node_modules/ (npm install --prefix CACHE_DIR). TEXTS.json is an array of
// strings; OUT.json gets {"TOKENIZER.json": [[id, ...] per text], ...}: each text encoded without
// added BOS/EOS (add_special_tokens false), special tokens in the text matched.
'use strict';
const fs = require('fs');
const path = require('path');
const { createRequire } = require('module');

const [which, cache, textsPath, outPath, ...tokenizers] = process.argv.slice(2);
const req = createRequire(path.join(path.resolve(cache), 'node_modules', 'x.js'));
const texts = JSON.parse(fs.readFileSync(textsPath, 'utf8'));

function transformersJs(file) {
  const lib = req('@lenml/tokenizers');
  const cfgPath = path.join(path.dirname(file), 'tokenizer_config.json');
  const tokenizerConfig = fs.existsSync(cfgPath) ? JSON.parse(fs.readFileSync(cfgPath, 'utf8')) : {};
  const tok = lib.TokenizerLoader.fromPreTrained({
    tokenizerJSON: JSON.parse(fs.readFileSync(file, 'utf8')),
    tokenizerConfig,
  });
  return async (t) => Array.from(tok.encode(t, { add_special_tokens: false }));
}

function huggingFace(file) {
  const tok = req('tokenizers').Tokenizer.fromFile(file);
  return async (t) => (await tok.encode(t, null, { addSpecialTokens: false })).getIds();
}

(async () => {
  const out = {};
  for (const file of tokenizers) {
    const encode = which === 'huggingface' ? huggingFace(file) : transformersJs(file);
    out[file] = [];
    for (const t of texts) out[file].push(await encode(t));
  }
  fs.writeFileSync(outPath, JSON.stringify(out));
})().catch((e) => {
  console.error(String(e));
  process.exit(1);
});
