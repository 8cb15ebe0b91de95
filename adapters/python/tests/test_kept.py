"""Kept executions in SQLite under $STOREPROOF_WORKDIR: durable, shared by
instances of a namespace, each id once in the order first kept."""

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

import storeproof_kit as kit  # noqa: E402
from storeproof_kit.kept_executions import sqlite_error  # noqa: E402


class Kept(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="storeproof-kit-kept-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        old = os.environ.get("STOREPROOF_WORKDIR")
        os.environ["STOREPROOF_WORKDIR"] = self.dir
        self.addCleanup(lambda: os.environ.__setitem__("STOREPROOF_WORKDIR", old) if old is not None
                        else os.environ.pop("STOREPROOF_WORKDIR", None))

    def test_keep_and_list_in_order_each_once(self):
        k = kit.KeptExecutions("sp:a:")
        self.assertEqual(k.list("t"), [])
        for e in ["e2", "e1", "e2", "ü→漢", "e1", "x" * 1024]:
            k.keep("t", e)
        self.assertEqual(k.list("t"), ["e2", "e1", "ü→漢", "x" * 1024])
        self.assertEqual(k.list("u"), [])
        self.assertEqual(k.path, Path(self.dir) / "kept-executions.sqlite")

    def test_shared_by_instances_of_a_namespace_only(self):
        a = kit.KeptExecutions("sp:a:", "shared.sqlite")
        b = kit.KeptExecutions("sp:a:", "shared.sqlite")
        other = kit.KeptExecutions("sp:b:", "shared.sqlite")
        a.keep("t", "e1")
        b.keep("t", "e2")
        b.keep("t", "e1")
        self.assertEqual(a.list("t"), ["e1", "e2"])
        self.assertEqual(other.list("t"), [])
        self.assertTrue((Path(self.dir) / "shared.sqlite").exists())

    def test_durable_settings(self):
        k = kit.KeptExecutions("ns")
        self.assertEqual(k.conn.execute("PRAGMA journal_mode").fetchone()[0].lower(), "wal")
        self.assertEqual(k.conn.execute("PRAGMA synchronous").fetchone()[0], 2)  # FULL
        k.keep("t", "e")
        k.close()
        # Another connection (as another process would) sees it.
        conn = sqlite3.connect(str(Path(self.dir) / "kept-executions.sqlite"))
        self.assertEqual(conn.execute("SELECT execution FROM kept_execution").fetchall(), [("e",)])
        conn.close()

    def test_an_explicit_path(self):
        path = Path(self.dir) / "sub" / "dir" / "k.sqlite"
        k = kit.KeptExecutions("ns", path=path)
        k.keep("t", "e")
        self.assertTrue(path.exists())

    def test_failures_are_store_errors(self):
        blocker = Path(self.dir) / "file"
        blocker.write_text("x")
        with self.assertRaises(kit.StoreError) as cm:
            kit.KeptExecutions("ns", path=blocker / "k.sqlite")
        self.assertEqual(cm.exception.kind, "unavailable")
        k = kit.KeptExecutions("ns")
        k.conn.close()
        with self.assertRaises(kit.StoreError) as cm:
            k.keep("t", "e")
        self.assertEqual(cm.exception.kind, "unavailable")
        with self.assertRaises(kit.StoreError):
            k.list("t")
        full = sqlite3.OperationalError("database or disk is full")
        self.assertEqual(sqlite_error(full).kind, "store_full")

    def test_many_processes_keep_at_once(self):
        script = (
            "import sys; sys.path.insert(0, %r); import storeproof_kit as kit\n"
            "k = kit.KeptExecutions('sp:many:')\n"
            "for i in range(25): k.keep('t', '%%s-%%d' %% (sys.argv[1], i))\n" % os.path.join(HERE, "..")
        )
        procs = [subprocess.Popen([sys.executable, "-c", script, "p%d" % n]) for n in range(4)]
        for p in procs:
            self.assertEqual(p.wait(timeout=60), 0)
        got = kit.KeptExecutions("sp:many:").list("t")
        self.assertEqual(len(got), 100)
        self.assertEqual(len(set(got)), 100)
        for n in range(4):
            mine = [e for e in got if e.startswith("p%d-" % n)]
            self.assertEqual(mine, ["p%d-%d" % (n, i) for i in range(25)])

    def test_workdir(self):
        self.assertEqual(kit.workdir(), Path(self.dir))
        del os.environ["STOREPROOF_WORKDIR"]
        self.assertEqual(kit.workdir(), Path(tempfile.gettempdir()))


if __name__ == "__main__":
    unittest.main()
