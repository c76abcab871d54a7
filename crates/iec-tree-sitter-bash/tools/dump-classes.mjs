// Regenerates src/wasm_alpha.rs's table: the letters of web-tree-sitter's WebAssembly runtime.
// Usage (in a folder with `npm install web-tree-sitter@0.25.10`):
//   node dump-classes.mjs > alpha.json
// The runtime's module object is internal to tree-sitter.js; this script loads a copy of it
// that also exports it (`C as __C` added to the export list), then calls the runtime's own
// exported `iswalpha`, `iswspace` and `iswdigit` for every code point and prints the ranges.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const dir = path.dirname(require.resolve('web-tree-sitter/tree-sitter.js'));
const copy = path.join(dir, 'tree-sitter-exported.js');
fs.writeFileSync(copy, fs.readFileSync(path.join(dir, 'tree-sitter.js'), 'utf8')
  .replace(/^  TreeCursor\n};/m, '  TreeCursor,\n  C as __C\n};'));
const { Parser, __C: C } = await import(copy);
await Parser.init();
const ranges = (f) => {
  const out = [];
  let start = -1;
  for (let c = 0; c <= 0x110000; c++) {
    const v = c < 0x110000 && f(c) !== 0;
    if (v && start < 0) start = c;
    if (!v && start >= 0) { out.push([start, c - 1]); start = -1; }
  }
  return out;
};
console.log(JSON.stringify({ alpha: ranges(C._iswalpha), space: ranges(C._iswspace), digit: ranges(C._iswdigit) }));
