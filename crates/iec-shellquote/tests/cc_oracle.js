// Oracle for tests/cc_differential.rs: runs the REAL eval-payload / wrapper code of
// Claude Code 2.1.72, cut out of its cli.js at test time.
// usage: node cc_oracle.js <path to cli.js> <rust OBJECT_TOKEN>
// stdin: JSON Lines, either {cmd, snap (string|null), sandbox (bool), prefix (string|null)}
//   -> {payload, commandString}
// or {sq: s} -> the same record as sq_oracle.js, computed with the shell-quote copy BUNDLED
//   in cli.js (object TOKEN replaced by argv[3]).
'use strict';
const fs = require('fs');
const nodePath = require('path');
const src = fs.readFileSync(process.argv[2], 'utf8');

function cut(start, end, inclusive) {
  const a = src.indexOf(start);
  if (a < 0) throw new Error('cli.js: start marker not found: ' + start);
  const b = src.indexOf(end, a);
  if (b < 0) throw new Error('cli.js: end marker not found: ' + end);
  if (src.indexOf(start, a + 1) >= 0) throw new Error('cli.js: start marker not unique: ' + start);
  return src.slice(a, inclusive ? b + end.length : b);
}

// shell-quote 1.8.3 bundle (quote = jLA, parse = ZLA, index = GA1) + Gz/MyK/Pn1/n7.
const segShellQuote = cut('var jLA=x((', 'var S$6;var AJ=k(', false);
// oW8 (heredoc), Nf9 (multi-line), Mo7, Vf9, Do7, Xo7, kf9, Zo7 and helpers.
const segBuilder = cut('function oW8(A){', 'var Go7=k(()=>{AJ()});', true);
// fA1 (CLAUDE_CODE_SHELL_PREFIX wrapping).
const segPrefix = cut('function fA1(A,q){', 'var Wn1=k(', false);
// Uf9 (extglob line) + Ro7 (bash provider with buildExecCommand).
const segProvider = cut('function Uf9(A){', 'var ho7=k(', false);
const KEY = 'D=Xo7(_),X=Do7(D),P=Mo7(D,X);if(!w.useSandbox&&D.includes("|")&&X)P=Zo7(D);';
if (!segProvider.includes(KEY)) throw new Error('cli.js: buildExecCommand core not found');

const body = `
  // --- stubs for the bundler runtime and unrelated modules ---
  var x = (fn) => { let m; return () => { if (!m) { m = { exports: {} }; fn(m.exports, m); } return m.exports; }; };
  var k = (fn) => { let done = false; return () => { if (!done) { done = true; fn(); } }; };
  var s = (m) => m;
  var _6 = () => {}, y = () => {}, g6 = (v) => JSON.stringify(v);
  var AJ = () => {};
  var Ff9 = async () => {};
  var sJ1 = nodePath.posix.join, pf9 = nodePath.join, Qf9 = () => '/tmp';
  var L8 = () => 'linux', lZ = (p) => p;
  var NLA = async () => null;
  var KZ8 = async () => SNAP.value;
  ${segShellQuote}
  var S$6 = GA1();
  ${segBuilder}
  ${segPrefix}
  ${segProvider}
  Po7();
  return { Ro7, Xo7, Do7, Mo7, Zo7, sq: S$6 };
`;
const SNAP = { value: undefined };
const api = new Function('nodePath', 'SNAP', body)(nodePath, SNAP);

const rustToken = process.argv[3] || '';
const t = api.sq.parse('${__proto__}')[0];
const TOKEN = t.slice(0, (t.length - 2) / 2);
const norm = (v) => v.split(TOKEN).join(rustToken).toWellFormed();
function sqRecord(s) {
  const { quote, parse } = api.sq;
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
  return {
    q1: quote([s]).toWellFormed(),
    q3: quote([s, '<', '/dev/null']).toWellFormed(),
    qop: quote([{ op: s }]).toWellFormed(),
    p,
  };
}

async function main() {
  const lines = fs.readFileSync(0, 'utf8').split('\n');
  const out = [];
  for (const line of lines) {
    if (line === '') continue;
    const c = JSON.parse(line);
    if ('sq' in c) { out.push(JSON.stringify(sqRecord(c.sq))); continue; }
    // Same three lines as in buildExecCommand (verified present above).
    const D = api.Xo7(c.cmd), X = api.Do7(D);
    let P = api.Mo7(D, X);
    if (!c.sandbox && D.includes('|') && X) P = api.Zo7(D);
    if (c.prefix) process.env.CLAUDE_CODE_SHELL_PREFIX = c.prefix;
    else delete process.env.CLAUDE_CODE_SHELL_PREFIX;
    SNAP.value = c.snap === null ? undefined : c.snap;
    const prov = await api.Ro7('/bin/bash', { skipSnapshot: c.snap === null });
    const r = await prov.buildExecCommand(c.cmd, {
      id: 'abcd',
      useSandbox: !!c.sandbox,
      sandboxTmpDir: c.sandbox ? '/tmp/claude-sbx' : undefined,
    });
    out.push(JSON.stringify({ payload: norm(P), commandString: norm(r.commandString) }));
  }
  process.stdout.write(out.join('\n') + '\n');
}
main().catch((e) => { console.error(e); process.exit(1); });
