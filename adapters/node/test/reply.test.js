'use strict';
// Every reply builder: the wire shape of §4 (reply.rs), exact integers, null
// only where allowed, and checkReply reading replies as storeproof does.
const test = require('node:test');
const assert = require('node:assert/strict');
const kit = require('..');

const { reply, stringifyJson, checkReply } = kit;
const wire = (ok) => stringifyJson(ok);
const BIG = 9223372036854775807n;

test('every builder gives its outcome in the wire shape', () => {
  const cases = [
    ['lease.take', reply.granted(1, '2000000001000'), '{"granted":{"epoch":1,"expires_at_ms":2000000001000}}'],
    ['lease.take', reply.busy('a', 2n, 9), '{"busy":{"holder":"a","epoch":2,"expires_at_ms":9}}'],
    ['lease.renew', reply.renewed(BIG), '{"renewed":{"expires_at_ms":9223372036854775807}}'],
    ['lease.renew', reply.lost('b', '3'), '{"lost":{"holder":"b","epoch":3}}'],
    ['lease.renew', reply.lost(null, null), '{"lost":{"holder":null,"epoch":null}}'],
    ['lease.renew', reply.lost(), '{"lost":{"holder":null,"epoch":null}}'],
    ['lease.release', reply.released(), '{"released":{}}'],
    ['lease.release', reply.notHeld(), '{"not_held":{}}'],
    ['lease.read', reply.lease(null), '{"lease":null}'],
    ['lease.read', reply.lease({ holder: 'a', epoch: '1', expiresAtMs: 5, live: true }), '{"lease":{"holder":"a","epoch":1,"expires_at_ms":5,"live":true}}'],
    ['lease.read', reply.lease({ holder: null, epoch: 4n, expiresAtMs: null, live: false }), '{"lease":{"holder":null,"epoch":4,"expires_at_ms":null,"live":false}}'],
    ['lease.keep_execution', reply.kept(), '{"kept":{}}'],
    ['lease.kept_executions', reply.executions([]), '{"executions":[]}'],
    ['lease.kept_executions', reply.executions(['e1', 'ü']), '{"executions":["e1","ü"]}'],
    ['queue.save', reply.saved(), '{"saved":{}}'],
    ['queue.save', reply.exists('done'), '{"exists":{"state":"done"}}'],
    ['queue.claim', reply.claimed('c', BIG, '', 1), '{"claimed":{"child":"c","depth":9223372036854775807,"payload":"","attempt":1}}'],
    ['queue.claim', reply.empty(), '{"empty":{}}'],
    ['queue.complete', reply.completed(), '{"completed":{}}'],
    ['queue.complete', reply.notClaimer(null, '0'), '{"not_claimer":{"claimer":null,"attempt":0}}'],
    ['queue.complete', reply.notClaimer(), '{"not_claimer":{"claimer":null,"attempt":null}}'],
    ['queue.complete', reply.notClaimer('i', 2), '{"not_claimer":{"claimer":"i","attempt":2}}'],
    ['queue.read', reply.child(null), '{"child":null}'],
    ['queue.read', reply.child({ state: 'claimed', claimer: 'i', attempt: '1', depth: BIG }), '{"child":{"state":"claimed","claimer":"i","attempt":1,"depth":9223372036854775807}}'],
    ['queue.read', reply.child({ state: 'queued', claimer: null, attempt: 0, depth: 0 }), '{"child":{"state":"queued","claimer":null,"attempt":0,"depth":0}}'],
    ['rate.acquire_slot', reply.acquired('1'), '{"acquired":{"slot":"1"}}'],
    ['rate.acquire_slot', reply.full('2000000001000'), '{"full":{"retry_at_ms":2000000001000}}'],
    ['rate.acquire_slot', reply.paused(BIG), '{"paused":{"until_ms":9223372036854775807}}'],
    ['rate.release_slot', reply.released(), '{"released":{}}'],
    ['rate.release_slot', reply.unknown(), '{"unknown":{}}'],
    ['rate.hit', reply.allowed(0), '{"allowed":{"remaining":0}}'],
    ['rate.hit', reply.limited(7n), '{"limited":{"retry_at_ms":7}}'],
    ['rate.hit', reply.paused(1), '{"paused":{"until_ms":1}}'],
    ['rate.pause', reply.paused('0'), '{"paused":{"until_ms":0}}'],
    ['rate.read', reply.rateState(0, null), '{"slots_in_use":0,"paused_until_ms":null}'],
    ['rate.read', reply.rateState(2), '{"slots_in_use":2,"paused_until_ms":null}'],
    ['rate.read', reply.rateState('1', BIG), '{"slots_in_use":1,"paused_until_ms":9223372036854775807}'],
    ['effect.apply', reply.applied(), '{"applied":{}}'],
    ['effect.apply', reply.duplicate(), '{"duplicate":{}}'],
    ['call.begin', reply.fenced(0), '{"fenced":{"epoch":0}}'],
    ['call.begin', reply.begun(), '{"begun":{}}'],
    ['call.finish', reply.finished(), '{"finished":{}}'],
    ['call.finish', reply.alreadyFinished(''), '{"already_finished":{"response":""}}'],
    ['call.finish', reply.notBegun(), '{"not_begun":{}}'],
  ];
  const covered = new Set();
  for (const [op, ok, want] of cases) {
    assert.equal(wire(ok), want, op);
    assert.equal(checkReply(op, ok), null, `${op} ${want}`);
    assert.ok(Object.isFrozen(ok));
    covered.add(Object.keys(ok).length === 1 ? Object.keys(ok)[0] : 'rate_state');
  }
  // Every builder was tried.
  const built = Object.keys(reply).length;
  assert.equal(covered.size, built, `${covered.size} outcomes covered of ${built} builders`);
});

test('builders refuse what the contract does not allow', () => {
  const bad = [
    () => reply.granted(1.5, 1),
    () => reply.granted(2 ** 53, 1), // not exact
    () => reply.granted('1.0', 1),
    () => reply.granted('01', 1),
    () => reply.granted('9223372036854775808', 1),
    () => reply.granted(null, 1),
    () => reply.granted(true, 1),
    () => reply.busy(null, 1, 1),
    () => reply.busy(7, 1, 1),
    () => reply.renewed(undefined),
    () => reply.lost('a', 'x'),
    () => reply.lease({ holder: 'a', epoch: null, expiresAtMs: 1, live: true }),
    () => reply.lease({ holder: 'a', epoch: 1, expiresAtMs: 1, live: 1 }),
    () => reply.executions(['a', 1]),
    () => reply.executions('a'),
    () => reply.exists('lost'),
    () => reply.claimed('c', 1, null, 1),
    () => reply.child({ state: 'x', claimer: null, attempt: 0, depth: 0 }),
    () => reply.child({ state: 'queued', claimer: null, attempt: null, depth: 0 }),
    () => reply.acquired(''),
    () => reply.acquired(1),
    () => reply.full(null),
    () => reply.paused(null),
    () => reply.allowed('-'),
    () => reply.limited(1.1),
    () => reply.rateState(null),
    () => reply.fenced(null),
    () => reply.alreadyFinished(null),
  ];
  for (const b of bad) assert.throws(b, TypeError, String(b));
});

test('checkReply reads an ok value as storeproof does (reply.rs from_wire)', () => {
  const cases = [
    ['lease.read', { lease: { holder: 'a', epoch: 'x', expires_at_ms: 1, live: false } }, "lease.read: `lease.epoch` must be a whole number (a JSON integer), got \"x\""],
    ['lease.take', { granted: { epoch: 1.5, expires_at_ms: 1 } }, 'lease.take: `granted.epoch` must be a whole number (a JSON integer)'],
    ['lease.take', { busy: { holder: null, epoch: 1, expires_at_ms: 1 } }, 'lease.take: `busy.holder` must be a string, got null'],
    ['lease.renew', { renewed: {} }, 'lease.renew: `renewed.expires_at_ms` must be a whole number (a JSON integer), but it is missing'],
    ['lease.release', { released: null }, 'lease.release: `released` must be an object, got null'],
    ['lease.take', { kept: {} }, 'lease.take: the outcome must be `granted` or `busy`, got `kept`'],
    ['queue.read', { child: { state: 'lost', claimer: null, attempt: 0, depth: 0 } }, 'queue.read: `child.state` must be one of "queued", "claimed", "done"'],
    ['rate.read', { slots_in_use: '2', paused_until_ms: null }, 'rate.read: `slots_in_use` must be a whole number (a JSON integer)'],
    ['rate.acquire_slot', { acquired: { slot: '' } }, 'rate.acquire_slot: `acquired.slot` must be a non-empty string'],
    ['queue.claim', { claimed: {}, empty: {} }, 'queue.claim: the ok value must have exactly one key'],
    ['lease.take', { granted: { epoch: 9223372036854775808n, expires_at_ms: 1n } }, 'lease.take: `granted.epoch` must be a whole number'],
    ['lease.take', 'granted', 'lease.take: the ok value must be an object'],
    ['lease.kept_executions', { executions: ['a', 2] }, 'lease.kept_executions: `executions[1]` must be a string'],
  ];
  for (const [op, ok, want] of cases) {
    const got = checkReply(op, ok);
    assert.ok(got && got.startsWith(want), `${op}: got ${got}, want ${want}`);
  }
});
