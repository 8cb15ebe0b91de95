"""The error answers of docs/PROTOCOL.md §6."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import storeproof_kit as kit  # noqa: E402


class Errors(unittest.TestCase):
    def test_the_kinds(self):
        self.assertEqual(set(kit.KINDS), {"bad_request", "durability", "deployment", "config_refused",
                                          "store_full", "unavailable", "unsupported"})

    def test_wire(self):
        self.assertEqual(kit.StoreError("unavailable", "gone").wire(), {"kind": "unavailable", "message": "gone"})
        err = kit.StoreError("durability", "short", ["appendfsync", "maxmemory-policy"])
        self.assertEqual(err.wire(), {"kind": "durability", "message": "short",
                                      "settings": ["appendfsync", "maxmemory-policy"]})
        # No settings: no key.
        self.assertNotIn("settings", kit.StoreError("deployment", "x", []).wire())
        self.assertEqual(str(err), "short")
        self.assertIn("durability", repr(err))

    def test_helpers(self):
        for make, kind in ((kit.bad_request, "bad_request"), (kit.unavailable, "unavailable"),
                           (kit.unsupported, "unsupported"), (kit.store_full, "store_full")):
            err = make("why")
            self.assertIsInstance(err, kit.StoreError)
            self.assertEqual((err.kind, err.message), (kind, "why"))

    def test_malformed_errors_are_refused_where_made(self):
        with self.assertRaises(ValueError):
            kit.StoreError("oops", "x")
        with self.assertRaises(ValueError):
            kit.StoreError("unavailable", "")
        with self.assertRaises(ValueError):
            kit.StoreError("unavailable", None)
        with self.assertRaises(ValueError):
            kit.StoreError("unavailable", "x", ["appendfsync"])

    def test_type_names(self):
        cases = [(None, "null"), (True, "boolean `true`"), (False, "boolean `false`"), (5, "integer `5`"),
                 (1.5, "floating point `1.5`"), ("x", 'string "x"'), ([], "sequence"), ({}, "map")]
        for v, name in cases:
            self.assertEqual(kit.type_name(v), name)


if __name__ == "__main__":
    unittest.main()
