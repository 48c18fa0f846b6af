// The official openai client against a gateway with tenants (QOS_GATEWAY_URL): its errors map
// the gateway's refusals onto the client's own classes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const baseURL = `${process.env.QOS_GATEWAY_URL}/v1`;
const model = 'test-model';
const ask = (client) => client.chat.completions.create({
  model, messages: [{ role: 'user', content: 'hello' }], max_tokens: 2,
});

test('an unknown API key is an AuthenticationError', async () => {
  const client = new OpenAI({ baseURL, apiKey: 'sk-nobody', maxRetries: 0 });
  await assert.rejects(ask(client), (err) => {
    assert.ok(err instanceof OpenAI.AuthenticationError, `got ${err}`);
    assert.equal(err.status, 401);
    assert.equal(err.code, 'invalid_api_key');
    return true;
  });
});

test('a tenant over its request rate gets a RateLimitError with Retry-After', async () => {
  const client = new OpenAI({ baseURL, apiKey: 'sk-limited-tenant', maxRetries: 0 });
  const r = await ask(client);
  assert.equal(r.object, 'chat.completion');
  await assert.rejects(ask(client), (err) => {
    assert.ok(err instanceof OpenAI.RateLimitError, `got ${err}`);
    assert.equal(err.status, 429);
    assert.equal(err.code, 'rate_limit_exceeded');
    assert.match(err.message, /requestsPerMinute/);
    // A Headers object in newer clients, a plain object in older ones.
    const retry = err.headers?.get?.('retry-after') ?? err.headers?.['retry-after'];
    assert.ok(Number(retry) >= 1, `retry-after ${retry}`);
    return true;
  });
});
