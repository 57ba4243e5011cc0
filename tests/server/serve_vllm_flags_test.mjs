// `taco_llm serve` end to end with vLLM's flags of issue 15: a stream cut by SIGTERM past --shutdown-timeout ends
// with finish_reason "abort" then [DONE]; --tokenizer DIR serves a model that has no tokenizer of its own with that
// folder's tokenizer and chat template; --max-logprobs makes a request above it a 400 naming the field.
// Node's own fetch; no npm package needed.
// Usage: node tests/server/serve_vllm_flags_test.mjs PATH/TO/taco_llm
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const binary = process.argv[2];

// Starts `serve ARGS` on an ephemeral port; resolves to {server, port, exited}.
async function serve(args) {
  const server = spawn(binary, ['serve', '--host', '127.0.0.1', '--port', '0', ...args],
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
  return { server, port, exited };
}

const post = (port, route, body) => fetch(`http://127.0.0.1:${port}${route}`,
  { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });

// SIGTERM mid-stream with --shutdown-timeout 0: the stream still ends as vLLM ends an aborted one.
{
  const { server, port, exited } = await serve(['--shutdown-timeout', '0']);
  const response = await post(port, '/v1/chat/completions', {
    messages: [{ role: 'user', content: 'Tell me a story' }], max_tokens: 900, ignore_eos: true, stream: true });
  assert.equal(response.status, 200);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let signalled = false;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    if (!signalled && text.includes('"content":"') && text.split('data: ').length > 4) {
      server.kill('SIGTERM');
      signalled = true;
    }
  }
  assert.ok(signalled, text);
  await exited;
  const events = text.split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => e.slice(6));
  assert.equal(events.at(-1), '[DONE]', text.slice(-500));
  const last = JSON.parse(events.at(-2));
  assert.equal(last.choices[0].finish_reason, 'abort', events.at(-2));
}

// --tokenizer: the model folder has no tokenizer; the tokenizer folder brings one and a chat template.
{
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'taco_tokenizer_'));
  fs.copyFileSync(path.join(root, 'tests/data/tokenizer/unigram/tokenizer.json'), path.join(dir, 'tokenizer.json'));
  fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify({
    bos_token: '<s>', eos_token: '</s>',
    chat_template: "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}" }));
  const { server, port, exited } = await serve(['tests/data/models/llama', '--tokenizer', dir, '--max-logprobs', '1']);
  const rendered = await (await post(port, '/tokenize', { messages: [{ role: 'user', content: 'hi' }] })).json();
  const plain = await (await post(port, '/tokenize', { prompt: '<user>hi', add_special_tokens: false })).json();
  assert.deepEqual(rendered.tokens, plain.tokens);
  assert.ok(plain.tokens.length > 0);
  const chat = await post(port, '/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
  assert.equal(chat.status, 200, await chat.text());
  // --max-logprobs 1: two are a 400 naming the field.
  const capped = await post(port, '/v1/completions', { prompt: 'hello', max_tokens: 1, logprobs: 2 });
  assert.equal(capped.status, 400);
  assert.equal((await capped.json()).error.param, 'logprobs');
  assert.equal((await post(port, '/v1/completions', { prompt: 'hello', max_tokens: 1, logprobs: 1 })).status, 200);
  server.kill('SIGTERM');
  await exited;
  fs.rmSync(dir, { recursive: true });
}
console.log('serve vLLM flags test: ok');
