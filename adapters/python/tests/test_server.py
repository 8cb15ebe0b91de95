"""The server checks of docs/PROTOCOL.md §7 (check_server, assess) and the
error kinds of failed Redis commands (§6), on fake servers: every decision."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import storeproof_kit as kit  # noqa: E402

GOOD_CONFIG = {
    "appendonly": "yes",
    "appendfsync": "always",
    "no-appendfsync-on-rewrite": "no",
    "maxmemory-policy": "noeviction",
}


class FakeServer:
    """Answers the six commands as a client would hand them back; records
    every command sent. `fail` maps a command (as a tuple) to the exception
    it raises."""

    def __init__(self, role="master", cluster="0", config=None, fail=None, text=False, resp2=False):
        self.role, self.cluster = role, cluster
        self.config = dict(GOOD_CONFIG if config is None else config)
        self.fail = fail or {}
        self.text, self.resp2 = text, resp2
        self.sent = []

    def __call__(self, *command):
        self.sent.append(command)
        for key, exc in self.fail.items():
            if command[: len(key)] == key:
                raise exc
        if command == ("INFO", "replication"):
            return self.info({"role": self.role, "connected_slaves": 0})
        if command == ("INFO", "cluster"):
            return self.info({"cluster_enabled": self.cluster})
        if command[:2] == ("CONFIG", "GET"):
            name = command[2]
            if name not in self.config:
                return [] if self.resp2 else {}
            if self.resp2:
                return [name.encode(), self.config[name].encode()]
            return {name.encode(): self.config[name].encode()}
        raise AssertionError("unexpected command %r" % (command,))

    def info(self, fields):
        fields = {k: v for k, v in fields.items() if v is not None}
        if self.text:
            return ("# Section\r\n" + "".join("%s:%s\r\n" % kv for kv in fields.items())).encode()
        # A parsed INFO, as redis-py gives it (numbers as numbers).
        return {k: (int(v) if isinstance(v, str) and v.isdigit() else v) for k, v in fields.items()}


SIX = [
    ("INFO", "replication"),
    ("INFO", "cluster"),
    ("CONFIG", "GET", "appendonly"),
    ("CONFIG", "GET", "appendfsync"),
    ("CONFIG", "GET", "no-appendfsync-on-rewrite"),
    ("CONFIG", "GET", "maxmemory-policy"),
]


class CheckServer(unittest.TestCase):
    def refused(self, server, opted_out=False):
        with self.assertRaises(kit.StoreError) as cm:
            kit.check_server(server, opted_out)
        return cm.exception

    def test_a_good_server_is_accepted_with_six_commands(self):
        for text in (False, True):
            for resp2 in (False, True):
                server = FakeServer(text=text, resp2=resp2)
                facts = kit.check_server(server, False)
                self.assertEqual(server.sent, SIX)
                self.assertEqual(facts.role, "master")
                self.assertEqual(facts.cluster_enabled, "0")
                self.assertEqual(facts.config, GOOD_CONFIG)

    def test_values_are_compared_without_case_or_spaces(self):
        kit.check_server(FakeServer(config=dict(GOOD_CONFIG, appendonly="YES ")), False)

    def test_short_durability_is_one_error_naming_every_setting(self):
        server = FakeServer(config=dict(GOOD_CONFIG, appendfsync="everysec", **{"maxmemory-policy": "allkeys-lru"}))
        err = self.refused(server)
        self.assertEqual(err.kind, "durability")
        self.assertEqual(err.settings, ["appendfsync", "maxmemory-policy"])
        # The example of docs/PROTOCOL.md §7, word for word.
        self.assertEqual(
            err.message,
            "the server may lose acknowledged writes: appendfsync is everysec (set appendfsync always); "
            "maxmemory-policy is allkeys-lru (set maxmemory-policy noeviction). Set them, or pass "
            "--opt-out acknowledged-writes-may-be-lost to accept that acknowledged writes may be lost",
        )
        self.assertEqual(err.wire()["settings"], ["appendfsync", "maxmemory-policy"])

    def test_every_durability_setting_is_judged(self):
        bad = {"appendonly": "no", "appendfsync": "no", "no-appendfsync-on-rewrite": "yes",
               "maxmemory-policy": "volatile-lru"}
        err = self.refused(FakeServer(config=bad))
        self.assertEqual(err.settings, [n for n, _ in kit.REQUIRED_DURABILITY])
        for name, value in bad.items():
            self.assertIn("%s is %s" % (name, value), err.message)
        for name, required in kit.REQUIRED_DURABILITY:
            self.assertIn("set %s %s" % (name, required), err.message)

    def test_a_setting_not_reported_is_short(self):
        config = dict(GOOD_CONFIG)
        del config["no-appendfsync-on-rewrite"]
        err = self.refused(FakeServer(config=config))
        self.assertEqual(err.settings, ["no-appendfsync-on-rewrite"])
        self.assertIn("CONFIG GET does not report no-appendfsync-on-rewrite", err.message)

    def test_the_opt_out_accepts_short_durability(self):
        server = FakeServer(config={"appendonly": "no"}, resp2=True)
        facts = kit.check_server(server, True)
        self.assertEqual(server.sent, SIX)
        self.assertEqual(facts.config, {"appendonly": "no"})

    def test_a_replica_is_deployment_even_opted_out(self):
        for opted_out in (False, True):
            err = self.refused(FakeServer(role="slave"), opted_out)
            self.assertEqual(err.kind, "deployment")
            self.assertEqual(err.settings, ["role"])
            self.assertIn("role:slave", err.message)
            self.assertIn("There is no opt-out for deployment", err.message)

    def test_a_cluster_node_is_deployment(self):
        err = self.refused(FakeServer(cluster="1"))
        self.assertEqual((err.kind, err.settings), ("deployment", ["cluster_enabled"]))
        self.assertIn("cluster_enabled:1", err.message)
        err = self.refused(FakeServer(role="slave", cluster="1", text=True))
        self.assertEqual(err.settings, ["role", "cluster_enabled"])

    def test_unreported_role_or_cluster_is_deployment(self):
        err = self.refused(FakeServer(role=None, cluster=None))
        self.assertEqual(err.settings, ["role", "cluster_enabled"])
        self.assertIn("does not report role", err.message)
        self.assertIn("does not report cluster_enabled", err.message)

    def test_deployment_names_short_durability_too_unless_opted_out(self):
        server = FakeServer(role="slave", config=dict(GOOD_CONFIG, appendfsync="everysec"))
        err = self.refused(server)
        self.assertEqual(err.settings, ["role"])
        self.assertIn("Durability is also short: appendfsync is everysec", err.message)
        err = self.refused(FakeServer(role="slave", config=dict(GOOD_CONFIG, appendfsync="everysec")), True)
        self.assertNotIn("Durability", err.message)

    def test_a_refused_info_is_config_refused(self):
        for command, name in ((("INFO", "replication"), "INFO replication"), (("INFO", "cluster"), "INFO cluster")):
            err = self.refused(FakeServer(fail={command: kit.CommandFailed("NOPERM", "this user has no permissions")}))
            self.assertEqual(err.kind, "config_refused")
            self.assertIn("ACL refuses %s" % name, err.message)
            err = self.refused(FakeServer(fail={command: kit.CommandFailed("ERR", "unknown command 'INFO'")}))
            self.assertEqual(err.kind, "config_refused")
            self.assertIn("does not know %s" % name, err.message)

    def test_a_refused_config_get_is_config_refused_and_stops_the_reads(self):
        server = FakeServer(fail={("CONFIG", "GET"): kit.CommandFailed("NOPERM", "no")})
        err = self.refused(server)
        self.assertEqual(err.kind, "config_refused")
        self.assertIn("CONFIG GET", err.message)
        self.assertEqual(server.sent, SIX[:3])
        # Refused even opted out: the settings cannot be verified.
        self.assertEqual(self.refused(FakeServer(fail={("CONFIG", "GET"): kit.CommandFailed("ERR", "x")}), True).kind,
                         "config_refused")

    def test_deployment_comes_before_a_refused_config_get(self):
        server = FakeServer(role="slave", fail={("CONFIG", "GET"): kit.CommandFailed("NOPERM", "no")})
        self.assertEqual(self.refused(server).kind, "deployment")

    def test_a_server_not_reached_or_not_ready_is_unavailable(self):
        for exc in (OSError("connection refused"), ConnectionRefusedError(111, "refused"), TimeoutError(),
                    kit.CommandFailed(None, "Connection closed by server."),
                    kit.CommandFailed("LOADING", "Redis is loading the dataset in memory"),
                    kit.CommandFailed("BUSY", "a script is running")):
            for command in SIX[:3]:
                err = self.refused(FakeServer(fail={command: exc}))
                self.assertEqual(err.kind, "unavailable", (command, exc))

    def test_a_store_error_from_execute_is_kept(self):
        err = self.refused(FakeServer(fail={("INFO",): kit.unavailable("gone")}))
        self.assertEqual((err.kind, err.message), ("unavailable", "gone"))

    def test_a_bug_in_execute_is_not_hidden(self):
        with self.assertRaises(KeyError):
            kit.check_server(FakeServer(fail={("INFO",): KeyError("bug")}), False)

    def test_assess_on_facts(self):
        kit.assess(kit.ServerFacts("master", "0", dict(GOOD_CONFIG)), False)
        with self.assertRaises(kit.StoreError) as cm:
            kit.assess(kit.ServerFacts("master", "0", {}), False)
        self.assertEqual(cm.exception.settings, [n for n, _ in kit.REQUIRED_DURABILITY])
        kit.assess(kit.ServerFacts("master", "0", {}), True)
        refused = kit.StoreError("config_refused", "no CONFIG")
        with self.assertRaises(kit.StoreError) as cm:
            kit.assess(kit.ServerFacts("master", "0", {}, refused), True)
        self.assertIs(cm.exception, refused)


class Failures(unittest.TestCase):
    def test_command_failure(self):
        cases = [
            (None, "Connection refused", "unavailable", "could not be reached"),
            ("LOADING", "loading", "unavailable", "not ready"),
            ("BUSY", "script", "unavailable", "not ready"),
            ("MASTERDOWN", "x", "unavailable", "not ready"),
            ("TRYAGAIN", "x", "unavailable", "not ready"),
            ("CLUSTERDOWN", "x", "unavailable", "not ready"),
            ("NOPERM", "no", "config_refused", "ACL refuses SCRIPT LOAD"),
            ("ERR", "unknown command 'SCRIPT'", "config_refused", "does not know SCRIPT LOAD"),
            ("ERR", "something", "config_refused", "refused SCRIPT LOAD"),
        ]
        for code, detail, kind, needle in cases:
            err = kit.command_failure("SCRIPT LOAD", code, detail)
            self.assertEqual(err.kind, kind, code)
            self.assertIn(needle, err.message)

    def test_operation_failure(self):
        err = kit.operation_failure("lease.take", "OOM", "command not allowed when used memory > 'maxmemory'.")
        self.assertEqual(err.kind, "store_full")
        self.assertIn("nothing was changed", err.message)
        self.assertEqual(kit.operation_failure("lease.take", "ERR", "OOM command not allowed when").kind, "store_full")
        err = kit.operation_failure("lease.take", "ERR", "boom")
        self.assertEqual((err.kind, err.message), ("unavailable", "lease.take: the server answered an error (ERR boom)"))
        err = kit.operation_failure("lease.take", None, "timed out")
        self.assertEqual(err.kind, "unavailable")
        self.assertIn("the outcome is unknown", err.message)

    def test_split_error(self):
        self.assertEqual(kit.split_error("NOPERM this user"), ("NOPERM", "this user"))
        self.assertEqual(kit.split_error("unknown command 'X'"), ("ERR", "unknown command 'X'"))
        self.assertEqual(kit.split_error("ERR x"), ("ERR", "x"))
        self.assertEqual(kit.split_error("OOM"), ("OOM", ""))
        self.assertEqual(kit.split_error("X y"), ("ERR", "X y"))


if __name__ == "__main__":
    unittest.main()
