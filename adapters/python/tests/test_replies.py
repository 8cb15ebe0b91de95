"""Every reply builder gives the wire shape of docs/PROTOCOL.md §4 (what
reply.rs `Reply::from_wire` reads), and refuses what it would refuse."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import storeproof_kit as kit  # noqa: E402
from storeproof_kit.replies import BUILDERS  # noqa: E402

BIG = 2**63 - 1

# builder call -> its wire form.
SHAPES = [
    (lambda: kit.granted(1, 2_000_000_001_000), {"granted": {"epoch": 1, "expires_at_ms": 2_000_000_001_000}}),
    (lambda: kit.busy("a", 1, 5), {"busy": {"holder": "a", "epoch": 1, "expires_at_ms": 5}}),
    (lambda: kit.renewed(7), {"renewed": {"expires_at_ms": 7}}),
    (lambda: kit.lost("a", 2), {"lost": {"holder": "a", "epoch": 2}}),
    (lambda: kit.lost(), {"lost": {"holder": None, "epoch": None}}),
    (lambda: kit.released(), {"released": {}}),
    (lambda: kit.not_held(), {"not_held": {}}),
    (lambda: kit.lease("a", 3, 9, True), {"lease": {"holder": "a", "epoch": 3, "expires_at_ms": 9, "live": True}}),
    (lambda: kit.lease(None, 3, None, False),
     {"lease": {"holder": None, "epoch": 3, "expires_at_ms": None, "live": False}}),
    (lambda: kit.lease("old", 3, 9, False),
     {"lease": {"holder": "old", "epoch": 3, "expires_at_ms": 9, "live": False}}),
    (lambda: kit.no_lease(), {"lease": None}),
    (lambda: kit.kept(), {"kept": {}}),
    (lambda: kit.executions([]), {"executions": []}),
    (lambda: kit.executions(iter(["e1", "é"])), {"executions": ["e1", "é"]}),
    (lambda: kit.saved(), {"saved": {}}),
    (lambda: kit.exists("done"), {"exists": {"state": "done"}}),
    (lambda: kit.claimed("c", BIG, "", 1), {"claimed": {"child": "c", "depth": BIG, "payload": "", "attempt": 1}}),
    (lambda: kit.empty(), {"empty": {}}),
    (lambda: kit.completed(), {"completed": {}}),
    (lambda: kit.not_claimer("i", 1), {"not_claimer": {"claimer": "i", "attempt": 1}}),
    (lambda: kit.not_claimer(None, 0), {"not_claimer": {"claimer": None, "attempt": 0}}),
    (lambda: kit.not_claimer(None, None), {"not_claimer": {"claimer": None, "attempt": None}}),
    (lambda: kit.child("queued", None, 0, 3), {"child": {"state": "queued", "claimer": None, "attempt": 0, "depth": 3}}),
    (lambda: kit.no_child(), {"child": None}),
    (lambda: kit.acquired("1"), {"acquired": {"slot": "1"}}),
    (lambda: kit.full(10), {"full": {"retry_at_ms": 10}}),
    (lambda: kit.paused(BIG), {"paused": {"until_ms": BIG}}),
    (lambda: kit.unknown(), {"unknown": {}}),
    (lambda: kit.allowed(0), {"allowed": {"remaining": 0}}),
    (lambda: kit.limited(11), {"limited": {"retry_at_ms": 11}}),
    (lambda: kit.rate_state(0, None), {"slots_in_use": 0, "paused_until_ms": None}),
    (lambda: kit.rate_state(2, 5), {"slots_in_use": 2, "paused_until_ms": 5}),
    (lambda: kit.applied(), {"applied": {}}),
    (lambda: kit.duplicate(), {"duplicate": {}}),
    (lambda: kit.fenced(0), {"fenced": {"epoch": 0}}),
    (lambda: kit.begun(), {"begun": {}}),
    (lambda: kit.finished(), {"finished": {}}),
    (lambda: kit.already_finished("r"), {"already_finished": {"response": "r"}}),
    (lambda: kit.not_begun(), {"not_begun": {}}),
]


class Shapes(unittest.TestCase):
    def test_every_builder_gives_its_wire_shape(self):
        for build, wire in SHAPES:
            reply = build()
            self.assertIsInstance(reply, kit.Reply)
            self.assertEqual(reply.wire(), wire)
            # JSON as the loop writes it, back to the same value.
            self.assertEqual(json.loads(json.dumps(reply.wire())), wire)
            if "slots_in_use" in wire:
                self.assertEqual(reply.outcome, "rate_state")
            else:
                self.assertEqual([reply.outcome], list(wire))

    def test_every_builder_is_shown(self):
        shown = set()
        for build, _ in SHAPES:
            shown.add(build.__code__.co_names[1])
        self.assertEqual(shown, set(BUILDERS))

    def test_wire_is_a_copy(self):
        r = kit.granted(1, 2)
        r.wire()["granted"]["epoch"] = 99
        self.assertEqual(r.get("epoch"), 1)

    def test_get_and_equality(self):
        self.assertEqual(kit.busy("a", 1, 5).get("holder"), "a")
        self.assertIsNone(kit.no_lease().get("epoch"))
        self.assertEqual(kit.granted(1, 2), kit.granted(1, 2))
        self.assertNotEqual(kit.granted(1, 2), kit.granted(1, 3))
        self.assertIn("granted", repr(kit.granted(1, 2)))

    def test_answers_is_reply_rs(self):
        want = {
            "lease.take": {"granted", "busy"},
            "lease.renew": {"renewed", "lost"},
            "lease.release": {"released", "not_held"},
            "lease.read": {"lease"},
            "lease.keep_execution": {"kept"},
            "lease.kept_executions": {"executions"},
            "queue.save": {"saved", "exists"},
            "queue.claim": {"claimed", "empty"},
            "queue.complete": {"completed", "not_claimer"},
            "queue.read": {"child"},
            "rate.acquire_slot": {"acquired", "full", "paused"},
            "rate.release_slot": {"released", "unknown"},
            "rate.hit": {"allowed", "limited", "paused"},
            "rate.pause": {"paused"},
            "rate.read": {"rate_state"},
            "effect.apply": {"applied", "duplicate", "fenced"},
            "call.begin": {"begun", "duplicate", "fenced"},
            "call.finish": {"finished", "already_finished", "not_begun", "fenced"},
        }
        self.assertEqual({op: set(o) for op, o in kit.ANSWERS.items()}, want)
        self.assertTrue(kit.released().answers("rate.release_slot"))
        self.assertTrue(kit.paused(1).answers("rate.hit"))
        self.assertFalse(kit.kept().answers("lease.take"))
        self.assertFalse(kit.granted(1, 1).answers("no.such.op"))


class Refusals(unittest.TestCase):
    def malformed(self, build, needle=None):
        with self.assertRaises(kit.MalformedReply) as cm:
            build()
        if needle:
            self.assertIn(needle, str(cm.exception))
        self.assertIsInstance(cm.exception, ValueError)

    def test_integers(self):
        for bad in (True, False, 1.0, b"1", "01", "+1", " 1", "1.0", "", "-0", "9223372036854775808", None,
                    2**63, -(2**63) - 1):
            self.malformed(lambda: kit.granted(bad, 1), "granted.epoch")
            self.malformed(lambda: kit.renewed(bad), "renewed.expires_at_ms")
            self.malformed(lambda: kit.claimed("c", bad, "p", 1), "claimed.depth")
            self.malformed(lambda: kit.rate_state(bad, None), "slots_in_use")
            self.malformed(lambda: kit.fenced(bad), "fenced.epoch")
        kit.granted(-(2**63), 2**63 - 1)

    def test_integers_as_canonical_decimal_text(self):
        # As a Lua script answers big numbers (a Lua number is a double).
        self.assertEqual(kit.granted("9223372036854775807", "-12"), kit.granted(2**63 - 1, -12))
        self.assertEqual(kit.lost(None, "0"), kit.lost(None, 0))
        self.assertEqual(kit.rate_state("3", "17"), kit.rate_state(3, 17))

    def test_nullable_integers_refuse_other_types(self):
        for bad in (True, "01", 1.5):
            self.malformed(lambda: kit.lost(None, bad), "lost.epoch")
            self.malformed(lambda: kit.not_claimer(None, bad), "not_claimer.attempt")
            self.malformed(lambda: kit.rate_state(0, bad), "paused_until_ms")
            self.malformed(lambda: kit.lease(None, 1, bad, False), "lease.expires_at_ms")

    def test_strings(self):
        for bad in (None, 1, b"a", True):
            self.malformed(lambda: kit.busy(bad, 1, 1), "busy.holder")
            self.malformed(lambda: kit.claimed(bad, 1, "p", 1), "claimed.child")
            self.malformed(lambda: kit.claimed("c", 1, bad, 1), "claimed.payload")
            self.malformed(lambda: kit.already_finished(bad), "already_finished.response")
            self.malformed(lambda: kit.executions(["ok", bad]), "executions[1]")
        for bad in (1, b"a"):
            self.malformed(lambda: kit.lost(bad, 1), "lost.holder")
            self.malformed(lambda: kit.child("done", bad, 1, 1), "child.claimer")

    def test_states(self):
        for bad in ("Queued", "", None, "running", 1):
            self.malformed(lambda: kit.exists(bad), "exists.state")
            self.malformed(lambda: kit.child(bad, None, 0, 0), "child.state")
        for state in ("queued", "claimed", "done"):
            kit.exists(state)

    def test_a_live_lease_names_its_holder_and_expiry(self):
        self.malformed(lambda: kit.lease(None, 1, 5, True), "live")
        self.malformed(lambda: kit.lease("a", 1, None, True), "live")
        self.malformed(lambda: kit.lease("a", 1, 5, 1), "lease.live")
        self.malformed(lambda: kit.lease("a", 1, 5, None), "lease.live")

    def test_a_slot_is_a_non_empty_string(self):
        self.malformed(lambda: kit.acquired(""), "acquired.slot")
        self.malformed(lambda: kit.acquired(1), "acquired.slot")


if __name__ == "__main__":
    unittest.main()
