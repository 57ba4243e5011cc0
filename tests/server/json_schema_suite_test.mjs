// The JSON Schema suite of issue 14: every schema of tests/structured/data/json_schema_suite.json (API payloads,
// configs, orders, GitHub / Stripe / Kubernetes-like objects, recursive $defs, format-heavy ones) is requested from
// `taco_llm serve` (the demo model) through response_format json_schema on chat, or vLLM's guided_json /
// structured_outputs where its entry says "via", and every output is checked by ajv (draft 2020-12, formats by
// ajv-formats): the grammar must never let the model write a value its schema rejects. Each "rejected" entry uses a
// keyword we do not enforce and must be a 400 naming it. Requests go out all at once, so the engine batches them.
// Usage: node tests/server/json_schema_suite_test.mjs PATH/TO/taco_llm   (exit 77: ajv / ajv-formats not installed)
import fs from 'node:fs';
import path from 'node:path';
import assert from 'node:assert/strict';

import { require, root, startServer } from './openai_test_support.mjs';

let Ajv2020, addFormats;
try {
  Ajv2020 = require('ajv/dist/2020').default ?? require('ajv/dist/2020');
  addFormats = require('ajv-formats').default ?? require('ajv-formats');
} catch (e) {
  console.log('ajv-formats not installed in .cache/node (run scripts/setup_test_data.sh): skipped');
  process.exit(77);
}
const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats(ajv);

const suite = JSON.parse(fs.readFileSync(path.join(root, 'tests/structured/data/json_schema_suite.json'), 'utf8'));
assert.ok(suite.schemas.length >= 100);
const seeds = (process.env.SUITE_SEEDS ?? '1,2').split(',').map(Number);
const maxTokens = 900;

const binary = process.argv[2];
const { server, port } = await startServer(binary);
const base = `http://127.0.0.1:${port}/v1`;
async function post(route, body) {
  const r = await fetch(`${base}/${route}`, { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
}

// One request for a schema and seed, by the route its entry names; resolves to { text, finish }.
async function generate(entry, seed) {
  const messages = [{ role: 'user', content: `Write a ${entry.name.replaceAll('_', ' ')} as JSON.` }];
  const common = { model: 'demo', max_tokens: maxTokens, seed, temperature: 1 };
  let reply;
  if (entry.via === 'guided_json') {
    reply = await post('chat/completions', { ...common, messages, guided_json: entry.schema });
  } else if (entry.via === 'structured_outputs') {
    reply = await post('completions', { ...common, prompt: messages[0].content, structured_outputs: { json: entry.schema } });
  } else {
    reply = await post('chat/completions', { ...common, messages,
      response_format: { type: 'json_schema', json_schema: { name: entry.name, schema: entry.schema, strict: true } } });
  }
  if (reply.status !== 200) return { text: JSON.stringify(reply.body), finish: `HTTP ${reply.status}` };
  const choice = reply.body.choices[0];
  return { text: choice.message?.content ?? choice.text, finish: choice.finish_reason };
}

try {
  const started = Date.now();
  const jobs = suite.schemas.flatMap((entry) => seeds.map(async (seed) => ({ entry, seed, ...await generate(entry, seed) })));
  const rejections = suite.rejected.map(async ({ keyword, schema }) => ({ keyword,
    reply: await post('chat/completions', { model: 'demo', max_tokens: 8, messages: [{ role: 'user', content: 'x' }],
      response_format: { type: 'json_schema', json_schema: { name: 'rejected', schema } } }) }));
  const results = await Promise.all(jobs);
  const failures = [];
  const unfinished = [];
  for (const { entry, seed, text, finish } of results) {
    if (finish === 'length') {
      unfinished.push(`${entry.name} (seed ${seed})`);
      continue;
    }
    const where = `${entry.name} (seed ${seed}, ${entry.via ?? 'response_format'})`;
    if (finish !== 'stop') {
      failures.push(`${where}: finish_reason ${finish}: ${text}`);
      continue;
    }
    let value;
    try {
      value = JSON.parse(text);
    } catch (e) {
      failures.push(`${where}: not JSON: ${text}`);
      continue;
    }
    const validate = ajv.compile(entry.schema);
    if (!validate(value)) failures.push(`${where}: ${ajv.errorsText(validate.errors)}\n  ${text}`);
  }
  assert.deepEqual(failures, [], `${failures.length} outputs invalid for their schema:\n${failures.join('\n')}`);
  // The demo model may write until max_tokens where the grammar allows it (maps: maxProperties is not enforced, so
  // nothing bounds their keys); such a reply is cut, not wrong, and must stay rare (16 of 262 on seeds 1 and 2).
  assert.ok(unfinished.length <= results.length / 10, `${unfinished.length} replies ran out of tokens: ${unfinished}`);

  for (const { keyword, reply } of await Promise.all(rejections)) {
    assert.equal(reply.status, 400, `${keyword}: ${JSON.stringify(reply.body)}`);
    assert.ok(reply.body.error.message.includes(keyword), `${keyword} not named: ${reply.body.error.message}`);
  }
  console.log(`json schema suite: ${results.length - unfinished.length} outputs of ${suite.schemas.length} schemas ` +
              `valid (${unfinished.length} cut at ${maxTokens} tokens), ${suite.rejected.length} refusals, ` +
              `${Date.now() - started} ms`);
} finally {
  server.kill('SIGTERM');
}
