"""The argument rules of docs/PROTOCOL.md §4.1 and hello's (§3): every rule
refused with bad_request, every valid edge value accepted."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import storeproof_kit as kit  # noqa: E402
from storeproof_kit.requests import ID, INT, NUMBER_RULES, TEXT  # noqa: E402

MAX = kit.MAX_DURATION_MS
I64_MAX = 2**63 - 1

# A valid request of every operation.
GOOD = {
    "lease.take": {"tree": "t", "holder": "a", "ttl_ms": 1000},
    "lease.renew": {"tree": "t", "holder": "a", "epoch": 1, "ttl_ms": 1000},
    "lease.release": {"tree": "t", "holder": "a", "epoch": 1},
    "lease.read": {"tree": "t"},
    "lease.keep_execution": {"tree": "t", "execution": "e"},
    "lease.kept_executions": {"tree": "t"},
    "queue.save": {"child": "c", "depth": 1, "payload": "p"},
    "queue.claim": {"instance": "i", "claim_ttl_ms": 1000},
    "queue.complete": {"child": "c", "instance": "i", "attempt": 1},
    "queue.read": {"child": "c"},
    "rate.acquire_slot": {"provider": "p", "holder": "h", "limit": 2, "ttl_ms": 1000},
    "rate.release_slot": {"provider": "p", "slot": "1"},
    "rate.hit": {"provider": "p", "limit": 2, "window_ms": 1000},
    "rate.pause": {"provider": "p", "until_ms": 5},
    "rate.read": {"provider": "p"},
    "effect.apply": {"tree": "t", "holder": "a", "epoch": 1, "effect": "e", "payload": "x"},
    "call.begin": {"tree": "t", "holder": "a", "epoch": 1, "call": "c"},
    "call.finish": {"call": "c", "response": "r"},
}

DURATIONS = ("ttl_ms", "claim_ttl_ms", "window_ms")
WHOLE = ("epoch", "attempt", "depth", "until_ms")


def kind_of(name, op):
    return dict(kit.OPS[op])[name]


class Refused(unittest.TestCase):
    def refused(self, op, args, needle=None, clock_ms=0):
        with self.assertRaises(kit.StoreError, msg="%s %r" % (op, args)) as cm:
            kit.parse_request(op, args, clock_ms)
        self.assertEqual(cm.exception.kind, "bad_request", (op, args))
        if needle is not None:
            self.assertIn(needle, cm.exception.message)
        return cm.exception.message

    def test_the_table_is_request_rs(self):
        self.assertEqual(set(kit.OPS), set(GOOD))
        for op, args in GOOD.items():
            self.assertEqual([n for n, _ in kit.OPS[op]], list(args), op)

    def test_every_good_request_parses_to_its_arguments(self):
        for op, args in GOOD.items():
            req = kit.parse_request(op, args, 7)
            self.assertEqual(dict(req.args), args)
            self.assertEqual(req.op, op)
            self.assertEqual(req.clock_ms, 7)
            for name in args:
                self.assertEqual(req[name], args[name])

    def test_contract_of_each_op(self):
        for op in GOOD:
            want = {"lease": "lease", "queue": "queue", "rate": "rate", "effect": "fenced",
                    "call": "fenced"}[op.split(".")[0]]
            self.assertEqual(kit.contract_of(op), want)
            self.assertEqual(kit.parse_request(op, GOOD[op], 0).contract, want)
        self.assertIsNone(kit.contract_of("lease.steal"))
        self.assertIsNone(kit.contract_of("hello"))

    def test_unknown_op(self):
        msg = self.refused("lease.steal", {"tree": "t"}, "unknown variant `lease.steal`")
        self.assertIn("`lease.take`", msg)
        self.refused("", {})
        self.refused("LEASE.TAKE", GOOD["lease.take"])

    def test_args_not_an_object(self):
        for op in GOOD:
            for args in ([], None, "x", 5, True):
                self.refused(op, args, "expected the arguments object")

    def test_unknown_and_missing_fields(self):
        for op, good in GOOD.items():
            self.refused(op, dict(good, extra=1), "unknown field `extra`")
            for name in good:
                missing = dict(good)
                del missing[name]
                self.refused(op, missing, "missing field `%s`" % name)

    def test_wrong_types(self):
        for op, good in GOOD.items():
            for name in good:
                kind = kind_of(name, op)
                if kind == INT:
                    bads = ["1000", "1", 1.5, 1.0, 1e3, None, True, False, [], {}]
                    want = "expected i64"
                else:
                    bads = [17, None, True, 1.5, [], {}]
                    want = "expected a string"
                for v in bads:
                    msg = self.refused(op, dict(good, **{name: v}), want)
                    self.assertTrue(msg.startswith("%s: %s: invalid type: " % (op, name)), msg)

    def test_messages_as_serde_writes_them(self):
        self.assertEqual(
            self.refused("lease.take", dict(GOOD["lease.take"], ttl_ms="1000")),
            'lease.take: ttl_ms: invalid type: string "1000", expected i64',
        )
        self.assertEqual(
            self.refused("lease.take", dict(GOOD["lease.take"], ttl_ms=True)),
            "lease.take: ttl_ms: invalid type: boolean `true`, expected i64",
        )
        self.assertEqual(
            self.refused("lease.take", dict(GOOD["lease.take"], ttl_ms=1.5)),
            "lease.take: ttl_ms: invalid type: floating point `1.5`, expected i64",
        )
        self.assertEqual(
            self.refused("lease.take", dict(GOOD["lease.take"], ttl_ms=0)),
            "lease.take: ttl_ms must be a whole number of milliseconds in 1..=31536000000, got 0",
        )
        self.assertEqual(
            self.refused("lease.read", {"tree": 7}),
            "lease.read: tree: invalid type: integer `7`, expected a string",
        )
        self.assertEqual(self.refused("lease.read", {}), "lease.read: missing field `tree`")
        self.assertEqual(
            self.refused("rate.hit", {"provider": "", "limit": 0, "window_ms": 0}),
            "rate.hit: provider must be a non-empty string; limit must be in 1..=1000000, got 0; "
            "window_ms must be a whole number of milliseconds in 1..=31536000000, got 0",
        )

    def test_integers_outside_i64(self):
        for op, good in GOOD.items():
            for name in good:
                if kind_of(name, op) == INT:
                    self.refused(op, dict(good, **{name: 2**63}), "invalid value: integer")
                    self.refused(op, dict(good, **{name: -(2**63) - 1}), "invalid value: integer")

    def test_empty_ids_are_refused_and_empty_payloads_accepted(self):
        for op, good in GOOD.items():
            for name in good:
                if kind_of(name, op) == ID:
                    self.refused(op, dict(good, **{name: ""}), "%s must be a non-empty string" % name)
                elif kind_of(name, op) == TEXT:
                    kit.parse_request(op, dict(good, **{name: ""}), 0)

    def test_lone_surrogates_are_refused(self):
        self.refused("lease.read", {"tree": "\ud800"}, "lone surrogate")
        self.refused("queue.save", {"child": "c", "depth": 0, "payload": "\udfff"}, "lone surrogate")

    def test_odd_ids_are_valid(self):
        for tree in ["ünï→漢字", "a:{b}", "*", "?[x]\\", "../..", "sp:", "x" * 1024, " ", "\n"]:
            self.assertEqual(kit.parse_request("lease.read", {"tree": tree}, 0)["tree"], tree)

    def test_durations(self):
        for op, good in GOOD.items():
            for name in good:
                if name in DURATIONS:
                    for v in (0, -1, MAX + 1, -(2**63), I64_MAX):
                        self.refused(op, dict(good, **{name: v}), "1..=31536000000, got %d" % v)
                    for v in (1, MAX):
                        kit.parse_request(op, dict(good, **{name: v}), 0)

    def test_whole_numbers(self):
        for op, good in GOOD.items():
            for name in good:
                if name in WHOLE:
                    self.refused(op, dict(good, **{name: -1}), "%s must be a whole number, got -1" % name)
                    self.refused(op, dict(good, **{name: -(2**63)}))
                    for v in (0, 2**53 + 1, I64_MAX):
                        self.assertEqual(kit.parse_request(op, dict(good, **{name: v}), 0)[name], v)

    def test_limits(self):
        for op in ("rate.acquire_slot", "rate.hit"):
            for v in (0, -1, 1_000_001):
                self.refused(op, dict(GOOD[op], limit=v), "limit must be in 1..=1000000, got %d" % v)
            for v in (1, 1_000_000):
                kit.parse_request(op, dict(GOOD[op], limit=v), 0)

    def test_every_integer_has_its_rule(self):
        # Integers without a value rule are only type-checked: none but these.
        for op, fields in kit.OPS.items():
            ruled = {n for n, _ in NUMBER_RULES.get(op, ())}
            ints = {n for n, k in fields if k == INT}
            self.assertEqual(ints, ruled, op)

    def test_rate_operations_need_a_clock(self):
        for op, good in GOOD.items():
            if op.startswith("rate."):
                for clock in (None, "1", 1.5, True, 2**63):
                    self.refused(op, good, "clock_ms must be a whole number of milliseconds", clock_ms=clock)
                for clock in (0, -5, I64_MAX, -(2**63)):
                    self.assertEqual(kit.parse_request(op, good, clock).clock_ms, clock)
            else:
                self.assertIsNone(kit.parse_request(op, good, None).clock_ms)
                self.assertIsNone(kit.parse_request(op, good, "x").clock_ms)
                self.assertIsNone(kit.parse_request(op, good, True).clock_ms)
                self.assertEqual(kit.parse_request(op, good, 12).clock_ms, 12)

    def test_parse_args_returns_a_fresh_dict(self):
        args = dict(GOOD["lease.take"])
        out = kit.parse_args("lease.take", args)
        self.assertEqual(out, args)
        self.assertIsNot(out, args)


HELLO = {"instance": "a", "redis_url": "redis://127.0.0.1:40123/", "prefix": "sp:x:", "opt_out": None}


class HelloArgs(unittest.TestCase):
    def refused(self, args, needle=None):
        with self.assertRaises(kit.StoreError) as cm:
            kit.parse_hello(args)
        self.assertEqual(cm.exception.kind, "bad_request", args)
        if needle:
            self.assertIn(needle, cm.exception.message)
        return cm.exception.message

    def test_a_good_hello(self):
        h = kit.parse_hello(HELLO)
        self.assertEqual((h.instance, h.redis_url, h.prefix, h.opt_out), ("a", HELLO["redis_url"], "sp:x:", None))
        self.assertFalse(h.opted_out)
        self.assertEqual((h.url.host, h.url.port, h.url.db), ("127.0.0.1", 40123, 0))

    def test_the_one_opt_out(self):
        h = kit.parse_hello(dict(HELLO, opt_out="acknowledged-writes-may-be-lost"))
        self.assertTrue(h.opted_out)
        self.assertEqual(h.opt_out, kit.OPT_OUT_WRITES_MAY_BE_LOST)
        # Left out is null.
        args = dict(HELLO)
        del args["opt_out"]
        self.assertFalse(kit.parse_hello(args).opted_out)

    def test_a_misspelt_opt_out_is_refused(self):
        for v in ("yes", "", "acknowledged-writes-may-be-lost ", "ACKNOWLEDGED-WRITES-MAY-BE-LOST",
                  "durability"):
            msg = self.refused(dict(HELLO, opt_out=v), "unknown opt-out")
            self.assertIn("the only opt-out is acknowledged-writes-may-be-lost", msg)
        for v in (True, 1, [], {}):
            self.refused(dict(HELLO, opt_out=v), "opt_out: invalid type")

    def test_fields(self):
        for args in ([], None, "x"):
            self.refused(args, "expected the arguments object")
        for name in ("instance", "redis_url", "prefix"):
            args = dict(HELLO)
            del args[name]
            self.assertEqual(self.refused(args), "hello: missing field `%s`" % name)
            for v in (None, 5, True, []):
                self.refused(dict(HELLO, **{name: v}), "hello: %s: invalid type" % name)
        self.assertEqual(self.refused(dict(HELLO, instance="")), "hello: instance must be a non-empty string")
        # An empty prefix is a string; unknown fields are ignored.
        kit.parse_hello(dict(HELLO, prefix=""))
        kit.parse_hello(dict(HELLO, later_field=1))

    def test_redis_urls(self):
        good = {
            "redis://127.0.0.1:6379/": ("redis", "127.0.0.1", 6379, None, None, 0),
            "redis://127.0.0.1:6379": ("redis", "127.0.0.1", 6379, None, None, 0),
            "redis://user:p%40ss@127.0.0.1:1/": ("redis", "127.0.0.1", 1, "user", "p@ss", 0),
            "redis://:pw@h:65535/0": ("redis", "h", 65535, None, "pw", 0),
            "rediss://host.example/3": ("rediss", "host.example", None, None, None, 3),
            "redis://[::1]:7000/": ("redis", "::1", 7000, None, None, 0),
            "redis://h/?db=2": ("redis", "h", None, None, None, 2),
        }
        for url, want in good.items():
            u = kit.parse_redis_url(url)
            self.assertEqual((u.scheme, u.host, u.port, u.username, u.password, u.db), want, url)
        self.assertEqual(kit.parse_redis_url("unix:///tmp/redis.sock").path, "/tmp/redis.sock")
        for url in ("http://127.0.0.1:6379/", "127.0.0.1:6379", "not a url", "", "redis://",
                    "redis://:6379/", "redis://h:port/", "redis://h:0/", "redis://h:70000/",
                    "redis://h:1/x", "redis://h:1/-1", "unix://", "redis://h/?db=x"):
            with self.assertRaises(kit.StoreError, msg=url) as cm:
                kit.parse_redis_url(url)
            self.assertEqual(cm.exception.kind, "bad_request")
            self.assertIn("is not a Redis URL", cm.exception.message)
        msg = self.refused(dict(HELLO, redis_url="http://user:secret@h:1/"), "is not a Redis URL")
        self.assertNotIn("secret", msg)

    def test_redact(self):
        self.assertEqual(kit.redact("redis://u:pw@h:1/"), "redis://u:***@h:1/")
        self.assertEqual(kit.redact("redis://u@h:1/"), "redis://u@h:1/")
        self.assertEqual(kit.redact("redis://h:1/"), "redis://h:1/")


if __name__ == "__main__":
    unittest.main()
