'use strict';
// The example store (adapters/node/example) end to end, as storeproof runs
// it: a process per instance speaking the protocol to a real redis-server
// (skipped where redis-server or Debian's node-redis is missing; run
// scripts/setup). And its size: at most 300 lines of the author's own code.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const net = require('net');
const readline = require('readline');
const { spawn, execFileSync, spawnSync } = require('child_process');
const kit = require('..');

const EXAMPLE = path.resolve(__dirname, '..', 'example');
const NODE_PATH = process.env.STOREPROOF_NODE_PATH || '/usr/share/nodejs';

/**
 * The author's own code of the example: adapter.js and lua/*.lua, without
 * blank lines, comment lines (// … and /* … *\/ blocks in JS, -- … in Lua)
 * and the #! line.
 */
function authorLines() {
  const js = (text) => {
    let n = 0;
    let block = false;
    for (const raw of text.split('\n')) {
      const s = raw.trim();
      if (block) {
        if (s.includes('*/')) {
          block = false;
          if (s.split('*/')[1].trim()) n++;
        }
        continue;
      }
      if (!s || s.startsWith('//') || s.startsWith('#!')) continue;
      if (s.startsWith('/*')) {
        if (!s.includes('*/')) block = true;
        else if (s.split('*/')[1].trim()) n++;
        continue;
      }
      n++;
    }
    return n;
  };
  const lua = (text) => text.split('\n').filter((l) => l.trim() && !l.trim().startsWith('--')).length;
  const jsLines = js(fs.readFileSync(path.join(EXAMPLE, 'adapter.js'), 'utf8'));
  const dir = path.join(EXAMPLE, 'lua');
  const luaLines = fs.readdirSync(dir).filter((f) => f.endsWith('.lua')).reduce((n, f) => n + lua(fs.readFileSync(path.join(dir, f), 'utf8')), 0);
  return { jsLines, luaLines, total: jsLines + luaLines };
}

test('the example is at most 300 lines of the author\'s own code', (t) => {
  const { jsLines, luaLines, total } = authorLines();
  t.diagnostic(`example: ${jsLines} lines of JavaScript + ${luaLines} of Lua = ${total}`);
  assert.ok(total <= 300, `${total} lines`);
});

test('the README shows the whole example as it is, and its true size', () => {
  const readme = fs.readFileSync(path.join(EXAMPLE, '..', 'README.md'), 'utf8');
  const adapter = fs.readFileSync(path.join(EXAMPLE, 'adapter.js'), 'utf8');
  assert.ok(readme.includes('```js\n' + adapter + '```'), 'README.md shows example/adapter.js verbatim');
  assert.ok(readme.includes(fs.readFileSync(path.join(EXAMPLE, 'lua', 'lease_take.lua'), 'utf8')));
  const { jsLines, luaLines, total } = authorLines();
  assert.ok(readme.includes(`${total} lines of the author's own code for all three contracts: ${jsLines} of\nJavaScript`), 'README.md states the line count');
  assert.ok(readme.includes(`and ${luaLines} of Lua`));
});

test('the example has one Lua script per Redis operation', () => {
  const names = fs.readdirSync(path.join(EXAMPLE, 'lua')).filter((f) => f.endsWith('.lua') && !f.startsWith('_'));
  const ops = kit.OPS.filter((op) => /^(lease|queue|rate)\./.test(op) && !op.includes('keep') && !op.includes('kept'));
  assert.deepEqual(names.sort(), ops.map((op) => `${op.replace('.', '_')}.lua`).sort());
});

// ---------------------------------------------------------------------------
// End to end

const haveRedis = spawnSync('redis-server', ['--version']).status === 0;
const haveNodeRedis = fs.existsSync(path.join(NODE_PATH, 'redis', 'package.json'));
const skip = !haveRedis ? 'redis-server is not installed (scripts/setup)' : !haveNodeRedis ? `node-redis is not under ${NODE_PATH} (scripts/setup)` : false;

let workdir;
const servers = [];

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function startServer(...extra) {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(workdir, 'redis-'));
  const proc = spawn('redis-server', [
    '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--dir', dir, '--daemonize', 'no',
    '--appendonly', 'yes', '--appendfsync', 'always', '--no-appendfsync-on-rewrite', 'no', '--maxmemory-policy', 'noeviction',
    ...extra,
  ], { stdio: 'ignore' });
  servers.push(proc);
  for (let i = 0; i < 200; i++) {
    if (spawnSync('redis-cli', ['-p', String(port), 'PING']).stdout.toString().trim() === 'PONG') return { port, proc };
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('redis-server did not start');
}

const cli = (port, ...args) => execFileSync('redis-cli', ['-p', String(port), ...args]).toString().trim();

const instances = [];

/** One adapter process, as storeproof runs it. */
class Instance {
  constructor(script = path.join(EXAMPLE, 'adapter.js')) {
    instances.push(this);
    this.proc = spawn(process.execPath, [script], {
      env: { ...process.env, NODE_PATH, STOREPROOF_WORKDIR: workdir, STOREPROOF_INSTANCE: 'a' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.stderr = '';
    this.proc.stderr.on('data', (d) => (this.stderr += d));
    this.lines = readline.createInterface({ input: this.proc.stdout })[Symbol.asyncIterator]();
    this.id = 0;
  }

  async request(op, args, clockMs = '2000000000000') {
    const id = this.id++;
    const argsText = typeof args === 'string' ? args : kit.stringifyJson(args);
    this.proc.stdin.write(`{"id":${id},"op":"${op}","args":${argsText},"clock_ms":${clockMs}}\n`);
    const { value, done } = await this.lines.next();
    assert.ok(!done, `the adapter exited: ${this.stderr}`);
    const answer = kit.parseJson(value);
    assert.equal(answer.id, BigInt(id));
    return answer;
  }

  async ok(op, args, clockMs) {
    const a = await this.request(op, args, clockMs);
    assert.ok(a.ok, `${op} ${kit.stringifyJson(args)}: ${kit.stringifyJson(a)}\n${this.stderr}`);
    return kit.stringifyJson(a.ok);
  }

  async error(op, args, clockMs) {
    const a = await this.request(op, args, clockMs);
    assert.ok(a.error, `${op}: expected an error, got ${kit.stringifyJson(a)}`);
    return a.error;
  }

  hello(port, prefix, optOut = null) {
    return this.request('hello', { instance: 'a', redis_url: `redis://127.0.0.1:${port}/`, prefix, opt_out: optOut });
  }

  close() {
    this.proc.stdin.end();
    if (this.proc.exitCode !== null) return Promise.resolve(this.proc.exitCode);
    return new Promise((resolve) => this.proc.on('exit', resolve));
  }
}

let durable;
let prefixes = 0;
const prefix = () => `sp:nodetest:${prefixes++}:`;
async function connected(port = durable.port) {
  const a = new Instance();
  const p = prefix();
  const h = await a.hello(port, p);
  assert.ok(h.ok, kit.stringifyJson(h));
  a.prefix = p;
  return a;
}

test('end to end', { skip, timeout: 120000 }, async (t) => {
  workdir = fs.mkdtempSync(path.join(os.tmpdir(), 'storeproof-node-example-'));
  durable = await startServer('--enable-debug-command', 'local');
  t.after(async () => {
    // As storeproof does at the end: every adapter and server killed.
    for (const i of instances) i.proc.kill('SIGKILL');
    for (const s of servers) s.kill('SIGKILL');
    fs.rmSync(workdir, { recursive: true, force: true });
  });

  await t.test('hello answers what the store is', async () => {
    const a = new Instance();
    const h = await a.hello(durable.port, prefix());
    assert.equal(kit.stringifyJson(h.ok), '{"name":"storeproof-node-example","version":"1.0","contracts":["lease","queue","rate"],"capabilities":["reconnect","stateless","cases"]}');
    assert.equal(await a.close(), 0, 'exit 0 at EOF');
  });

  await t.test('lease: take, busy, renew, lost, release, read; epochs compared exactly', async () => {
    const a = await connected();
    assert.match(await a.ok('lease.take', { tree: 't', holder: 'a', ttl_ms: 60000n }), /^\{"granted":\{"epoch":1,"expires_at_ms":\d+\}\}$/);
    assert.match(await a.ok('lease.take', { tree: 't', holder: 'b', ttl_ms: 1000n }), /^\{"busy":\{"holder":"a","epoch":1,"expires_at_ms":\d+\}\}$/);
    assert.match(await a.ok('lease.renew', { tree: 't', holder: 'a', epoch: 1n, ttl_ms: 60000n }), /^\{"renewed":\{"expires_at_ms":\d+\}\}$/);
    assert.equal(await a.ok('lease.renew', { tree: 't', holder: 'a', epoch: 9223372036854775807n, ttl_ms: 1000n }), '{"lost":{"holder":"a","epoch":1}}');
    assert.equal(await a.ok('lease.release', { tree: 't', holder: 'a', epoch: 9223372036854775807n }), '{"not_held":{}}');
    assert.equal(await a.ok('lease.release', { tree: 't', holder: 'a', epoch: 1n }), '{"released":{}}');
    assert.equal(await a.ok('lease.renew', { tree: 't', holder: 'a', epoch: 1n, ttl_ms: 1000n }), '{"lost":{"holder":null,"epoch":null}}');
    assert.match(await a.ok('lease.read', { tree: 't' }), /^\{"lease":\{"holder":"a","epoch":1,"expires_at_ms":\d+,"live":false\}\}$/);
    assert.match(await a.ok('lease.take', { tree: 't', holder: 'b', ttl_ms: 1000n }), /"epoch":2/);
    assert.equal(await a.ok('lease.read', { tree: 'never' }), '{"lease":null}');
    await a.close();
  });

  await t.test('queue: claim order, attempts, completion; a depth of 2^63 − 1 exact', async () => {
    const a = await connected();
    assert.equal(await a.ok('queue.save', { child: 'shallow', depth: 0n, payload: '' }), '{"saved":{}}');
    assert.equal(await a.ok('queue.save', { child: 'deep', depth: 9223372036854775807n, payload: 'ü' }), '{"saved":{}}');
    assert.equal(await a.ok('queue.save', { child: 'deep', depth: 1n, payload: 'x' }), '{"exists":{"state":"queued"}}');
    assert.equal(await a.ok('queue.claim', { instance: 'i', claim_ttl_ms: 60000n }), '{"claimed":{"child":"deep","depth":9223372036854775807,"payload":"ü","attempt":1}}');
    assert.equal(await a.ok('queue.claim', { instance: 'j', claim_ttl_ms: 60000n }), '{"claimed":{"child":"shallow","depth":0,"payload":"","attempt":1}}');
    assert.equal(await a.ok('queue.claim', { instance: 'j', claim_ttl_ms: 60000n }), '{"empty":{}}');
    assert.equal(await a.ok('queue.complete', { child: 'deep', instance: 'j', attempt: 1n }), '{"not_claimer":{"claimer":"i","attempt":1}}');
    assert.equal(await a.ok('queue.complete', { child: 'deep', instance: 'i', attempt: 1n }), '{"completed":{}}');
    assert.equal(await a.ok('queue.read', { child: 'deep' }), '{"child":{"state":"done","claimer":"i","attempt":1,"depth":9223372036854775807}}');
    assert.equal(await a.ok('queue.complete', { child: 'nope', instance: 'i', attempt: 0n }), '{"not_claimer":{"claimer":null,"attempt":null}}');
    assert.equal(await a.ok('queue.read', { child: 'nope' }), '{"child":null}');
    await a.ok('queue.save', { child: 'fresh', depth: 3n, payload: 'p' });
    assert.equal(await a.ok('queue.complete', { child: 'fresh', instance: 'i', attempt: 0n }), '{"not_claimer":{"claimer":null,"attempt":0}}');
    await a.close();
  });

  await t.test('rate: slots, hits and pauses on the instance clock; until_ms of 2^63 − 1 exact', async () => {
    const a = await connected();
    const now = '2000000000000';
    assert.equal(await a.ok('rate.acquire_slot', { provider: 'p', holder: 'h', limit: 1n, ttl_ms: 1000n }, now), '{"acquired":{"slot":"1"}}');
    assert.equal(await a.ok('rate.acquire_slot', { provider: 'p', holder: 'h', limit: 1n, ttl_ms: 1000n }, now), '{"full":{"retry_at_ms":2000000001000}}');
    assert.equal(await a.ok('rate.read', { provider: 'p' }, now), '{"slots_in_use":1,"paused_until_ms":null}');
    assert.equal(await a.ok('rate.acquire_slot', { provider: 'p', holder: 'h', limit: 1n, ttl_ms: 1000n }, '2000000001000'), '{"acquired":{"slot":"2"}}');
    assert.equal(await a.ok('rate.release_slot', { provider: 'p', slot: '2' }, '2000000001000'), '{"released":{}}');
    assert.equal(await a.ok('rate.release_slot', { provider: 'p', slot: '2' }, '2000000001000'), '{"unknown":{}}');
    assert.equal(await a.ok('rate.hit', { provider: 'q', limit: 2n, window_ms: 1000n }, now), '{"allowed":{"remaining":1}}');
    assert.equal(await a.ok('rate.hit', { provider: 'q', limit: 2n, window_ms: 1000n }, '2000000000500'), '{"allowed":{"remaining":0}}');
    assert.equal(await a.ok('rate.hit', { provider: 'q', limit: 2n, window_ms: 1000n }, '2000000000999'), '{"limited":{"retry_at_ms":2000000001000}}');
    assert.equal(await a.ok('rate.hit', { provider: 'q', limit: 2n, window_ms: 1000n }, '2000000001000'), '{"allowed":{"remaining":0}}');
    assert.equal(await a.ok('rate.pause', { provider: 'q', until_ms: 9223372036854775807n }, now), '{"paused":{"until_ms":9223372036854775807}}');
    assert.equal(await a.ok('rate.pause', { provider: 'q', until_ms: 9223372036854775806n }, now), '{"paused":{"until_ms":9223372036854775807}}');
    assert.equal(await a.ok('rate.hit', { provider: 'q', limit: 2n, window_ms: 1000n }, now), '{"paused":{"until_ms":9223372036854775807}}');
    assert.equal(await a.ok('rate.read', { provider: 'q' }, now), '{"slots_in_use":0,"paused_until_ms":9223372036854775807}');
    assert.equal(await a.ok('rate.read', { provider: 'never' }, now), '{"slots_in_use":0,"paused_until_ms":null}');
    await a.close();
  });

  await t.test('odd ids stay inside the prefix; kept executions never reach Redis', async () => {
    const a = await connected();
    const b = await connected();
    b.prefix = a.prefix;
    const odd = ['*', 'a:{b}', '?[x]\\', '../..', 'sp:', 'ü→漢', 'x'.repeat(1024)];
    for (const id of odd) {
      await a.ok('lease.take', { tree: id, holder: id, ttl_ms: 1000n });
      await a.ok('queue.save', { child: id, depth: 1n, payload: id });
      await a.ok('rate.hit', { provider: id, limit: 5n, window_ms: 1000n });
      await a.ok('lease.keep_execution', { tree: id, execution: `exec-${id}` });
    }
    const keys = cli(durable.port, '--scan').split('\n').filter(Boolean);
    assert.ok(keys.length > 0);
    const others = keys.filter((k) => !k.startsWith('sp:nodetest:'));
    assert.deepEqual(others, []);
    const dump = execFileSync('redis-cli', ['-p', String(durable.port), '--no-raw', 'EVAL',
      "local out = {} for _, k in ipairs(redis.call('KEYS', '*')) do local t = redis.call('TYPE', k).ok if t == 'hash' then for _, v in ipairs(redis.call('HGETALL', k)) do table.insert(out, v) end elseif t == 'zset' then for _, v in ipairs(redis.call('ZRANGE', k, 0, -1)) do table.insert(out, v) end elseif t == 'string' then table.insert(out, redis.call('GET', k)) end end return out", '0']).toString();
    assert.doesNotMatch(dump, /exec-/);
    // Another process of the same check lists them, in order.
    const c = new Instance();
    await c.hello(durable.port, a.prefix);
    assert.equal(await c.ok('lease.kept_executions', { tree: '*' }), '{"executions":["exec-*"]}');
    await a.close();
    await b.close();
    await c.close();
  });

  await t.test('a server with short durability is refused, naming each setting; the opt-out accepts it', async () => {
    const everysec = await startServer('--appendfsync', 'everysec', '--maxmemory-policy', 'allkeys-lru');
    const a = new Instance();
    const h = await a.hello(everysec.port, prefix());
    assert.equal(h.error.kind, 'durability');
    assert.deepEqual(h.error.settings, ['appendfsync', 'maxmemory-policy']);
    const b = new Instance();
    assert.ok((await b.hello(everysec.port, prefix(), 'acknowledged-writes-may-be-lost')).ok);
    const c = new Instance();
    assert.equal((await c.hello(everysec.port, prefix(), 'acknowledged-writes-may-be-lots')).error.kind, 'bad_request');
    await Promise.all([a.close(), b.close(), c.close()]);
  });

  await t.test('no server: unavailable', async () => {
    const a = new Instance();
    const h = await a.hello(await freePort(), prefix());
    assert.equal(h.error.kind, 'unavailable');
    await a.close();
  });

  await t.test('forgotten scripts are loaded again (NOSCRIPT), a killed connection recovers', async () => {
    const a = await connected();
    cli(durable.port, 'SCRIPT', 'FLUSH');
    assert.match(await a.ok('lease.take', { tree: 't', holder: 'a', ttl_ms: 60000n }), /granted/);
    cli(durable.port, 'CLIENT', 'KILL', 'TYPE', 'normal');
    const r = await a.request('lease.read', { tree: 't' });
    if (r.error) assert.equal(r.error.kind, 'unavailable');
    assert.match(await a.ok('lease.read', { tree: 't' }), /"holder":"a"/);
    await a.close();
  });

  await t.test('reconnect: a new connection with every script loaded, only set-up commands', async () => {
    const a = await connected();
    await a.ok('lease.take', { tree: 't', holder: 'a', ttl_ms: 60000n });
    cli(durable.port, 'CONFIG', 'RESETSTAT');
    cli(durable.port, 'SCRIPT', 'FLUSH');
    assert.equal(await a.ok('reconnect', {}), '{"reconnected":{}}');
    const scripts = kit.luaScripts({ dir: path.join(EXAMPLE, 'lua'), prelude: '_prelude.lua' });
    assert.deepEqual(cli(durable.port, 'SCRIPT', 'EXISTS', ...Object.values(scripts.sha)).split('\n'), Object.values(scripts.sha).map(() => '1'));
    const stats = cli(durable.port, 'INFO', 'commandstats');
    const commands = [...stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)].map((m) => m[1]).filter((c) => !/^(config|script|info)\|?/.test(c) || /^script\|load$/.test(c));
    assert.deepEqual(commands.filter((c) => c !== 'script|load'), [], `sent: ${stats}`);
    const evals = () => Number((/cmdstat_evalsha:calls=(\d+)/.exec(cli(durable.port, 'INFO', 'commandstats')) || [0, 0])[1]);
    const before = evals();
    assert.match(await a.ok('lease.read', { tree: 't' }), /"holder":"a"/);
    assert.equal(evals() - before, 1, 'one EVALSHA, no NOSCRIPT');
    await a.close();
  });

  await t.test('a server that does not answer: unavailable within the deadline, then recovered', async () => {
    const a = await connected();
    const sleeper = spawn('redis-cli', ['-p', String(durable.port), 'DEBUG', 'SLEEP', '6'], { stdio: 'ignore' });
    await new Promise((r) => setTimeout(r, 200));
    const started = Date.now();
    const e = await a.error('lease.read', { tree: 't' });
    const took = Date.now() - started;
    assert.equal(e.kind, 'unavailable');
    assert.ok(took < 6000, `${took} ms`);
    await new Promise((r) => sleeper.on('exit', r));
    assert.match(await a.ok('lease.read', { tree: 't' }), /"lease"/);
    await a.close();
  });

  await t.test('a server gone for good: unavailable, again and again', async () => {
    const gone = await startServer();
    const a = await connected(gone.port);
    await a.ok('lease.take', { tree: 't', holder: 'a', ttl_ms: 60000n });
    gone.proc.kill('SIGKILL');
    await new Promise((r) => gone.proc.on('exit', r));
    assert.equal((await a.error('lease.read', { tree: 't' })).kind, 'unavailable');
    assert.equal((await a.error('lease.read', { tree: 't' })).kind, 'unavailable');
    await a.close();
  });
});
