"""LuaScripts (§5): loaded at hello, one EVALSHA per operation, NOSCRIPT
loaded again and retried once, every other failure answered and never
retried; and the store's default kept executions. On a fake server."""

import hashlib
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import storeproof_kit as kit  # noqa: E402

SRC = {"take": "return 1", "read": "return 2"}


class FakeServer:
    """Knows the scripts loaded; `fail` is a list of CommandFailed to raise,
    one per command, before answering (None: answer)."""

    def __init__(self, fail=None):
        self.scripts, self.sent, self.fail = {}, [], list(fail or [])

    def __call__(self, *cmd):
        self.sent.append(cmd)
        if self.fail:
            e = self.fail.pop(0)
            if e is not None:
                raise e
        if cmd[:2] == ("SCRIPT", "EXISTS"):
            return [1 if sha in self.scripts else 0 for sha in cmd[2:]]
        if cmd[:2] == ("SCRIPT", "LOAD"):
            sha = hashlib.sha1(cmd[2]).hexdigest()
            self.scripts[sha] = cmd[2]
            return sha
        if cmd[0] == "EVALSHA":
            if cmd[1] not in self.scripts:
                raise kit.CommandFailed("NOSCRIPT", "No matching script.")
            return list(cmd[3:])
        raise AssertionError(cmd)


class Scripts(unittest.TestCase):
    def test_load_then_one_evalsha_per_run_with_text_arguments(self):
        scripts, server = kit.LuaScripts(SRC), FakeServer()
        scripts.load(server)
        self.assertEqual([c[:2] for c in server.sent], [("SCRIPT", "EXISTS")] + [("SCRIPT", "LOAD")] * 2)
        server.sent.clear()
        self.assertEqual(scripts.run(server, "take", ["k"], [7, "a", 2**63 - 1]), ["k", "7", "a", "9223372036854775807"])
        self.assertEqual(server.sent, [("EVALSHA", hashlib.sha1(b"return 1").hexdigest(), "1", "k", "7", "a", "9223372036854775807")])

    def test_a_server_that_holds_the_scripts_is_asked_once_and_sent_only_those_it_lacks(self):
        scripts, server = kit.LuaScripts(SRC), FakeServer()
        scripts.load(server)
        server.sent.clear()
        scripts.load(server)
        self.assertEqual(server.sent, [("SCRIPT", "EXISTS", scripts.sha["take"], scripts.sha["read"])])
        del server.scripts[scripts.sha["read"]]
        server.sent.clear()
        scripts.load(server)
        self.assertEqual([c[:2] for c in server.sent], [("SCRIPT", "EXISTS"), ("SCRIPT", "LOAD")])
        self.assertEqual(server.sent[1][2], SRC["read"].encode())
        # An answer out of shape, or a refused SCRIPT EXISTS: every script is loaded.
        for answer in [[1], "OK", None]:
            sent = []

            def odd(*cmd, answer=answer, sent=sent):
                sent.append(cmd)
                if cmd[1] == "EXISTS":
                    return answer
                return server(*cmd)

            scripts.load(odd)
            self.assertEqual([c[1] for c in sent], ["EXISTS", "LOAD", "LOAD"], answer)
        refused = FakeServer([kit.CommandFailed("NOPERM", "no")])
        scripts.load(refused)
        self.assertEqual([c[1] for c in refused.sent], ["EXISTS", "LOAD", "LOAD"])

    def test_a_forgotten_script_is_loaded_again_and_retried_once(self):
        scripts, server = kit.LuaScripts(SRC), FakeServer()
        self.assertEqual(scripts.run(server, "read", [], ["x"]), ["x"])
        self.assertEqual([c[0] for c in server.sent], ["EVALSHA", "SCRIPT", "EVALSHA"])

    def test_no_reply_is_unavailable_and_never_retried(self):
        scripts = kit.LuaScripts(SRC)
        server = FakeServer()
        scripts.load(server)
        server.sent.clear()
        server.fail = [kit.CommandFailed(None, "timed out")]
        with self.assertRaises(kit.StoreError) as cm:
            scripts.run(server, "take", [], [], what="lease.take")
        self.assertEqual(cm.exception.kind, "unavailable")
        self.assertIn("lease.take", cm.exception.message)
        self.assertEqual(len(server.sent), 1)

    def test_a_full_server_is_store_full(self):
        scripts, server = kit.LuaScripts(SRC), FakeServer()
        scripts.load(server)
        server.fail = [kit.CommandFailed("OOM", "command not allowed when used memory > 'maxmemory'.")]
        with self.assertRaises(kit.StoreError) as cm:
            scripts.run(server, "take", [], [])
        self.assertEqual(cm.exception.kind, "store_full")

    def test_a_refused_load_is_config_refused_and_a_silent_one_unavailable(self):
        for failure, kind in [(kit.CommandFailed("NOPERM", "no"), "config_refused"),
                              (kit.CommandFailed(None, "reset"), "unavailable"),
                              (kit.CommandFailed("LOADING", "wait"), "unavailable")]:
            with self.assertRaises(kit.StoreError) as cm:
                kit.LuaScripts(SRC).load(FakeServer([failure, failure]))
            self.assertEqual(cm.exception.kind, kind, failure)

    def test_a_load_answering_another_sha_is_unavailable(self):
        with self.assertRaises(kit.StoreError) as cm:
            kit.LuaScripts(SRC).load(lambda *cmd: "0" * 40)
        self.assertEqual(cm.exception.kind, "unavailable")

    def test_from_dir_puts_the_prelude_in_front(self):
        with tempfile.TemporaryDirectory() as d:
            for name, text in [("_p.lua", "-- p\n"), ("a.lua", "return 1"), ("b.lua", "return 2"), ("x.txt", "no")]:
                with open(os.path.join(d, name), "w") as f:
                    f.write(text)
            scripts = kit.LuaScripts.from_dir(d, prelude="_p.lua")
            self.assertEqual(scripts.source, {"a": b"-- p\nreturn 1", "b": b"-- p\nreturn 2"})
        with self.assertRaises(kit.StoreError) as cm:
            kit.LuaScripts.from_dir("/nonexistent/lua", prelude="_p.lua")
        self.assertEqual(cm.exception.kind, "unavailable")


class KeptByDefault(unittest.TestCase):
    def test_a_store_without_its_own_keeps_executions_in_the_side_file_per_prefix(self):
        class S(kit.Store):
            name, contracts, capabilities = "s", ["lease"], ["cases"]

            def connect(self, hello):
                pass

            def close(self):
                pass

        with tempfile.TemporaryDirectory() as d:
            os.environ["STOREPROOF_WORKDIR"] = d
            try:
                hello = lambda p: '{"id":0,"op":"hello","args":{"instance":"a","redis_url":"redis://127.0.0.1:1/","prefix":"%s","opt_out":null}}' % p
                keep = '{"id":1,"op":"lease.keep_execution","args":{"tree":"t","execution":"e1"}}'
                kept = '{"id":2,"op":"lease.kept_executions","args":{"tree":"t"}}'
                out = kit.drive(S(), [hello("sp:a:"), keep, keep, kept, hello("sp:b:"), kept])
            finally:
                del os.environ["STOREPROOF_WORKDIR"]
        self.assertEqual(out[1]["ok"], {"kept": {}})
        self.assertEqual(out[3]["ok"], {"executions": ["e1"]})
        self.assertEqual(out[5]["ok"], {"executions": []}, "another prefix is another namespace")


class RedisPyCodes(unittest.TestCase):
    def test_codes_redis_py_strips_are_given_back(self):
        from redis import exceptions as rexc  # scripts/setup installs redis-py

        import storeproof_kit.redis_py as redis_py

        self.assertEqual(redis_py.error_code(rexc.OutOfMemoryError("command not allowed"))[0], "OOM")
        self.assertEqual(redis_py.error_code(rexc.NoScriptError("No matching script"))[0], "NOSCRIPT")
        self.assertEqual(redis_py.error_code(rexc.ResponseError("WRONGTYPE Operation"))[0], "WRONGTYPE")
        self.assertEqual(redis_py.error_code(rexc.ConnectionError("reset")), (None, "reset"))
        self.assertTrue(redis_py.is_server_reply(rexc.ResponseError("x")))
        self.assertFalse(redis_py.is_server_reply(rexc.ConnectionError("x")))


if __name__ == "__main__":
    unittest.main()
