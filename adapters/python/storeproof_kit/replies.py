"""Replies: one builder per outcome of docs/PROTOCOL.md §4, each giving a
:class:`Reply` whose wire form is exactly what ``Reply::from_wire``
(``model/src/contract/reply.rs``) accepts.

A builder checks every field's type where it is called: integers are
``int`` (never ``bool``) that fit a signed 64-bit integer, or the canonical
decimal text of one (``"42"``, as a Lua script answers big numbers), strings are
``str``, ``None`` only where the protocol allows null; anything else raises
:class:`MalformedReply` (a ``ValueError``) naming the field, so a malformed
reply is never written. Outcomes with nothing to say are ``{}``. Which
outcomes an operation may answer is :data:`ANSWERS`; the kit's loop refuses
to write any other (the answer becomes ``unavailable``).
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Optional, Union

from .requests import I64_MAX, I64_MIN

#: The outcomes each operation may answer (reply.rs ``answers``); ``rate.read``
#: answers the state itself, named ``rate_state`` here.
ANSWERS: dict[str, tuple[str, ...]] = {
    "lease.take": ("granted", "busy"),
    "lease.renew": ("renewed", "lost"),
    "lease.release": ("released", "not_held"),
    "lease.read": ("lease",),
    "lease.keep_execution": ("kept",),
    "lease.kept_executions": ("executions",),
    "queue.save": ("saved", "exists"),
    "queue.claim": ("claimed", "empty"),
    "queue.complete": ("completed", "not_claimer"),
    "queue.read": ("child",),
    "rate.acquire_slot": ("acquired", "full", "paused"),
    "rate.release_slot": ("released", "unknown"),
    "rate.hit": ("allowed", "limited", "paused"),
    "rate.pause": ("paused",),
    "rate.read": ("rate_state",),
    "effect.apply": ("applied", "duplicate", "fenced"),
    "call.begin": ("begun", "duplicate", "fenced"),
    "call.finish": ("finished", "already_finished", "not_begun", "fenced"),
}

#: The text of a whole number in canonical decimal (no sign on 0, no
#: leading zeros), which an integer field takes as that number.
_DECIMAL = re.compile(r"0|-?[1-9][0-9]*")

#: A queue child's states.
CHILD_STATES = ("queued", "claimed", "done")

Body = Union[None, dict, list]


class MalformedReply(ValueError):
    """A reply builder was given a value the protocol does not allow."""


class Reply:
    """One successful outcome. ``outcome`` is its wire name (``granted``, …;
    ``rate_state`` for ``rate.read``), ``body`` what the outcome key holds
    (a dict of fields, None for ``{"lease": null}`` and ``{"child": null}``,
    the list of ids for ``executions``). Build it with the functions of this
    module, never directly."""

    __slots__ = ("outcome", "body")

    def __init__(self, outcome: str, body: Body) -> None:
        self.outcome = outcome
        self.body = body

    def wire(self) -> Any:
        """The ``ok`` value of the answer line: ``{outcome: body}``, or for
        ``rate.read`` the state itself."""
        if self.outcome == "rate_state":
            return dict(self.body or {})
        if isinstance(self.body, dict):
            return {self.outcome: dict(self.body)}
        if isinstance(self.body, list):
            return {self.outcome: list(self.body)}
        return {self.outcome: None}

    def get(self, field: str, default: Any = None) -> Any:
        """One field of the body (``reply.get("epoch")``), or ``default``."""
        if isinstance(self.body, dict):
            return self.body.get(field, default)
        return default

    def answers(self, op: str) -> bool:
        """Whether ``op`` may answer this outcome at all (§4's table)."""
        return self.outcome in ANSWERS.get(op, ())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Reply) and (self.outcome, self.body) == (other.outcome, other.body)

    def __hash__(self) -> int:
        return hash((self.outcome, repr(self.body)))

    def __repr__(self) -> str:
        return "Reply(%r)" % (self.wire(),)


def _int(path: str, v: Any) -> int:
    # A decimal string is taken as Node's kit takes it: a script's reply
    # carries big numbers as text (a Lua number is a double).
    if isinstance(v, str) and _DECIMAL.fullmatch(v):
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int) or not I64_MIN <= v <= I64_MAX:
        raise MalformedReply(
            "`%s` must be a whole number (a signed 64-bit integer, or its canonical decimal text), got %r" % (path, v)
        )
    return int(v)


def _opt_int(path: str, v: Any) -> Optional[int]:
    return None if v is None else _int(path, v)


def _text(path: str, v: Any) -> str:
    if not isinstance(v, str):
        raise MalformedReply("`%s` must be a string, got %r" % (path, v))
    return str(v)


def _opt_text(path: str, v: Any) -> Optional[str]:
    return None if v is None else _text(path, v)


def _state(path: str, v: Any) -> str:
    if v not in CHILD_STATES:
        raise MalformedReply("`%s` must be one of %s, got %r" % (path, ", ".join(CHILD_STATES), v))
    return str(v)


# lease ----------------------------------------------------------------------


def granted(epoch: int, expires_at_ms: int) -> Reply:
    """``lease.take``: ``{"granted": {"epoch", "expires_at_ms"}}``."""
    return Reply("granted", {"epoch": _int("granted.epoch", epoch),
                             "expires_at_ms": _int("granted.expires_at_ms", expires_at_ms)})


def busy(holder: str, epoch: int, expires_at_ms: int) -> Reply:
    """``lease.take``: ``{"busy": {"holder", "epoch", "expires_at_ms"}}``, the live lease."""
    return Reply("busy", {"holder": _text("busy.holder", holder),
                          "epoch": _int("busy.epoch", epoch),
                          "expires_at_ms": _int("busy.expires_at_ms", expires_at_ms)})


def renewed(expires_at_ms: int) -> Reply:
    """``lease.renew``: ``{"renewed": {"expires_at_ms"}}``."""
    return Reply("renewed", {"expires_at_ms": _int("renewed.expires_at_ms", expires_at_ms)})


def lost(holder: Optional[str] = None, epoch: Optional[int] = None) -> Reply:
    """``lease.renew``: ``{"lost": {"holder", "epoch"}}``, the live holder and
    epoch, or both null (the default) when no lease is live."""
    return Reply("lost", {"holder": _opt_text("lost.holder", holder),
                          "epoch": _opt_int("lost.epoch", epoch)})


def released() -> Reply:
    """``lease.release`` and ``rate.release_slot``: ``{"released": {}}``."""
    return Reply("released", {})


def not_held() -> Reply:
    """``lease.release``: ``{"not_held": {}}``."""
    return Reply("not_held", {})


def lease(holder: Optional[str], epoch: int, expires_at_ms: Optional[int], live: bool) -> Reply:
    """``lease.read`` of a tree with a record:
    ``{"lease": {"holder", "epoch", "expires_at_ms", "live"}}``. ``holder``
    and ``expires_at_ms`` may be None only when the lease is not live."""
    if not isinstance(live, bool):
        raise MalformedReply("`lease.live` must be true or false, got %r" % (live,))
    if live and (holder is None or expires_at_ms is None):
        raise MalformedReply("a live `lease` must name its holder and expiry")
    return Reply("lease", {"holder": _opt_text("lease.holder", holder),
                           "epoch": _int("lease.epoch", epoch),
                           "expires_at_ms": _opt_int("lease.expires_at_ms", expires_at_ms),
                           "live": live})


def no_lease() -> Reply:
    """``lease.read`` of a tree that never had a record: ``{"lease": null}``."""
    return Reply("lease", None)


def kept() -> Reply:
    """``lease.keep_execution``: ``{"kept": {}}``."""
    return Reply("kept", {})


def executions(ids: Iterable[str]) -> Reply:
    """``lease.kept_executions``: ``{"executions": [...]}``, each id a string."""
    return Reply("executions", [_text("executions[%d]" % i, v) for i, v in enumerate(ids)])


# queue ----------------------------------------------------------------------


def saved() -> Reply:
    """``queue.save``: ``{"saved": {}}``."""
    return Reply("saved", {})


def exists(state: str) -> Reply:
    """``queue.save`` of a known child: ``{"exists": {"state"}}``."""
    return Reply("exists", {"state": _state("exists.state", state)})


def claimed(child: str, depth: int, payload: str, attempt: int) -> Reply:
    """``queue.claim``: ``{"claimed": {"child", "depth", "payload", "attempt"}}``."""
    return Reply("claimed", {"child": _text("claimed.child", child),
                             "depth": _int("claimed.depth", depth),
                             "payload": _text("claimed.payload", payload),
                             "attempt": _int("claimed.attempt", attempt)})


def empty() -> Reply:
    """``queue.claim`` with nothing claimable: ``{"empty": {}}``."""
    return Reply("empty", {})


def completed() -> Reply:
    """``queue.complete``: ``{"completed": {}}``."""
    return Reply("completed", {})


def not_claimer(claimer: Optional[str], attempt: Optional[int]) -> Reply:
    """``queue.complete``: ``{"not_claimer": {"claimer", "attempt"}}`` (either
    may be null)."""
    return Reply("not_claimer", {"claimer": _opt_text("not_claimer.claimer", claimer),
                                 "attempt": _opt_int("not_claimer.attempt", attempt)})


def child(state: str, claimer: Optional[str], attempt: int, depth: int) -> Reply:
    """``queue.read`` of a known child:
    ``{"child": {"state", "claimer", "attempt", "depth"}}`` (claimer may be null)."""
    return Reply("child", {"state": _state("child.state", state),
                           "claimer": _opt_text("child.claimer", claimer),
                           "attempt": _int("child.attempt", attempt),
                           "depth": _int("child.depth", depth)})


def no_child() -> Reply:
    """``queue.read`` of an unknown child: ``{"child": null}``."""
    return Reply("child", None)


# rate -----------------------------------------------------------------------


def acquired(slot: str) -> Reply:
    """``rate.acquire_slot``: ``{"acquired": {"slot"}}``, a non-empty id."""
    if _text("acquired.slot", slot) == "":
        raise MalformedReply("`acquired.slot` must be a non-empty string")
    return Reply("acquired", {"slot": slot})


def full(retry_at_ms: int) -> Reply:
    """``rate.acquire_slot``: ``{"full": {"retry_at_ms"}}``."""
    return Reply("full", {"retry_at_ms": _int("full.retry_at_ms", retry_at_ms)})


def paused(until_ms: int) -> Reply:
    """``rate.acquire_slot``, ``rate.hit``, ``rate.pause``: ``{"paused": {"until_ms"}}``."""
    return Reply("paused", {"until_ms": _int("paused.until_ms", until_ms)})


def unknown() -> Reply:
    """``rate.release_slot`` of no live slot: ``{"unknown": {}}``."""
    return Reply("unknown", {})


def allowed(remaining: int) -> Reply:
    """``rate.hit``: ``{"allowed": {"remaining"}}``."""
    return Reply("allowed", {"remaining": _int("allowed.remaining", remaining)})


def limited(retry_at_ms: int) -> Reply:
    """``rate.hit``: ``{"limited": {"retry_at_ms"}}``."""
    return Reply("limited", {"retry_at_ms": _int("limited.retry_at_ms", retry_at_ms)})


def rate_state(slots_in_use: int, paused_until_ms: Optional[int]) -> Reply:
    """``rate.read``: ``{"slots_in_use", "paused_until_ms"}`` (no outcome key;
    ``paused_until_ms`` null when no pause is in force)."""
    return Reply("rate_state", {"slots_in_use": _int("slots_in_use", slots_in_use),
                                "paused_until_ms": _opt_int("paused_until_ms", paused_until_ms)})


# fenced ---------------------------------------------------------------------


def applied() -> Reply:
    """``effect.apply``: ``{"applied": {}}``."""
    return Reply("applied", {})


def duplicate() -> Reply:
    """``effect.apply``, ``call.begin``: ``{"duplicate": {}}``."""
    return Reply("duplicate", {})


def fenced(epoch: int) -> Reply:
    """``effect.apply``, ``call.begin``, ``call.finish``: ``{"fenced": {"epoch"}}``,
    the tree's latest epoch (0 if never leased)."""
    return Reply("fenced", {"epoch": _int("fenced.epoch", epoch)})


def begun() -> Reply:
    """``call.begin``: ``{"begun": {}}``."""
    return Reply("begun", {})


def finished() -> Reply:
    """``call.finish``: ``{"finished": {}}``."""
    return Reply("finished", {})


def already_finished(response: str) -> Reply:
    """``call.finish``: ``{"already_finished": {"response"}}``, the first response."""
    return Reply("already_finished", {"response": _text("already_finished.response", response)})


def not_begun() -> Reply:
    """``call.finish`` of a call never begun: ``{"not_begun": {}}``."""
    return Reply("not_begun", {})


#: Every builder by outcome name (``no_lease`` and ``no_child`` are the null
#: forms of ``lease`` and ``child``).
BUILDERS = {
    f.__name__: f
    for f in (
        granted, busy, renewed, lost, released, not_held, lease, no_lease, kept, executions,
        saved, exists, claimed, empty, completed, not_claimer, child, no_child,
        acquired, full, paused, unknown, allowed, limited, rate_state,
        applied, duplicate, fenced, begun, finished, already_finished, not_begun,
    )
}
