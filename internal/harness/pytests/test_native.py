"""Clients below Python's sockets are named once per process: on load for most, on first use for the
libraries that are often loaded without being used (pycares through aiohttp, grpc). The modules here are
stand-ins put in sys.modules, so the suite runs without grpcio or pycares installed."""

import os
import sys
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

from astrabox._harness import native  # noqa: E402


class NativeClients(unittest.TestCase):
    def setUp(self):
        self.saved = dict(sys.modules)
        native._seen.clear()
        native._hooked.clear()

    def tearDown(self):
        for name in list(sys.modules):
            if name not in self.saved:
                del sys.modules[name]
        native._seen.clear()
        native._hooked.clear()

    def scan(self):
        """What a scan records now; what the hooks it installs report later goes to self.emitted."""
        out = []
        self.emitted = getattr(self, "emitted", [])
        native.scan(out.append, self.emitted.append)
        return [r.module for r in out]

    def test_a_loaded_c_client_is_named_once(self):
        self.assertEqual(self.scan(), [])
        sys.modules["pycurl"] = types.ModuleType("pycurl")
        self.assertEqual(self.scan(), ["pycurl"])
        self.assertEqual(self.scan(), [])

    def test_pycares_is_named_when_a_channel_is_made_not_when_loaded(self):
        pycares = types.ModuleType("pycares")

        class Channel:
            def __init__(self, timeout=None):
                self.timeout = timeout

        pycares.Channel = Channel
        sys.modules["pycares"] = pycares
        sys.modules["pycares._cares"] = types.ModuleType("pycares._cares")
        self.assertEqual(self.scan(), [], "aiohttp imports aiodns whenever it is installed: loading is not use")
        self.assertEqual(self.emitted, [])
        made = Channel(timeout=1.0)
        self.assertEqual(made.timeout, 1.0)
        self.assertEqual([r.module for r in self.emitted], ["pycares._cares"])
        Channel()
        self.assertEqual(len(self.emitted), 1, "named once per process")
        self.assertEqual(self.scan(), [])

    def test_a_channel_alive_at_the_scan_counts(self):
        grpc_channel = types.ModuleType("grpc._channel")

        class Channel:
            pass

        grpc_channel.Channel = Channel
        keep = Channel()
        sys.modules["grpc._channel"] = grpc_channel
        sys.modules["grpc._cython.cygrpc"] = types.ModuleType("grpc._cython.cygrpc")
        self.assertEqual(self.scan(), ["grpc._cython.cygrpc"])
        del keep


if __name__ == "__main__":
    unittest.main()
