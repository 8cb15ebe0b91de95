// Types of the storeproof adapter kit for Node (index.js). docs/PROTOCOL.md
// is the contract; section numbers below refer to it.

// ---------------------------------------------------------------------------
// Constants

/** The longest duration (`ttl_ms`, `claim_ttl_ms`, `window_ms`): one year, 31536000000. */
export declare const MAX_DURATION_MS: bigint;
/** The largest `limit`: 1000000. */
export declare const MAX_LIMIT: bigint;
/** 2^63 − 1, the largest protocol integer. */
export declare const I64_MAX: bigint;
/** −2^63. */
export declare const I64_MIN: bigint;
/** The only opt-out (§3). */
export declare const OPT_OUT: OptOut;
export declare const OPS: readonly Op[];
export declare const CONTRACTS: readonly Contract[];
export declare const ERROR_KINDS: readonly ErrorKind[];
/** The outcomes each operation may answer (rate.read: none, its reply is the state). */
export declare const OUTCOMES: { readonly [O in Op]: readonly string[] };
/** The durability settings §7 requires, with their required values. */
export declare const REQUIRED_DURABILITY: ReadonlyArray<readonly [string, string]>;
/** The default deadline of a request other than hello, in ms (storeproof waits 10 s). */
export declare const DEFAULT_DEADLINE_MS: number;
/** The deadline of hello, in ms (storeproof waits at least 30 s). */
export declare const HELLO_DEADLINE_MS: number;

export type OptOut = 'acknowledged-writes-may-be-lost';
export type Contract = 'lease' | 'queue' | 'rate' | 'fenced';
export type ErrorKind =
  | 'bad_request'
  | 'durability'
  | 'deployment'
  | 'config_refused'
  | 'store_full'
  | 'unavailable'
  | 'unsupported';
export type ChildState = 'queued' | 'claimed' | 'done';

/**
 * What a reply builder takes for a protocol integer: a BigInt, a safe
 * integer number, or a canonical decimal string (as a Lua script returns it);
 * always within signed 64 bits. Builders refuse anything else.
 */
export type IntLike = bigint | number | string;

// ---------------------------------------------------------------------------
// Exact JSON

/** A JSON number written with a fraction or an exponent (`1.5`, `1.0`, `1e3`). */
export declare class JsonFloat {
  private constructor(text: string);
  /** The number as written. */
  readonly text: string;
  readonly value: number;
}
export declare class JsonSyntaxError extends Error {}
/** Keys met more than once in a parsed object (the property holds their names). */
export declare const DUPLICATE_KEYS: unique symbol;

export type JsonValue = null | boolean | bigint | JsonFloat | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * Parses one JSON text exactly: integers as BigInt, numbers with a fraction
 * or exponent as JsonFloat, objects without a prototype. Throws
 * JsonSyntaxError on anything RFC 8259 does not allow.
 */
export declare function parseJson(text: string): JsonValue;
/** One line of JSON, BigInts (and safe integer numbers) as JSON integers. Throws on other numbers. */
export declare function stringifyJson(value: unknown): string;

// ---------------------------------------------------------------------------
// Errors (§6)

export interface WireError {
  kind: ErrorKind;
  message: string;
  settings?: string[];
}

/** An error answer. Throw it from `hello`, `reconnect` or an operation. */
export declare class StoreError extends Error {
  constructor(kind: ErrorKind, message: string, settings?: readonly string[]);
  readonly kind: ErrorKind;
  /** For durability and deployment: the name of each setting found short. */
  readonly settings: string[];
  toWire(): WireError;
}
export declare function badRequest(message: string): StoreError;

/** A server error reply, for a client that has no error class of its own. */
export declare class RedisErrorReply extends Error {
  constructor(message: string);
}
export declare function errorReply(message: string): RedisErrorReply;
/**
 * Whether `e` is the server's error reply (not a failed connection or a
 * timeout): node-redis ErrorReply, ioredis ReplyError, RedisErrorReply, or
 * any error with `isErrorReply === true`.
 */
export declare function isErrorReply(e: unknown): boolean;
/** The error to answer for an operation's failed command: OOM → store_full, else unavailable. */
export declare function redisFailure(what: string, e: unknown): StoreError;
/** The error to answer for a failed server-check command: config_refused or unavailable. */
export declare function commandFailure(command: string, e: unknown): StoreError;

// ---------------------------------------------------------------------------
// Requests (§4, §4.1)

/** The validated arguments of each operation: ids and payloads as strings, integers as BigInt. */
export interface Args {
  'lease.take': { readonly tree: string; readonly holder: string; readonly ttl_ms: bigint };
  'lease.renew': { readonly tree: string; readonly holder: string; readonly epoch: bigint; readonly ttl_ms: bigint };
  'lease.release': { readonly tree: string; readonly holder: string; readonly epoch: bigint };
  'lease.read': { readonly tree: string };
  'lease.keep_execution': { readonly tree: string; readonly execution: string };
  'lease.kept_executions': { readonly tree: string };
  'queue.save': { readonly child: string; readonly depth: bigint; readonly payload: string };
  'queue.claim': { readonly instance: string; readonly claim_ttl_ms: bigint };
  'queue.complete': { readonly child: string; readonly instance: string; readonly attempt: bigint };
  'queue.read': { readonly child: string };
  'rate.acquire_slot': { readonly provider: string; readonly holder: string; readonly limit: bigint; readonly ttl_ms: bigint };
  'rate.release_slot': { readonly provider: string; readonly slot: string };
  'rate.hit': { readonly provider: string; readonly limit: bigint; readonly window_ms: bigint };
  'rate.pause': { readonly provider: string; readonly until_ms: bigint };
  'rate.read': { readonly provider: string };
  'effect.apply': {
    readonly tree: string;
    readonly holder: string;
    readonly epoch: bigint;
    readonly effect: string;
    readonly payload: string;
  };
  'call.begin': { readonly tree: string; readonly holder: string; readonly epoch: bigint; readonly call: string };
  'call.finish': { readonly call: string; readonly response: string };
}
export type Op = keyof Args;

/**
 * The typed arguments of a valid request, or a thrown bad_request StoreError
 * (`lease.take: ttl_ms must be a whole number of milliseconds in 1..=31536000000, got 0`).
 */
export declare function validateRequest<O extends Op>(op: O, args: unknown): Args[O];
export declare function validateRequest(op: string, args: unknown): Args[Op];

export interface HelloArgs {
  readonly instance: string;
  /** The server to use (§3): connect only here; it may be a proxy. */
  readonly redisUrl: string;
  /** Every key the store writes must start with this. */
  readonly prefix: string;
  readonly optOut: OptOut | null;
  /** `optOut === OPT_OUT`: accept short durability settings. */
  readonly optedOut: boolean;
}
/** The validated hello arguments, or a thrown bad_request StoreError. */
export declare function validateHello(args: unknown): HelloArgs;

// ---------------------------------------------------------------------------
// Replies (§4)

/**
 * A reply as the kit's builders make it. The brand exists in the types only:
 * it makes a hand-made object literal a type error, so that every reply goes
 * through a builder (which checks its values at run time too).
 */
declare const built: unique symbol;
type Built<K extends string> = { readonly [built]: K };

export type Granted = Built<'granted'> & { readonly granted: { readonly epoch: bigint; readonly expires_at_ms: bigint } };
export type Busy = Built<'busy'> & {
  readonly busy: { readonly holder: string; readonly epoch: bigint; readonly expires_at_ms: bigint };
};
export type Renewed = Built<'renewed'> & { readonly renewed: { readonly expires_at_ms: bigint } };
export type Lost = Built<'lost'> & { readonly lost: { readonly holder: string | null; readonly epoch: bigint | null } };
export type Released = Built<'released'> & { readonly released: {} };
export type NotHeld = Built<'not_held'> & { readonly not_held: {} };
export interface LeaseView {
  readonly holder: string | null;
  readonly epoch: bigint;
  readonly expires_at_ms: bigint | null;
  readonly live: boolean;
}
export type Lease = Built<'lease'> & { readonly lease: LeaseView | null };
export type Kept = Built<'kept'> & { readonly kept: {} };
export type Executions = Built<'executions'> & { readonly executions: readonly string[] };
export type Saved = Built<'saved'> & { readonly saved: {} };
export type Exists = Built<'exists'> & { readonly exists: { readonly state: ChildState } };
export type Claimed = Built<'claimed'> & {
  readonly claimed: { readonly child: string; readonly depth: bigint; readonly payload: string; readonly attempt: bigint };
};
export type Empty = Built<'empty'> & { readonly empty: {} };
export type Completed = Built<'completed'> & { readonly completed: {} };
export type NotClaimer = Built<'not_claimer'> & {
  readonly not_claimer: { readonly claimer: string | null; readonly attempt: bigint | null };
};
export interface ChildView {
  readonly state: ChildState;
  readonly claimer: string | null;
  readonly attempt: bigint;
  readonly depth: bigint;
}
export type Child = Built<'child'> & { readonly child: ChildView | null };
export type Acquired = Built<'acquired'> & { readonly acquired: { readonly slot: string } };
export type Full = Built<'full'> & { readonly full: { readonly retry_at_ms: bigint } };
export type Paused = Built<'paused'> & { readonly paused: { readonly until_ms: bigint } };
export type Unknown = Built<'unknown'> & { readonly unknown: {} };
export type Allowed = Built<'allowed'> & { readonly allowed: { readonly remaining: bigint } };
export type Limited = Built<'limited'> & { readonly limited: { readonly retry_at_ms: bigint } };
/** rate.read's reply: the state itself, no outcome key. */
export type RateState = Built<'rate_state'> & { readonly slots_in_use: bigint; readonly paused_until_ms: bigint | null };
export type Applied = Built<'applied'> & { readonly applied: {} };
export type Duplicate = Built<'duplicate'> & { readonly duplicate: {} };
export type Fenced = Built<'fenced'> & { readonly fenced: { readonly epoch: bigint } };
export type Begun = Built<'begun'> & { readonly begun: {} };
export type Finished = Built<'finished'> & { readonly finished: {} };
export type AlreadyFinished = Built<'already_finished'> & { readonly already_finished: { readonly response: string } };
export type NotBegun = Built<'not_begun'> & { readonly not_begun: {} };

/** The replies each operation may answer (§4's table). */
export interface Replies {
  'lease.take': Granted | Busy;
  'lease.renew': Renewed | Lost;
  'lease.release': Released | NotHeld;
  'lease.read': Lease;
  'lease.keep_execution': Kept;
  'lease.kept_executions': Executions;
  'queue.save': Saved | Exists;
  'queue.claim': Claimed | Empty;
  'queue.complete': Completed | NotClaimer;
  'queue.read': Child;
  'rate.acquire_slot': Acquired | Full | Paused;
  'rate.release_slot': Released | Unknown;
  'rate.hit': Allowed | Limited | Paused;
  'rate.pause': Paused;
  'rate.read': RateState;
  'effect.apply': Applied | Duplicate | Fenced;
  'call.begin': Begun | Duplicate | Fenced;
  'call.finish': Finished | AlreadyFinished | NotBegun | Fenced;
}
export type AnyReply = Replies[Op];

/** A lease record for `reply.lease` (holder and expiry may be null once it is not live). */
export interface LeaseInput {
  holder: string | null;
  epoch: IntLike;
  expiresAtMs: IntLike | null;
  live: boolean;
}
/** A child record for `reply.child`. */
export interface ChildInput {
  state: ChildState;
  claimer: string | null;
  attempt: IntLike;
  depth: IntLike;
}

/**
 * Builders of every outcome. Each checks its values at run time (exact
 * integers in i64, strings, null only where the contract allows it) and
 * throws a TypeError otherwise, which the kit answers `unavailable`.
 */
export declare const reply: {
  /** lease.take: the caller holds the tree under a new epoch. */
  granted(epoch: IntLike, expiresAtMs: IntLike): Granted;
  /** lease.take: a live lease, its holder, epoch and expiry. */
  busy(holder: string, epoch: IntLike, expiresAtMs: IntLike): Busy;
  /** lease.renew: the lease runs to a new expiry. */
  renewed(expiresAtMs: IntLike): Renewed;
  /** lease.renew: someone else's live lease, or (both null) no live lease. */
  lost(holder?: string | null, epoch?: IntLike | null): Lost;
  /** lease.release, rate.release_slot. */
  released(): Released;
  /** lease.release: not that holder and epoch, or already released. */
  notHeld(): NotHeld;
  /** lease.read: the record, or null for a tree never taken. */
  lease(view: LeaseInput | null): Lease;
  /** lease.keep_execution. */
  kept(): Kept;
  /** lease.kept_executions: each id once, in the order first kept. */
  executions(ids: readonly string[]): Executions;
  /** queue.save: the child is queued. */
  saved(): Saved;
  /** queue.save: the id is known; nothing changed. */
  exists(state: ChildState): Exists;
  /** queue.claim: the first claimable child, now claimed (attempt: the new one). */
  claimed(child: string, depth: IntLike, payload: string, attempt: IntLike): Claimed;
  /** queue.claim: nothing claimable. */
  empty(): Empty;
  /** queue.complete: the child is done. */
  completed(): Completed;
  /** queue.complete: not the current claim (claimer null and attempt 0 if never claimed; both null if unknown). */
  notClaimer(claimer?: string | null, attempt?: IntLike | null): NotClaimer;
  /** queue.read: the record, or null for an unknown child. */
  child(view: ChildInput | null): Child;
  /** rate.acquire_slot: a new slot (a non-empty id). */
  acquired(slot: string): Acquired;
  /** rate.acquire_slot: limit slots live; the earliest expiry. */
  full(retryAtMs: IntLike): Full;
  /** rate.acquire_slot, rate.hit (refused while paused), rate.pause (the pause recorded). */
  paused(untilMs: IntLike): Paused;
  /** rate.release_slot: no live slot of that id. */
  unknown(): Unknown;
  /** rate.hit: counted; how many more the window allows. */
  allowed(remaining: IntLike): Allowed;
  /** rate.hit: limit hits in the window; when the oldest leaves it. */
  limited(retryAtMs: IntLike): Limited;
  /** rate.read: live slots, and the pause in force (or null). */
  rateState(slotsInUse: IntLike, pausedUntilMs?: IntLike | null): RateState;
  /** effect.apply (§4.5). */
  applied(): Applied;
  /** effect.apply, call.begin: already recorded. */
  duplicate(): Duplicate;
  /** effect.apply, call.begin, call.finish: the tree's latest epoch. */
  fenced(epoch: IntLike): Fenced;
  /** call.begin. */
  begun(): Begun;
  /** call.finish. */
  finished(): Finished;
  /** call.finish: the first response stands. */
  alreadyFinished(response: string): AlreadyFinished;
  /** call.finish: never begun. */
  notBegun(): NotBegun;
};

/**
 * Checks an `ok` value for `op` as storeproof reads it (reply.rs
 * `Reply::from_wire`). Null when well formed, else what is wrong.
 */
export declare function checkReply(op: Op, ok: unknown): string | null;

// ---------------------------------------------------------------------------
// Server checks (§7)

/**
 * Runs one raw command (`['CONFIG', 'GET', 'appendonly']`) on the store's
 * connection and resolves with the client's reply; rejects with the client's
 * error (an error reply, see `isErrorReply`, or a connection failure).
 */
export type Send = (argv: string[]) => Promise<unknown>;

export interface ServerFacts {
  /** The INFO replication reply (text, or an object/Map from a client that parses INFO). */
  replication: unknown;
  /** The INFO cluster reply. */
  cluster: unknown;
  /** Each durability setting CONFIG GET reported. */
  config: { [setting: string]: string };
  /** The refusal of a CONFIG GET (config_refused), judged after deployment. */
  configRefused: StoreError | null;
}

/**
 * The server checks of §7 in one call, for hello: reads INFO replication,
 * INFO cluster and CONFIG GET of each durability setting through `send`, and
 * throws the StoreError to answer: deployment (no opt-out), config_refused,
 * durability (every short setting, its fix, how to opt out; not when opted
 * out), or unavailable (not reachable, LOADING, BUSY).
 */
export declare function checkServer(send: Send, optOut: boolean | OptOut | null): Promise<void>;
export declare function readServerFacts(send: Send): Promise<ServerFacts>;
/** The decision alone: throws the refusal of these facts, if any. */
export declare function assessServer(facts: ServerFacts, optedOut: boolean): void;

// ---------------------------------------------------------------------------
// Lua scripts (§5)

/** Whatever the client returns for a script's reply (node-redis: arrays of strings, numbers and null). */
export type ScriptReply = any;

export declare class LuaScripts {
  constructor(sources: { readonly [name: string]: string });
  readonly source: { readonly [name: string]: string };
  /** The SHA1 of each script, as EVALSHA names it. */
  readonly sha: { readonly [name: string]: string };
  readonly names: string[];
  /** SCRIPT LOAD of one script or (name left out) every one: a refusal is config_refused. */
  load(send: Send, name?: string): Promise<void>;
  /**
   * One EVALSHA; NOSCRIPT → SCRIPT LOAD and one retry; any other failure
   * is thrown as the StoreError to answer (`redisFailure(what, e)`), never retried.
   */
  run(
    send: Send,
    name: string,
    keys: ReadonlyArray<string>,
    args: ReadonlyArray<string | bigint | number>,
    what?: string,
  ): Promise<ScriptReply>;
}
/**
 * `{ dir, prelude? }`: every NAME.lua of `dir` is script NAME, with the file
 * `prelude` in front of each; or `{ sources }`: name → source.
 */
export declare function luaScripts(
  options: { readonly dir: string; readonly prelude?: string } | { readonly sources: { readonly [name: string]: string } },
): LuaScripts;

// ---------------------------------------------------------------------------
// Deadlines

/** Now on the monotonic clock (performance.now()), in ms: what deadlines are measured on. */
export declare function monotonicNow(): number;
/** A deadline `ms` from now. */
export declare function deadlineIn(ms: number): number;
/**
 * `work`, or a rejection with an `unavailable` StoreError at `deadline`
 * (monotonic ms, or anything with a `deadline`, such as a request's
 * context). The work is not cancelled: close the connection it runs on.
 */
export declare function withDeadline<T>(
  work: Promise<T> | T,
  deadline: number | { readonly deadline: number },
  what?: string,
): Promise<T>;

// ---------------------------------------------------------------------------
// Kept executions (§4.2)

/** The side file of a prefix: `$STOREPROOF_WORKDIR/node-kept-executions/<sha256 of the prefix>.jsonl`. */
export declare function keptExecutionsPath(namespace: string, workdir?: string): string;

/** Kept execution ids in an append-only side file: shared by every process of a run, durable, never in Redis. */
export declare class KeptExecutions {
  constructor(file: string, namespace: string);
  readonly file: string;
  readonly namespace: string;
  /** Appends one record and fsyncs it before returning. */
  keep(tree: string, execution: string): void;
  /** The ids kept for the tree, each once, in first-kept order. */
  list(tree: string): string[];
  close(): void;
}

// ---------------------------------------------------------------------------
// The store an author writes

/** What every request's function gets besides its arguments. */
export interface Context {
  /** The request's deadline on the monotonic clock (ms): pass it to `withDeadline`. */
  readonly deadline: number;
  /** The instance clock of the request (§2): only rate-limit operations may use it. */
  readonly clockMs: bigint;
  readonly instance: string;
  readonly prefix: string;
  /** One line to stderr. */
  log(message: string): void;
}

/** hello's arguments with its deadline and clock. */
export interface Hello extends HelloArgs, Context {}

/** An operation's context. */
export interface OpContext<O extends Op = Op> extends Context {
  readonly op: O;
}

/** The context of `close`: the case that ends. */
export interface CloseContext extends Context {
  readonly op: 'close';
}

/** The context of `reconnect`. */
export interface ReconnectContext extends Context {
  readonly op: 'reconnect';
}

/** One operation: its validated arguments in, one of its replies out (or a thrown StoreError). */
export type Operation<O extends Op> = (args: Args[O], ctx: OpContext<O>) => Replies[O] | Promise<Replies[O]>;
export type Operations = { readonly [O in Op]?: Operation<O> };

export interface Store {
  /** hello's answer: the store's name and version. */
  readonly name: string;
  readonly version: string;
  /** The contracts offered; an operation of another answers `unsupported`. */
  readonly contracts: readonly Contract[];
  /** Where the records live (§3): 'redis' (the default) or 'durable'. */
  readonly state?: 'redis' | 'durable';
  /** Declares `stateless` (§3.2): the process keeps nothing between operations that changes a later command or answer. */
  readonly stateless?: boolean;
  /**
   * Declares `cases` (§3.3): the process may be sent a later hello for a new
   * case (a new prefix, maybe another redis_url); `close` ends the earlier
   * one first. Needs `close`.
   */
  readonly cases?: boolean;
  /** Each request's deadline after hello, in ms (default 5000; storeproof waits 10 s). */
  readonly deadlineMs?: number;
  /**
   * Kept executions in the kit's side file (default true when `lease` is
   * offered and `ops` has no `lease.keep_execution`). False: the store
   * answers them itself.
   */
  readonly keptExecutions?: boolean;
  /**
   * Connects, checks the server (`checkServer`), loads scripts. The kit has
   * validated the arguments (a bad redis_url or opt-out never gets here).
   * Throw a StoreError to refuse: durability, deployment, config_refused,
   * unavailable.
   */
  hello(hello: Hello): void | Promise<void>;
  /** Offered when present (§3.1): close every connection, open a new one, load every script. */
  reconnect?(ctx: ReconnectContext): void | Promise<void>;
  /**
   * Ends a case before a later hello (§3.3), for a store that declares
   * `cases`: close every connection and forget everything of the case, so
   * that the next hello finds the process as if just started.
   */
  close?(ctx: CloseContext): void | Promise<void>;
  /** The operations offered; one left out answers `unsupported`. */
  readonly ops: Operations;
}

/** The protocol engine without I/O: one request line in, one answer line out (no newline). */
export interface Adapter {
  handleLine(line: string): Promise<string>;
  readonly connected: boolean;
  close(): void;
}
export declare function createAdapter(store: Store): Adapter;

export interface RunIO {
  /** Default: process.stdin. */
  input?: { on(event: 'data', listener: (chunk: Uint8Array) => void): unknown; on(event: 'end', listener: () => void): unknown };
  /** Default: process.stdout. */
  output?: { write(text: string, done: () => void): unknown };
  /** Called with 0 at EOF (default: process.exit); false: only resolve. */
  exit?: ((code: number) => void) | false;
}
/** Runs the store as an adapter process: requests from stdin, answers on stdout, exit 0 at EOF. */
export declare function run(store: Store, io?: RunIO): Promise<number>;

/** One line to stderr, naming the store and instance. */
export declare function log(message: string): void;
/** A URL without its password, for messages. */
export declare function redactUrl(url: string): string;

export {};
