'use strict';
/**
 * storeproof adapter kit for Node: everything of docs/PROTOCOL.md that is
 * protocol, so that an adapter author writes only the store.
 *
 *   const kit = require('storeproof-adapter-kit');   // or require('…/adapters/node')
 *   kit.run({ name, version, contracts, hello, reconnect, ops: { 'lease.take': … } });
 *
 * What the kit does (PROTOCOL.md section in brackets):
 * - the JSON lines loop on stdin/stdout: one answer per request, in order,
 *   flushed, nothing else on stdout (console.log goes to stderr), exit 0 on
 *   EOF (§1);
 * - exact integers: requests are read by a JSON parser of its own that keeps
 *   every integer as a BigInt, and answers are written with BigInts as JSON
 *   integers (§2, §4.1);
 * - `hello` (§3), `reconnect` (§3.1), the capabilities (§3.2);
 * - every request's validation (§4.1), before the store is called;
 * - reply builders for every outcome (§4), and a check of what the store
 *   returned, so that a malformed reply never goes out;
 * - error kinds as `StoreError` (§6);
 * - the server checks of §7 as one call (`checkServer`), on any client;
 * - Lua scripts loaded at hello and run with EVALSHA, NOSCRIPT → load again
 *   and retry once (§5) (`luaScripts`), on any client;
 * - a deadline per request (`withDeadline`, `ctx.deadline`);
 * - kept executions (`lease.keep_execution`, `lease.kept_executions`) in a
 *   durable side file under $STOREPROOF_WORKDIR, never in Redis (§4.2).
 *
 * Plain CommonJS for Node 18 and later, no dependencies. Types: index.d.ts.
 */

const crypto = require('crypto');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { performance } = require('perf_hooks');

// Nothing but answers may go to stdout (§1): from the moment the kit is
// loaded, console.log, console.info and console.debug write to stderr, so a
// stray log line of the store (or of a library it uses) cannot break the
// protocol. Answers are written to process.stdout directly.
for (const m of ['log', 'info', 'debug']) console[m] = console.error.bind(console);

// ---------------------------------------------------------------------------
// Constants (model/src/contract/request.rs)

const MAX_DURATION_MS = 31536000000n; // one year
const MAX_LIMIT = 1000000n;
const I64_MAX = 9223372036854775807n;
const I64_MIN = -9223372036854775808n;
const OPT_OUT = 'acknowledged-writes-may-be-lost';
const ERROR_KINDS = Object.freeze([
  'bad_request',
  'durability',
  'deployment',
  'config_refused',
  'store_full',
  'unavailable',
  'unsupported',
]);
const CONTRACTS = Object.freeze(['lease', 'queue', 'rate', 'fenced']);
/** How long `hello` (connect, server checks, script loads) may take. */
const HELLO_DEADLINE_MS = 20000;
/** How long any other request may take by default (storeproof waits 10 s). */
const DEFAULT_DEADLINE_MS = 5000;
/** After the deadline, how long the kit waits for a store that ignores it. */
const BACKSTOP_GRACE_MS = 1500;

// ---------------------------------------------------------------------------
// Errors (§6)

class StoreError extends Error {
  /**
   * @param {string} kind one of ERROR_KINDS
   * @param {string} message for a person: what is wrong and what to do
   * @param {string[]} [settings] for durability and deployment: each setting found short
   */
  constructor(kind, message, settings) {
    super(message);
    if (!ERROR_KINDS.includes(kind)) {
      throw new TypeError(`StoreError: unknown kind ${JSON.stringify(kind)}, expected one of ${ERROR_KINDS.join(', ')}`);
    }
    this.name = 'StoreError';
    this.kind = kind;
    this.settings = settings ? [...settings] : [];
  }

  /** The `error` object of an answer. */
  toWire() {
    const wire = { kind: this.kind, message: this.message };
    if (this.settings.length) wire.settings = [...this.settings];
    return wire;
  }
}

function badRequest(message) {
  return new StoreError('bad_request', message);
}

// ---------------------------------------------------------------------------
// Exact JSON
//
// Why a parser of our own: Node's JSON.parse turns every number into a
// double, so 9223372036854775807 (2^63 − 1, a valid epoch or until_ms) reads
// as 9223372036854775808, and 1.0 or 1e3 read as the integer 1 and 1000
// although the protocol refuses them (§4.1). This one keeps every integer
// as a BigInt, keeps a number with a fraction or an exponent as a JsonFloat
// (so validation can refuse it, naming it), builds objects without a
// prototype (an argument named `__proto__` is just an unknown field) and
// notes duplicate keys. It follows RFC 8259 strictly otherwise.

class JsonFloat {
  /** @param {string} text the number as written */
  constructor(text) {
    this.text = text;
    this.value = Number(text);
    Object.freeze(this);
  }
}

/** Keys that occurred more than once in a parsed object (the last value stands). */
const DUPLICATE_KEYS = Symbol('storeproof.duplicateKeys');
const MAX_JSON_DEPTH = 128;

class JsonSyntaxError extends Error {}

function parseJson(text) {
  if (typeof text !== 'string') throw new TypeError('parseJson: the text must be a string');
  let i = 0;
  const n = text.length;
  const fail = (what) => {
    throw new JsonSyntaxError(`${what} at character ${i}`);
  };
  const ws = () => {
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) i++;
      else break;
    }
  };
  const hex4 = () => {
    const h = text.slice(i, i + 4);
    if (!/^[0-9a-fA-F]{4}$/.test(h)) fail('bad \\u escape');
    i += 4;
    return parseInt(h, 16);
  };
  const string = () => {
    i++; // the opening quote
    let out = '';
    let start = i;
    for (;;) {
      if (i >= n) fail('unterminated string');
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        out += text.slice(start, i);
        i++;
        return out;
      }
      if (c < 0x20) fail('control character in a string');
      if (c >= 0xd800 && c <= 0xdfff) {
        // A raw surrogate must be a well-formed pair (the line was decoded
        // from UTF-8, so a lone one cannot occur, but a caller may pass any text).
        const d = text.charCodeAt(i + 1);
        if (c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff) {
          i += 2;
          continue;
        }
        fail('lone surrogate in a string');
      }
      if (c !== 0x5c) {
        i++;
        continue;
      }
      out += text.slice(start, i);
      i++;
      const e = text[i++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          const u = hex4();
          if (u >= 0xd800 && u <= 0xdbff) {
            if (text.slice(i, i + 2) !== '\\u') fail('lone leading surrogate in a \\u escape');
            i += 2;
            const low = hex4();
            if (low < 0xdc00 || low > 0xdfff) fail('lone leading surrogate in a \\u escape');
            out += String.fromCharCode(u, low);
          } else if (u >= 0xdc00 && u <= 0xdfff) {
            fail('lone trailing surrogate in a \\u escape');
          } else {
            out += String.fromCharCode(u);
          }
          break;
        }
        default:
          i--;
          fail('bad escape');
      }
      start = i;
    }
  };
  const NUMBER = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
  const number = () => {
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (!m) fail('bad number');
    i = NUMBER.lastIndex;
    const c = text[i];
    if (c !== undefined && /[0-9.eE+-]/.test(c)) fail('bad number');
    if (m[1] === undefined && m[2] === undefined) return BigInt(m[0]);
    return new JsonFloat(m[0]);
  };
  const value = (depth) => {
    ws();
    if (i >= n) fail('unexpected end');
    const c = text[i];
    if (c === '{') {
      if (depth >= MAX_JSON_DEPTH) fail('nested too deep');
      i++;
      const obj = Object.create(null);
      let dups = null;
      ws();
      if (text[i] === '}') {
        i++;
        return obj;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail('expected a key');
        const key = string();
        ws();
        if (text[i] !== ':') fail("expected ':'");
        i++;
        const v = value(depth + 1);
        if (Object.prototype.hasOwnProperty.call(obj, key)) (dups || (dups = [])).push(key);
        obj[key] = v;
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === '}') {
          i++;
          break;
        }
        fail("expected ',' or '}'");
      }
      if (dups) Object.defineProperty(obj, DUPLICATE_KEYS, { value: dups });
      return obj;
    }
    if (c === '[') {
      if (depth >= MAX_JSON_DEPTH) fail('nested too deep');
      i++;
      const arr = [];
      ws();
      if (text[i] === ']') {
        i++;
        return arr;
      }
      for (;;) {
        arr.push(value(depth + 1));
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === ']') {
          i++;
          return arr;
        }
        fail("expected ',' or ']'");
      }
    }
    if (c === '"') return string();
    if (c === '-' || (c >= '0' && c <= '9')) return number();
    for (const [word, v] of [['true', true], ['false', false], ['null', null]]) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return v;
      }
    }
    return fail('unexpected character');
  };
  const result = value(0);
  ws();
  if (i < n) fail('trailing characters');
  return result;
}

/**
 * One line of JSON: BigInts (and safe integer numbers) as JSON integers.
 * Refuses anything a reply never holds (fractions, NaN, functions, …).
 */
function stringifyJson(value) {
  const out = (v, depth) => {
    if (depth > MAX_JSON_DEPTH) throw new TypeError('stringifyJson: nested too deep (a cycle?)');
    if (v === null) return 'null';
    switch (typeof v) {
      case 'bigint':
        return v.toString();
      case 'number':
        if (!Number.isSafeInteger(v)) {
          throw new TypeError(`stringifyJson: ${v} is not a safe integer; write exact integers as BigInt`);
        }
        return String(v);
      case 'string':
        return JSON.stringify(v);
      case 'boolean':
        return v ? 'true' : 'false';
      case 'object': {
        if (Array.isArray(v)) return `[${v.map((x) => out(x, depth + 1)).join(',')}]`;
        if (v instanceof JsonFloat) return v.text;
        const parts = [];
        for (const k of Object.keys(v)) {
          if (v[k] === undefined) continue;
          parts.push(`${JSON.stringify(k)}:${out(v[k], depth + 1)}`);
        }
        return `{${parts.join(',')}}`;
      }
      default:
        throw new TypeError(`stringifyJson: cannot write a ${typeof v}`);
    }
  };
  return out(value, 0);
}

// ---------------------------------------------------------------------------
// Requests (§4, §4.1; model/src/contract/request.rs)

const ID = 'id';
const TEXT = 'text';
const INT = 'int';

/** Every operation: its contract, its argument fields in order, and the value rules of its integers. */
const OP_SPECS = {
  'lease.take': { contract: 'lease', fields: [['tree', ID], ['holder', ID], ['ttl_ms', INT]], rules: [['ttl_ms', 'duration']] },
  'lease.renew': {
    contract: 'lease',
    fields: [['tree', ID], ['holder', ID], ['epoch', INT], ['ttl_ms', INT]],
    rules: [['ttl_ms', 'duration'], ['epoch', 'whole']],
  },
  'lease.release': { contract: 'lease', fields: [['tree', ID], ['holder', ID], ['epoch', INT]], rules: [['epoch', 'whole']] },
  'lease.read': { contract: 'lease', fields: [['tree', ID]], rules: [] },
  'lease.keep_execution': { contract: 'lease', fields: [['tree', ID], ['execution', ID]], rules: [] },
  'lease.kept_executions': { contract: 'lease', fields: [['tree', ID]], rules: [] },
  'queue.save': { contract: 'queue', fields: [['child', ID], ['depth', INT], ['payload', TEXT]], rules: [['depth', 'whole']] },
  'queue.claim': { contract: 'queue', fields: [['instance', ID], ['claim_ttl_ms', INT]], rules: [['claim_ttl_ms', 'duration']] },
  'queue.complete': { contract: 'queue', fields: [['child', ID], ['instance', ID], ['attempt', INT]], rules: [['attempt', 'whole']] },
  'queue.read': { contract: 'queue', fields: [['child', ID]], rules: [] },
  'rate.acquire_slot': {
    contract: 'rate',
    fields: [['provider', ID], ['holder', ID], ['limit', INT], ['ttl_ms', INT]],
    rules: [['limit', 'limit'], ['ttl_ms', 'duration']],
  },
  'rate.release_slot': { contract: 'rate', fields: [['provider', ID], ['slot', ID]], rules: [] },
  'rate.hit': {
    contract: 'rate',
    fields: [['provider', ID], ['limit', INT], ['window_ms', INT]],
    rules: [['limit', 'limit'], ['window_ms', 'duration']],
  },
  'rate.pause': { contract: 'rate', fields: [['provider', ID], ['until_ms', INT]], rules: [['until_ms', 'whole']] },
  'rate.read': { contract: 'rate', fields: [['provider', ID]], rules: [] },
  'effect.apply': {
    contract: 'fenced',
    fields: [['tree', ID], ['holder', ID], ['epoch', INT], ['effect', ID], ['payload', TEXT]],
    rules: [['epoch', 'whole']],
  },
  'call.begin': {
    contract: 'fenced',
    fields: [['tree', ID], ['holder', ID], ['epoch', INT], ['call', ID]],
    rules: [['epoch', 'whole']],
  },
  'call.finish': { contract: 'fenced', fields: [['call', ID], ['response', TEXT]], rules: [] },
};
const OPS = Object.freeze(Object.keys(OP_SPECS));

/** The outcomes each operation may answer (reply.rs `outcomes_of`); rate.read has none. */
const OUTCOMES = {
  'lease.take': ['granted', 'busy'],
  'lease.renew': ['renewed', 'lost'],
  'lease.release': ['released', 'not_held'],
  'lease.read': ['lease'],
  'lease.keep_execution': ['kept'],
  'lease.kept_executions': ['executions'],
  'queue.save': ['saved', 'exists'],
  'queue.claim': ['claimed', 'empty'],
  'queue.complete': ['completed', 'not_claimer'],
  'queue.read': ['child'],
  'rate.acquire_slot': ['acquired', 'full', 'paused'],
  'rate.release_slot': ['released', 'unknown'],
  'rate.hit': ['allowed', 'limited', 'paused'],
  'rate.pause': ['paused'],
  'rate.read': [],
  'effect.apply': ['applied', 'duplicate', 'fenced'],
  'call.begin': ['begun', 'duplicate', 'fenced'],
  'call.finish': ['finished', 'already_finished', 'not_begun', 'fenced'],
};

/** How serde names a JSON value in its messages. */
function typeName(v) {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'boolean') return `boolean \`${v}\``;
  if (typeof v === 'bigint') return `integer \`${v}\``;
  if (typeof v === 'number') return Number.isInteger(v) ? `integer \`${v}\`` : `floating point \`${v}\``;
  if (v instanceof JsonFloat) return `floating point \`${v.text}\``;
  if (typeof v === 'string') return `string ${JSON.stringify(v)}`;
  if (Array.isArray(v)) return 'sequence';
  return 'map';
}

function isPlainObject(v) {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof JsonFloat);
}

const has = (o, k) => Object.prototype.hasOwnProperty.call(o, k);
const backticked = (names) => names.map((x) => `\`${x}\``).join(', ');

/**
 * The typed arguments of a valid request: ids and payloads as strings,
 * integers as BigInt. Anything else throws a bad_request StoreError naming
 * the operation and what is wrong, before the store is called.
 */
function validateRequest(op, args) {
  const spec = typeof op === 'string' && has(OP_SPECS, op) ? OP_SPECS[op] : null;
  if (!spec) {
    const name = typeof op === 'string' ? op : shortJson(op === undefined ? null : op);
    throw badRequest(`${name}: unknown variant \`${name}\`, expected one of ${backticked(OPS)}`);
  }
  if (!isPlainObject(args)) {
    throw badRequest(`${op}: invalid type: ${typeName(args)}, expected the arguments object`);
  }
  const names = spec.fields.map(([name]) => name);
  for (const key of Object.keys(args)) {
    if (!names.includes(key)) throw badRequest(`${op}: unknown field \`${key}\`, expected one of ${backticked(names)}`);
  }
  const dups = args[DUPLICATE_KEYS];
  if (dups && dups.length) throw badRequest(`${op}: duplicate field \`${dups[0]}\``);
  const out = {};
  for (const [name, kind] of spec.fields) {
    if (!has(args, name)) throw badRequest(`${op}: missing field \`${name}\``);
    const v = args[name];
    if (kind === INT) {
      // A number that JSON.parse-style readers would give for 1.0 or 1e3 is a
      // JsonFloat here; `true`, "1000" and null are refused as serde does.
      if (typeof v === 'bigint') {
        if (v < I64_MIN || v > I64_MAX) throw badRequest(`${op}: ${name}: invalid value: integer \`${v}\`, expected i64`);
        out[name] = v;
      } else if (typeof v === 'number' && Number.isSafeInteger(v)) {
        // Only reached when a caller hands in JSON.parse output: safe integers are exact.
        out[name] = BigInt(v);
      } else {
        throw badRequest(`${op}: ${name}: invalid type: ${typeName(v)}, expected i64`);
      }
    } else {
      if (typeof v !== 'string') throw badRequest(`${op}: ${name}: invalid type: ${typeName(v)}, expected a string`);
      if (!wellFormed(v)) throw badRequest(`${op}: ${name}: not valid Unicode (a lone surrogate)`);
      out[name] = v;
    }
  }
  // The value rules, all problems in one message (request.rs `validate`).
  const problems = [];
  for (const [name, kind] of spec.fields) {
    if (kind === ID && out[name] === '') problems.push(`${name} must be a non-empty string`);
  }
  for (const [name, rule] of spec.rules) {
    const v = out[name];
    if (rule === 'duration' && (v < 1n || v > MAX_DURATION_MS)) {
      problems.push(`${name} must be a whole number of milliseconds in 1..=${MAX_DURATION_MS}, got ${v}`);
    } else if (rule === 'whole' && v < 0n) {
      problems.push(`${name} must be a whole number, got ${v}`);
    } else if (rule === 'limit' && (v < 1n || v > MAX_LIMIT)) {
      problems.push(`limit must be in 1..=${MAX_LIMIT}, got ${v}`);
    }
  }
  if (problems.length) throw badRequest(`${op}: ${problems.join('; ')}`);
  return Object.freeze(out);
}

/** Whether `s` has no lone surrogate (String.prototype.isWellFormed is Node 20+). */
function wellFormed(s) {
  if (typeof s.isWellFormed === 'function') return s.isWellFormed();
  return !/[\ud800-\udbff](?![\udc00-\udfff])|(?:^|[^\ud800-\udbff])[\udc00-\udfff]/.test(s);
}

/** Password-free form of a URL, for messages and logs. */
function redactUrl(url) {
  return String(url).replace(/^([a-z][a-z0-9+.-]*:\/\/)([^@/]*)@/i, (_, scheme, userinfo) => {
    const colon = userinfo.indexOf(':');
    return colon < 0 ? `${scheme}${userinfo}@` : `${scheme}${userinfo.slice(0, colon)}:***@`;
  });
}

/**
 * The validated `hello` arguments (§3). A redis_url that is not a Redis URL
 * and an opt-out other than null or `acknowledged-writes-may-be-lost` are
 * bad_request.
 */
function validateHello(args) {
  if (!isPlainObject(args)) throw badRequest(`hello: invalid type: ${typeName(args)}, expected the arguments object`);
  for (const name of ['instance', 'redis_url', 'prefix']) {
    if (!has(args, name)) throw badRequest(`hello: missing field \`${name}\``);
    if (typeof args[name] !== 'string') {
      throw badRequest(`hello: ${name}: invalid type: ${typeName(args[name])}, expected a string`);
    }
  }
  const optOut = has(args, 'opt_out') ? args.opt_out : null;
  if (optOut !== null && typeof optOut !== 'string') {
    throw badRequest(`hello: opt_out: invalid type: ${typeName(optOut)}, expected a string or null`);
  }
  if (args.instance === '') throw badRequest('hello: instance must be a non-empty string');
  // A misspelt opt-out must not be silently ignored.
  if (optOut !== null && optOut !== OPT_OUT) {
    throw badRequest(
      `hello: unknown opt-out ${JSON.stringify(optOut)}: the only opt-out is ${OPT_OUT} (and there is none for deployment)`,
    );
  }
  const redisUrl = args.redis_url;
  const shown = JSON.stringify(redactUrl(redisUrl));
  let url;
  try {
    url = new URL(redisUrl);
  } catch (e) {
    throw badRequest(`hello: redis_url ${shown} is not a Redis URL: it does not parse as a URL`);
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw badRequest(`hello: redis_url ${shown} is not a Redis URL: the scheme must be redis:// or rediss://, got ${url.protocol}//`);
  }
  if (!url.hostname) throw badRequest(`hello: redis_url ${shown} is not a Redis URL: it names no host`);
  if (url.pathname !== '' && !/^\/[0-9]*$/.test(url.pathname)) {
    throw badRequest(`hello: redis_url ${shown} is not a Redis URL: the path must be empty or a database number`);
  }
  return { instance: args.instance, redisUrl, prefix: args.prefix, optOut, optedOut: optOut === OPT_OUT };
}

// ---------------------------------------------------------------------------
// Replies (§4; model/src/contract/reply.rs)

/** An exact integer in i64 from a BigInt, a safe integer number or a canonical decimal string. */
function toInt(v, what) {
  let b;
  if (typeof v === 'bigint') b = v;
  else if (typeof v === 'number' && Number.isSafeInteger(v)) b = BigInt(v);
  else if (typeof v === 'string' && /^-?(0|[1-9][0-9]*)$/.test(v)) b = BigInt(v);
  else {
    throw new TypeError(
      `${what} must be a whole number (a BigInt, a safe integer or a decimal string), got ${typeof v === 'string' ? JSON.stringify(v) : String(v)}`,
    );
  }
  if (b < I64_MIN || b > I64_MAX) throw new TypeError(`${what} must fit a signed 64-bit integer, got ${b}`);
  return b;
}
const toOptInt = (v, what) => (v === null || v === undefined ? null : toInt(v, what));
function toText(v, what) {
  if (typeof v !== 'string') throw new TypeError(`${what} must be a string, got ${v === null ? 'null' : typeof v}`);
  return v;
}
const toOptText = (v, what) => (v === null || v === undefined ? null : toText(v, what));
const CHILD_STATES = ['queued', 'claimed', 'done'];
function toState(v, what) {
  if (!CHILD_STATES.includes(v)) throw new TypeError(`${what} must be one of "queued", "claimed", "done", got ${JSON.stringify(v)}`);
  return v;
}
function toBool(v, what) {
  if (typeof v !== 'boolean') throw new TypeError(`${what} must be true or false, got ${JSON.stringify(v)}`);
  return v;
}

const deepFreeze = (o) => {
  for (const v of Object.values(o)) if (typeof v === 'object' && v !== null) deepFreeze(v);
  return Object.freeze(o);
};
const outcome = (name, body) => deepFreeze({ [name]: body });

/**
 * Builders of every outcome. Each checks its values (integers exact, in
 * i64; strings; null only where the contract allows it) and returns the
 * frozen `ok` object of the answer.
 */
const reply = Object.freeze({
  // lease.take
  granted: (epoch, expiresAtMs) =>
    outcome('granted', { epoch: toInt(epoch, 'granted.epoch'), expires_at_ms: toInt(expiresAtMs, 'granted.expires_at_ms') }),
  busy: (holder, epoch, expiresAtMs) =>
    outcome('busy', {
      holder: toText(holder, 'busy.holder'),
      epoch: toInt(epoch, 'busy.epoch'),
      expires_at_ms: toInt(expiresAtMs, 'busy.expires_at_ms'),
    }),
  // lease.renew
  renewed: (expiresAtMs) => outcome('renewed', { expires_at_ms: toInt(expiresAtMs, 'renewed.expires_at_ms') }),
  lost: (holder = null, epoch = null) =>
    outcome('lost', { holder: toOptText(holder, 'lost.holder'), epoch: toOptInt(epoch, 'lost.epoch') }),
  // lease.release, rate.release_slot
  released: () => outcome('released', {}),
  notHeld: () => outcome('not_held', {}),
  // lease.read
  lease: (view) =>
    outcome(
      'lease',
      view === null || view === undefined
        ? null
        : {
            holder: toOptText(view.holder, 'lease.holder'),
            epoch: toInt(view.epoch, 'lease.epoch'),
            expires_at_ms: toOptInt(view.expiresAtMs, 'lease.expires_at_ms'),
            live: toBool(view.live, 'lease.live'),
          },
    ),
  // lease.keep_execution, lease.kept_executions
  kept: () => outcome('kept', {}),
  executions: (ids) => {
    if (!Array.isArray(ids)) throw new TypeError('executions must be an array of strings');
    return outcome('executions', ids.map((id, i) => toText(id, `executions[${i}]`)));
  },
  // queue.save
  saved: () => outcome('saved', {}),
  exists: (state) => outcome('exists', { state: toState(state, 'exists.state') }),
  // queue.claim
  claimed: (child, depth, payload, attempt) =>
    outcome('claimed', {
      child: toText(child, 'claimed.child'),
      depth: toInt(depth, 'claimed.depth'),
      payload: toText(payload, 'claimed.payload'),
      attempt: toInt(attempt, 'claimed.attempt'),
    }),
  empty: () => outcome('empty', {}),
  // queue.complete
  completed: () => outcome('completed', {}),
  notClaimer: (claimer = null, attempt = null) =>
    outcome('not_claimer', {
      claimer: toOptText(claimer, 'not_claimer.claimer'),
      attempt: toOptInt(attempt, 'not_claimer.attempt'),
    }),
  // queue.read
  child: (view) =>
    outcome(
      'child',
      view === null || view === undefined
        ? null
        : {
            state: toState(view.state, 'child.state'),
            claimer: toOptText(view.claimer, 'child.claimer'),
            attempt: toInt(view.attempt, 'child.attempt'),
            depth: toInt(view.depth, 'child.depth'),
          },
    ),
  // rate.acquire_slot
  acquired: (slot) => {
    if (toText(slot, 'acquired.slot') === '') throw new TypeError('acquired.slot must be a non-empty string');
    return outcome('acquired', { slot });
  },
  full: (retryAtMs) => outcome('full', { retry_at_ms: toInt(retryAtMs, 'full.retry_at_ms') }),
  // rate.acquire_slot, rate.hit, rate.pause
  paused: (untilMs) => outcome('paused', { until_ms: toInt(untilMs, 'paused.until_ms') }),
  // rate.release_slot
  unknown: () => outcome('unknown', {}),
  // rate.hit
  allowed: (remaining) => outcome('allowed', { remaining: toInt(remaining, 'allowed.remaining') }),
  limited: (retryAtMs) => outcome('limited', { retry_at_ms: toInt(retryAtMs, 'limited.retry_at_ms') }),
  // rate.read: the one reply without an outcome key
  rateState: (slotsInUse, pausedUntilMs = null) =>
    deepFreeze({
      slots_in_use: toInt(slotsInUse, 'slots_in_use'),
      paused_until_ms: toOptInt(pausedUntilMs, 'paused_until_ms'),
    }),
  // fenced (§4.5)
  applied: () => outcome('applied', {}),
  duplicate: () => outcome('duplicate', {}),
  fenced: (epoch) => outcome('fenced', { epoch: toInt(epoch, 'fenced.epoch') }),
  begun: () => outcome('begun', {}),
  finished: () => outcome('finished', {}),
  alreadyFinished: (response) => outcome('already_finished', { response: toText(response, 'already_finished.response') }),
  notBegun: () => outcome('not_begun', {}),
});

/**
 * Checks an `ok` value for `op` as storeproof reads it (reply.rs
 * `Reply::from_wire`): an outcome `op` may answer, each field present with
 * its type, null only where allowed. Returns null when well formed, else
 * what is wrong, e.g. "lease.take: `granted.epoch` must be a whole number …".
 */
function checkReply(op, ok) {
  const err = (p, want, o, k) =>
    `${op}: \`${p}\` must be ${want}, ${o !== null && has(o, k) ? `got ${shortJson(o[k])}` : 'but it is missing'}`;
  const isInt = (v) => typeof v === 'bigint' ? v >= I64_MIN && v <= I64_MAX : Number.isSafeInteger(v);
  const at = (outcomeName, field) => (outcomeName ? `${outcomeName}.${field}` : field);
  const int = (o, oc, f) => (isInt(o[f]) ? null : err(at(oc, f), 'a whole number (a JSON integer)', o, f));
  const optInt = (o, oc, f) => (o[f] === null || isInt(o[f]) ? null : err(at(oc, f), 'a whole number or null', o, f));
  const text = (o, oc, f) => (typeof o[f] === 'string' ? null : err(at(oc, f), 'a string', o, f));
  const optText = (o, oc, f) => (o[f] === null || typeof o[f] === 'string' ? null : err(at(oc, f), 'a string or null', o, f));
  const state = (o, oc, f) => (CHILD_STATES.includes(o[f]) ? null : err(at(oc, f), 'one of "queued", "claimed", "done"', o, f));
  const first = (...checks) => checks.find((c) => c !== null) || null;

  if (!has(OUTCOMES, op)) return `${op} is not an operation`;
  if (!isPlainObject(ok)) return `${op}: the ok value must be an object, got ${shortJson(ok)}`;
  if (op === 'rate.read') return first(int(ok, '', 'slots_in_use'), optInt(ok, '', 'paused_until_ms'));
  const allowed = OUTCOMES[op];
  const want = allowed.map((o) => `\`${o}\``).join(' or ');
  const keys = Object.keys(ok);
  if (keys.length !== 1) return `${op}: the ok value must have exactly one key, the outcome (${want}), got ${shortJson(ok)}`;
  const oc = keys[0];
  const body = ok[oc];
  if (!allowed.includes(oc)) return `${op}: the outcome must be ${want}, got \`${oc}\``;
  if (oc === 'lease' && body === null) return null;
  if (oc === 'child' && body === null) return null;
  if (oc === 'executions') {
    if (!Array.isArray(body)) return `${op}: \`executions\` must be an array of strings, got ${shortJson(body)}`;
    const bad = body.findIndex((v) => typeof v !== 'string');
    return bad < 0 ? null : `${op}: \`executions[${bad}]\` must be a string, got ${shortJson(body[bad])}`;
  }
  if (!isPlainObject(body)) return `${op}: \`${oc}\` must be an object, got ${shortJson(body)}`;
  switch (oc) {
    case 'lease':
      return first(
        optText(body, oc, 'holder'),
        int(body, oc, 'epoch'),
        optInt(body, oc, 'expires_at_ms'),
        typeof body.live === 'boolean' ? null : err('lease.live', 'true or false', body, 'live'),
      );
    case 'child':
      return first(state(body, oc, 'state'), optText(body, oc, 'claimer'), int(body, oc, 'attempt'), int(body, oc, 'depth'));
    case 'granted':
      return first(int(body, oc, 'epoch'), int(body, oc, 'expires_at_ms'));
    case 'busy':
      return first(text(body, oc, 'holder'), int(body, oc, 'epoch'), int(body, oc, 'expires_at_ms'));
    case 'renewed':
      return int(body, oc, 'expires_at_ms');
    case 'lost':
      return first(optText(body, oc, 'holder'), optInt(body, oc, 'epoch'));
    case 'exists':
      return state(body, oc, 'state');
    case 'claimed':
      return first(text(body, oc, 'child'), int(body, oc, 'depth'), text(body, oc, 'payload'), int(body, oc, 'attempt'));
    case 'not_claimer':
      return first(optText(body, oc, 'claimer'), optInt(body, oc, 'attempt'));
    case 'acquired':
      return text(body, oc, 'slot') || (body.slot === '' ? err('acquired.slot', 'a non-empty string', body, 'slot') : null);
    case 'full':
    case 'limited':
      return int(body, oc, 'retry_at_ms');
    case 'paused':
      return int(body, oc, 'until_ms');
    case 'allowed':
      return int(body, oc, 'remaining');
    case 'fenced':
      return int(body, oc, 'epoch');
    case 'already_finished':
      return text(body, oc, 'response');
    default:
      return null; // the empty outcomes: any object
  }
}

function shortJson(v) {
  let t;
  try {
    t = v === undefined ? 'undefined' : stringifyJson(v);
  } catch (e) {
    t = String(v);
  }
  return t.length > 80 ? `${t.slice(0, 80)}…` : t;
}

// ---------------------------------------------------------------------------
// Deadlines

/** Now on the monotonic clock, in ms: what `deadline`s are measured on. */
const monotonicNow = () => performance.now();

/** A deadline `ms` from now (monotonic clock). */
const deadlineIn = (ms) => monotonicNow() + ms;

/**
 * `work`, or an `unavailable` StoreError once `deadline` (monotonic ms, as
 * `ctx.deadline`, or an object with a `deadline`) has passed without an
 * answer: a command that never answers must not hold the instance past
 * storeproof's request timeout. The work itself is not cancelled: close the
 * connection it runs on (its reply would arrive out of step).
 */
function withDeadline(work, deadline, what = 'the Redis server') {
  const at = typeof deadline === 'object' && deadline !== null ? deadline.deadline : deadline;
  if (typeof at !== 'number' || Number.isNaN(at)) throw new TypeError('withDeadline: the deadline must be a number (monotonic ms)');
  return new Promise((resolve, reject) => {
    const left = Math.max(0, at - monotonicNow());
    const timer = setTimeout(() => {
      reject(new StoreError('unavailable', `${what} did not answer within ${Math.round(left)} ms; the outcome is unknown`));
    }, left);
    Promise.resolve(work).then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e) => {
        clearTimeout(timer);
        reject(e);
      },
    );
  });
}

// ---------------------------------------------------------------------------
// Redis errors, client-agnostic (stores/src/redis/assumptions.rs `command_failure`)

/** A server error reply, for clients that do not have an error class of their own. */
class RedisErrorReply extends Error {
  constructor(message) {
    super(message);
    this.name = 'RedisErrorReply';
  }
}
const errorReply = (message) => new RedisErrorReply(message);

/**
 * Whether `e` is the server's error reply (the command reached the server,
 * or a proxy answered in its name), as opposed to a connection that failed,
 * closed or timed out. Knows node-redis (ErrorReply), ioredis (ReplyError),
 * RedisErrorReply, and any error with `isErrorReply === true`.
 */
function isErrorReply(e) {
  if (!(e instanceof Error)) return false;
  if (e instanceof RedisErrorReply || e.isErrorReply === true) return true;
  const n = e.constructor && e.constructor.name;
  return n === 'ErrorReply' || n === 'ReplyError';
}

/** [code, detail] of an error reply ("NOPERM …" → ["NOPERM", "…"]). */
function errorCode(e) {
  const message = String(e && e.message !== undefined ? e.message : e);
  const m = /^([A-Z][A-Z_-]+)(?: (.*))?$/s.exec(message);
  if (m) return [m[1], m[2] || ''];
  return ['ERR', message];
}

/** What went wrong, in words: the error's message with its cause. */
function describe(e) {
  if (!(e instanceof Error)) return String(e);
  const inner = e.socketError || e.cause;
  const own = e.message || e.name;
  return inner instanceof Error && inner.message && inner.message !== own ? `${own}: ${inner.message}` : own;
}

const NOT_READY = ['LOADING', 'BUSY', 'MASTERDOWN', 'TRYAGAIN', 'CLUSTERDOWN'];

/** The StoreError for a failed command of the server checks (`command` names it). */
function commandFailure(command, e) {
  if (e instanceof StoreError) return e;
  if (!isErrorReply(e)) {
    return new StoreError('unavailable', `${command}: the server could not be reached: ${describe(e)}`);
  }
  const [code, detail] = errorCode(e);
  if (NOT_READY.includes(code)) {
    return new StoreError('unavailable', `${command}: the server is not ready (${code} ${detail}); try again`);
  }
  if (code.startsWith('NOPERM')) {
    return new StoreError(
      'config_refused',
      `the server's ACL refuses ${command} for this user (${code} ${detail}), so its settings cannot be verified; allow ${command} for this user`,
    );
  }
  if (code === 'ERR' && detail.startsWith('unknown command')) {
    return new StoreError(
      'config_refused',
      `the server does not know ${command} (renamed or disabled: ${detail}), so its settings cannot be verified; give the store a connection where ${command} works`,
    );
  }
  return new StoreError('config_refused', `the server refused ${command} (${code} ${detail}), so its settings cannot be verified`);
}

/**
 * The StoreError for an operation's failed command: a full server (OOM) is
 * store_full; another error reply, or no reply, is unavailable (the outcome
 * is unknown). A StoreError passes through.
 */
function redisFailure(what, e) {
  if (e instanceof StoreError) return e;
  if (isErrorReply(e)) {
    const [code, detail] = errorCode(e);
    if (code === 'OOM' || /OOM command not allowed/.test(String(e.message))) {
      return new StoreError(
        'store_full',
        `${what}: the Redis server is full (maxmemory reached) and refused the write; nothing was changed. Free memory or raise maxmemory.`,
      );
    }
    return new StoreError('unavailable', `${what}: the server answered an error (${code} ${detail})`);
  }
  return new StoreError('unavailable', `${what}: the Redis server did not answer (${describe(e)}); the outcome is unknown`);
}

// ---------------------------------------------------------------------------
// Server checks (§7; stores/src/redis/assumptions.rs `read_facts`, `assess`)

const REQUIRED_DURABILITY = Object.freeze([
  ['appendonly', 'yes'],
  ['appendfsync', 'always'],
  ['no-appendfsync-on-rewrite', 'no'],
  ['maxmemory-policy', 'noeviction'],
]);

const asText = (v) => (v === null || v === undefined ? '' : Buffer.isBuffer(v) ? v.toString('utf8') : String(v));

/** A field of an INFO reply (text "k:v" lines, or an object/Map from a client that parses INFO). */
function infoField(info, name) {
  if (info instanceof Map) {
    for (const [k, v] of info) if (asText(k) === name) return asText(v).trim();
    return null;
  }
  if (typeof info === 'object' && info !== null && !Buffer.isBuffer(info) && !Array.isArray(info)) {
    return has(info, name) ? asText(info[name]).trim() : null;
  }
  for (const line of asText(info).split('\n')) {
    const l = line.replace(/\r$/, '');
    const colon = l.indexOf(':');
    if (colon > 0 && l.slice(0, colon) === name) return l.slice(colon + 1).trim();
  }
  return null;
}

/** The value of `name` in a CONFIG GET reply (a flat array, an object or a Map). */
function configValue(reply, name) {
  if (Array.isArray(reply)) {
    for (let i = 0; i + 1 < reply.length; i += 2) if (asText(reply[i]) === name) return asText(reply[i + 1]);
    return null;
  }
  if (reply instanceof Map) {
    for (const [k, v] of reply) if (asText(k) === name) return asText(v);
    return null;
  }
  if (typeof reply === 'object' && reply !== null && has(reply, name)) return asText(reply[name]);
  return null;
}

/**
 * Reads the facts §7 judges: INFO replication, INFO cluster and CONFIG GET
 * of each durability setting. A CONFIG GET the server refuses is kept as
 * `configRefused` (deployment is judged first); any other failure throws.
 */
async function readServerFacts(send) {
  const run = async (command, argv) => {
    try {
      return await send(argv);
    } catch (e) {
      throw commandFailure(command, e);
    }
  };
  const replication = await run('INFO replication', ['INFO', 'replication']);
  const cluster = await run('INFO cluster', ['INFO', 'cluster']);
  const config = {};
  let configRefused = null;
  for (const [name] of REQUIRED_DURABILITY) {
    let got;
    try {
      got = await send(['CONFIG', 'GET', name]);
    } catch (e) {
      const failure = commandFailure('CONFIG GET', e);
      if (failure.kind !== 'config_refused') throw failure;
      configRefused = failure;
      break;
    }
    const value = configValue(got, name);
    if (value !== null) config[name] = value;
  }
  return { replication, cluster, config, configRefused };
}

/**
 * Judges the facts in §7's order and throws the refusal, if any:
 * deployment (no opt-out), then a refused CONFIG GET, then durability
 * (unless opted out), naming every short setting with its fix.
 */
function assessServer(facts, optedOut) {
  const short = [];
  if (!facts.configRefused) {
    for (const [name, required] of REQUIRED_DURABILITY) {
      const actual = facts.config ? facts.config[name] : undefined;
      if (actual === undefined || actual === null) {
        short.push([name, `CONFIG GET does not report ${name} (set ${name} ${required})`]);
      } else if (actual.trim().toLowerCase() !== required) {
        short.push([name, `${name} is ${actual} (set ${name} ${required})`]);
      }
    }
  }
  const deployment = [];
  const role = infoField(facts.replication, 'role');
  if (role === null) {
    deployment.push(['role', 'INFO replication does not report role; the store needs a primary (role:master)']);
  } else if (role !== 'master') {
    deployment.push([
      'role',
      `the server is a replica (role:${role}), not a primary; point redis_url at the primary (role:master)`,
    ]);
  }
  const enabled = infoField(facts.cluster, 'cluster_enabled');
  if (enabled === null) {
    deployment.push([
      'cluster_enabled',
      'INFO cluster does not report cluster_enabled; the store needs a standalone primary (cluster_enabled:0)',
    ]);
  } else if (enabled !== '0') {
    deployment.push([
      'cluster_enabled',
      `cluster mode is on (cluster_enabled:${enabled}); the store needs a standalone primary (cluster_enabled:0)`,
    ]);
  }
  if (deployment.length) {
    let message = `refusing this server: ${deployment.map(([, why]) => why).join('; ')}. There is no opt-out for deployment.`;
    if (short.length && !optedOut) message += ` Durability is also short: ${short.map(([, why]) => why).join('; ')}.`;
    throw new StoreError('deployment', message, deployment.map(([name]) => name));
  }
  if (facts.configRefused) throw facts.configRefused;
  if (!short.length || optedOut) return;
  throw new StoreError(
    'durability',
    `the server may lose acknowledged writes: ${short.map(([, why]) => why).join('; ')}. Set them, or pass --opt-out ${OPT_OUT} to accept that acknowledged writes may be lost`,
    short.map(([name]) => name),
  );
}

/**
 * The server checks of §7 in one call, for `hello`: `send(argv)` runs one
 * raw command on the store's connection and resolves with its reply (rejects
 * with the client's error: an error reply, see `isErrorReply`, or a failed
 * connection). Throws the StoreError to answer: deployment, config_refused,
 * durability, or unavailable (not reachable, LOADING, BUSY).
 */
async function checkServer(send, optOut) {
  const optedOut = optOut === true || optOut === OPT_OUT;
  assessServer(await readServerFacts(send), optedOut);
}

// ---------------------------------------------------------------------------
// Lua scripts (§5: loaded at hello, one EVALSHA per operation, NOSCRIPT → load and retry once)

class LuaScripts {
  /** @param {Record<string, string>} sources name → Lua source */
  constructor(sources) {
    this.source = Object.freeze({ ...sources });
    this.sha = Object.freeze(
      Object.fromEntries(Object.entries(sources).map(([name, src]) => [name, crypto.createHash('sha1').update(src, 'utf8').digest('hex')])),
    );
  }

  get names() {
    return Object.keys(this.source);
  }

  /**
   * SCRIPT LOAD of one script, or of every script (`name` left out). A
   * refusal (ACL, renamed command) is config_refused; no answer is unavailable.
   * Every script: asked first with one SCRIPT EXISTS, and only those the
   * server lacks are loaded (a later case on the same server, §3.3, sends one
   * command, not one per script).
   */
  async load(send, name) {
    const wanted = name === undefined ? await this.missing(send, this.names) : [name];
    for (const n of wanted) {
      let sha;
      try {
        sha = asText(await send(['SCRIPT', 'LOAD', this.source[n]]));
      } catch (e) {
        const failure = commandFailure('SCRIPT LOAD', e);
        if (failure.kind !== 'config_refused') throw failure;
        throw new StoreError(
          'config_refused',
          `the server refused SCRIPT LOAD (${errorCode(e).join(' ')}); every operation of this store is a Lua script, so allow EVALSHA and SCRIPT LOAD for this user`,
        );
      }
      if (sha !== this.sha[n]) {
        throw new StoreError('unavailable', `SCRIPT LOAD of ${n} answered ${JSON.stringify(sha)}, expected ${this.sha[n]}`);
      }
    }
  }

  /**
   * The scripts of `names` the server does not hold (a script's SHA1 names its
   * source, so one held is this one). A SCRIPT EXISTS that fails or answers
   * out of shape says nothing: every one is loaded, and a load says what is
   * wrong.
   */
  async missing(send, names) {
    if (names.length === 0) return names;
    let held;
    try {
      held = await send(['SCRIPT', 'EXISTS', ...names.map((n) => this.sha[n])]);
    } catch {
      return names;
    }
    if (!Array.isArray(held) || held.length !== names.length) return names;
    return names.filter((_, i) => !(held[i] === 1 || held[i] === true || held[i] === 1n));
  }

  /**
   * One EVALSHA of script `name` (keys and args as text; BigInts exact). A
   * server that forgot the script (NOSCRIPT: it did not run) gets it again
   * and the call is retried once. Any other failure is the StoreError to
   * answer (`redisFailure`), and nothing is retried.
   */
  async run(send, name, keys, args, what = name) {
    if (!has(this.sha, name)) throw new TypeError(`no Lua script named ${JSON.stringify(name)}`);
    const argv = ['EVALSHA', this.sha[name], String(keys.length), ...keys.map(String), ...args.map(String)];
    try {
      return await send(argv);
    } catch (e) {
      if (!(isErrorReply(e) && errorCode(e)[0] === 'NOSCRIPT')) throw redisFailure(what, e);
    }
    try {
      await this.load(send, name);
    } catch (e) {
      throw new StoreError('unavailable', `${what}: the server forgot the script (NOSCRIPT) and loading it again failed: ${e.message}`);
    }
    try {
      return await send(argv);
    } catch (e) {
      throw redisFailure(what, e);
    }
  }
}

/**
 * The Lua scripts of a store: `{ sources }` (name → source), or `{ dir }`:
 * every `NAME.lua` there is script NAME, with `prelude` (a file of `dir`,
 * e.g. shared functions) put in front of each other script.
 */
function luaScripts(options) {
  if (options.sources) return new LuaScripts(options.sources);
  const dir = options.dir;
  const prelude = options.prelude ? fs.readFileSync(path.join(dir, options.prelude), 'utf8') : '';
  const sources = {};
  for (const file of fs.readdirSync(dir).sort()) {
    if (!file.endsWith('.lua') || file === options.prelude) continue;
    sources[file.slice(0, -4)] = prelude + fs.readFileSync(path.join(dir, file), 'utf8');
  }
  return new LuaScripts(sources);
}

// ---------------------------------------------------------------------------
// Kept executions (§4.2): never in Redis, shared by every instance of a run, durable.
//
// Why a file of our own: Node 20 has no built-in SQLite (node:sqlite came in
// Node 22) and the kit has no dependencies. What the contract needs is small:
// ids kept per tree, each once, in first-kept order, seen by every process of
// the run, durable once acknowledged. One append-only file per prefix does
// it without locks: each keep is one write(2) of one line on a descriptor
// opened O_APPEND (the kernel puts concurrent appends one after the other),
// then fsync before the answer; a read takes the lines in file order and
// keeps each id's first. Each record starts with a newline of its own, so a
// write cut short (a SIGKILL mid-write) leaves one unreadable line that is
// skipped, never glued to the next record; the last line, without its
// newline, may be such a stump and is ignored.

function keptExecutionsPath(namespace, workdir) {
  const dir = workdir || process.env.STOREPROOF_WORKDIR || os.tmpdir();
  const hash = crypto.createHash('sha256').update(namespace, 'utf8').digest('hex').slice(0, 32);
  return path.join(dir, 'node-kept-executions', `${hash}.jsonl`);
}

function fileFailure(what, e) {
  if (e && (e.code === 'ENOSPC' || e.code === 'EDQUOT')) return new StoreError('store_full', `kept executions: ${what}: ${e.message}`);
  return new StoreError('unavailable', `kept executions: ${what}: ${e && e.message}`);
}

function fsyncDir(dir) {
  let fd;
  try {
    fd = fs.openSync(dir, 'r');
    fs.fsyncSync(fd);
  } catch (e) {
    // Some file systems cannot fsync a directory; the file's own fsync still holds.
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

class KeptExecutions {
  /**
   * @param {string} file the side file (keptExecutionsPath)
   * @param {string} namespace the prefix: instances of one check share it
   */
  constructor(file, namespace) {
    this.file = file;
    this.namespace = namespace;
    const dir = path.dirname(file);
    try {
      if (!fs.existsSync(dir)) {
        // Not recursive: the workdir exists; only our folder inside it is made.
        try {
          fs.mkdirSync(dir);
        } catch (e) {
          if (e.code !== 'EEXIST') throw e; // another instance made it first
        }
        fsyncDir(path.dirname(dir));
      }
      const created = !fs.existsSync(file);
      this.fd = fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_APPEND | fs.constants.O_CREAT, 0o644);
      if (created) fsyncDir(dir);
    } catch (e) {
      throw fileFailure(`cannot open ${file}`, e);
    }
  }

  /** Keeps `execution` for `tree`, durably (fsync) before it returns. */
  keep(tree, execution) {
    const line = Buffer.from(`\n${JSON.stringify([this.namespace, tree, execution])}\n`, 'utf8');
    try {
      const written = fs.writeSync(this.fd, line, 0, line.length);
      if (written !== line.length) throw new Error(`short write (${written} of ${line.length} bytes)`);
      fs.fsyncSync(this.fd);
    } catch (e) {
      throw fileFailure(`cannot write ${this.file}`, e);
    }
  }

  /** The ids kept for `tree`, each once, in the order first kept. */
  list(tree) {
    let text;
    try {
      text = fs.readFileSync(this.file, 'utf8');
    } catch (e) {
      if (e.code === 'ENOENT') return [];
      throw fileFailure(`cannot read ${this.file}`, e);
    }
    const lines = text.split('\n');
    lines.pop(); // after the last newline: empty, or a record still being written
    const seen = new Set();
    const out = [];
    for (const line of lines) {
      if (line === '') continue;
      let rec;
      try {
        rec = JSON.parse(line);
      } catch (e) {
        continue; // a record cut short
      }
      if (!Array.isArray(rec) || rec.length !== 3 || rec[0] !== this.namespace || rec[1] !== tree) continue;
      if (typeof rec[2] !== 'string' || seen.has(rec[2])) continue;
      seen.add(rec[2]);
      out.push(rec[2]);
    }
    return out;
  }

  close() {
    if (this.fd !== undefined) {
      try {
        fs.closeSync(this.fd);
      } catch (e) {
        // already closed
      }
      this.fd = undefined;
    }
  }
}

// ---------------------------------------------------------------------------
// The adapter: requests in, answers out

let logName = 'storeproof-node-adapter';
let logInstance = '?';

/** One line to stderr (storeproof shows the last few KiB when the adapter fails). */
function log(message) {
  try {
    process.stderr.write(`[${logName} ${logInstance}] ${message}\n`);
  } catch (e) {
    // stderr gone: nothing to do
  }
}

function checkStore(store) {
  const fail = (why) => {
    throw new TypeError(`storeproof adapter kit: the store ${why}`);
  };
  if (!store || typeof store !== 'object') fail('must be an object');
  if (typeof store.name !== 'string' || !store.name) fail('needs a name (a non-empty string)');
  if (typeof store.version !== 'string' || !store.version) fail('needs a version (a non-empty string)');
  if (!Array.isArray(store.contracts) || !store.contracts.length) fail('needs contracts: at least one of lease, queue, rate, fenced');
  for (const c of store.contracts) if (!CONTRACTS.includes(c)) fail(`names an unknown contract ${JSON.stringify(c)}`);
  if (typeof store.hello !== 'function') fail('needs a hello(hello) function');
  if (store.reconnect !== undefined && typeof store.reconnect !== 'function') fail('reconnect must be a function');
  if (store.cases !== undefined && typeof store.cases !== 'boolean') fail('cases must be true or false');
  if (store.close !== undefined && typeof store.close !== 'function') fail('close must be a function');
  if (store.cases && !store.close) fail('declares cases but has no close(ctx) to end a case');
  if (store.state !== undefined && store.state !== 'redis' && store.state !== 'durable') fail('state must be "redis" or "durable"');
  const ops = store.ops || {};
  for (const [op, fn] of Object.entries(ops)) {
    if (!has(OP_SPECS, op)) fail(`offers an unknown operation ${JSON.stringify(op)}`);
    if (typeof fn !== 'function') fail(`operation ${op} must be a function`);
  }
}

/**
 * The protocol engine of one process, without the I/O: `handleLine(text)`
 * answers one request line with one answer line (no newline). `run` feeds it
 * stdin; tests feed it strings.
 */
function createAdapter(store) {
  checkStore(store);
  const ops = store.ops || {};
  const deadlineMs = store.deadlineMs || DEFAULT_DEADLINE_MS;
  const keepsExecutions = store.contracts.includes('lease') && store.keptExecutions !== false;
  let session = null; // set by a successful hello: { hello, kept }
  logName = store.name;

  const capabilities = () => {
    const list = [];
    if (store.reconnect) list.push('reconnect');
    if (store.stateless) list.push('stateless');
    if (store.cases) list.push('cases');
    return list;
  };

  /** Runs the store's function by the deadline, with a backstop for one that ignores it. */
  const guarded = (what, deadline, fn) =>
    withDeadline(
      Promise.resolve().then(fn),
      deadline + BACKSTOP_GRACE_MS,
      `${what} (the store, past its deadline)`,
    );

  async function hello(args, clockMs) {
    if (session && !store.cases) throw badRequest('hello: this instance already said hello');
    const h = validateHello(args);
    if (session) {
      // A new case (§3.3): the earlier one is closed and forgotten first.
      const ended = session;
      session = null;
      if (ended.kept) ended.kept.close();
      const deadline = deadlineIn(deadlineMs);
      const ctx = Object.freeze({ op: 'close', clockMs, deadline, instance: ended.hello.instance, prefix: ended.hello.prefix, log });
      await guarded('close', deadline, () => store.close(ctx));
    }
    logInstance = h.instance;
    const deadline = deadlineIn(HELLO_DEADLINE_MS);
    const ctx = Object.freeze({ ...h, clockMs, deadline, log });
    try {
      await guarded('hello', deadline, () => store.hello(ctx));
    } catch (e) {
      // A refused server (§7) leaves a process that offers cases in step
      // for the next case (§3.3): what this hello opened is closed now.
      if (store.cases) {
        const closing = Object.freeze({ op: 'close', clockMs, deadline: deadlineIn(deadlineMs), instance: h.instance, prefix: h.prefix, log });
        await guarded('close', closing.deadline, () => store.close(closing)).catch(() => {});
      }
      throw e;
    }
    let kept = null;
    if (keepsExecutions && !ops['lease.keep_execution']) kept = new KeptExecutions(keptExecutionsPath(h.prefix), h.prefix);
    session = { hello: ctx, kept };
    log(`ready: prefix ${h.prefix}${h.optedOut ? ' (durability opted out)' : ''}, ${redactUrl(h.redisUrl)}`);
    const answer = { name: store.name, version: store.version, contracts: [...store.contracts] };
    const caps = capabilities();
    if (caps.length) answer.capabilities = caps;
    if (store.state) answer.state = store.state;
    return answer;
  }

  async function reconnect(args, clockMs) {
    if (!store.reconnect) throw badRequest('reconnect: this adapter does not offer it (not in its capabilities)');
    if (!session) throw badRequest('reconnect: send hello first');
    if (!isPlainObject(args) || Object.keys(args).length) {
      throw badRequest(`reconnect: takes no arguments, got ${shortJson(args)}`);
    }
    const deadline = deadlineIn(deadlineMs);
    const ctx = Object.freeze({ op: 'reconnect', clockMs, deadline, instance: session.hello.instance, prefix: session.hello.prefix, log });
    await guarded('reconnect', deadline, () => store.reconnect(ctx));
    return { reconnected: {} };
  }

  async function operation(op, args, clockMs) {
    const a = validateRequest(op, args);
    if (!session) throw badRequest(`${op}: send hello first`);
    const contract = OP_SPECS[op].contract;
    if (!store.contracts.includes(contract)) {
      throw new StoreError('unsupported', `${op}: this store offers only ${store.contracts.join(', ')}`);
    }
    if (session.kept && op === 'lease.keep_execution') {
      session.kept.keep(a.tree, a.execution);
      return reply.kept();
    }
    if (session.kept && op === 'lease.kept_executions') return reply.executions(session.kept.list(a.tree));
    const fn = ops[op];
    if (!fn) throw new StoreError('unsupported', `${op}: this store does not offer ${op}`);
    const deadline = deadlineIn(deadlineMs);
    const ctx = Object.freeze({ op, clockMs, deadline, instance: session.hello.instance, prefix: session.hello.prefix, log });
    const ok = await guarded(op, deadline, () => fn(a, ctx));
    const wrong = checkReply(op, ok);
    if (wrong) {
      throw new StoreError('unavailable', `the store answered a reply the contract does not allow (${wrong}); the outcome is unknown`);
    }
    return ok;
  }

  async function handleRequest(req) {
    if (!isPlainObject(req)) throw badRequest(`a request must be a JSON object, got ${typeName(req)}`);
    const id = req.id;
    if (typeof id !== 'bigint' || id < 0n) throw badRequest(`a request needs an \`id\`, a whole number ≥ 0, got ${typeName(id)}`);
    const op = req.op;
    if (typeof op !== 'string') throw badRequest(`a request needs an \`op\` string, got ${typeName(op)}`);
    if (!has(req, 'args')) throw badRequest(`${op}: missing field \`args\``);
    const clockMs = req.clock_ms;
    if (typeof clockMs !== 'bigint' || clockMs < I64_MIN || clockMs > I64_MAX) {
      throw badRequest(`${op}: clock_ms must be a whole number of milliseconds (a JSON integer), got ${typeName(clockMs)}`);
    }
    if (op === 'hello') return hello(req.args, clockMs);
    if (op === 'reconnect') return reconnect(req.args, clockMs);
    return operation(op, req.args, clockMs);
  }

  /** One request line → one answer line (without its newline). Never throws. */
  async function handleLine(line) {
    let id = null;
    let answer;
    try {
      let req;
      try {
        req = parseJson(line);
      } catch (e) {
        throw badRequest(`the request is not a JSON line: ${e.message}`);
      }
      if (isPlainObject(req) && (typeof req.id === 'bigint' || typeof req.id === 'string' || req.id === null)) id = req.id;
      answer = { id, ok: await handleRequest(req) };
    } catch (e) {
      let error;
      if (e instanceof StoreError) {
        error = e;
        if (e.kind !== 'bad_request') log(`${e.kind}: ${e.message}`);
      } else {
        log(`unexpected failure: ${e && e.stack ? e.stack : e}`);
        error = new StoreError('unavailable', `adapter failure: ${describe(e)}`);
      }
      answer = { id, error: error.toWire() };
    }
    try {
      return stringifyJson(answer);
    } catch (e) {
      log(`cannot write the answer: ${e.stack || e}`);
      return stringifyJson({ id, error: { kind: 'unavailable', message: `adapter failure: ${e.message}` } });
    }
  }

  return {
    handleLine,
    get connected() {
      return session !== null;
    },
    close() {
      if (session && session.kept) session.kept.close();
    },
  };
}

/**
 * Runs `store` as an adapter process: requests from stdin, answers to
 * stdout, one at a time, in order; exits 0 at EOF. Returns a promise of the
 * exit code (for tests that pass their own streams and `exit: false`).
 */
function run(store, io = {}) {
  const input = io.input || process.stdin;
  const output = io.output || process.stdout;
  const exit = io.exit === undefined ? (code) => process.exit(code) : io.exit;
  const adapter = createAdapter(store);

  if (!io.output) {
    output.on('error', (e) => {
      if (e.code === 'EPIPE') exit(0); // storeproof is gone
    });
  }
  if (!io.input) {
    process.on('uncaughtException', (e) => log(`uncaught exception: ${e && e.stack ? e.stack : e}`));
    process.on('unhandledRejection', (e) => log(`unhandled rejection: ${e && e.stack ? e.stack : e}`));
  }

  const decoder = new TextDecoder('utf-8', { fatal: true });
  const write = (text) => new Promise((resolve) => output.write(`${text}\n`, () => resolve()));
  const answerBytes = async (bytes) => {
    let text;
    try {
      text = decoder.decode(bytes);
    } catch (e) {
      await write(stringifyJson({ id: null, error: badRequest('the request is not UTF-8').toWire() }));
      return;
    }
    if (text.trim() === '') return;
    await write(await adapter.handleLine(text));
  };

  return new Promise((resolve) => {
    let pending = [];
    let chain = Promise.resolve();
    input.on('data', (chunk) => {
      let start = 0;
      for (;;) {
        const nl = chunk.indexOf(10, start);
        if (nl < 0) break;
        const bytes = Buffer.concat([...pending, chunk.subarray(start, nl)]);
        pending = [];
        chain = chain.then(() => answerBytes(bytes));
        start = nl + 1;
      }
      if (start < chunk.length) pending.push(chunk.subarray(start));
    });
    input.on('end', () => {
      if (pending.length) {
        const bytes = Buffer.concat(pending);
        pending = [];
        chain = chain.then(() => answerBytes(bytes));
      }
      chain.then(() => {
        adapter.close();
        if (exit) exit(0);
        resolve(0);
      });
    });
  });
}

module.exports = {
  // constants
  MAX_DURATION_MS,
  MAX_LIMIT,
  I64_MAX,
  I64_MIN,
  OPT_OUT,
  OPS,
  CONTRACTS,
  ERROR_KINDS,
  OUTCOMES,
  REQUIRED_DURABILITY,
  DEFAULT_DEADLINE_MS,
  HELLO_DEADLINE_MS,
  // exact JSON
  parseJson,
  stringifyJson,
  JsonFloat,
  JsonSyntaxError,
  DUPLICATE_KEYS,
  // requests and replies
  validateRequest,
  validateHello,
  reply,
  checkReply,
  // errors
  StoreError,
  badRequest,
  RedisErrorReply,
  errorReply,
  isErrorReply,
  redisFailure,
  commandFailure,
  // server checks
  checkServer,
  readServerFacts,
  assessServer,
  // scripts, deadlines, kept executions
  LuaScripts,
  luaScripts,
  withDeadline,
  deadlineIn,
  monotonicNow,
  KeptExecutions,
  keptExecutionsPath,
  // running
  createAdapter,
  run,
  log,
  redactUrl,
};
