// tokenizer_hf_ref.js — reference ids from transformers.js's tokenizers (the @lenml/tokenizers
// port) for test_tokenizer_hf.c.
// usage: node tokenizer_hf_ref.js CACHE_DIR TEXTS.json OUT.json TOKENIZER.json...
// CACHE_DIR holds node_modules/@lenml/tokenizers (npm install --prefix CACHE_DIR). TEXTS.json is
// an array of strings; OUT.json gets {"TOKENIZER.json": [[id, ...] per text], ...}: each text
// encoded without added BOS/EOS (add_special_tokens: false), special tokens in the text parsed.
'use strict';
const fs = require('fs');
const path = require('path');
const { createRequire } = require('module');

const [cache, textsPath, outPath, ...tokenizers] = process.argv.slice(2);
const lib = createRequire(path.join(path.resolve(cache), 'node_modules', 'x.js'))('@lenml/tokenizers');
const texts = JSON.parse(fs.readFileSync(textsPath, 'utf8'));
const out = {};
for (const file of tokenizers) {
  const cfgPath = path.join(path.dirname(file), 'tokenizer_config.json');
  const tokenizerConfig = fs.existsSync(cfgPath) ? JSON.parse(fs.readFileSync(cfgPath, 'utf8')) : {};
  const tok = lib.TokenizerLoader.fromPreTrained({
    tokenizerJSON: JSON.parse(fs.readFileSync(file, 'utf8')),
    tokenizerConfig,
  });
  out[file] = texts.map((t) => Array.from(tok.encode(t, { add_special_tokens: false })));
}
fs.writeFileSync(outPath, JSON.stringify(out));
