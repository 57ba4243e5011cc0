// What `taco_llm serve` logs per request, by its flags: the access line (silenced by --disable-log-requests,
// --disable-uvicorn-access-log or --uvicorn-log-level above info) and, with --enable-log-requests, the request's id
// and prompt cut to --max-log-len. Node's own fetch; no npm package needed.
// Usage: node tests/server/serve_logging_test.mjs PATH/TO/taco_llm
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const binary = process.argv[2];

// Serves the demo model with `flags`, sends one completion, stops the server; resolves to [stderr, response id].
async function logOf(flags) {
  const server = spawn(binary, ['serve', '--host', '127.0.0.1', '--port', '0', ...flags],
    { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  server.stderr.on('data', (d) => { err += d; });
  const exited = new Promise((resolve) => server.on('exit', resolve));
  const port = await new Promise((resolve, reject) => {
    let out = '';
    server.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/serving .* on https?:\/\/[^:]+:(\d+)/);
      if (m) resolve(Number(m[1]));
    });
    server.on('exit', (code) => reject(new Error(`server exited early with ${code}: ${err}`)));
  });
  const response = await fetch(`http://127.0.0.1:${port}/v1/completions`, { method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ prompt: 'Once upon a time', max_tokens: 2 }) });
  assert.equal(response.status, 200);
  const { id } = await response.json();
  server.kill('SIGTERM');
  await exited;
  return [err, id];
}

const accessLine = 'server: POST /v1/completions';
const [plain] = await logOf([]);
assert.ok(plain.includes(accessLine), plain);
assert.ok(!plain.includes('Once upon'), plain);  // no prompt without --enable-log-requests
for (const flags of [['--disable-log-requests'], ['--disable-uvicorn-access-log'], ['--uvicorn-log-level', 'warning']]) {
  const [quiet] = await logOf(flags);
  assert.ok(!quiet.includes(accessLine), `${flags}: ${quiet}`);
}
const [debug] = await logOf(['--uvicorn-log-level', 'debug']);
assert.ok(debug.includes(accessLine), debug);
const [prompts, id] = await logOf(['--enable-log-requests', '--max-log-len', '4']);
assert.ok(prompts.includes(`server: request ${id}: prompt: "Once"...`), prompts);
assert.ok(!prompts.includes('Once upon'), prompts);
console.log('serve logging test: ok');
