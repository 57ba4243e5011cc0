// vLLM drop-in with the official OpenAI npm client (openai@6): `taco_llm serve` (the demo model) started with a
// pasted vLLM command line (underscore spellings, no-op tuning flags, --response-role, --default-chat-template-kwargs,
// --enable-force-include-usage, --scheduling-policy priority, --enable-request-id-headers, --root-path,
// --enable-prompt-tokens-details, CORS, --config YAML), then /v1/responses (create, stream), models.retrieve,
// /openapi.json and a few vLLM request fields through the client.
// Usage: node tests/server/openai_vllm_dropin_test.mjs PATH/TO/taco_llm   (exit 77: client not installed)
import assert from 'node:assert/strict';

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { OpenAI, startServer } from './openai_test_support.mjs';

// Part of the command line as vLLM's --config YAML; its host would not bind, so the command line's must win.
const config = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'taco-dropin-')), 'serve.yaml');
fs.writeFileSync(config, 'host: 192.0.2.1\nmax_model_len: 512\nenable-prefix-caching: true\n' +
  'allowed_origins: ["https://app.example"]\nallow_credentials: true\n');
const binary = process.argv[2];
const { server, port } = await startServer(binary, ['--config', config,
  '--max-num-seqs=8', '-O', '3', '--max-log-len', '100',
  '--uvicorn-log-level', 'warning', '--disable-uvicorn-access-log', '--response-role', 'model',
  '--default-chat-template-kwargs', '{"unused_variable": 1}', '--enable-force-include-usage',
  '--scheduling_policy', 'priority', '--task', 'generate', '--data-parallel-size', '1', '--served-model-name', 'demo',
  '--api-key', 'k1', '--api-key', 'k2', '--enable-request-id-headers', '--root-path', '/api',
  '--enable-prompt-tokens-details',
]);

try {
  const client = new OpenAI({ apiKey: 'k2', baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });

  // max_model_len (from the --config file) reached the engine.
  const model = await client.models.retrieve('demo');
  assert.equal(model.id, 'demo');
  assert.equal(model.max_model_len, 512);

  // Responses API, whole and streamed: the same greedy text; output_text is the SDK's join of the message parts.
  const request = { model: 'demo', input: 'Tell me a story.', instructions: 'Be brief.', max_output_tokens: 8,
    temperature: 0 };
  const whole = await client.responses.create(request);
  assert.equal(whole.object, 'response');
  assert.equal(whole.output[0].type, 'message');
  assert.equal(whole.output[0].content[0].type, 'output_text');
  assert.ok(whole.output_text.length > 0);
  assert.equal(whole.usage.output_tokens, 8);
  assert.equal(whole.status, 'incomplete');  // stopped by max_output_tokens
  assert.equal(whole.incomplete_details.reason, 'max_output_tokens');
  const events = [];
  let streamed = '';
  for await (const event of await client.responses.create({ ...request, stream: true })) {
    events.push(event.type);
    if (event.type === 'response.output_text.delta') streamed += event.delta;
  }
  assert.equal(events[0], 'response.created');
  assert.equal(events.at(-1), 'response.incomplete');
  assert.ok(events.includes('response.output_text.done'));
  assert.equal(streamed, whole.output_text);
  // A message list as input, and what the server cannot do refused naming the field.
  const listed = await client.responses.create({ model: 'demo', max_output_tokens: 4, temperature: 0,
    input: [{ role: 'user', content: [{ type: 'input_text', text: 'Tell me a story.' }] }] });
  assert.equal(listed.usage.output_tokens, 4);
  await assert.rejects(client.responses.create({ ...request, previous_response_id: 'resp_1' }),
    (e) => e.status === 400 && e.param === 'previous_response_id');
  await assert.rejects(client.responses.create({ ...request, tools: [{ type: 'web_search' }] }),
    (e) => e.status === 400 && e.param === 'tools');

  // --response-role: chat replies carry the role; --enable-force-include-usage: streams end with usage.
  const chat = await client.chat.completions.create({ model: 'demo', max_tokens: 3,
    messages: [{ role: 'user', content: 'Hi' }] });
  assert.equal(chat.choices[0].message.role, 'model');
  assert.match(chat.system_fingerprint, /^fp_/);
  let usage = null;
  for await (const chunk of await client.chat.completions.create({ model: 'demo', max_tokens: 3, stream: true,
    messages: [{ role: 'user', content: 'Hi' }] })) {
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(usage?.completion_tokens, 3);

  // priority is served under --scheduling-policy priority; beam search returns its n beams as the choices, and
  // refuses streaming on completions as vLLM does.
  const urgent = await client.completions.create({ model: 'demo', prompt: 'Hi', max_tokens: 2, priority: -5 });
  assert.equal(urgent.choices.length, 1);
  const beams = await client.completions.create({ model: 'demo', prompt: 'Hi', max_tokens: 3, n: 3,
    use_beam_search: true, length_penalty: 0.8 });
  assert.equal(beams.choices.length, 3);
  assert.deepEqual(beams.choices.map((c) => c.index), [0, 1, 2]);
  await assert.rejects(client.completions.create({ model: 'demo', prompt: 'Hi', max_tokens: 2, stream: true,
    use_beam_search: true }), (e) => e.status === 400 && e.param === 'stream');

  // The key guards /v1/* only, in any case of the scheme; /openapi.json lists the routes.
  const bad = await fetch(`http://127.0.0.1:${port}/v1/models`, { headers: { Authorization: 'Bearer nope' } });
  assert.equal(bad.status, 401);
  const lower = await fetch(`http://127.0.0.1:${port}/v1/models`, { headers: { Authorization: 'bearer k1' } });
  assert.equal(lower.status, 200);
  const openapi = await (await fetch(`http://127.0.0.1:${port}/openapi.json`)).json();
  assert.ok(openapi.paths['/v1/responses'].post);
  assert.ok(openapi.paths['/v1/chat/completions'].post);
  // --enable-request-id-headers: the client's request_id (from X-Request-Id) is the completion's id.
  const { data: withId, request_id: requestId } = await client.chat.completions.create({ model: 'demo',
    max_tokens: 2, messages: [{ role: 'user', content: 'Hi' }] }).withResponse();
  assert.equal(requestId, withId.id);
  // --root-path /api: a client pointed at the prefixed URL is served, and /openapi.json names the prefix.
  const prefixed = new OpenAI({ apiKey: 'k1', baseURL: `http://127.0.0.1:${port}/api/v1`, maxRetries: 0 });
  assert.equal((await prefixed.models.retrieve('demo')).id, 'demo');
  assert.deepEqual(openapi.servers, [{ url: '/api' }]);
  // --enable-prompt-tokens-details: a repeated long prompt reports the tokens the prefix cache served.
  const long = { model: 'demo', max_tokens: 1, messages: [{ role: 'user', content: 'Tell me a story. '.repeat(20) }] };
  await client.chat.completions.create(long);
  const cachedUsage = (await client.chat.completions.create(long)).usage;
  assert.ok(cachedUsage.prompt_tokens_details.cached_tokens >= 16, JSON.stringify(cachedUsage));
  // CORS with an origin list and credentials: a preflight needs no key; another origin's preflight is refused.
  const preflight = (origin) => fetch(`http://127.0.0.1:${port}/v1/chat/completions`, { method: 'OPTIONS',
    headers: { Origin: origin, 'Access-Control-Request-Method': 'POST',
      'Access-Control-Request-Headers': 'authorization, content-type' } });
  const allowed = await preflight('https://app.example');
  assert.equal(allowed.status, 200);
  assert.equal(allowed.headers.get('access-control-allow-origin'), 'https://app.example');
  assert.equal(allowed.headers.get('access-control-allow-credentials'), 'true');
  assert.equal((await preflight('https://evil.example')).status, 400);
  const cors = await fetch(`http://127.0.0.1:${port}/v1/models`,
    { headers: { Origin: 'https://app.example', Authorization: 'Bearer k1' } });
  assert.equal(cors.headers.get('access-control-allow-origin'), 'https://app.example');
  console.log('openai vLLM drop-in test: ok');
} finally {
  server.kill('SIGTERM');
}
