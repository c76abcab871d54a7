// Oracle for tests/cc_releases_differential.rs: runs the REAL eval-payload builder of a later
// Claude Code release, its functions cut out of its cli.js by name at test time.
// usage: node cc_release_oracle.js <cli.js> <shell-quote package dir> <config JSON>
// config: {fns: [names], quote: "name of the shell-quote module variable", nul: "name of the
//   >nul regex variable", key: "the statement of buildExecCommand that builds the payload",
//   cmd: "its input variable", opts: "its options variable", out: "its result variable"}
// stdin: JSON Lines {cmd, sandbox} -> the payload (a JSON string) per line.
'use strict';
const fs = require('fs');
const path = require('path');
const src = fs.readFileSync(process.argv[2], 'utf8');
const shellQuote = require(path.join(process.argv[3], 'index.js'));
const cfg = JSON.parse(process.argv[4]);

// A minified top-level function runs to the `}` before the next `function ` or `var `.
function cut(name) {
  const a = src.indexOf('function ' + name + '(');
  if (a < 0) throw new Error('cli.js: function not found: ' + name);
  if (src.indexOf('function ' + name + '(', a + 1) >= 0) throw new Error('cli.js: not unique: ' + name);
  const ends = [src.indexOf('}function ', a), src.indexOf('}var ', a)].filter((x) => x >= 0);
  return src.slice(a, Math.min(...ends) + 1);
}
if (!src.includes(cfg.key)) throw new Error('cli.js: payload statement not found: ' + cfg.key);
const nul = /(\d?&?>+\s*)[Nn][Uu][Ll](?=\s|$|[|&;)\n])/g;
if (!src.includes(cfg.nul + '=' + nul.toString())) throw new Error('cli.js: >nul regex differs');
let code = `var ${cfg.quote} = shellQuote, ${cfg.nul} = ${nul.toString()};\n`;
// Logging and JSON helpers the cut functions call on their error paths.
code += 'function O6(){} function H6(){} function m6(x){return JSON.stringify(x)}\n';
for (const f of cfg.fns) code += cut(f) + '\n';
code += `globalThis.payload = function (${cfg.cmd}, ${cfg.opts}) { let ${cfg.key.replace(/;$/, '')}; return ${cfg.out}; };`;
eval(code);
const out = [];
for (const line of fs.readFileSync(0, 'utf8').split('\n')) {
  if (!line) continue;
  const c = JSON.parse(line);
  out.push(JSON.stringify(payload(c.cmd, { useSandbox: c.sandbox })));
}
process.stdout.write(out.join('\n') + (out.length ? '\n' : ''));
