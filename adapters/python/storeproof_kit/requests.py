"""Requests: the operations of docs/PROTOCOL.md §4 and their argument rules
(§4.1), checked exactly as ``model/src/contract/request.rs`` checks them,
and ``hello``'s arguments (§3).

Every refusal is a ``bad_request`` :class:`~storeproof_kit.errors.StoreError`
raised before a store's own code runs, with the messages serde and
request.rs write (``lease.take: ttl_ms: invalid type: string "1000",
expected i64``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping, Optional
from urllib.parse import unquote, urlsplit

from .errors import bad_request, type_name

#: The longest duration (``ttl_ms``, ``claim_ttl_ms``, ``window_ms``): one year.
MAX_DURATION_MS = 365 * 24 * 3_600_000
#: The largest ``limit`` of a rate-limit call.
MAX_LIMIT = 1_000_000
I64_MIN = -(2**63)
I64_MAX = 2**63 - 1

#: The one opt-out there is (docs/PROTOCOL.md §3, §7).
OPT_OUT_WRITES_MAY_BE_LOST = "acknowledged-writes-may-be-lost"

#: Every contract a store may offer.
CONTRACTS = ("lease", "queue", "rate", "fenced")

# The kinds of argument: an id (a non-empty string), a plain string (may be
# empty) or a signed 64-bit integer.
ID, TEXT, INT = "id", "text", "int"

#: Every operation and its arguments in order, as request.rs declares them.
OPS: dict[str, tuple[tuple[str, str], ...]] = {
    "lease.take": (("tree", ID), ("holder", ID), ("ttl_ms", INT)),
    "lease.renew": (("tree", ID), ("holder", ID), ("epoch", INT), ("ttl_ms", INT)),
    "lease.release": (("tree", ID), ("holder", ID), ("epoch", INT)),
    "lease.read": (("tree", ID),),
    "lease.keep_execution": (("tree", ID), ("execution", ID)),
    "lease.kept_executions": (("tree", ID),),
    "queue.save": (("child", ID), ("depth", INT), ("payload", TEXT)),
    "queue.claim": (("instance", ID), ("claim_ttl_ms", INT)),
    "queue.complete": (("child", ID), ("instance", ID), ("attempt", INT)),
    "queue.read": (("child", ID),),
    "rate.acquire_slot": (("provider", ID), ("holder", ID), ("limit", INT), ("ttl_ms", INT)),
    "rate.release_slot": (("provider", ID), ("slot", ID)),
    "rate.hit": (("provider", ID), ("limit", INT), ("window_ms", INT)),
    "rate.pause": (("provider", ID), ("until_ms", INT)),
    "rate.read": (("provider", ID),),
    "effect.apply": (("tree", ID), ("holder", ID), ("epoch", INT), ("effect", ID), ("payload", TEXT)),
    "call.begin": (("tree", ID), ("holder", ID), ("epoch", INT), ("call", ID)),
    "call.finish": (("call", ID), ("response", TEXT)),
}

# The value rules of each operation's integers, in the order request.rs
# checks them: "duration" (1..=MAX_DURATION_MS), "whole" (>= 0), "limit"
# (1..=MAX_LIMIT).
NUMBER_RULES: dict[str, tuple[tuple[str, str], ...]] = {
    "lease.take": (("ttl_ms", "duration"),),
    "lease.renew": (("ttl_ms", "duration"), ("epoch", "whole")),
    "lease.release": (("epoch", "whole"),),
    "queue.save": (("depth", "whole"),),
    "queue.claim": (("claim_ttl_ms", "duration"),),
    "queue.complete": (("attempt", "whole"),),
    "rate.acquire_slot": (("limit", "limit"), ("ttl_ms", "duration")),
    "rate.hit": (("limit", "limit"), ("window_ms", "duration")),
    "rate.pause": (("until_ms", "whole"),),
    "effect.apply": (("epoch", "whole"),),
    "call.begin": (("epoch", "whole"),),
}

# The contract of each operation's prefix (model/src/contract/mod.rs `of_op`).
_CONTRACT_OF_PREFIX = {
    "lease": "lease",
    "queue": "queue",
    "rate": "rate",
    "effect": "fenced",
    "call": "fenced",
}


def contract_of(op: str) -> Optional[str]:
    """The contract an operation belongs to (``lease``, ``queue``, ``rate``,
    ``fenced``), or None for a name that is not an operation."""
    if op not in OPS:
        return None
    return _CONTRACT_OF_PREFIX[op.split(".", 1)[0]]


def is_int(v: Any) -> bool:
    """A JSON integer that fits a signed 64-bit integer (never a bool)."""
    return isinstance(v, int) and not isinstance(v, bool) and I64_MIN <= v <= I64_MAX


@dataclass(frozen=True)
class Request:
    """A request whose arguments passed every rule of §4.1.

    ``args`` holds exactly the operation's arguments: each id a non-empty
    ``str``, each plain string a ``str``, each integer an ``int`` (never a
    bool) in its range. ``clock_ms`` is the instance clock: for the
    rate-limit operations always a valid ``int`` (a request without one is
    refused); for the others the value sent when it is a valid ``int``,
    else None (lease and queue operations must not use it).
    """

    op: str
    args: Mapping[str, Any]
    clock_ms: Optional[int]

    @property
    def contract(self) -> str:
        """The contract of the operation."""
        return contract_of(self.op) or ""

    def __getitem__(self, name: str) -> Any:
        return self.args[name]


def parse_args(op: str, args: Any) -> dict[str, Any]:
    """The typed arguments of ``op``, or a ``bad_request`` naming what is wrong
    (unknown op, arguments not an object, unknown or missing field, wrong
    type, an integer out of i64, a lone surrogate, then every value rule at
    once: empty ids, durations, whole numbers, limits)."""
    fields = OPS.get(op)
    if fields is None:
        raise bad_request(
            "%s: unknown variant `%s`, expected one of %s"
            % (op, op, ", ".join("`%s`" % o for o in OPS))
        )
    if not isinstance(args, dict):
        raise bad_request("%s: invalid type: %s, expected the arguments object" % (op, type_name(args)))
    names = [name for name, _ in fields]
    for key in args:
        if key not in names:
            raise bad_request(
                "%s: unknown field `%s`, expected one of %s"
                % (op, key, ", ".join("`%s`" % n for n in names))
            )
    out: dict[str, Any] = {}
    for name, kind in fields:
        if name not in args:
            raise bad_request("%s: missing field `%s`" % (op, name))
        v = args[name]
        if kind == INT:
            # JSON true/false are Python ints: refuse them, and floats (1.5,
            # 1.0, 1e3) and numeric strings ("1000"), as serde does for i64.
            if isinstance(v, bool) or not isinstance(v, int):
                raise bad_request("%s: %s: invalid type: %s, expected i64" % (op, name, type_name(v)))
            if not I64_MIN <= v <= I64_MAX:
                raise bad_request("%s: %s: invalid value: integer `%d`, expected i64" % (op, name, v))
        else:
            if not isinstance(v, str):
                raise bad_request(
                    "%s: %s: invalid type: %s, expected a string" % (op, name, type_name(v))
                )
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                raise bad_request("%s: %s: not valid Unicode (a lone surrogate)" % (op, name)) from None
        out[name] = v

    # Value rules: ids first, then numbers, all problems in one message.
    problems = []
    for name, kind in fields:
        if kind == ID and out[name] == "":
            problems.append("%s must be a non-empty string" % name)
    for name, rule in NUMBER_RULES.get(op, ()):
        v = out[name]
        if rule == "duration" and not 1 <= v <= MAX_DURATION_MS:
            problems.append(
                "%s must be a whole number of milliseconds in 1..=%d, got %d"
                % (name, MAX_DURATION_MS, v)
            )
        elif rule == "whole" and v < 0:
            problems.append("%s must be a whole number, got %d" % (name, v))
        elif rule == "limit" and not 1 <= v <= MAX_LIMIT:
            problems.append("limit must be in 1..=%d, got %d" % (MAX_LIMIT, v))
    if problems:
        raise bad_request("%s: %s" % (op, "; ".join(problems)))
    return out


def parse_request(op: str, args: Any, clock_ms: Any = None) -> Request:
    """A :class:`Request` of valid arguments (:func:`parse_args`); a rate-limit
    operation also needs ``clock_ms`` to be a whole number of milliseconds
    (a signed 64-bit integer), else ``bad_request``."""
    typed = parse_args(op, args)
    if op.startswith("rate."):
        if not is_int(clock_ms):
            raise bad_request("%s: clock_ms must be a whole number of milliseconds" % op)
    elif not is_int(clock_ms):
        clock_ms = None
    return Request(op, typed, clock_ms)


# ---------------------------------------------------------------------------
# hello


@dataclass(frozen=True)
class RedisUrl:
    """The parts of a ``redis_url`` (``redis://[user[:password]@]host[:port][/db]``,
    ``rediss://…``, ``unix:///path``), as any client would read them."""

    scheme: str
    host: Optional[str]
    port: Optional[int]
    username: Optional[str]
    password: Optional[str]
    db: int
    path: Optional[str]


def redact(url: str) -> str:
    """``url`` without its password (``redis://user:***@host:port/``), for logs."""
    scheme, sep, rest = url.partition("://")
    if sep and "@" in rest.split("/", 1)[0]:
        userinfo, _, host = rest.partition("@")
        user = userinfo.split(":", 1)[0]
        return "%s://%s%s@%s" % (scheme, user, ":***" if ":" in userinfo else "", host)
    return url


def parse_redis_url(url: str) -> RedisUrl:
    """The parts of a Redis URL, or ``bad_request`` saying why ``url`` is not one:
    a scheme other than ``redis``, ``rediss`` or ``unix``, no host (no path
    for ``unix``), a port that is not a number in 1..=65535, a database that
    is not a whole number."""

    def refuse(why: str) -> Exception:
        return bad_request("redis_url %s is not a Redis URL: %s" % (json.dumps(redact(url)), why))

    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as e:
        raise refuse(str(e)) from None
    scheme = parts.scheme.lower()
    if scheme not in ("redis", "rediss", "unix"):
        raise refuse("the scheme must be redis://, rediss:// or unix://")
    username = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password is not None else None
    db_text = ""
    if scheme == "unix":
        if not parts.path:
            raise refuse("a unix:// URL needs the socket's path")
        path: Optional[str] = parts.path
        host = None
    else:
        path = None
        host = parts.hostname
        if not host:
            raise refuse("no host")
        if parts.port is not None and not 1 <= port <= 65535:  # type: ignore[operator]
            raise refuse("the port must be in 1..=65535")
        db_text = parts.path.lstrip("/")
    for pair in parts.query.split("&") if parts.query else []:
        key, _, value = pair.partition("=")
        if key == "db":
            db_text = value
    try:
        db = int(db_text) if db_text else 0
    except ValueError:
        raise refuse("the database must be a whole number, got %s" % json.dumps(db_text)) from None
    if db < 0:
        raise refuse("the database must be a whole number, got %d" % db)
    return RedisUrl(scheme, host, port, username, password, db, path)


@dataclass(frozen=True)
class Hello:
    """``hello``'s arguments, checked (docs/PROTOCOL.md §3).

    ``instance`` is a non-empty string; ``redis_url`` parsed as a Redis URL
    (``url``); ``prefix`` the string every key must start with;
    ``opt_out`` None or exactly ``acknowledged-writes-may-be-lost``, and
    ``opted_out`` whether it was given.
    """

    instance: str
    redis_url: str
    prefix: str
    opt_out: Optional[str]
    url: RedisUrl

    @property
    def opted_out(self) -> bool:
        """Whether the server may lose acknowledged writes (§7's opt-out)."""
        return self.opt_out == OPT_OUT_WRITES_MAY_BE_LOST


def parse_hello(args: Any) -> Hello:
    """A :class:`Hello`, or ``bad_request``: arguments not an object, a missing
    or non-string ``instance``, ``redis_url`` or ``prefix``, an ``opt_out``
    that is not null or a string, an empty instance, a misspelt opt-out (any
    string but ``acknowledged-writes-may-be-lost``, refused before anything
    is touched), a ``redis_url`` that is not a Redis URL."""
    if not isinstance(args, dict):
        raise bad_request("hello: invalid type: %s, expected the arguments object" % type_name(args))
    for name in ("instance", "redis_url", "prefix"):
        if name not in args:
            raise bad_request("hello: missing field `%s`" % name)
        if not isinstance(args[name], str):
            raise bad_request(
                "hello: %s: invalid type: %s, expected a string" % (name, type_name(args[name]))
            )
    opt_out = args.get("opt_out")
    if opt_out is not None and not isinstance(opt_out, str):
        raise bad_request(
            "hello: opt_out: invalid type: %s, expected a string or null" % type_name(opt_out)
        )
    if args["instance"] == "":
        raise bad_request("hello: instance must be a non-empty string")
    if opt_out is not None and opt_out != OPT_OUT_WRITES_MAY_BE_LOST:
        raise bad_request(
            "unknown opt-out %s: the only opt-out is %s (and there is none for deployment)"
            % (json.dumps(opt_out), OPT_OUT_WRITES_MAY_BE_LOST)
        )
    url = parse_redis_url(args["redis_url"])
    return Hello(args["instance"], args["redis_url"], args["prefix"], opt_out, url)
