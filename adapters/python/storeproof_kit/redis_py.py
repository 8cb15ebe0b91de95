"""redis-py, set up the way §5 and §6 need it, for a store written on the
usual Python client: the one part of the kit that is not standard library
(``import storeproof_kit.redis_py`` only where redis-py is installed; the
rest of the kit never imports it).

- :func:`connect`: a client that never retries a command by itself (a
  retried script may run twice), sends nothing on connect but ``HELLO``
  (no ``CLIENT SETINFO``), and whose connection is open before ``hello``
  goes on, so that a server that cannot be reached is ``unavailable`` there;
- :func:`executor`: the ``execute`` function that
  :func:`~storeproof_kit.server.check_server` and
  :class:`~storeproof_kit.lua.LuaScripts` take, one raw command, failures
  as :class:`~storeproof_kit.server.CommandFailed`;
- :func:`error_code`: the ``(code, detail)`` of a redis-py exception, with
  the codes redis-py turns into exception classes given back.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Optional

from .errors import StoreError, bad_request, unavailable
from .requests import redact
from .server import CommandFailed, split_error

try:
    import redis
    from redis import exceptions as rexc
except ImportError:  # pragma: no cover - answered at connect
    redis = None
    rexc = None

#: redis-py exception classes whose message has lost its error code.
_CODES = (
    ("BusyLoadingError", "LOADING"),
    ("NoPermissionError", "NOPERM"),
    ("OutOfMemoryError", "OOM"),
    ("NoScriptError", "NOSCRIPT"),
    ("ReadOnlyError", "READONLY"),
    ("TryAgainError", "TRYAGAIN"),
    ("MasterDownError", "MASTERDOWN"),
    ("ClusterDownError", "CLUSTERDOWN"),
)


def error_code(e: BaseException) -> tuple[Optional[str], str]:
    """``(code, detail)`` of a server's error reply, or ``(None, text)`` when
    the server did not answer (I/O, timeout, a closed connection)."""
    if rexc is not None:
        for cls, code in _CODES:
            if isinstance(e, getattr(rexc, cls, ())):
                return code, str(e)
        if isinstance(e, rexc.ResponseError):
            return split_error(str(e))
    return None, str(e)


def is_server_reply(e: BaseException) -> bool:
    """Whether ``e`` is the server's error reply (the connection is still in
    step), not a failure to get one."""
    return rexc is not None and isinstance(e, rexc.ResponseError)


def connect(url: str, protocol: int = 3, response_timeout_s: float = 5.0,
            connect_timeout_s: float = 5.0, decode_responses: bool = True) -> "redis.Redis":
    """A connected redis-py client for ``url`` (RESP ``protocol`` 3 or 2;
    text replies unless ``decode_responses`` is False). A URL redis-py
    cannot read is ``bad_request``; redis-py missing, or a server that
    cannot be reached, ``unavailable``."""
    if redis is None:
        raise unavailable("the Python package redis is not installed (python3 -m pip install redis)")
    base: dict[str, Any] = dict(
        decode_responses=decode_responses, socket_connect_timeout=connect_timeout_s,
        socket_timeout=response_timeout_s, retry_on_timeout=False, health_check_interval=0,
    )
    try:
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        base["retry"] = Retry(NoBackoff(), 0)
    except ImportError:  # an older redis-py: it has no retries to turn off
        pass
    client = None
    for kwargs in (dict(base, protocol=protocol, lib_name=None, lib_version=None),
                   dict(base, protocol=protocol), base):
        try:
            client = redis.Redis.from_url(url, **kwargs)
            break
        except TypeError:  # an older redis-py without these options
            continue
        except ValueError as e:
            raise bad_request("redis_url %s is not a Redis URL: %s" % (json.dumps(redact(url)), e)) from None
    if client is None:
        raise unavailable("this redis-py cannot make a client for %s" % redact(url))
    open_connection(client)
    return client


def open_connection(client: "redis.Redis") -> None:
    """Opens a connection of ``client``'s pool now and keeps it in the pool
    (``unavailable`` if the server cannot be reached), so that the next
    command finds it ready."""
    try:
        pool = client.connection_pool
        try:
            conn = pool.get_connection()
        except TypeError:  # redis-py < 5.3 wants a command name
            conn = pool.get_connection("_")
        pool.release(conn)
    except (rexc.RedisError, OSError) as e:
        raise unavailable("cannot connect to the Redis server: %s" % e) from None


def reopen(client: "redis.Redis") -> None:
    """Drops every connection of ``client`` and opens a new one (for
    ``reconnect``, §3.1)."""
    client.connection_pool.disconnect()
    open_connection(client)


def executor(client: "redis.Redis") -> Callable[..., Any]:
    """``execute(*command)``: one raw command on ``client``, its reply, or
    :class:`CommandFailed` (code None when the server did not answer)."""

    def execute(*command: Any) -> Any:
        try:
            return client.execute_command(*command)
        except (rexc.RedisError, OSError) as e:
            raise CommandFailed(*error_code(e)) from None

    return execute


__all__ = ["StoreError", "connect", "error_code", "executor", "is_server_reply", "open_connection", "reopen"]
