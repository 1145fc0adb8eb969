"""The harness's typed observation and result records write exactly the JSON keys of their Go mirrors in messages.go."""

import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

from astrabox._harness import records  # noqa: E402


def go_fields(type_name):
    """The json tags of a Go struct in messages.go, in order."""
    with open(os.path.join(os.path.dirname(HERE), "messages.go"), encoding="utf-8") as fh:
        src = fh.read()
    m = re.search(r"^type %s struct \{\n(.*?)^\}" % type_name, src, re.S | re.M)
    if m is None:
        raise AssertionError("no type %s in messages.go" % type_name)
    return re.findall(r'json:"([a-z_0-9]+)[,"]', m.group(1))


class RecordsMirrorGo(unittest.TestCase):
    def test_every_record_writes_the_go_keys(self):
        samples = {
            "LogRecord": records.LogRecord("l", "INFO", 20, "m", None, "/f.py", 1, "f", "MainThread"),
            "WarningRecord": records.WarningRecord("UserWarning", "m", "/f.py", 2),
            "AuditEvent": records.AuditEvent("open", "/x r", "/f.py", 3, "f"),
            "LeftoverThread": records.LeftoverThread("t", True, "m.f", "/f.py", 4),
            "LeftoverTask": records.LeftoverTask("Task-1", "m.c", "/f.py", 5),
            "LeftoverTimer": records.LeftoverTimer("m.cb", 0.5),
            "LeftoverChild": records.LeftoverChild(42, "sleep 9"),
            "Leftovers": records.Leftovers(),
            "Connection": records.Connection(1, 50000, 8080, "/f.py", 6, "f"),
            "Send": records.Send(1, 0, 0, lost=True),
            "TLSFailure": records.TLSFailure("api.corp.example", "botocore", "botocore", ["the CA file /x.pem"], False,
                                             "certificate verify failed", "/f.py", 7, "f"),
            "NativeClient": records.NativeClient("grpc._cython.cygrpc", "grpcio"),
            "Observations": records.Observations(connections=[records.Connection(1, 50000, 8080, None, None, None)],
                                                 sends=[records.Send(1, 0, 5)],
                                                 tls=[records.TLSFailure("h", "ssl", "", [], False, "m", None, None, None)],
                                                 native=[records.NativeClient("pycurl", "pycurl (libcurl)")]),
        }
        full = records.Result(records.KIND_MATERIALS, **{f: None for f in records.Result.__dataclass_fields__ if f != "type"})
        samples.update({
            "MaterialFile": records.MaterialFile("a", "aGk="),
            "ActionCommand": records.ActionCommand("grant", "Grant access"),
            "TypeError": records.ResultTypeError("files[0].content", "bytes", "str"),
            "Result": full,
        })
        for name, rec in samples.items():
            with self.subTest(name):
                self.assertEqual(sorted(rec.wire()), sorted(go_fields(name)))

    def test_result_writes_only_its_kind(self):
        from astrabox import seams
        from astrabox._harness import values
        go = set(go_fields("Result"))
        cases = [(True, records.KIND_BOOL), (None, records.KIND_NONE), (object(), records.KIND_OTHER),
                 (seams.RuntimeMaterials(files=(seams.RuntimeFile("a", "not bytes"),)), records.KIND_MATERIALS),
                 (seams.RuntimePreparationPlan(), records.KIND_PLAN),
                 (seams.SessionUserActionState(ready=True), records.KIND_USER_ACTION_STATE)]
        for value, kind in cases:
            with self.subTest(kind):
                out = values.encode_value(value, method="prepare_turn")
                self.assertEqual(out["type"], kind)
                self.assertLessEqual(set(out), go)
        out = values.encode_value(cases[3][0], method="prepare_turn")
        self.assertEqual(out["files"], [{"name": "a", "content_b64": None}])
        self.assertEqual(out["type_errors"], [{"field": "files[0].content", "expected": "bytes", "got": "str"}])
        self.assertNotIn("ready", out)
        with self.assertRaises(ValueError):
            records.Result("dict")

    def test_bounds_and_routing_fields(self):
        obs = records.Observations()
        for i in range(records.LIST_LIMIT + 3):
            obs.add(records.WarningRecord("W", str(i), "f", i))
        self.assertEqual(len(obs.warnings), records.LIST_LIMIT)
        self.assertEqual(obs.dropped, 3)
        self.assertFalse(obs.empty())
        left = records.Leftovers(timers=[records.LeftoverTimer("cb", 1.0)] * (records.LIST_LIMIT + 2))
        self.assertEqual(left.trim(), 2)
        self.assertEqual(len(left.timers), records.LIST_LIMIT)
        wire = obs.wire()
        self.assertEqual(wire["warnings"][0], {"category": "W", "message": "0", "file": "f", "line": 0,
                                               "call": None, "after_return": False})


if __name__ == "__main__":
    unittest.main()
