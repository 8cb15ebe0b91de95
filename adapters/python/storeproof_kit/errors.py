"""The error answers of docs/PROTOCOL.md §6, as one exception.

Raise :class:`StoreError` (or one of the helpers below) anywhere in a store's
code: the kit's loop answers it as ``{"id": …, "error": {"kind", "message",
"settings"?}}`` and the instance goes on with the next request.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Optional

BAD_REQUEST = "bad_request"
DURABILITY = "durability"
DEPLOYMENT = "deployment"
CONFIG_REFUSED = "config_refused"
STORE_FULL = "store_full"
UNAVAILABLE = "unavailable"
UNSUPPORTED = "unsupported"

#: Every error kind of docs/PROTOCOL.md §6.
KINDS = (
    BAD_REQUEST,
    DURABILITY,
    DEPLOYMENT,
    CONFIG_REFUSED,
    STORE_FULL,
    UNAVAILABLE,
    UNSUPPORTED,
)

#: The kinds whose answer may name settings (``settings``).
KINDS_WITH_SETTINGS = (DURABILITY, DEPLOYMENT)


class StoreError(Exception):
    """An error answer: ``{"kind", "message", "settings"?}``.

    Guarantees a well-formed answer: ``kind`` is one of :data:`KINDS` and
    ``message`` a non-empty string (a ``ValueError`` otherwise, at the
    raise, where the bug is); ``settings`` (each a string) is kept only for
    ``durability`` and ``deployment``, and written only when not empty.
    """

    def __init__(self, kind: str, message: str, settings: Optional[Iterable[str]] = None) -> None:
        if kind not in KINDS:
            raise ValueError("unknown error kind %r (one of %s)" % (kind, ", ".join(KINDS)))
        if not isinstance(message, str) or not message:
            raise ValueError("an error answer needs a message for a person, got %r" % (message,))
        names = [str(s) for s in (settings or [])]
        if names and kind not in KINDS_WITH_SETTINGS:
            raise ValueError("only durability and deployment errors name settings, not %s" % kind)
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.settings = names

    def wire(self) -> dict[str, Any]:
        """The ``error`` value of the answer line."""
        err: dict[str, Any] = {"kind": self.kind, "message": self.message}
        if self.settings:
            err["settings"] = list(self.settings)
        return err

    def __repr__(self) -> str:
        return "StoreError(%r, %r%s)" % (
            self.kind,
            self.message,
            ", %r" % self.settings if self.settings else "",
        )


def bad_request(message: str) -> StoreError:
    """``bad_request``: the request broke a rule of §4.1 (nothing was changed)."""
    return StoreError(BAD_REQUEST, message)


def unavailable(message: str) -> StoreError:
    """``unavailable``: the server could not be reached, did not answer in time
    or answered something unexpected: the outcome is unknown."""
    return StoreError(UNAVAILABLE, message)


def unsupported(message: str) -> StoreError:
    """``unsupported``: the store does not offer this operation (its checks are
    skipped with this message; the operation is taken not to have happened)."""
    return StoreError(UNSUPPORTED, message)


def store_full(message: str) -> StoreError:
    """``store_full``: the server is full and refused the write; nothing was
    changed."""
    return StoreError(STORE_FULL, message)


def type_name(v: Any) -> str:
    """How serde names a JSON value in its messages (``integer `5```,
    ``string "x"``, ``null``, …): the words of the kit's ``bad_request``
    messages, as request.rs writes them."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean `%s`" % ("true" if v else "false")
    if isinstance(v, int):
        return "integer `%d`" % v
    if isinstance(v, float):
        return "floating point `%r`" % v
    if isinstance(v, str):
        return "string %s" % json.dumps(v)
    if isinstance(v, list):
        return "sequence"
    return "map"
