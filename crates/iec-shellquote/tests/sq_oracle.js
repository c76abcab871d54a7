// Oracle for tests/npm_differential.rs.
// usage: node sq_oracle.js <shell-quote package dir> <rust OBJECT_TOKEN>
// stdin: JSON Lines, each a JSON string s. stdout: one JSON object per input line:
//   {q1: quote([s]), q3: quote([s,'<','/dev/null']), qop: quote([{op:s}]), p: tokens | {err}}
// tokens: [["S",str] | ["O",op] | ["G",pattern] | ["C",comment]]
'use strict';
const fs = require('fs');
const path = require('path');
const dir = process.argv[2];
const rustToken = process.argv[3];
const quote = require(path.join(dir, 'quote.js'));
const parse = require(path.join(dir, 'parse.js'));
// Discover shell-quote's random per-process TOKEN: ${__proto__} looks up {}.__proto__, an object.
const t = parse('${__proto__}')[0];
const TOKEN = t.slice(0, (t.length - 2) / 2);
if (TOKEN + '{}' + TOKEN !== t) throw new Error('cannot discover TOKEN');
const norm = (s) => s.split(TOKEN).join(rustToken).toWellFormed();
const lines = fs.readFileSync(0, 'utf8').split('\n');
const out = [];
for (const line of lines) {
  if (line === '') continue;
  const s = JSON.parse(line);
  let p;
  try {
    p = parse(s).map((x) => {
      if (typeof x === 'string') return ['S', norm(x)];
      if ('comment' in x) return ['C', norm(x.comment)];
      if (x.op === 'glob') return ['G', norm(x.pattern)];
      return ['O', norm(x.op)];
    });
  } catch (e) {
    p = { err: e.message.toWellFormed() };
  }
  out.push(JSON.stringify({
    q1: quote([s]).toWellFormed(),
    q3: quote([s, '<', '/dev/null']).toWellFormed(),
    qop: quote([{ op: s }]).toWellFormed(),
    p,
  }));
}
process.stdout.write(out.join('\n') + '\n');
