"""A store's Lua scripts as §5 runs them, on any Redis client: loaded at
``hello``, then one ``EVALSHA`` per operation; a server that forgot a script
(``NOSCRIPT``: it did not run) gets it again and the call is retried once,
and nothing else is ever retried (a command whose reply was lost may have
run).

Every call takes ``execute``: a function that sends one raw command and
returns its reply, raising :class:`~storeproof_kit.server.CommandFailed`
when the command did not succeed (the same function
:func:`~storeproof_kit.server.check_server` takes;
:func:`storeproof_kit.redis_py.executor` makes one for redis-py).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional, Union

from .errors import CONFIG_REFUSED, UNAVAILABLE, StoreError
from .server import CommandFailed, command_failure, operation_failure

Execute = Callable[..., Any]


def _text(v: Any) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


class LuaScripts:
    """Named Lua scripts and their SHA1s (what ``SCRIPT LOAD`` answers)."""

    def __init__(self, sources: Mapping[str, Union[str, bytes]]) -> None:
        self.source = {n: s.encode("utf-8") if isinstance(s, str) else bytes(s) for n, s in sources.items()}
        self.sha = {n: hashlib.sha1(s).hexdigest() for n, s in self.source.items()}

    @classmethod
    def from_dir(cls, directory: Union[str, Path], prelude: Optional[str] = None) -> "LuaScripts":
        """Every ``NAME.lua`` of ``directory`` as script NAME, with the file
        ``prelude`` (shared functions: Redis scripts cannot include one
        another) put in front of each other script. A file that cannot be
        read is ``unavailable``, naming it."""
        d = Path(directory)
        try:
            head = (d / prelude).read_bytes() if prelude else b""
            files = sorted(p for p in d.glob("*.lua") if p.name != prelude)
            return cls({p.stem: head + p.read_bytes() for p in files})
        except OSError as e:
            raise StoreError(UNAVAILABLE, "cannot read the Lua scripts in %s: %s" % (d, e)) from None

    def load(self, execute: Execute, names: Optional[Iterable[str]] = None) -> None:
        """``SCRIPT LOAD`` of the scripts named (every one by default). A
        refusal (ACL, a renamed command) is ``config_refused``; no answer,
        or a server not ready, ``unavailable``. Every one: asked first with
        one ``SCRIPT EXISTS``, and only those the server lacks are loaded (a
        later case on the same server, §3.3, sends one command, not one per
        script)."""
        wanted = list(self.source if names is None else names)
        if names is None and wanted:
            wanted = self._missing(execute, wanted)
        for name in wanted:
            try:
                sha = _text(execute("SCRIPT", "LOAD", self.source[name]))
            except CommandFailed as e:
                failure = command_failure("SCRIPT LOAD", e.code, e.detail)
                if failure.kind != CONFIG_REFUSED:
                    raise failure from None
                raise StoreError(
                    CONFIG_REFUSED,
                    "the server refused SCRIPT LOAD (%s %s); every operation of this store is a Lua "
                    "script, so allow EVALSHA and SCRIPT LOAD for this user" % (e.code, e.detail),
                ) from None
            if sha != self.sha[name]:
                raise StoreError(UNAVAILABLE, "SCRIPT LOAD of %s answered %r, expected %s" % (name, sha, self.sha[name]))

    def _missing(self, execute: Execute, names: list[str]) -> list[str]:
        """The scripts of ``names`` the server does not hold (a script's SHA1
        names its source, so one held is this one). A ``SCRIPT EXISTS``
        that fails or answers out of shape says nothing: every one is
        loaded, and a load says what is wrong."""
        try:
            held = execute("SCRIPT", "EXISTS", *[self.sha[n] for n in names])
        except CommandFailed:
            return names
        if not isinstance(held, (list, tuple)) or len(held) != len(names):
            return names
        return [n for n, h in zip(names, held) if not (isinstance(h, (int, bool)) and int(h) == 1)]

    def run(self, execute: Execute, name: str, keys: Iterable[Any], args: Iterable[Any],
            what: Optional[str] = None) -> Any:
        """The reply of one ``EVALSHA`` of script ``name`` (keys and
        arguments sent as text; ints exact). A failure is the
        :class:`StoreError` to answer for the operation ``what`` (default:
        the script's name): ``store_full`` on ``OOM``, else ``unavailable``."""
        if name not in self.sha:
            raise KeyError("no Lua script named %r" % name)
        what = what or name
        keys = [str(k) if not isinstance(k, bytes) else k for k in keys]
        argv = ["EVALSHA", self.sha[name], str(len(keys)), *keys, *(a if isinstance(a, bytes) else str(a) for a in args)]
        try:
            return execute(*argv)
        except CommandFailed as e:
            if e.code != "NOSCRIPT":
                raise operation_failure(what, e.code, e.detail) from None
        try:
            self.load(execute, [name])
        except StoreError as e:
            raise StoreError(
                UNAVAILABLE, "%s: the server forgot the script (NOSCRIPT) and loading it again failed: %s" % (what, e)
            ) from None
        try:
            return execute(*argv)
        except CommandFailed as e:
            raise operation_failure(what, e.code, e.detail) from None
