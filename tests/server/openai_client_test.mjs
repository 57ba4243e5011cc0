// Drives `taco_llm serve` (no MODEL: the built-in demo model) with the official OpenAI npm client (openai@6) and
// checks every response against JSON Schemas written from OpenAI's API reference (ajv).
// Usage: node tests/server/openai_client_test.mjs PATH/TO/taco_llm   (exit 77: client not installed -> skipped)
import assert from 'node:assert/strict';

import { Ajv, OpenAI, require, startServer } from './openai_test_support.mjs';

const num = { type: 'number' };
const int = { type: 'integer', minimum: 0 };
const usage = {
  type: 'object', required: ['prompt_tokens', 'completion_tokens', 'total_tokens'],
  properties: { prompt_tokens: int, completion_tokens: int, total_tokens: int },
};
const finish = { enum: ['stop', 'length', null] };
const base = (object) => ({
  id: { type: 'string' }, object: { const: object }, created: int, model: { type: 'string' },
});
const completionSchema = {
  type: 'object', required: ['id', 'object', 'created', 'model', 'choices'],
  properties: {
    ...base('text_completion'), usage,
    choices: { type: 'array', items: {
      type: 'object', required: ['index', 'text', 'logprobs', 'finish_reason'],
      properties: { index: int, text: { type: 'string' }, finish_reason: finish,
        logprobs: { anyOf: [{ type: 'null' }, { type: 'object',
          required: ['tokens', 'token_logprobs', 'top_logprobs', 'text_offset'],
          properties: { tokens: { type: 'array', items: { type: 'string' } },
            token_logprobs: { type: 'array', items: num }, text_offset: { type: 'array', items: int },
            top_logprobs: { type: 'array', items: { type: 'object', additionalProperties: num } } } }] } } } },
  },
};
const chatSchema = {
  type: 'object', required: ['id', 'object', 'created', 'model', 'choices', 'usage'],
  properties: {
    ...base('chat.completion'), usage,
    choices: { type: 'array', minItems: 1, items: {
      type: 'object', required: ['index', 'message', 'finish_reason', 'logprobs'],
      properties: { index: int, finish_reason: finish,
        message: { type: 'object', required: ['role', 'content'],
          properties: { role: { const: 'assistant' }, content: { type: ['string', 'null'] } } },
        logprobs: { anyOf: [{ type: 'null' }, { type: 'object', required: ['content'], properties: {
          content: { type: 'array', items: { type: 'object', required: ['token', 'logprob', 'bytes', 'top_logprobs'],
            properties: { token: { type: 'string' }, logprob: num, bytes: { type: 'array', items: int },
              top_logprobs: { type: 'array' } } } } } }] } } } },
  },
};
const chunkSchema = {
  type: 'object', required: ['id', 'object', 'created', 'model', 'choices'],
  properties: {
    ...base('chat.completion.chunk'), usage: { anyOf: [{ type: 'null' }, usage] },
    choices: { type: 'array', items: { type: 'object', required: ['index', 'delta', 'finish_reason'],
      properties: { index: int, finish_reason: finish,
        delta: { type: 'object', properties: { role: { const: 'assistant' }, content: { type: 'string' } } } } } },
  },
};
// With echo the prompt's tokens lead the logprobs, the first with null (it has no context), as OpenAI's legacy
// completions returned them.
const echoCompletionSchema = structuredClone(completionSchema);
const echoLogprobs = echoCompletionSchema.properties.choices.items.properties.logprobs.anyOf[1];
echoLogprobs.properties.token_logprobs.items = { type: ['number', 'null'] };
echoLogprobs.properties.top_logprobs.items = { anyOf: [{ type: 'null' }, { type: 'object', additionalProperties: num }] };
const ajv = new Ajv({ allErrors: true });
const validators = { completion: ajv.compile(completionSchema), chat: ajv.compile(chatSchema),
  chunk: ajv.compile(chunkSchema), echoCompletion: ajv.compile(echoCompletionSchema) };
function check(kind, value) {
  if (!validators[kind](value)) throw new Error(`${kind} schema: ${ajv.errorsText(validators[kind].errors)}\n` +
                                                 JSON.stringify(value));
}

const binary = process.argv[2];
const key = 'test-key';
// No MODEL: the built-in demo model (models/demo), reported as "demo".
const { server, port } = await startServer(binary, [], { TACO_LLM_API_KEY: key });

try {
  const client = new OpenAI({ apiKey: key, baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
  const models = await client.models.list();
  assert.equal(models.data[0].id, 'demo');
  const model = await client.models.retrieve('demo');
  assert.equal(model.id, 'demo');
  assert.equal(model.object, 'model');
  await assert.rejects(client.models.retrieve('no-such-model'), (e) => e instanceof OpenAI.NotFoundError);

  const completion = await client.completions.create({ model: 'demo', prompt: 'Once upon a time', max_tokens: 5,
    temperature: 0.8, logprobs: 2, n: 2, seed: 3 });
  check('completion', completion);
  assert.equal(completion.choices.length, 2);
  const generated = completion.choices.map((c) => c.logprobs.tokens.length);
  assert.equal(generated[0] + generated[1], completion.usage.completion_tokens);

  const ids = await client.completions.create({ model: 'demo', prompt: [[5, 6, 7], [8, 9]], max_tokens: 2 });
  check('completion', ids);
  assert.equal(ids.choices.length, 2);
  assert.equal(ids.usage.prompt_tokens, 5);

  // lm-eval-harness's loglikelihood request: the prompt scored, nothing generated.
  const scored = await client.completions.create({ model: 'demo', prompt: 'Once upon a time', max_tokens: 0,
    echo: true, logprobs: 1 });
  check('echoCompletion', scored);
  const scoredChoice = scored.choices[0];
  assert.equal(scoredChoice.text, 'Once upon a time');
  assert.equal(scoredChoice.finish_reason, 'length');
  assert.equal(scoredChoice.logprobs.tokens.join(''), 'Once upon a time');
  assert.equal(scoredChoice.logprobs.tokens.length, scored.usage.prompt_tokens);
  assert.equal(scoredChoice.logprobs.token_logprobs[0], null);
  assert.ok(scoredChoice.logprobs.token_logprobs.slice(1).every((x) => typeof x === 'number' && x <= 0));
  assert.equal(scored.usage.completion_tokens, 0);

  const messages = [{ role: 'user', content: 'Tell me a story.' }];
  const chat = await client.chat.completions.create({ model: 'demo', messages, max_tokens: 6, temperature: 0,
    logprobs: true, top_logprobs: 2 });
  check('chat', chat);

  const stream = await client.chat.completions.create({ model: 'demo', messages, max_tokens: 6, temperature: 0,
    stream: true, stream_options: { include_usage: true } });
  let text = '';
  let last;
  for await (const chunk of stream) {
    check('chunk', chunk);
    text += chunk.choices[0]?.delta?.content ?? '';
    last = chunk;
  }
  assert.equal(text, chat.choices[0].message.content);
  assert.deepEqual(last.usage.completion_tokens, chat.usage.completion_tokens);

  const cstream = await client.completions.create({ model: 'demo', prompt: 'Hello', max_tokens: 4, stream: true,
    stop: ['\n'] });
  let pieces = 0;
  for await (const chunk of cstream) pieces += chunk.choices.length;
  assert.ok(pieces >= 1);

  // The demo model was trained to end its turn: a greeting is answered and the turn ends with <|im_end|>.
  const hello = await client.chat.completions.create({ model: 'demo', messages: [{ role: 'user', content: 'Hello' }],
    max_tokens: 64, temperature: 0 });
  check('chat', hello);
  assert.equal(hello.choices[0].finish_reason, 'stop');
  assert.ok(hello.choices[0].message.content.length > 0);

  // Structured output: chat.completions.parse with a strict json_schema returns parsed objects, each valid for its
  // schema by ajv (formats checked by validators written here, not by the server's regexes).
  // Draft 2020-12 (prefixItems, $defs), the dialect of the schemas below.
  const Ajv2020 = require('ajv/dist/2020').default ?? require('ajv/dist/2020');
  const sajv = new Ajv2020({ allErrors: true, strict: false });
  const daysIn = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
  const validDate = (s) => {
    const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
    if (!m) return false;
    const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
    const leap = (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
    return mo >= 1 && mo <= 12 && d >= 1 && d <= daysIn[mo - 1] && !(mo === 2 && d === 29 && !leap);
  };
  const validTime = (s) => /^([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/.test(s);
  sajv.addFormat('date', validDate);
  sajv.addFormat('time', validTime);
  sajv.addFormat('date-time', (s) => s.length > 11 && s[10] === 'T' && validDate(s.slice(0, 10)) && validTime(s.slice(11)));
  sajv.addFormat('uuid', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
  sajv.addFormat('email', (s) => /^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(s));
  sajv.addFormat('ipv4', (s) => s.split('.').length === 4 && s.split('.').every((p) => /^(0|[1-9]\d{0,2})$/.test(p) && Number(p) <= 255));
  const str = (n) => ({ type: 'string', maxLength: n });
  const schemas = [
    { type: 'object', properties: { name: str(20), age: { type: 'integer', minimum: 0, maximum: 120 } },
      required: ['name', 'age'], additionalProperties: false },
    { type: 'object', properties: { city: str(16), temp: { type: 'number', minimum: -50, maximum: 60 },
      unit: { enum: ['C', 'F'] } }, required: ['city', 'temp', 'unit'], additionalProperties: false },
    { type: 'array', items: { type: 'object', properties: { id: { type: 'integer' }, done: { type: 'boolean' } },
      required: ['id', 'done'], additionalProperties: false }, minItems: 1, maxItems: 3 },
    { $defs: { node: { type: 'object', properties: { label: str(8), children: { type: 'array',
      items: { $ref: '#/$defs/node' }, maxItems: 2 } }, required: ['label', 'children'], additionalProperties: false } },
      $ref: '#/$defs/node' },
    { type: 'object', properties: { when: { type: 'string', format: 'date-time' }, id: { type: 'string', format: 'uuid' },
      day: { type: 'string', format: 'date' }, at: { type: 'string', format: 'time' },
      mail: { type: 'string', format: 'email' }, ip: { type: 'string', format: 'ipv4' } },
      required: ['when', 'id', 'day', 'at', 'mail', 'ip'], additionalProperties: false },
    { anyOf: [{ type: 'object', properties: { kind: { const: 'cat' }, lives: { type: 'integer', minimum: 1, maximum: 9 } },
      required: ['kind', 'lives'], additionalProperties: false }, { type: 'object', properties: { kind: { const: 'dog' },
      good: { type: 'boolean' } }, required: ['kind', 'good'], additionalProperties: false }] },
    { type: 'object', properties: { code: { type: 'string', pattern: '^[A-Z]{3}-[0-9]{2,4}$' },
      tags: { type: 'array', items: str(6), maxItems: 4 }, note: { type: ['string', 'null'], maxLength: 10 } },
      required: ['code', 'tags'], additionalProperties: false },
    { type: 'object', properties: { point: { type: 'array', prefixItems: [{ type: 'number' }, { type: 'number' }],
      items: false, minItems: 2 }, name: str(10) }, required: ['point'], additionalProperties: false },
    { allOf: [{ type: 'object', properties: { a: { type: 'integer', exclusiveMinimum: 0 } }, required: ['a'] },
      { properties: { b: { type: 'string', minLength: 1, maxLength: 5 } }, required: ['b'] }] },
    { type: 'object', properties: { scores: { type: 'object', additionalProperties: { type: 'integer' } } },
      required: ['scores'], additionalProperties: false },
    { type: 'object', properties: { order: { type: 'object', properties: { items: { type: 'array', items: {
      type: 'object', properties: { sku: str(8), qty: { type: 'integer', minimum: 1, maximum: 99 } },
      required: ['sku', 'qty'], additionalProperties: false }, maxItems: 2 }, paid: { type: 'boolean' } },
      required: ['items', 'paid'], additionalProperties: false } }, required: ['order'], additionalProperties: false },
    { type: 'string', enum: ['red', 'green', 'blue'] },
  ];
  let valid = 0;
  const unfinished = [];
  for (const [i, schema] of schemas.entries()) {
    const validate = sajv.compile(schema);
    for (const seed of [1, 2]) {
      let parsed;
      try {
        parsed = await client.chat.completions.parse({ model: 'demo', max_tokens: 300, seed,
          messages: [{ role: 'user', content: 'Answer in JSON.' }],
          response_format: { type: 'json_schema', json_schema: { name: `s${i}`, schema, strict: true } } });
      } catch (e) {
        if (e?.constructor?.name !== 'LengthFinishReasonError') throw e;
        unfinished.push(i);  // ran out of tokens: the demo model writes long strings where nothing bounds them
        continue;
      }
      const choice = parsed.choices[0];
      assert.equal(choice.finish_reason, 'stop');
      assert.ok(validate(choice.message.parsed), `schema ${i}: ${sajv.errorsText(validate.errors)}\n` +
                                                 choice.message.content);
      ++valid;
    }
  }
  // Every finished reply validated above; most must finish (unbounded map keys and trees may run out of tokens).
  assert.ok(valid >= 2 * schemas.length - 6, `only ${valid} of ${2 * schemas.length} replies finished (${unfinished})`);
  const regex = await client.completions.create({ model: 'demo', prompt: 'Code:', max_tokens: 20, guided_regex: '[A-Z]{2}[0-9]{3}' });
  assert.match(regex.choices[0].text, /^[A-Z]{2}[0-9]{3}$/);
  const choice = await client.chat.completions.create({ model: 'demo', messages, max_tokens: 10,
    guided_choice: ['left', 'right'] });
  assert.ok(['left', 'right'].includes(choice.choices[0].message.content));
  await assert.rejects(client.chat.completions.create({ model: 'demo', messages,
    response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'integer', multipleOf: 2 } } } }),
    (e) => e instanceof OpenAI.BadRequestError && /multipleOf/.test(e.message));

  await assert.rejects(client.completions.create({ model: 'nope', prompt: 'x' }),
    (e) => e instanceof OpenAI.NotFoundError && /nope/.test(e.message));
  await assert.rejects(client.completions.create({ model: 'demo', prompt: 'x', max_tokens: -1 }),
    (e) => e instanceof OpenAI.BadRequestError && /max_tokens/.test(e.message));
  const wrong = new OpenAI({ apiKey: 'wrong', baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
  await assert.rejects(wrong.models.list(), (e) => e instanceof OpenAI.AuthenticationError);
  console.log('openai client test: all passed');
} finally {
  server.kill('SIGTERM');
}
