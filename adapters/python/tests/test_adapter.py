"""The loop (serve), hello, reconnect and the routing of requests to a
Store, with a store in memory: what the kit guarantees whatever the store
does."""

import io
import json
import os
import subprocess
import sys
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

import storeproof_kit as kit  # noqa: E402

HELLO_ARGS = {"instance": "a", "redis_url": "redis://127.0.0.1:1/", "prefix": "sp:t:", "opt_out": None}


def req(rid, op, args, clock_ms=2_000_000_000_000):
    return json.dumps({"id": rid, "op": op, "args": args, "clock_ms": clock_ms})


def hello(rid=0, **over):
    return req(rid, "hello", dict(HELLO_ARGS, **over))


class Memory(kit.Store):
    """A lease store in a dict, on a clock of its own; records every call."""

    name = "memory"
    version = "0.1"
    contracts = ["lease", "rate"]
    capabilities = ["reconnect", "stateless"]

    def __init__(self):
        self.leases = {}
        self.calls = []
        self.now = 1000
        self.hello = None
        self.reconnects = 0

    def connect(self, hello):
        self.hello = hello

    def reconnect(self):
        self.reconnects += 1

    def lease_take(self, tree, holder, ttl_ms):
        self.calls.append(("lease.take", tree, holder, ttl_ms))
        cur = self.leases.get(tree)
        if cur and cur[2] > self.now:
            return kit.busy(*cur)
        epoch = cur[1] + 1 if cur else 1
        self.leases[tree] = (holder, epoch, self.now + ttl_ms)
        return kit.granted(epoch, self.now + ttl_ms)

    def lease_read(self, tree):
        cur = self.leases.get(tree)
        return kit.no_lease() if cur is None else kit.lease(cur[0], cur[1], cur[2], cur[2] > self.now)

    def lease_release(self, tree, holder, epoch):
        return kit.kept()  # wrong outcome for lease.release, on purpose

    def lease_renew(self, tree, holder, epoch, ttl_ms):
        return {"renewed": {"expires_at_ms": 1}}  # not a kit reply, on purpose

    def lease_keep_execution(self, tree, execution):
        raise kit.store_full("full")

    def lease_kept_executions(self, tree):
        raise RuntimeError("a bug")

    def rate_read(self, provider, clock_ms):
        self.calls.append(("rate.read", provider, clock_ms))
        return kit.rate_state(0, None)


class Loop(unittest.TestCase):
    def setUp(self):
        # The loop logs failures to stderr: kept here, not shown.
        self.stderr = io.StringIO()
        saved, sys.stderr = sys.stderr, self.stderr
        self.addCleanup(setattr, sys, "stderr", saved)

    def run_lines(self, lines, store=None):
        self.store = store or Memory()
        return kit.drive(self.store, lines)

    def test_hello_answer_and_operations(self):
        out = self.run_lines([
            hello(0),
            req(1, "lease.take", {"tree": "t", "holder": "a", "ttl_ms": 500}),
            req(2, "lease.take", {"tree": "t", "holder": "b", "ttl_ms": 500}),
            req(3, "lease.read", {"tree": "never"}),
            req(4, "rate.read", {"provider": "p"}, clock_ms=77),
        ])
        self.assertEqual(out, [
            {"id": 0, "ok": {"name": "memory", "version": "0.1", "contracts": ["lease", "rate"],
                             "capabilities": ["reconnect", "stateless"]}},
            {"id": 1, "ok": {"granted": {"epoch": 1, "expires_at_ms": 1500}}},
            {"id": 2, "ok": {"busy": {"holder": "a", "epoch": 1, "expires_at_ms": 1500}}},
            {"id": 3, "ok": {"lease": None}},
            {"id": 4, "ok": {"slots_in_use": 0, "paused_until_ms": None}},
        ])
        self.assertEqual(self.store.hello.instance, "a")
        self.assertEqual(self.store.calls, [("lease.take", "t", "a", 500), ("lease.take", "t", "b", 500),
                                            ("rate.read", "p", 77)])

    def test_the_hello_answer_leaves_out_what_is_none_and_says_the_state(self):
        store = Memory()
        store.capabilities = None
        store.state = "durable"
        out = self.run_lines([hello()], store)
        self.assertEqual(out[0]["ok"], {"name": "memory", "version": "0.1", "contracts": ["lease", "rate"],
                                        "state": "durable"})

    def test_framing(self):
        out = self.run_lines([
            "not json",
            "[1, 2]",
            "",
            "   ",
            json.dumps({"id": 5, "args": {}}),
            json.dumps({"id": 6, "op": "lease.read"}),
            json.dumps({"id": 7, "op": 3, "args": {}}),
            b"\xff\xfe",
            json.dumps({"id": "x", "op": "lease.read", "args": {"tree": "t"}}),
        ])
        self.assertEqual(len(out), 7)  # blank lines are not requests
        kinds = [(o["id"], o["error"]["kind"]) for o in out]
        self.assertEqual(kinds, [(None, "bad_request"), (None, "bad_request"), (5, "bad_request"),
                                 (6, "bad_request"), (7, "bad_request"), (None, "bad_request"),
                                 ("x", "bad_request")])
        self.assertIn("not a JSON line", out[0]["error"]["message"])
        self.assertEqual(out[1]["error"]["message"], "a request must be a JSON object")
        self.assertEqual(out[2]["error"]["message"], "a request needs an `op` string")
        self.assertEqual(out[3]["error"]["message"], "lease.read: missing field `args`")
        self.assertEqual(out[6]["error"]["message"], "lease.read: send hello first")

    def test_requests_before_hello_are_refused_after_their_arguments(self):
        out = self.run_lines([
            req(1, "lease.read", {"tree": "t"}),
            req(2, "lease.read", {"tree": ""}),
            req(3, "reconnect", {}),
        ])
        self.assertEqual(out[0]["error"], {"kind": "bad_request", "message": "lease.read: send hello first"})
        self.assertIn("tree must be a non-empty string", out[1]["error"]["message"])
        self.assertEqual(out[2]["error"], {"kind": "bad_request", "message": "reconnect: send hello first"})
        self.assertIsNone(self.store.hello)

    def test_bad_input_never_reaches_the_store(self):
        out = self.run_lines([
            hello(),
            req(1, "lease.take", {"tree": "t", "holder": "a", "ttl_ms": "1000"}),
            req(2, "lease.take", {"tree": "t", "holder": "a", "ttl_ms": 0}),
            req(3, "lease.take", {"tree": "t", "holder": "a"}),
            req(4, "lease.take", {"tree": "t", "holder": "a", "ttl_ms": 1, "x": 1}),
            req(5, "lease.steal", {"tree": "t"}),
            req(6, "rate.read", {"provider": "p"}, clock_ms=None),
            req(7, "rate.read", {"provider": "p"}, clock_ms=1.5),
        ])
        for o in out[1:]:
            self.assertEqual(o["error"]["kind"], "bad_request", o)
        self.assertEqual(self.store.calls, [])
        self.assertEqual(out[1]["error"]["message"], 'lease.take: ttl_ms: invalid type: string "1000", expected i64')

    def test_operations_of_contracts_not_offered_are_unsupported_whatever_their_arguments(self):
        out = self.run_lines([
            hello(),
            req(1, "queue.claim", {"instance": "i", "claim_ttl_ms": 1000}),
            req(2, "queue.claim", {"bad": 1}),
            req(3, "effect.apply", {}),
        ])
        for o in out[1:]:
            self.assertEqual(o["error"]["kind"], "unsupported", o)
        self.assertIn("offers only lease, rate", out[1]["error"]["message"])

    def test_an_operation_without_a_method_is_unsupported(self):
        out = self.run_lines([hello(), req(1, "rate.hit", {"provider": "p", "limit": 1, "window_ms": 5})])
        self.assertEqual(out[1]["error"]["kind"], "unsupported")

    def test_what_the_store_answers_is_checked(self):
        out = self.run_lines([
            hello(),
            req(1, "lease.release", {"tree": "t", "holder": "a", "epoch": 1}),
            req(2, "lease.renew", {"tree": "t", "holder": "a", "epoch": 1, "ttl_ms": 5}),
            req(3, "lease.keep_execution", {"tree": "t", "execution": "e"}),
            req(4, "lease.kept_executions", {"tree": "t"}),
            req(5, "lease.read", {"tree": "t"}),
        ])
        self.assertEqual(out[1]["error"]["kind"], "unavailable")
        self.assertIn("never answers", out[1]["error"]["message"])
        self.assertEqual(out[2]["error"]["kind"], "unavailable")
        self.assertIn("adapter failure", out[2]["error"]["message"])
        self.assertEqual(out[3]["error"], {"kind": "store_full", "message": "full"})
        self.assertEqual(out[4]["error"], {"kind": "unavailable", "message": "adapter failure: a bug"})
        self.assertIn("RuntimeError: a bug", self.stderr.getvalue())
        self.assertIn("[memory a] store_full: full", self.stderr.getvalue())
        # The instance goes on.
        self.assertEqual(out[5]["ok"], {"lease": None})

    def test_hello(self):
        out = self.run_lines([
            hello(0, opt_out="yes"),
            hello(1, redis_url="http://x/"),
            hello(2, instance=""),
            hello(3, opt_out="acknowledged-writes-may-be-lost"),
            hello(4),
        ])
        self.assertIn("unknown opt-out", out[0]["error"]["message"])
        self.assertIn("is not a Redis URL", out[1]["error"]["message"])
        self.assertEqual(out[2]["error"]["message"], "hello: instance must be a non-empty string")
        self.assertIn("ok", out[3])
        self.assertTrue(self.store.hello.opted_out)
        self.assertEqual(out[4]["error"], {"kind": "bad_request", "message": "hello: this instance is already connected"})

    def test_a_refused_hello_can_be_sent_again(self):
        class Refusing(Memory):
            tries = 0

            def connect(self, hello):
                self.tries += 1
                if self.tries == 1:
                    raise kit.StoreError("durability", "short", ["appendfsync"])

        out = self.run_lines([hello(0), req(1, "lease.read", {"tree": "t"}), hello(2)], Refusing())
        self.assertEqual(out[0]["error"], {"kind": "durability", "message": "short", "settings": ["appendfsync"]})
        self.assertEqual(out[1]["error"]["message"], "lease.read: send hello first")
        self.assertIn("ok", out[2])

    def test_a_bad_hello_answer_is_never_written(self):
        bads = [("name", ""), ("name", None), ("version", 1), ("contracts", []), ("contracts", ["lease", "lease"]),
                ("contracts", ["locks"]), ("capabilities", ["teleport"]), ("state", "memory")]
        for attr, value in bads:
            store = Memory()
            setattr(store, attr, value)
            out = self.run_lines([hello()], store)
            self.assertEqual(out[0]["error"]["kind"], "unavailable", (attr, value))

        class NoReconnect(kit.Store):
            name, contracts, capabilities = "n", ["lease"], ["reconnect"]

            def connect(self, hello):
                pass

        out = self.run_lines([hello()], NoReconnect())
        self.assertIn("does not implement Store.reconnect", out[0]["error"]["message"])

    def test_a_later_hello_starts_a_new_case_only_for_a_store_that_offers_cases(self):
        class Cases(Memory):
            capabilities = ["cases"]
            closed = 0

            def close(self):
                self.closed += 1
                self.leases = {}

        out = self.run_lines([
            hello(0),
            req(1, "lease.take", {"tree": "t", "holder": "h", "ttl_ms": 5000}),
            hello(2, prefix="sp:t2:", redis_url="redis://127.0.0.1:2/"),
            req(3, "lease.read", {"tree": "t"}),
            hello(4, prefix="sp:t3:", opt_out="nope"),
            req(5, "lease.read", {"tree": "t"}),
        ], Cases())
        self.assertEqual(out[2]["ok"]["capabilities"], ["cases"])
        self.assertEqual(self.store.hello.prefix, "sp:t2:")
        self.assertEqual(self.store.hello.redis_url, "redis://127.0.0.1:2/")
        self.assertEqual(out[3]["ok"], {"lease": None}, "the earlier case is forgotten")
        # A bad hello is refused before the case it would end is closed.
        self.assertEqual(out[4]["error"]["kind"], "bad_request")
        self.assertEqual(self.store.closed, 1)
        self.assertIn("ok", out[5])

        class NoClose(kit.Store):
            name, contracts, capabilities = "n", ["lease"], ["cases"]

            def connect(self, hello):
                pass

        out = self.run_lines([hello()], NoClose())
        self.assertIn("does not implement Store.close", out[0]["error"]["message"])

    def test_a_refused_hello_of_a_store_that_offers_cases_closes_what_it_opened(self):
        class Refusing(Memory):
            capabilities = ["cases"]
            opened = closed = 0

            def connect(self, hello):
                self.opened += 1
                if "bad" in hello.redis_url:
                    raise kit.StoreError("config_refused", "CONFIG GET was refused")
                super().connect(hello)

            def close(self):
                self.closed += 1

        out = self.run_lines([
            hello(0),
            hello(1, prefix="sp:t2:", redis_url="redis://bad:1/"),
            hello(2, prefix="sp:t3:"),
            req(3, "lease.read", {"tree": "t"}),
        ], Refusing())
        self.assertEqual(out[1]["error"]["kind"], "config_refused")
        # Closed once to end the first case and once for the refused hello's
        # own connection; the next hello starts as a process just started.
        self.assertEqual(self.store.closed, 2)
        self.assertIn("ok", out[2])
        self.assertIn("ok", out[3])

    def test_reconnect(self):
        out = self.run_lines([
            hello(),
            req(1, "reconnect", {}),
            req(2, "reconnect", {"x": 1}),
            req(3, "reconnect", None),
            req(4, "reconnect", []),
        ])
        self.assertEqual(out[1], {"id": 1, "ok": {"reconnected": {}}})
        self.assertEqual(out[2]["error"], {"kind": "bad_request", "message": "reconnect: takes no arguments, got map"})
        self.assertEqual(out[3]["error"]["kind"], "bad_request")
        self.assertEqual(out[4]["error"]["kind"], "bad_request")
        self.assertEqual(self.store.reconnects, 1)

    def test_reconnect_of_a_store_without_it(self):
        class Plain(kit.Store):
            name, contracts = "plain", ["lease"]

            def connect(self, hello):
                pass

        out = self.run_lines([hello(), req(1, "reconnect", {})], Plain())
        self.assertEqual(out[1]["error"]["kind"], "bad_request")
        self.assertNotIn("capabilities", out[0]["ok"])

    def test_a_failed_reconnect_is_its_error(self):
        class Failing(Memory):
            def reconnect(self):
                raise kit.unavailable("reconnect: cannot connect")

        out = self.run_lines([hello(), req(1, "reconnect", {})], Failing())
        self.assertEqual(out[1]["error"], {"kind": "unavailable", "message": "reconnect: cannot connect"})

    def test_ids_are_echoed_as_sent(self):
        out = self.run_lines([req(2**70, "lease.read", {"tree": "t"}), req(None, "lease.read", {"tree": "t"})])
        self.assertEqual([o["id"] for o in out], [2**70, None])


class Process(unittest.TestCase):
    """serve() as storeproof runs it: a process, stdin and stdout."""

    def run_adapter(self, body, stdin):
        script = textwrap.dedent("""
            import sys
            sys.path.insert(0, %r)
            import storeproof_kit as kit
            %s
            sys.exit(kit.serve(Store()))
        """) % (os.path.join(HERE, ".."), textwrap.dedent(body))
        return subprocess.run([sys.executable, "-c", script], input=stdin.encode(), capture_output=True, timeout=60)

    def test_only_answers_go_to_stdout_and_eof_exits_zero(self):
        body = """
        class Store(kit.Store):
            name, contracts = "noisy", ["lease"]
            def connect(self, hello):
                print("connecting")
                sys.stdout.write("more noise\\n")
                kit.log("to stderr")
            def lease_read(self, tree):
                print("reading", tree)
                return kit.no_lease()
        """
        lines = [hello(0), req(1, "lease.read", {"tree": "ü"}), req(2, "lease.read", {"tree": "t"})]
        done = self.run_adapter(body, "\n".join(lines) + "\n")
        self.assertEqual(done.returncode, 0, done.stderr)
        out = done.stdout.decode("ascii").splitlines()
        self.assertEqual([json.loads(line)["id"] for line in out], [0, 1, 2])
        self.assertIn(b"connecting", done.stderr)
        self.assertIn(b"[noisy a] to stderr", done.stderr)

    def test_an_empty_input_exits_zero(self):
        body = """
        class Store(kit.Store):
            name, contracts = "x", ["lease"]
        """
        done = self.run_adapter(body, "")
        self.assertEqual((done.returncode, done.stdout), (0, b""))

    def test_each_answer_is_flushed_before_the_next_request_is_read(self):
        script = textwrap.dedent("""
            import sys
            sys.path.insert(0, %r)
            import storeproof_kit as kit
            class Store(kit.Store):
                name, contracts = "x", ["lease"]
                def connect(self, hello):
                    pass
                def lease_read(self, tree):
                    return kit.no_lease()
            sys.exit(kit.serve(Store()))
        """) % os.path.join(HERE, "..")
        p = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            for rid, line in enumerate([hello(0), req(1, "lease.read", {"tree": "t"})]):
                p.stdin.write(line.encode() + b"\n")
                p.stdin.flush()
                self.assertEqual(json.loads(p.stdout.readline())["id"], rid)
            p.stdin.close()
            self.assertEqual(p.wait(timeout=30), 0)
        finally:
            if p.poll() is None:
                p.kill()
            p.stdout.close()


if __name__ == "__main__":
    unittest.main()
