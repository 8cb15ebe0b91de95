'use strict';
// The protocol engine: hello, the order of checks, unsupported, reconnect,
// malformed replies refused, the deadline backstop, the answer lines; and
// the process: one answer per line in order, nothing else on stdout, exit 0 at EOF.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawn } = require('child_process');
const kit = require('..');

const { reply, StoreError } = kit;
const HELLO = '{"id":0,"op":"hello","args":{"instance":"a","redis_url":"redis://127.0.0.1:1/","prefix":"sp:x:","opt_out":null},"clock_ms":2000000000000}';
const line = (id, op, args, clock = '2000000000000') => `{"id":${id},"op":${JSON.stringify(op)},"args":${args},"clock_ms":${clock}}`;

function fakeStore(overrides = {}) {
  const calls = [];
  const store = {
    name: 'fake',
    version: '0.1',
    contracts: ['lease', 'rate'],
    stateless: true,
    deadlineMs: 200,
    hello(h) {
      calls.push(['hello', h]);
    },
    reconnect(ctx) {
      calls.push(['reconnect', ctx]);
    },
    ops: {
      'lease.take': (a, ctx) => {
        calls.push(['lease.take', a, ctx]);
        return reply.granted(9223372036854775807n, ctx.clockMs + a.ttl_ms);
      },
      'rate.read': () => reply.rateState(0),
    },
    ...overrides,
  };
  return { store, calls };
}

async function connected(overrides) {
  const { store, calls } = fakeStore(overrides);
  const adapter = kit.createAdapter(store);
  const answer = JSON.parse(await adapter.handleLine(HELLO));
  const capabilities = [...(store.reconnect ? ['reconnect'] : []), 'stateless'];
  assert.deepEqual(answer, { id: 0, ok: { name: 'fake', version: '0.1', contracts: ['lease', 'rate'], capabilities } });
  return { adapter, calls, ask: async (l) => kit.parseJson(await adapter.handleLine(l)) };
}

test('hello: the store gets the validated arguments, its deadline and clock; the answer says what it is', async () => {
  const { calls } = await connected();
  const [, h] = calls[0];
  assert.equal(h.instance, 'a');
  assert.equal(h.redisUrl, 'redis://127.0.0.1:1/');
  assert.equal(h.prefix, 'sp:x:');
  assert.equal(h.optOut, null);
  assert.equal(h.optedOut, false);
  assert.equal(h.clockMs, 2000000000000n);
  assert.ok(h.deadline > kit.monotonicNow());
});

test('hello: state and capabilities as declared; none offered, none listed', async () => {
  const { store } = fakeStore({ state: 'durable', stateless: false, reconnect: undefined });
  const answer = JSON.parse(await kit.createAdapter(store).handleLine(HELLO));
  assert.deepEqual(answer.ok, { name: 'fake', version: '0.1', contracts: ['lease', 'rate'], state: 'durable' });
});

test('hello: a refusal is answered, and hello may be tried again', async () => {
  let refuse = true;
  const { store } = fakeStore({
    hello() {
      if (refuse) throw new StoreError('durability', 'short', ['appendfsync']);
    },
  });
  const adapter = kit.createAdapter(store);
  assert.deepEqual(JSON.parse(await adapter.handleLine(HELLO)), { id: 0, error: { kind: 'durability', message: 'short', settings: ['appendfsync'] } });
  assert.equal(adapter.connected, false);
  refuse = false;
  assert.ok(JSON.parse(await adapter.handleLine(HELLO)).ok);
  assert.equal(JSON.parse(await adapter.handleLine(HELLO)).error.kind, 'bad_request', 'a second hello');
});

test('hello again: a new case for a store that offers cases, after close ends the old one', async () => {
  const { store, calls } = fakeStore({
    cases: true,
    close(ctx) {
      calls.push(['close', ctx]);
    },
  });
  const adapter = kit.createAdapter(store);
  const first = JSON.parse(await adapter.handleLine(HELLO));
  assert.deepEqual(first.ok.capabilities, ['reconnect', 'stateless', 'cases']);
  // A bad hello is refused before the case it would end is closed.
  const bad = JSON.parse(await adapter.handleLine(HELLO.replace('"opt_out":null', '"opt_out":"yes"')));
  assert.equal(bad.error.kind, 'bad_request');
  assert.equal(calls.filter(([c]) => c === 'close').length, 0);
  const second = JSON.parse(await adapter.handleLine(HELLO.replace('sp:x:', 'sp:y:').replace('"id":0', '"id":1')));
  assert.ok(second.ok);
  const names = calls.map(([c]) => c);
  assert.deepEqual(names, ['hello', 'close', 'hello']);
  assert.equal(calls[1][1].prefix, 'sp:x:', 'close names the case that ends');
  assert.equal(calls[2][1].prefix, 'sp:y:');
  const op = kit.parseJson(await adapter.handleLine(line(2, 'lease.take', '{"tree":"t","holder":"a","ttl_ms":5}')));
  assert.ok(op.ok);
  assert.equal(calls[3][2].prefix, 'sp:y:', 'operations run in the new case');
  assert.throws(() => kit.createAdapter(fakeStore({ cases: true }).store), TypeError, 'cases needs close');
});

test('hello refused by a store that offers cases: what it opened is closed, and the next hello starts clean', async () => {
  const { store, calls } = fakeStore({
    cases: true,
    hello(h) {
      calls.push(['hello', h]);
      if (h.redisUrl.includes(':2/')) throw new StoreError('config_refused', 'CONFIG GET refused');
    },
    close(ctx) {
      calls.push(['close', ctx]);
    },
  });
  const adapter = kit.createAdapter(store);
  assert.ok(JSON.parse(await adapter.handleLine(HELLO)).ok);
  const refused = JSON.parse(await adapter.handleLine(HELLO.replace('sp:x:', 'sp:y:').replace(':1/', ':2/').replace('"id":0', '"id":1')));
  assert.equal(refused.error.kind, 'config_refused');
  assert.deepEqual(calls.map(([c]) => c), ['hello', 'close', 'hello', 'close']);
  assert.equal(calls[3][1].prefix, 'sp:y:', 'the refused case is the one closed');
  const next = JSON.parse(await adapter.handleLine(HELLO.replace('sp:x:', 'sp:z:').replace('"id":0', '"id":2')));
  assert.ok(next.ok);
  assert.deepEqual(calls.map(([c]) => c), ['hello', 'close', 'hello', 'close', 'hello'], 'nothing more to close');
});

test('hello: a misspelt opt-out or a non-Redis URL never reaches the store', async () => {
  const { store, calls } = fakeStore();
  const adapter = kit.createAdapter(store);
  for (const bad of [HELLO.replace('"opt_out":null', '"opt_out":"yes"'), HELLO.replace('redis://', 'http://')]) {
    assert.equal(JSON.parse(await adapter.handleLine(bad)).error.kind, 'bad_request');
  }
  assert.equal(calls.length, 0);
});

test('an operation before hello is bad_request', async () => {
  const { store, calls } = fakeStore();
  const adapter = kit.createAdapter(store);
  const a = JSON.parse(await adapter.handleLine(line(1, 'lease.take', '{"tree":"t","holder":"a","ttl_ms":1}')));
  assert.equal(a.error.kind, 'bad_request');
  assert.equal(calls.length, 0);
});

test('a valid operation reaches the store with exact arguments; the answer is exact', async () => {
  const { calls, ask } = await connected();
  const a = await ask(line('9007199254740993', 'lease.take', '{"tree":"ü","holder":"a","ttl_ms":1000}', '9223372036854774807'));
  assert.deepEqual(a, kit.parseJson('{"id":9007199254740993,"ok":{"granted":{"epoch":9223372036854775807,"expires_at_ms":9223372036854775807}}}'));
  const [, args, ctx] = calls[1];
  assert.deepEqual({ ...args }, { tree: 'ü', holder: 'a', ttl_ms: 1000n });
  assert.equal(ctx.op, 'lease.take');
  assert.equal(ctx.prefix, 'sp:x:');
});

test('bad input is refused before the store is called', async () => {
  const { calls, ask } = await connected();
  for (const bad of [
    line(1, 'lease.take', '{"tree":"t","holder":"a","ttl_ms":1.0}'),
    line(2, 'lease.take', '{"tree":"t","holder":"a","ttl_ms":1e3}'),
    line(3, 'lease.take', '{"tree":"","holder":"a","ttl_ms":1}'),
    line(4, 'lease.steal', '{"tree":"t"}'),
    line(5, 'lease.take', '{"tree":"t","holder":"a","ttl_ms":1,"ttl_ms":2}'),
    '{"id":6,"op":"lease.take","clock_ms":1}',
    '{"id":7,"op":"lease.take","args":{"tree":"t","holder":"a","ttl_ms":1}}',
    '{"id":8,"op":"lease.take","args":{"tree":"t","holder":"a","ttl_ms":1},"clock_ms":1.5}',
    '{"id":9,"op":7,"args":{},"clock_ms":1}',
  ]) {
    const a = await ask(bad);
    assert.equal(a.error.kind, 'bad_request', bad);
    assert.equal(typeof a.error.message, 'string');
  }
  assert.equal(calls.length, 1, 'only hello');
});

test('a line that is not a request is bad_request with a null id', async () => {
  const { ask } = await connected();
  for (const bad of ['not json', '[1]', '{"id":1', '{"op":"lease.read","args":{"tree":"t"},"clock_ms":1}', '{"id":-1,"op":"lease.read","args":{"tree":"t"},"clock_ms":1}']) {
    const a = await ask(bad);
    assert.equal(a.error.kind, 'bad_request', bad);
  }
  assert.equal((await ask('not json')).id, null);
});

test('an operation the store does not offer is unsupported; a contract it does not claim too', async () => {
  const { ask } = await connected();
  const release = await ask(line(1, 'lease.release', '{"tree":"t","holder":"a","epoch":1}'));
  assert.equal(release.error.kind, 'unsupported');
  const save = await ask(line(2, 'queue.save', '{"child":"c","depth":0,"payload":""}'));
  assert.equal(save.error.kind, 'unsupported');
  assert.match(save.error.message, /offers only lease, rate/);
});

test('kept executions are answered by the kit, never by the store', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kit-adapter-'));
  const saved = process.env.STOREPROOF_WORKDIR;
  process.env.STOREPROOF_WORKDIR = dir;
  try {
    const { ask, calls } = await connected();
    assert.deepEqual(await ask(line(1, 'lease.kept_executions', '{"tree":"t"}')), kit.parseJson('{"id":1,"ok":{"executions":[]}}'));
    assert.deepEqual(await ask(line(2, 'lease.keep_execution', '{"tree":"t","execution":"e1"}')), kit.parseJson('{"id":2,"ok":{"kept":{}}}'));
    await ask(line(3, 'lease.keep_execution', '{"tree":"t","execution":"e1"}'));
    assert.deepEqual(await ask(line(4, 'lease.kept_executions', '{"tree":"t"}')), kit.parseJson('{"id":4,"ok":{"executions":["e1"]}}'));
    assert.equal(calls.length, 1);
    assert.ok(fs.readdirSync(path.join(dir, 'node-kept-executions')).length === 1);
  } finally {
    if (saved === undefined) delete process.env.STOREPROOF_WORKDIR;
    else process.env.STOREPROOF_WORKDIR = saved;
    fs.rmSync(dir, { recursive: true });
  }
});

test('a reply the contract does not allow never goes out: unavailable instead', async () => {
  const wrong = [
    () => reply.kept(),
    () => ({ granted: { epoch: 1, expires_at_ms: 1.5 } }),
    () => ({ granted: { epoch: 1n, expires_at_ms: 2n }, busy: {} }),
    () => null,
    () => undefined,
  ];
  for (const w of wrong) {
    const { ask } = await connected({ ops: { 'lease.take': w } });
    const a = await ask(line(1, 'lease.take', '{"tree":"t","holder":"a","ttl_ms":1}'));
    assert.equal(a.error.kind, 'unavailable', String(w));
    assert.match(a.error.message, /does not allow/);
  }
});

test('a store that throws: its StoreError is answered; anything else is unavailable', async () => {
  for (const [thrown, kind] of [
    [new StoreError('store_full', 'full'), 'store_full'],
    [new StoreError('unsupported', 'not here'), 'unsupported'],
    [new TypeError('bug'), 'unavailable'],
    ['a string', 'unavailable'],
  ]) {
    const { ask } = await connected({
      ops: {
        'lease.take': async () => {
          throw thrown;
        },
      },
    });
    const a = await ask(line(1, 'lease.take', '{"tree":"t","holder":"a","ttl_ms":1}'));
    assert.equal(a.error.kind, kind);
  }
});

test('a store that ignores its deadline is answered unavailable all the same', async () => {
  const { ask } = await connected({ ops: { 'lease.take': () => new Promise(() => {}) } });
  const started = Date.now();
  const a = await ask(line(1, 'lease.take', '{"tree":"t","holder":"a","ttl_ms":1}'));
  assert.equal(a.error.kind, 'unavailable');
  assert.ok(Date.now() - started < 5000);
});

test('reconnect: routed to the store, takes no arguments, needs hello', async () => {
  const { store } = fakeStore();
  const fresh = kit.createAdapter(store);
  assert.equal(JSON.parse(await fresh.handleLine(line(1, 'reconnect', '{}'))).error.kind, 'bad_request');
  const { ask, calls } = await connected();
  assert.deepEqual(await ask(line(2, 'reconnect', '{}')), kit.parseJson('{"id":2,"ok":{"reconnected":{}}}'));
  assert.equal(calls[1][0], 'reconnect');
  assert.equal(calls[1][1].op, 'reconnect');
  assert.equal((await ask(line(3, 'reconnect', '{"x":1}'))).error.kind, 'bad_request');
  assert.equal((await ask(line(4, 'reconnect', 'null'))).error.kind, 'bad_request');
  const none = await connected({ reconnect: undefined });
  assert.equal((await none.ask(line(5, 'reconnect', '{}'))).error.kind, 'bad_request');
});

test('a store that is not one is refused at once', () => {
  for (const bad of [
    {},
    { name: 'x', version: '1', contracts: [], hello() {}, ops: {} },
    { name: 'x', version: '1', contracts: ['locks'], hello() {}, ops: {} },
    { name: 'x', version: '1', contracts: ['lease'], ops: {} },
    { name: 'x', version: '1', contracts: ['lease'], hello() {}, ops: { 'lease.steal': () => null } },
    { name: 'x', version: '1', contracts: ['lease'], hello() {}, ops: {}, state: 'disk' },
  ]) {
    assert.throws(() => kit.createAdapter(bad), TypeError);
  }
});

test('the process: one answer per line, in order, nothing else on stdout, exit 0 at EOF', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kit-proc-'));
  const script = path.join(dir, 'adapter.js');
  fs.writeFileSync(
    script,
    `const kit = require(${JSON.stringify(path.resolve(__dirname, '..'))});
     console.log('a stray log line');
     kit.run({ name: 'p', version: '1', contracts: ['lease'], hello() { console.log('hello log'); },
       ops: { 'lease.read': async (a) => { await new Promise((r) => setTimeout(r, a.tree === 'slow' ? 50 : 0)); return kit.reply.lease(null); } } });`,
  );
  const child = spawn(process.execPath, [script], { env: { ...process.env, STOREPROOF_WORKDIR: dir } });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const requests = [HELLO, line(1, 'lease.read', '{"tree":"slow"}'), '', line(2, 'lease.read', '{"tree":"fast"}'), 'garbage', line(3, 'lease.read', '{"tree":"t"}')];
  // All at once, one line split across writes, the last without its newline.
  const all = requests.join('\n');
  child.stdin.write(all.slice(0, 37));
  child.stdin.write(Buffer.from(all.slice(37)));
  child.stdin.end();
  const code = await new Promise((resolve) => child.on('exit', resolve));
  assert.equal(code, 0);
  const answers = out.split('\n');
  assert.equal(answers.pop(), '', 'every answer ends with a newline');
  assert.deepEqual(answers.map((a) => JSON.parse(a).id), [0, 1, 2, null, 3]);
  assert.match(err, /a stray log line/);
  assert.match(err, /hello log/);
  fs.rmSync(dir, { recursive: true });
});

test('the process: a line that is not UTF-8 is answered bad_request', async () => {
  const { store } = fakeStore();
  const { PassThrough } = require('stream');
  const input = new PassThrough();
  const output = new PassThrough();
  let out = '';
  output.on('data', (d) => (out += d));
  const done = kit.run(store, { input, output, exit: false });
  input.write(Buffer.concat([Buffer.from(HELLO + '\n'), Buffer.from([0xff, 0xfe, 0x0a])]));
  input.end();
  assert.equal(await done, 0);
  const answers = out.trim().split('\n').map((a) => JSON.parse(a));
  assert.equal(answers.length, 2);
  assert.ok(answers[0].ok);
  assert.equal(answers[1].error.kind, 'bad_request');
});
