"""The server checks of docs/PROTOCOL.md §7, and the error kinds a Redis
command's failure maps to (§6), for any Redis client.

A Redis store calls :func:`check_server` once in ``hello``, with a function
that sends one raw command and returns its reply: it reads ``INFO
replication``, ``INFO cluster`` and ``CONFIG GET`` of each durability
setting (those six commands, in that order, nothing else) and raises the
refusal of the server, if any, in the order §7 gives:

1. ``deployment`` (a replica, a cluster node; no opt-out), naming ``role``
   and/or ``cluster_enabled`` in ``settings``;
2. ``config_refused`` (``INFO`` or ``CONFIG GET`` refused: ACL ``NOPERM``,
   a renamed or disabled command), naming the command;
3. ``durability``, unless opted out: one error naming every short setting,
   each with its value and the fix, and how to opt out.

A server that cannot be reached, or is still loading (``LOADING``,
``BUSY``, …), is ``unavailable`` whenever it shows.

The same decisions are :func:`read_facts` (the commands) and :func:`assess`
(the facts, for a store that gathers them itself), mirroring
``stores/src/redis/assumptions.rs``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from .errors import (
    CONFIG_REFUSED,
    DEPLOYMENT,
    DURABILITY,
    STORE_FULL,
    UNAVAILABLE,
    StoreError,
)
from .requests import OPT_OUT_WRITES_MAY_BE_LOST

#: The durability settings and the values §7 requires, in order.
REQUIRED_DURABILITY = (
    ("appendonly", "yes"),
    ("appendfsync", "always"),
    ("no-appendfsync-on-rewrite", "no"),
    ("maxmemory-policy", "noeviction"),
)

#: Error codes of a server that is there but not ready: ``unavailable``.
NOT_READY = ("LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN")


class CommandFailed(Exception):
    """Raise this from the ``execute`` function given to :func:`check_server`
    (or pass its parts to :func:`command_failure`) when a command did not
    succeed.

    ``code`` is the error code of the server's error reply (the reply's
    first word: ``NOPERM``, ``ERR``, ``OOM``, ``LOADING``, …) when the
    server answered one, or None when it did not answer (I/O error, timeout,
    connection closed). ``detail`` is the rest of the error text.
    """

    def __init__(self, code: Optional[str], detail: str) -> None:
        super().__init__("%s %s" % (code, detail) if code else detail)
        self.code = code
        self.detail = detail


def split_error(text: str) -> tuple[str, str]:
    """(code, detail) of an error reply's text: its first word when that is
    an upper-case code (``NOPERM this user…``), else ``ERR`` and the whole
    text (clients that strip the usual ``ERR`` prefix)."""
    first, _, rest = text.partition(" ")
    if len(first) > 1 and first.isalpha() and first.isupper():
        return first, rest
    return "ERR", text


def command_failure(command: str, code: Optional[str], detail: str) -> StoreError:
    """The error of a failed set-up command (``INFO …``, ``CONFIG GET``,
    ``SCRIPT LOAD``) in ``hello``: ``unavailable`` when the server did not
    answer (``code`` None) or is not ready (:data:`NOT_READY`), else
    ``config_refused`` naming the command (an ACL ``NOPERM``, an unknown
    command, any other error reply)."""
    if code is None:
        return StoreError(UNAVAILABLE, "%s: the server could not be reached: %s" % (command, detail))
    if code in NOT_READY:
        return StoreError(
            UNAVAILABLE, "%s: the server is not ready (%s %s); try again" % (command, code, detail)
        )
    if code.startswith("NOPERM"):
        return StoreError(
            CONFIG_REFUSED,
            "the server's ACL refuses %s for this user (%s %s), so its settings cannot be "
            "verified; allow %s for this user" % (command, code, detail, command),
        )
    if code == "ERR" and detail.startswith("unknown command"):
        return StoreError(
            CONFIG_REFUSED,
            "the server does not know %s (renamed or disabled: %s), so its settings cannot be "
            "verified; give the store a connection where %s works" % (command, detail, command),
        )
    return StoreError(
        CONFIG_REFUSED,
        "the server refused %s (%s %s), so its settings cannot be verified" % (command, code, detail),
    )


def is_oom(code: Optional[str], detail: str) -> bool:
    """Whether an error is the server's refusal of a write for lack of memory."""
    return code == "OOM" or "OOM command not allowed" in detail


def operation_failure(op: str, code: Optional[str], detail: str) -> StoreError:
    """The error of an operation's failed command: ``store_full`` when the
    server is full (``OOM``: it refused the write, nothing changed), else
    ``unavailable`` (an error reply, or no reply at all: the outcome is
    unknown; never retry a command whose reply was lost)."""
    if is_oom(code, detail):
        return StoreError(
            STORE_FULL,
            "%s: the Redis server is full (maxmemory reached) and refused the write; nothing "
            "was changed. Free memory or raise maxmemory." % op,
        )
    if code is not None:
        return StoreError(UNAVAILABLE, "%s: the server answered an error (%s %s)" % (op, code, detail))
    return StoreError(
        UNAVAILABLE, "%s: the Redis server did not answer (%s); the outcome is unknown" % (op, detail)
    )


@dataclass
class ServerFacts:
    """What §7 judges: ``role`` (INFO replication), ``cluster_enabled`` (INFO
    cluster), each durability setting read (``config``: name → value, a
    setting CONFIG GET did not report left out), and ``config_refused``: the
    refusal of a ``CONFIG GET``, if one was refused (then ``config`` is not
    judged)."""

    role: Optional[str]
    cluster_enabled: Optional[str]
    config: dict[str, str] = field(default_factory=dict)
    config_refused: Optional[StoreError] = None


def _text(v: Any) -> str:
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).decode("utf-8", "replace")
    return str(v)


def info_field(info: Any, name: str) -> Optional[str]:
    """A field of an ``INFO`` reply: the raw text (``str`` or ``bytes``,
    ``name:value`` lines) or a client's parsed mapping; None when absent."""
    if isinstance(info, dict):
        for k, v in info.items():
            if _text(k) == name:
                return _text(v).strip()
        return None
    for line in _text(info).splitlines():
        key, sep, value = line.rstrip("\r").partition(":")
        if sep and key == name:
            return value.strip()
    return None


def config_pairs(reply: Any) -> dict[str, str]:
    """The name → value pairs of a ``CONFIG GET`` reply: a map (RESP3, or a
    client's parsed form) or a flat list ``[name, value, …]`` (RESP2)."""
    if isinstance(reply, dict):
        return {_text(k): _text(v) for k, v in reply.items()}
    if isinstance(reply, (list, tuple)):
        return {_text(k): _text(v) for k, v in zip(reply[::2], reply[1::2])}
    return {}


def _failure(command: str, e: BaseException) -> StoreError:
    if isinstance(e, StoreError):
        return e
    if isinstance(e, CommandFailed):
        return command_failure(command, e.code, e.detail)
    return command_failure(command, None, str(e) or type(e).__name__)


#: The exceptions an ``execute`` function may raise for a command that did
#: not succeed: :class:`CommandFailed`, and ``OSError`` (socket errors and
#: timeouts: not reached). Any other exception is a bug and is not caught.
FAILURES = (CommandFailed, OSError, StoreError)


def read_facts(execute: Callable[..., Any]) -> ServerFacts:
    """Reads the facts with six commands, each sent as ``execute("INFO",
    "replication")``, ``execute("INFO", "cluster")``, ``execute("CONFIG",
    "GET", name)`` (the CONFIG GETs stop at the first refused). A failure
    other than a refused ``CONFIG GET`` is raised at once: ``unavailable``
    (not reached, not ready) or ``config_refused`` (a refused ``INFO``)."""
    try:
        replication = execute("INFO", "replication")
    except FAILURES as e:
        raise _failure("INFO replication", e) from None
    try:
        cluster = execute("INFO", "cluster")
    except FAILURES as e:
        raise _failure("INFO cluster", e) from None
    facts = ServerFacts(info_field(replication, "role"), info_field(cluster, "cluster_enabled"))
    for name, _ in REQUIRED_DURABILITY:
        try:
            got = execute("CONFIG", "GET", name)
        except FAILURES as e:
            failure = _failure("CONFIG GET", e)
            if failure.kind == CONFIG_REFUSED:
                facts.config_refused = failure
                break
            raise failure from None
        value = config_pairs(got).get(name)
        if value is not None:
            facts.config[name] = value
    return facts


def durability_shortfalls(config: dict[str, str]) -> list[tuple[str, str]]:
    """(setting, why) of each durability setting that is not as required."""
    short = []
    for name, required in REQUIRED_DURABILITY:
        actual = config.get(name)
        if actual is None:
            short.append((name, "CONFIG GET does not report %s (set %s %s)" % (name, name, required)))
        elif actual.strip().lower() != required:
            short.append((name, "%s is %s (set %s %s)" % (name, actual, name, required)))
    return short


def deployment_shortfalls(role: Optional[str], cluster_enabled: Optional[str]) -> list[tuple[str, str]]:
    """(setting, why) of ``role`` when it is not ``master`` and of
    ``cluster_enabled`` when it is not ``0`` (or either is not reported)."""
    short = []
    if role is None:
        short.append(("role", "INFO replication does not report role; the store needs a primary (role:master)"))
    elif role != "master":
        short.append((
            "role",
            "the server is a replica (role:%s), not a primary; point redis_url at the "
            "primary (role:master)" % role,
        ))
    if cluster_enabled is None:
        short.append((
            "cluster_enabled",
            "INFO cluster does not report cluster_enabled; the store needs a standalone "
            "primary (cluster_enabled:0)",
        ))
    elif cluster_enabled != "0":
        short.append((
            "cluster_enabled",
            "cluster mode is on (cluster_enabled:%s); the store needs a standalone primary "
            "(cluster_enabled:0)" % cluster_enabled,
        ))
    return short


def assess(facts: ServerFacts, opted_out: bool) -> None:
    """Raises the refusal of a server with these facts, if any: ``deployment``
    first (no opt-out; the message also names short durability unless opted
    out), then a refused ``CONFIG GET`` (``config_refused``), then
    ``durability`` naming every short setting unless ``opted_out``."""
    durability = durability_shortfalls(facts.config) if facts.config_refused is None else []
    deployment = deployment_shortfalls(facts.role, facts.cluster_enabled)
    if deployment:
        message = "refusing this server: %s. There is no opt-out for deployment." % "; ".join(
            why for _, why in deployment
        )
        if durability and not opted_out:
            message += " Durability is also short: %s." % "; ".join(why for _, why in durability)
        raise StoreError(DEPLOYMENT, message, [name for name, _ in deployment])
    if facts.config_refused is not None:
        raise facts.config_refused
    if not durability or opted_out:
        return
    message = (
        "the server may lose acknowledged writes: %s. Set them, or pass --opt-out %s to accept "
        "that acknowledged writes may be lost"
        % ("; ".join(why for _, why in durability), OPT_OUT_WRITES_MAY_BE_LOST)
    )
    raise StoreError(DURABILITY, message, [name for name, _ in durability])


def check_server(execute: Callable[..., Any], opted_out: bool) -> ServerFacts:
    """§7 as one call, for ``hello``: reads the facts with ``execute`` (one
    raw command per call, its reply returned as the client gives it: text,
    bytes, a mapping or a list; raising :class:`CommandFailed` for an error
    reply or no reply, or ``OSError``) and raises ``deployment``,
    ``config_refused``, ``durability`` or ``unavailable`` as §7 orders them.
    Returns the facts when the server is accepted."""
    facts = read_facts(execute)
    assess(facts, opted_out)
    return facts
