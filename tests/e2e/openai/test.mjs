// The official openai client against the gateway (GATEWAY_URL), in front of fake_vllm.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const client = new OpenAI({ baseURL: `${process.env.GATEWAY_URL}/v1`, apiKey: 'unused', maxRetries: 0 });
const model = 'test-model';

test('lists models', async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  assert.deepEqual(ids.sort(), ['test-alias', 'test-model']);
});

test('chat completion', async () => {
  const r = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'hello' }], max_tokens: 3,
  });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].message.content, 'tok tok tok ');
  assert.equal(r.usage.completion_tokens, 3);
});

test('text completion', async () => {
  const r = await client.completions.create({ model, prompt: 'once upon a time', max_tokens: 2 });
  assert.equal(r.object, 'text_completion');
  assert.equal(r.choices[0].text, 'tok tok ');
});

test('streaming chat with usage', async () => {
  const stream = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'hello' }], max_tokens: 4, stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let usage = null;
  let chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    if (chunk.choices.length > 0) text += chunk.choices[0].delta.content ?? '';
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(text, 'tok tok tok tok ');
  assert.equal(chunks, 5);  // four tokens, then the usage chunk; [DONE] ends the stream
  assert.equal(usage.completion_tokens, 4);
});

test('streaming completion', async () => {
  const stream = await client.completions.create({ model, prompt: 'x', max_tokens: 3, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
  assert.equal(text, 'tok tok tok ');
});

test('unknown model is a NotFoundError with OpenAI fields', async () => {
  await assert.rejects(
    client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }),
    (err) => {
      assert.ok(err instanceof OpenAI.NotFoundError, `got ${err}`);
      assert.equal(err.status, 404);
      assert.equal(err.code, 'model_not_found');
      assert.equal(err.param, 'model');
      return true;
    });
});

test('a bad request is a BadRequestError', async () => {
  await assert.rejects(
    client.chat.completions.create({ model, messages: 'not a list' }),
    (err) => err instanceof OpenAI.BadRequestError && err.param === 'messages');
});

test('a server lost mid-stream surfaces as an error to the client', async () => {
  const stream = await client.chat.completions.create(
    { model, messages: [{ role: 'user', content: 'x' }], max_tokens: 10, stream: true },
    { headers: { 'x-fake-reset-after': '2' } });
  let received = 0;
  await assert.rejects((async () => {
    for await (const chunk of stream) received++;
  })(), (err) => err instanceof OpenAI.APIError && /mid-stream/.test(err.message));
  assert.equal(received, 2);
});
