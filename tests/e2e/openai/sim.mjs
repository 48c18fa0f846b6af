// The official openai client against `infergrid sim` directly (SIM_URL), as it would talk to
// vLLM: shapes, streaming, usage, errors, and prefix caching across a conversation's turns.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const client = new OpenAI({ baseURL: `${process.env.SIM_URL}/v1`, apiKey: 'unused', maxRetries: 0 });
const model = 'sim-model';
const messages = [{ role: 'user', content: 'Write a haiku about caches.' }];

test('lists the served model', async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  assert.deepEqual(ids, [model]);
});

test('chat completion honours max_tokens and reports usage', async () => {
  const r = await client.chat.completions.create({ model, messages, max_tokens: 6 });
  assert.equal(r.object, 'chat.completion');
  assert.match(r.id, /^chatcmpl-/);
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(r.choices[0].message.content.trim().split(/\s+/).length, 6);
  assert.equal(r.usage.completion_tokens, 6);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + 6);
});

test('streaming chat yields the same text as non-streaming, then usage', async () => {
  const whole = await client.chat.completions.create({ model, messages, max_tokens: 8 });
  const stream = await client.chat.completions.create({
    model, messages, max_tokens: 8, stream: true, stream_options: { include_usage: true },
  });
  let text = '';
  let usage = null;
  let role = null;
  let finish = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    if (chunk.choices.length === 0) continue;
    role = role ?? chunk.choices[0].delta.role;
    text += chunk.choices[0].delta.content ?? '';
    finish = chunk.choices[0].finish_reason ?? finish;
  }
  assert.equal(role, 'assistant');
  assert.equal(text, whole.choices[0].message.content);
  assert.equal(finish, 'length');
  assert.equal(usage.completion_tokens, 8);
  assert.equal(usage.prompt_tokens, whole.usage.prompt_tokens);
});

test('text completion, streaming and not', async () => {
  const r = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 3 });
  assert.equal(r.object, 'text_completion');
  assert.match(r.id, /^cmpl-/);
  assert.equal(r.usage.completion_tokens, 3);
  const stream = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 3, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
  assert.equal(text, r.choices[0].text);
});

test('the next turn of a conversation is served from the prefix cache', async () => {
  const system = { role: 'system', content: 'You are a careful assistant. '.repeat(20) };
  const turn1 = [system, { role: 'user', content: 'First question?' }];
  const a1 = await client.chat.completions.create({ model, messages: turn1, max_tokens: 20 });
  const turn2 = [...turn1, a1.choices[0].message, { role: 'user', content: 'And a second?' }];
  const a2 = await client.chat.completions.create({ model, messages: turn2, max_tokens: 5 });
  const cached = a2.usage.prompt_tokens_details.cached_tokens;
  // Everything up to the last full 16-token block of turn 1's prompt and reply is reused.
  const reusable = a1.usage.prompt_tokens + a1.usage.completion_tokens;
  assert.ok(cached >= Math.floor(reusable / 16) * 16 - 16, `cached ${cached} of ${reusable}`);
  assert.ok(cached < a2.usage.prompt_tokens);
});

test('an unknown model is a NotFoundError', async () => {
  await assert.rejects(
    client.chat.completions.create({ model: 'nope', messages, max_tokens: 1 }),
    (e) => e instanceof OpenAI.NotFoundError && e.status === 404 && /does not exist/.test(e.message));
});

test('a prompt over max_model_len is a BadRequestError', async () => {
  await assert.rejects(
    client.completions.create({ model, prompt: 'word '.repeat(3000), max_tokens: 1 }),
    (e) => e instanceof OpenAI.BadRequestError && /maximum context length is 2048/.test(e.message));
});
