#!/usr/bin/env node
'use strict';
// storeproof example store in Node on node-redis: the lease, queue and rate
// contracts on Redis, one Lua script per operation (./lua). The adapter kit
// (..) does everything that is protocol: the JSON lines, validation, exact
// integers, hello, reconnect, the server checks, kept executions, deadlines.
//
//   storeproof certify --store "cmd:NODE_PATH=/usr/share/nodejs node adapters/node/example/adapter.js"
//
// Debian's node-redis (4.5) lives under /usr/share/nodejs, which Node does
// not search unless NODE_PATH says so.

const { createClient } = require('redis');
const kit = require('..');

const { reply } = kit;
// Every script of ./lua, with _prelude.lua (server time, exact decimal
// comparison) in front of each; loaded at hello, then one EVALSHA per operation.
const scripts = kit.luaScripts({ dir: `${__dirname}/lua`, prelude: '_prelude.lua' });

let url = '';
let prefix = '';
/** @type {ReturnType<typeof createClient> | null} */
let client = null;

/** Every key starts with the prefix hello gave (§5): kind, then the id. */
const key = (/** @type {string} */ kind, /** @type {string} */ id) => `${prefix}${kind}:${id}`;

/**
 * The one connection, opened on first use. node-redis must not reconnect in
 * the background (a command whose reply was lost is never sent again), nor
 * queue commands while offline, nor ping: a failed connection is closed at
 * once and the next operation opens a new one. (node-redis 4.5 sends no
 * CLIENT SETINFO and no HELLO, so nothing goes out but the store's commands.)
 * @param {{ deadline: number }} ctx
 */
async function connection(ctx) {
  if (client && client.isOpen) return client;
  const c = createClient({
    url,
    disableOfflineQueue: true,
    socket: { connectTimeout: 4000, reconnectStrategy: () => new Error('no automatic reconnect') },
  });
  c.on('error', (/** @type {Error} */ e) => {
    kit.log(`connection: ${e.message}`);
    if (c.isOpen) c.disconnect().catch(() => {});
  });
  client = c;
  await kit.withDeadline(c.connect(), ctx);
  return c;
}

function drop() {
  const c = client;
  client = null;
  if (c && c.isOpen) c.disconnect().catch(() => {});
}

/**
 * One raw command by the request's deadline. A failure that is not the
 * server's error reply (a timeout, a broken connection) leaves the connection
 * out of step: it is closed, and the error answered `unavailable`.
 * @param {string[]} argv
 * @param {{ deadline: number }} ctx
 */
async function send(argv, ctx) {
  try {
    const c = await connection(ctx);
    return await kit.withDeadline(c.sendCommand(argv), ctx);
  } catch (e) {
    if (!kit.isErrorReply(e)) drop();
    throw e;
  }
}

/**
 * The operation's script: one EVALSHA (NOSCRIPT: loaded again, retried once).
 * @param {kit.OpContext} ctx
 * @param {string} name
 * @param {string[]} keys
 * @param {Array<string | bigint>} args
 */
const run = (ctx, name, keys, args) => scripts.run((argv) => send(argv, ctx), name, keys, args, ctx.op);

/** @type {kit.Store} */
const store = {
  name: 'storeproof-node-example',
  version: '1.0',
  contracts: ['lease', 'queue', 'rate'],
  // The process keeps nothing between operations but its connection and the
  // scripts' SHAs: nothing that changes a later command or answer.
  stateless: true,
  // A later hello starts a new case on this process (§3.3): close drops the
  // connection, and hello sets everything else again.
  cases: true,

  async hello(h) {
    url = h.redisUrl;
    prefix = h.prefix;
    const sendNow = (/** @type {string[]} */ argv) => send(argv, h);
    await kit.checkServer(sendNow, h.optOut);
    await scripts.load(sendNow);
  },

  close() {
    drop();
    url = '';
    prefix = '';
  },

  // A new connection with every script loaded, as hello left it (§3.1).
  async reconnect(ctx) {
    drop();
    await scripts.load((argv) => send(argv, ctx));
  },

  ops: {
    'lease.take': async (a, ctx) => {
      const r = await run(ctx, 'lease_take', [key('lease', a.tree)], [a.holder, a.ttl_ms]);
      return r[0] === 'busy' ? reply.busy(r[1], r[2], r[3]) : reply.granted(r[1], r[2]);
    },
    'lease.renew': async (a, ctx) => {
      const r = await run(ctx, 'lease_renew', [key('lease', a.tree)], [a.holder, a.epoch, a.ttl_ms]);
      return r[0] === 'renewed' ? reply.renewed(r[1]) : reply.lost(r[1], r[2]);
    },
    'lease.release': async (a, ctx) => {
      const r = await run(ctx, 'lease_release', [key('lease', a.tree)], [a.holder, a.epoch]);
      return r[0] === 'released' ? reply.released() : reply.notHeld();
    },
    'lease.read': async (a, ctx) => {
      const r = await run(ctx, 'lease_read', [key('lease', a.tree)], []);
      return reply.lease(r.length === 1 ? null : { holder: r[1], epoch: r[2], expiresAtMs: r[3], live: r[4] === 1 });
    },
    // lease.keep_execution and lease.kept_executions: the kit's side file, never Redis.

    'queue.save': async (a, ctx) => {
      // Deeper children first: the rank is i64::MAX - depth, 19 digits, computed exactly here.
      const rank = (kit.I64_MAX - a.depth).toString().padStart(19, '0');
      const keys = [key('child', a.child), key('queue', 'index'), key('queue', 'seq')];
      const r = await run(ctx, 'queue_save', keys, [a.child, a.depth, a.payload, rank]);
      return r[0] === 'exists' ? reply.exists(r[1]) : reply.saved();
    },
    'queue.claim': async (a, ctx) => {
      const r = await run(ctx, 'queue_claim', [key('queue', 'index')], [key('child', ''), a.instance, a.claim_ttl_ms]);
      return r[0] === 'claimed' ? reply.claimed(r[1], r[2], r[3], r[4]) : reply.empty();
    },
    'queue.complete': async (a, ctx) => {
      const keys = [key('child', a.child), key('queue', 'index')];
      const r = await run(ctx, 'queue_complete', keys, [a.instance, a.attempt]);
      return r[0] === 'completed' ? reply.completed() : reply.notClaimer(r[1], r[2]);
    },
    'queue.read': async (a, ctx) => {
      const r = await run(ctx, 'queue_read', [key('child', a.child)], []);
      return reply.child(r.length === 1 ? null : { state: r[1], claimer: r[2], attempt: r[3], depth: r[4] });
    },

    // Rate limits decide on the instance clock (ctx.clockMs), never server time.
    'rate.acquire_slot': async (a, ctx) => {
      const p = a.provider;
      const keys = [key('slots', p), key('pause', p), key('seq', p)];
      const r = await run(ctx, 'rate_acquire_slot', keys, [ctx.clockMs, a.limit, a.ttl_ms]);
      return r[0] === 'paused' ? reply.paused(r[1]) : r[0] === 'full' ? reply.full(r[1]) : reply.acquired(r[1]);
    },
    'rate.release_slot': async (a, ctx) => {
      const r = await run(ctx, 'rate_release_slot', [key('slots', a.provider)], [ctx.clockMs, a.slot]);
      return r[0] === 'released' ? reply.released() : reply.unknown();
    },
    'rate.hit': async (a, ctx) => {
      const p = a.provider;
      const keys = [key('hits', p), key('pause', p), key('seq', p)];
      const r = await run(ctx, 'rate_hit', keys, [ctx.clockMs, a.limit, a.window_ms]);
      return r[0] === 'paused' ? reply.paused(r[1]) : r[0] === 'limited' ? reply.limited(r[1]) : reply.allowed(r[1]);
    },
    'rate.pause': async (a, ctx) => {
      const r = await run(ctx, 'rate_pause', [key('pause', a.provider)], [a.until_ms]);
      return reply.paused(r[1]);
    },
    'rate.read': async (a, ctx) => {
      const r = await run(ctx, 'rate_read', [key('slots', a.provider), key('pause', a.provider)], [ctx.clockMs]);
      return reply.rateState(r[1], r[2]);
    },
  },
};

// For variants (fixtures/adapters/node/): the store, and its connection's helpers.
module.exports = { store, send, key, run, scripts };

if (require.main === module) kit.run(store);
