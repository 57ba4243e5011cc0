// HTTPS with the official OpenAI npm client (openai@6): `taco_llm serve --ssl-certfile --ssl-keyfile` with a
// self-signed certificate made by the openssl command, trusted by Node through NODE_EXTRA_CA_CERTS (read only at
// start, so the test runs itself again with it set). Chat, a stream and models over TLS; plain HTTP is refused.
// Usage: node tests/server/openai_tls_test.mjs PATH/TO/taco_llm   (exit 77: client or openssl missing)
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { OpenAI, startServer } from './openai_test_support.mjs';

const binary = process.argv[2];
if (!process.env.TACO_TLS_TEST_DIR) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'taco-tls-'));
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
      '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem')],
    { stdio: 'ignore' });
  } catch (e) {
    console.log(`openssl could not make a certificate (${e.message}): skipped`);
    process.exit(77);
  }
  const run = spawnSync(process.execPath, [new URL(import.meta.url).pathname, binary], { stdio: 'inherit',
    env: { ...process.env, TACO_TLS_TEST_DIR: dir, NODE_EXTRA_CA_CERTS: path.join(dir, 'cert.pem') } });
  fs.rmSync(dir, { recursive: true, force: true });
  process.exit(run.status ?? 1);
}

const dir = process.env.TACO_TLS_TEST_DIR;
const { server, port } = await startServer(binary, ['--ssl-certfile', path.join(dir, 'cert.pem'),
  '--ssl-keyfile', path.join(dir, 'key.pem'), '--served-model-name', 'demo', '--api-key', 'k']);
try {
  const client = new OpenAI({ apiKey: 'k', baseURL: `https://127.0.0.1:${port}/v1`, maxRetries: 0 });
  assert.equal((await client.models.retrieve('demo')).id, 'demo');
  const chat = await client.chat.completions.create({ model: 'demo', max_tokens: 4, temperature: 0,
    messages: [{ role: 'user', content: 'Hi' }] });
  assert.equal(chat.usage.completion_tokens, 4);
  let streamed = '';
  for await (const chunk of await client.chat.completions.create({ model: 'demo', max_tokens: 4, temperature: 0,
    stream: true, messages: [{ role: 'user', content: 'Hi' }] })) {
    streamed += chunk.choices[0]?.delta?.content ?? '';
  }
  assert.equal(streamed, chat.choices[0].message.content);
  // Plain HTTP on the TLS port gets no HTTP reply.
  const plain = new OpenAI({ apiKey: 'k', baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
  await assert.rejects(plain.models.list(), (e) => e.constructor.name === 'APIConnectionError');
  console.log('openai TLS test: ok');
} finally {
  server.kill('SIGTERM');
}
