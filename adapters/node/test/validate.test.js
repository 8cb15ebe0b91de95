'use strict';
// Request validation exactly per docs/PROTOCOL.md §4.1 (request.rs): every
// rule refused with bad_request naming the operation, and the edge values
// that are valid accepted. Requests go through the kit's parser, as on the wire.
const test = require('node:test');
const assert = require('node:assert/strict');
const kit = require('..');

const { validateRequest, validateHello, parseJson, StoreError, MAX_DURATION_MS, I64_MAX } = kit;

/** A valid arguments object of every operation (JSON text, as storeproof sends it). */
const GOOD = {
  'lease.take': '{"tree":"t","holder":"a","ttl_ms":1000}',
  'lease.renew': '{"tree":"t","holder":"a","epoch":1,"ttl_ms":1000}',
  'lease.release': '{"tree":"t","holder":"a","epoch":1}',
  'lease.read': '{"tree":"t"}',
  'lease.keep_execution': '{"tree":"t","execution":"e"}',
  'lease.kept_executions': '{"tree":"t"}',
  'queue.save': '{"child":"c","depth":0,"payload":"p"}',
  'queue.claim': '{"instance":"i","claim_ttl_ms":1000}',
  'queue.complete': '{"child":"c","instance":"i","attempt":1}',
  'queue.read': '{"child":"c"}',
  'rate.acquire_slot': '{"provider":"p","holder":"h","limit":2,"ttl_ms":1000}',
  'rate.release_slot': '{"provider":"p","slot":"1"}',
  'rate.hit': '{"provider":"p","limit":2,"window_ms":1000}',
  'rate.pause': '{"provider":"p","until_ms":5}',
  'rate.read': '{"provider":"p"}',
  'effect.apply': '{"tree":"t","holder":"a","epoch":1,"effect":"e","payload":""}',
  'call.begin': '{"tree":"t","holder":"a","epoch":1,"call":"c"}',
  'call.finish': '{"call":"c","response":""}',
};
const TEXT_FIELDS = ['payload', 'response'];
const DURATIONS = ['ttl_ms', 'claim_ttl_ms', 'window_ms'];
const WHOLE = ['epoch', 'attempt', 'depth', 'until_ms'];

function refused(op, argsText, why) {
  const args = parseJson(argsText);
  assert.throws(
    () => validateRequest(op, args),
    (e) => e instanceof StoreError && e.kind === 'bad_request' && e.message.startsWith(`${op}: `),
    `${op} ${argsText} must be bad_request (${why})`,
  );
}

function withField(argsText, name, valueText) {
  const o = JSON.parse(argsText);
  o[name] = '\u0000MARK';
  return JSON.stringify(o).replace('"\\u0000MARK"', valueText);
}

function withoutField(argsText, name) {
  const o = JSON.parse(argsText);
  delete o[name];
  return JSON.stringify(o);
}

test('every operation accepts its good arguments, typed', () => {
  assert.equal(kit.OPS.length, Object.keys(GOOD).length);
  for (const op of kit.OPS) {
    const a = validateRequest(op, parseJson(GOOD[op]));
    for (const [k, v] of Object.entries(JSON.parse(GOOD[op]))) {
      assert.equal(a[k], typeof v === 'number' ? BigInt(v) : v, `${op}.${k}`);
    }
    assert.ok(Object.isFrozen(a));
  }
});

test('an unknown operation is bad_request', () => {
  for (const op of ['lease.steal', 'lease', '', 'LEASE.TAKE', 'hello.x', '__proto__', 'toString']) {
    assert.throws(() => validateRequest(op, parseJson('{"tree":"t"}')), (e) => e.kind === 'bad_request', op);
  }
});

test('the arguments must be an object', () => {
  for (const op of kit.OPS) for (const args of ['null', '[]', '"x"', '1', 'true']) refused(op, args, `args ${args}`);
});

test('every listed argument present, and no other', () => {
  for (const op of kit.OPS) {
    for (const name of Object.keys(JSON.parse(GOOD[op]))) refused(op, withoutField(GOOD[op], name), `missing ${name}`);
    refused(op, withField(GOOD[op], 'extra', '1'), 'unknown field');
    refused(op, GOOD[op].replace(/}$/, ',"__proto__":{}}'), 'field __proto__');
    const first = Object.keys(JSON.parse(GOOD[op]))[0];
    refused(op, GOOD[op].replace(/}$/, `,"${first}":${JSON.stringify(JSON.parse(GOOD[op])[first])}}`), 'duplicate field');
  }
});

test('each rule of every field refused (the bad inputs of conformance and more)', () => {
  for (const op of kit.OPS) {
    for (const [name, value] of Object.entries(JSON.parse(GOOD[op]))) {
      const bad = (v, why) => refused(op, withField(GOOD[op], name, v), `${name} ${why}`);
      if (typeof value === 'string') {
        if (!TEXT_FIELDS.includes(name)) bad('""', 'empty id');
        for (const v of ['17', '1.5', 'true', 'false', 'null', '[]', '{}', '["x"]']) bad(v, v);
      } else {
        for (const v of [`"${value}"`, '"1000"', '1.5', '1.0', '1e3', '1E3', '1000.0', '-1.5', 'true', 'false', 'null', '[]', '{}', '[1]']) {
          bad(v, v);
        }
        bad('9223372036854775808', 'past i64');
        bad('-9223372036854775809', 'before i64');
        bad('99999999999999999999', 'far past i64');
        if (DURATIONS.includes(name)) for (const v of ['0', '-1', String(MAX_DURATION_MS + 1n), '9223372036854775807']) bad(v, v);
        if (WHOLE.includes(name)) for (const v of ['-1', '-9223372036854775808']) bad(v, v);
        if (name === 'limit') for (const v of ['0', '-1', '1000001']) bad(v, v);
      }
    }
  }
});

test('the messages name the operation and the rule', () => {
  const message = (op, args) => {
    try {
      validateRequest(op, parseJson(args));
    } catch (e) {
      return e.message;
    }
    return null;
  };
  assert.equal(
    message('lease.take', '{"tree":"t","holder":"a","ttl_ms":0}'),
    'lease.take: ttl_ms must be a whole number of milliseconds in 1..=31536000000, got 0',
  );
  assert.equal(message('lease.take', '{"tree":"t","holder":"a","ttl_ms":"1000"}'), 'lease.take: ttl_ms: invalid type: string "1000", expected i64');
  assert.equal(message('lease.take', '{"tree":"t","holder":"a","ttl_ms":1.0}'), 'lease.take: ttl_ms: invalid type: floating point `1.0`, expected i64');
  assert.equal(message('lease.take', '{"tree":"t","holder":"a","ttl_ms":true}'), 'lease.take: ttl_ms: invalid type: boolean `true`, expected i64');
  assert.equal(message('lease.take', '{"tree":"t","holder":"a"}'), 'lease.take: missing field `ttl_ms`');
  assert.equal(
    message('lease.take', '{"tree":"t","holder":"a","ttl_ms":1,"x":1}'),
    'lease.take: unknown field `x`, expected one of `tree`, `holder`, `ttl_ms`',
  );
  assert.equal(
    message('lease.renew', '{"tree":"","holder":"","epoch":-1,"ttl_ms":0}'),
    'lease.renew: tree must be a non-empty string; holder must be a non-empty string; ttl_ms must be a whole number of milliseconds in 1..=31536000000, got 0; epoch must be a whole number, got -1',
  );
  assert.equal(message('rate.hit', '{"provider":"p","limit":0,"window_ms":1}'), 'rate.hit: limit must be in 1..=1000000, got 0');
  assert.equal(message('queue.save', '{"child":"c","depth":9223372036854775808,"payload":""}'),
    'queue.save: depth: invalid value: integer `9223372036854775808`, expected i64');
  assert.match(message('lease.steal', '{}'), /^lease\.steal: unknown variant `lease\.steal`, expected one of `lease\.take`/);
});

test('valid edge values are accepted exactly', () => {
  const ok = (op, args) => validateRequest(op, parseJson(args));
  for (const name of WHOLE) {
    for (const [op, text] of Object.entries(GOOD)) {
      if (!(name in JSON.parse(text))) continue;
      assert.equal(ok(op, withField(text, name, '9223372036854775807'))[name], I64_MAX, `${op}.${name}`);
      assert.equal(ok(op, withField(text, name, '0'))[name], 0n, `${op}.${name}`);
    }
  }
  for (const name of DURATIONS) {
    for (const [op, text] of Object.entries(GOOD)) {
      if (!(name in JSON.parse(text))) continue;
      assert.equal(ok(op, withField(text, name, '1'))[name], 1n);
      assert.equal(ok(op, withField(text, name, '31536000000'))[name], MAX_DURATION_MS);
    }
  }
  assert.equal(ok('rate.hit', '{"provider":"p","limit":1,"window_ms":1}').limit, 1n);
  assert.equal(ok('rate.hit', '{"provider":"p","limit":1000000,"window_ms":1}').limit, 1000000n);
  assert.equal(ok('queue.save', '{"child":"c","depth":0,"payload":""}').payload, '');
  assert.equal(ok('call.finish', '{"call":"c","response":""}').response, '');
  const kib = 'x'.repeat(1024);
  for (const id of ['ü→漢', '😀', 'a:{b}', '*', '?[x]\\', '../..', 'sp:', ' ', '\n', kib, '漢'.repeat(1024)]) {
    assert.equal(ok('lease.read', JSON.stringify({ tree: id })).tree, id);
    assert.equal(ok('rate.release_slot', JSON.stringify({ provider: id, slot: id })).slot, id);
  }
});

test('plain numbers (JSON.parse output) are accepted only when exact', () => {
  assert.equal(validateRequest('lease.take', { tree: 't', holder: 'a', ttl_ms: 1000 }).ttl_ms, 1000n);
  assert.throws(() => validateRequest('lease.take', { tree: 't', holder: 'a', ttl_ms: 1.5 }), (e) => e.kind === 'bad_request');
  assert.throws(() => validateRequest('rate.pause', { provider: 'p', until_ms: 2 ** 63 }), (e) => e.kind === 'bad_request');
});

test('hello: instance, a Redis URL, a prefix, and the one opt-out', () => {
  const hello = (args) => validateHello(parseJson(args));
  const h = hello('{"instance":"a","redis_url":"redis://u:pw@127.0.0.1:40123/","prefix":"sp:1:","opt_out":null}');
  assert.deepEqual({ ...h }, { instance: 'a', redisUrl: 'redis://u:pw@127.0.0.1:40123/', prefix: 'sp:1:', optOut: null, optedOut: false });
  assert.equal(hello('{"instance":"a","redis_url":"redis://h:1","prefix":"p","opt_out":"acknowledged-writes-may-be-lost"}').optedOut, true);
  assert.equal(hello('{"instance":"a","redis_url":"rediss://h:1/0","prefix":"p"}').optOut, null);
  const bad = [
    'null',
    '[]',
    '{"redis_url":"redis://h:1/","prefix":"p","opt_out":null}',
    '{"instance":"","redis_url":"redis://h:1/","prefix":"p","opt_out":null}',
    '{"instance":1,"redis_url":"redis://h:1/","prefix":"p","opt_out":null}',
    '{"instance":"a","prefix":"p","opt_out":null}',
    '{"instance":"a","redis_url":"redis://h:1/"}',
    '{"instance":"a","redis_url":"redis://h:1/","prefix":7,"opt_out":null}',
    '{"instance":"a","redis_url":"redis://h:1/","prefix":"p","opt_out":"acknowledged-writes-may-be-lots"}',
    '{"instance":"a","redis_url":"redis://h:1/","prefix":"p","opt_out":""}',
    '{"instance":"a","redis_url":"redis://h:1/","prefix":"p","opt_out":true}',
    '{"instance":"a","redis_url":"http://h:1/","prefix":"p","opt_out":null}',
    '{"instance":"a","redis_url":"not a url","prefix":"p","opt_out":null}',
    '{"instance":"a","redis_url":"","prefix":"p","opt_out":null}',
    '{"instance":"a","redis_url":"redis:///","prefix":"p","opt_out":null}',
    '{"instance":"a","redis_url":"redis://h:1/x","prefix":"p","opt_out":null}',
    '{"instance":"a","redis_url":"redis://h:99999/","prefix":"p","opt_out":null}',
    '{"instance":"a","redis_url":7,"prefix":"p","opt_out":null}',
  ];
  for (const args of bad) assert.throws(() => hello(args), (e) => e instanceof StoreError && e.kind === 'bad_request', args);
  try {
    hello('{"instance":"a","redis_url":"http://u:secret@h:1/","prefix":"p","opt_out":null}');
  } catch (e) {
    assert.doesNotMatch(e.message, /secret/, 'the password is not shown');
  }
  try {
    hello('{"instance":"a","redis_url":"redis://h:1/","prefix":"p","opt_out":"nope"}');
  } catch (e) {
    assert.match(e.message, /the only opt-out is acknowledged-writes-may-be-lost/);
  }
});
