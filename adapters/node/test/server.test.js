'use strict';
// The server checks of §7 (checkServer, assessServer) decided exactly as the
// Python example's `assess`, the error classification, the deadline helper
// and the Lua scripts helper (NOSCRIPT → load and retry once, nothing else
// retried) — all through fake `send` functions, no server needed.
const test = require('node:test');
const assert = require('node:assert/strict');
const kit = require('..');

const { checkServer, assessServer, StoreError, errorReply } = kit;

const GOOD_CONFIG = {
  appendonly: 'yes',
  appendfsync: 'always',
  'no-appendfsync-on-rewrite': 'no',
  'maxmemory-policy': 'noeviction',
};
const INFO_MASTER = '# Replication\r\nrole:master\r\nconnected_slaves:0\r\n';
const INFO_SLAVE = '# Replication\r\nrole:slave\r\nmaster_host:127.0.0.1\r\n';
const INFO_STANDALONE = '# Cluster\r\ncluster_enabled:0\r\n';
const INFO_CLUSTER = '# Cluster\r\ncluster_enabled:1\r\n';

/** A fake server: answers INFO and CONFIG GET, or what `override` says (a value, or a thrown error). */
function server({ replication = INFO_MASTER, cluster = INFO_STANDALONE, config = GOOD_CONFIG, override = {} } = {}) {
  const sent = [];
  const send = async (argv) => {
    sent.push(argv.join(' '));
    const name = argv.join(' ');
    if (name in override) {
      const v = override[name];
      if (v instanceof Error) throw v;
      return v;
    }
    if (name === 'INFO replication') return replication;
    if (name === 'INFO cluster') return cluster;
    if (argv[0] === 'CONFIG' && argv[1] === 'GET') return argv[2] in config ? [argv[2], config[argv[2]]] : [];
    throw errorReply(`ERR unexpected ${name}`);
  };
  return { send, sent };
}

async function refusal(fake, optOut = null) {
  try {
    await checkServer(fake.send, optOut);
  } catch (e) {
    assert.ok(e instanceof StoreError, `a StoreError, got ${e}`);
    return e;
  }
  return null;
}

test('a durable primary is accepted, after reading exactly the facts', async () => {
  const fake = server();
  assert.equal(await refusal(fake), null);
  assert.deepEqual(fake.sent, [
    'INFO replication',
    'INFO cluster',
    'CONFIG GET appendonly',
    'CONFIG GET appendfsync',
    'CONFIG GET no-appendfsync-on-rewrite',
    'CONFIG GET maxmemory-policy',
  ]);
});

test('durability: one error naming every short setting, its value and fix, and the opt-out', async () => {
  const e = await refusal(server({ config: { ...GOOD_CONFIG, appendfsync: 'everysec', 'maxmemory-policy': 'allkeys-lru' } }));
  assert.equal(e.kind, 'durability');
  assert.deepEqual(e.settings, ['appendfsync', 'maxmemory-policy']);
  assert.equal(
    e.message,
    'the server may lose acknowledged writes: appendfsync is everysec (set appendfsync always); maxmemory-policy is allkeys-lru (set maxmemory-policy noeviction). Set them, or pass --opt-out acknowledged-writes-may-be-lost to accept that acknowledged writes may be lost',
  );
  const all = await refusal(server({ config: { appendonly: 'no', appendfsync: 'no', 'no-appendfsync-on-rewrite': 'yes' } }));
  assert.deepEqual(all.settings, ['appendonly', 'appendfsync', 'no-appendfsync-on-rewrite', 'maxmemory-policy']);
  assert.match(all.message, /CONFIG GET does not report maxmemory-policy \(set maxmemory-policy noeviction\)/);
  assert.deepEqual(all.toWire(), { kind: 'durability', message: all.message, settings: all.settings });
  // Values are compared without case or surrounding blanks, as assumptions.rs does.
  assert.equal(await refusal(server({ config: { ...GOOD_CONFIG, appendonly: 'YES ' } })), null);
});

test('the opt-out accepts short durability, and nothing else', async () => {
  const short = { config: { ...GOOD_CONFIG, appendonly: 'no' } };
  assert.equal(await refusal(server(short), 'acknowledged-writes-may-be-lost'), null);
  assert.equal(await refusal(server(short), true), null);
  assert.equal((await refusal(server(short), false)).kind, 'durability');
  assert.equal((await refusal(server(short), null)).kind, 'durability');
});

test('deployment: a replica or a cluster node is refused, opted out or not', async () => {
  for (const optOut of [null, 'acknowledged-writes-may-be-lost']) {
    const replica = await refusal(server({ replication: INFO_SLAVE }), optOut);
    assert.equal(replica.kind, 'deployment');
    assert.deepEqual(replica.settings, ['role']);
    assert.match(replica.message, /role:slave/);
    assert.match(replica.message, /There is no opt-out for deployment/);
    const cluster = await refusal(server({ cluster: INFO_CLUSTER }), optOut);
    assert.deepEqual(cluster.settings, ['cluster_enabled']);
    assert.match(cluster.message, /cluster_enabled:1/);
    const both = await refusal(server({ replication: INFO_SLAVE, cluster: INFO_CLUSTER }), optOut);
    assert.deepEqual(both.settings, ['role', 'cluster_enabled']);
  }
  // Deployment comes first, and names short durability too when not opted out.
  const e = await refusal(server({ replication: INFO_SLAVE, config: { ...GOOD_CONFIG, appendfsync: 'everysec' } }));
  assert.equal(e.kind, 'deployment');
  assert.match(e.message, /Durability is also short: appendfsync is everysec/);
  // Facts that are not reported count as short.
  assert.deepEqual((await refusal(server({ replication: '# Replication\r\n', cluster: '' }))).settings, ['role', 'cluster_enabled']);
});

test('a refused INFO or CONFIG GET is config_refused, naming the command', async () => {
  const noperm = errorReply("NOPERM this user has no permissions to run the 'config|get' command");
  let e = await refusal(server({ override: { 'CONFIG GET appendonly': noperm } }));
  assert.equal(e.kind, 'config_refused');
  assert.match(e.message, /ACL refuses CONFIG GET/);
  e = await refusal(server({ override: { 'INFO replication': errorReply("ERR unknown command 'INFO', with args beginning with: 'replication'") } }));
  assert.equal(e.kind, 'config_refused');
  assert.match(e.message, /does not know INFO replication/);
  e = await refusal(server({ override: { 'INFO cluster': errorReply('ERR something else') } }));
  assert.equal(e.kind, 'config_refused');
  // Deployment is still judged before a refused CONFIG GET.
  e = await refusal(server({ replication: INFO_SLAVE, override: { 'CONFIG GET appendfsync': noperm } }));
  assert.equal(e.kind, 'deployment');
});

test('no connection, LOADING or BUSY is unavailable', async () => {
  for (const error of [
    Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }),
    new Error('Socket closed unexpectedly'),
    errorReply('LOADING Redis is loading the dataset in memory'),
    errorReply('BUSY Redis is busy running a script'),
    errorReply('MASTERDOWN Link with MASTER is down'),
    new StoreError('unavailable', 'the Redis server did not answer within 5000 ms'),
  ]) {
    for (const where of ['INFO replication', 'INFO cluster', 'CONFIG GET maxmemory-policy']) {
      const e = await refusal(server({ override: { [where]: error } }));
      assert.equal(e.kind, 'unavailable', `${where}: ${error.message}`);
    }
  }
});

test('replies in other shapes: Buffers, INFO as an object, CONFIG GET as a map', async () => {
  const send = async (argv) => {
    if (argv[1] === 'replication') return Buffer.from(INFO_MASTER);
    if (argv[1] === 'cluster') return { cluster_enabled: '0' };
    return new Map([[Buffer.from(argv[2]), Buffer.from(GOOD_CONFIG[argv[2]])]]);
  };
  await checkServer(send, null);
  assert.throws(() => assessServer({ replication: new Map([['role', 'slave']]), cluster: INFO_STANDALONE, config: GOOD_CONFIG, configRefused: null }, false),
    (e) => e.kind === 'deployment');
});

test('error replies are told from failed connections', () => {
  class ErrorReply extends Error {} // node-redis's class name
  class ReplyError extends Error {} // ioredis's
  assert.equal(kit.isErrorReply(new ErrorReply('ERR x')), true);
  assert.equal(kit.isErrorReply(new ReplyError('ERR x')), true);
  assert.equal(kit.isErrorReply(errorReply('ERR x')), true);
  assert.equal(kit.isErrorReply(Object.assign(new Error('ERR x'), { isErrorReply: true })), true);
  assert.equal(kit.isErrorReply(new Error('connect ECONNREFUSED')), false);
  assert.equal(kit.isErrorReply('ERR x'), false);
  assert.equal(kit.redisFailure('lease.take', errorReply("OOM command not allowed when used memory > 'maxmemory'.")).kind, 'store_full');
  assert.equal(kit.redisFailure('lease.take', errorReply("ERR Error running script: OOM command not allowed when used memory > 'maxmemory'")).kind, 'store_full');
  const stopped = kit.redisFailure('lease.take', errorReply('ERR storeproof: command not sent, its operation was stopped'));
  assert.equal(stopped.kind, 'unavailable');
  assert.match(stopped.message, /^lease\.take: the server answered an error \(ERR storeproof: command not sent/);
  assert.match(kit.redisFailure('lease.take', new Error('Socket closed unexpectedly')).message, /did not answer .*the outcome is unknown/);
  const own = new StoreError('unsupported', 'x');
  assert.equal(kit.redisFailure('lease.take', own), own);
});

test('StoreError: known kinds only, settings optional on the wire', () => {
  assert.deepEqual(new StoreError('unavailable', 'm').toWire(), { kind: 'unavailable', message: 'm' });
  assert.deepEqual(new StoreError('deployment', 'm', ['role']).toWire(), { kind: 'deployment', message: 'm', settings: ['role'] });
  assert.throws(() => new StoreError('adapter_failed', 'm'), TypeError);
  assert.throws(() => new StoreError('malformed_reply', 'm'), TypeError);
});

test('withDeadline: an answer in time passes, none becomes unavailable at the deadline', async () => {
  assert.equal(await kit.withDeadline(Promise.resolve(5), kit.deadlineIn(1000)), 5);
  await assert.rejects(kit.withDeadline(Promise.reject(new Error('boom')), kit.deadlineIn(1000)), /boom/);
  const started = kit.monotonicNow();
  await assert.rejects(kit.withDeadline(new Promise(() => {}), { deadline: kit.deadlineIn(50) }), (e) => e instanceof StoreError && e.kind === 'unavailable' && /did not answer within/.test(e.message));
  const took = kit.monotonicNow() - started;
  assert.ok(took >= 45 && took < 1000, `${took} ms`);
  await assert.rejects(kit.withDeadline(new Promise(() => {}), kit.deadlineIn(-5)), (e) => e.kind === 'unavailable');
});

test('Lua scripts: loaded by SHA1, one EVALSHA, NOSCRIPT loads again and retries once', async () => {
  const scripts = kit.luaScripts({ sources: { a: 'return 1', b: "return {'x', ARGV[1]}" } });
  assert.equal(scripts.sha.a, 'e0e1f9fabfc9d4800c877a703b823ac0578ff8db');
  const sent = [];
  let forgotten = true;
  const send = async (argv) => {
    sent.push(argv);
    if (argv[0] === 'SCRIPT') {
      forgotten = false;
      return require('crypto').createHash('sha1').update(argv[2]).digest('hex');
    }
    if (forgotten) throw errorReply('NOSCRIPT No matching script. Please use EVAL.');
    return ['x', argv[argv.length - 1]];
  };
  assert.deepEqual(await scripts.run(send, 'b', ['k1'], [9223372036854775807n]), ['x', '9223372036854775807']);
  assert.deepEqual(sent.map((a) => a[0]), ['EVALSHA', 'SCRIPT', 'EVALSHA']);
  assert.deepEqual(sent[0], ['EVALSHA', scripts.sha.b, '1', 'k1', '9223372036854775807']);
  // A server that keeps forgetting: retried once only.
  sent.length = 0;
  const amnesiac = async (argv) => {
    sent.push(argv[0]);
    if (argv[0] === 'SCRIPT') return scripts.sha.a;
    throw errorReply('NOSCRIPT No matching script.');
  };
  await assert.rejects(scripts.run(amnesiac, 'a', [], [], 'lease.read'), (e) => e.kind === 'unavailable' && e.message.startsWith('lease.read:'));
  assert.deepEqual(sent, ['EVALSHA', 'SCRIPT', 'EVALSHA']);
  // Any other failure is never retried.
  for (const [error, kind] of [
    [new Error('Socket closed unexpectedly'), 'unavailable'],
    [errorReply('ERR storeproof: command not sent, its operation was stopped'), 'unavailable'],
    [errorReply('OOM command not allowed'), 'store_full'],
  ]) {
    sent.length = 0;
    const failing = async (argv) => {
      sent.push(argv[0]);
      throw error;
    };
    await assert.rejects(scripts.run(failing, 'a', [], []), (e) => e.kind === kind);
    assert.deepEqual(sent, ['EVALSHA']);
  }
});

test('Lua scripts: load all; a refused SCRIPT LOAD is config_refused; a wrong SHA unavailable', async () => {
  const scripts = kit.luaScripts({ sources: { a: 'return 1', b: 'return 2' } });
  const loaded = [];
  await scripts.load(async (argv) => {
    if (argv[1] === 'EXISTS') return [0, 0];
    loaded.push(argv[2]);
    return require('crypto').createHash('sha1').update(argv[2]).digest('hex');
  });
  assert.deepEqual(loaded, ['return 1', 'return 2']);
  await assert.rejects(scripts.load(async () => {
    throw errorReply("NOPERM this user has no permissions to run the 'script|load' command");
  }), (e) => e.kind === 'config_refused' && /allow EVALSHA and SCRIPT LOAD/.test(e.message));
  await assert.rejects(scripts.load(async () => 'f'.repeat(40)), (e) => e.kind === 'unavailable');
  await assert.rejects(scripts.load(async () => {
    throw new Error('connect ECONNREFUSED');
  }), (e) => e.kind === 'unavailable');
});

test('Lua scripts: a server that holds them is asked once (SCRIPT EXISTS) and sent only those it lacks', async () => {
  const scripts = kit.luaScripts({ sources: { a: 'return 1', b: 'return 2' } });
  const held = new Set();
  const sent = [];
  const server = async (argv) => {
    sent.push(argv.slice(0, 2).join(' '));
    if (argv[1] === 'EXISTS') return argv.slice(2).map((sha) => (held.has(sha) ? 1 : 0));
    const sha = require('crypto').createHash('sha1').update(argv[2]).digest('hex');
    held.add(sha);
    return sha;
  };
  await scripts.load(server);
  assert.deepEqual(sent, ['SCRIPT EXISTS', 'SCRIPT LOAD', 'SCRIPT LOAD']);
  sent.length = 0;
  await scripts.load(server);
  assert.deepEqual(sent, ['SCRIPT EXISTS'], 'a later case on the same server');
  held.delete(scripts.sha.b);
  sent.length = 0;
  await scripts.load(server);
  assert.deepEqual(sent, ['SCRIPT EXISTS', 'SCRIPT LOAD']);
  // An answer out of shape, or a refused SCRIPT EXISTS: every one is loaded.
  for (const odd of [async () => [1], async () => 'OK', async () => { throw errorReply('NOPERM no'); }]) {
    sent.length = 0;
    await scripts.load(async (argv) => (argv[1] === 'EXISTS' ? (sent.push('SCRIPT EXISTS'), odd()) : server(argv)));
    assert.deepEqual(sent, ['SCRIPT EXISTS', 'SCRIPT LOAD', 'SCRIPT LOAD']);
  }
});

test('Lua scripts from a folder: the prelude goes in front of every other file', () => {
  const fs = require('fs');
  const os = require('os');
  const path = require('path');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kit-lua-'));
  fs.writeFileSync(path.join(dir, '_prelude.lua'), 'local P = 1\n');
  fs.writeFileSync(path.join(dir, 'one.lua'), 'return P\n');
  fs.writeFileSync(path.join(dir, 'notes.txt'), 'not a script');
  const scripts = kit.luaScripts({ dir, prelude: '_prelude.lua' });
  assert.deepEqual(scripts.names, ['one']);
  assert.equal(scripts.source.one, 'local P = 1\nreturn P\n');
  fs.rmSync(dir, { recursive: true });
});
