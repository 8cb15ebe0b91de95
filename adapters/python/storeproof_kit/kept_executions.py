"""Kept executions (``lease.keep_execution``, ``lease.kept_executions``,
docs/PROTOCOL.md §4.2) in SQLite, never in Redis, as the built-in store
keeps them (``stores/src/redis/kept.rs``).

One file in ``$STOREPROOF_WORKDIR`` (the run's directory, shared by every
instance; the system's temporary directory when unset), every row under a
namespace (hello's ``prefix``), so one instance keeps and another lists.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Optional, Union

from .errors import STORE_FULL, UNAVAILABLE, StoreError

#: How long a write waits for another instance's lock before ``unavailable``.
SQLITE_BUSY_TIMEOUT_S = 10.0


def workdir() -> Path:
    """``$STOREPROOF_WORKDIR``, or the system's temporary directory."""
    return Path(os.environ.get("STOREPROOF_WORKDIR") or tempfile.gettempdir())


def sqlite_error(e: BaseException, what: str = "kept executions (SQLite)") -> StoreError:
    """``store_full`` for a full disk (SQLITE_FULL), else ``unavailable``."""
    code = getattr(e, "sqlite_errorcode", None)
    if code == getattr(sqlite3, "SQLITE_FULL", 13) or "disk is full" in str(e):
        return StoreError(STORE_FULL, "%s: %s" % (what, e))
    return StoreError(UNAVAILABLE, "%s: %s" % (what, e))


class KeptExecutions:
    """The kept execution ids of one namespace.

    Guarantees: ``keep`` is durable when it returns (WAL, ``synchronous =
    FULL``) and keeping an id again changes nothing; ``list`` gives each id
    once, in the order first kept; any SQLite failure is a
    :class:`StoreError` (``store_full`` for a full disk, else
    ``unavailable``), never another exception. Opening waits out another
    instance creating the same file at the same moment.
    """

    def __init__(self, namespace: str, name: str = "kept-executions.sqlite",
                 path: Optional[Union[str, Path]] = None) -> None:
        """Opens (creating it if needed) ``path``, by default ``name`` in
        :func:`workdir`, for ``namespace`` (hello's prefix)."""
        self.namespace = namespace
        self.path = Path(path) if path is not None else workdir() / name
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(
                UNAVAILABLE, "kept executions: cannot create %s: %s" % (self.path.parent, e)
            ) from None
        deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_S
        while True:
            try:
                self.conn = self._open(self.path)
                return
            except sqlite3.OperationalError as e:
                # Switching to WAL or creating the table while another
                # instance does the same may report "locked": wait it out.
                if "locked" in str(e) and time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                raise sqlite_error(e) from None
            except sqlite3.Error as e:
                raise sqlite_error(e) from None

    @staticmethod
    def _open(path: Path) -> sqlite3.Connection:
        conn = sqlite3.connect(
            str(path), timeout=SQLITE_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        try:
            conn.execute("PRAGMA busy_timeout = %d" % int(SQLITE_BUSY_TIMEOUT_S * 1000))
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()
            if not mode or str(mode[0]).lower() != "wal":
                raise StoreError(
                    UNAVAILABLE,
                    "kept executions: %s refused WAL journaling (journal_mode is %r)" % (path, mode),
                )
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS kept_execution ("
                " seq INTEGER PRIMARY KEY AUTOINCREMENT,"
                " namespace TEXT NOT NULL,"
                " tree TEXT NOT NULL,"
                " execution TEXT NOT NULL,"
                " UNIQUE (namespace, tree, execution))"
            )
        except BaseException:
            conn.close()
            raise
        return conn

    def keep(self, tree: str, execution: str) -> None:
        """Keeps ``execution`` for ``tree`` (again: nothing changes)."""
        try:
            self.conn.execute(
                "INSERT OR IGNORE INTO kept_execution (namespace, tree, execution) VALUES (?, ?, ?)",
                (self.namespace, tree, execution),
            )
        except sqlite3.Error as e:
            raise sqlite_error(e) from None

    def list(self, tree: str) -> list[str]:
        """The ids kept for ``tree``, each once, in the order first kept."""
        try:
            rows = self.conn.execute(
                "SELECT execution FROM kept_execution WHERE namespace = ? AND tree = ? ORDER BY seq",
                (self.namespace, tree),
            ).fetchall()
        except sqlite3.Error as e:
            raise sqlite_error(e) from None
        return [row[0] for row in rows]

    def close(self) -> None:
        """Closes the file (every kept id is already durable)."""
        self.conn.close()
