"""trust: with the run's CA bundle named (``ASTRABOX_EGRESS_CA_BUNDLE``), ``certifi.where()`` answers that bundle
without certifi's own file being written; every ``ssl.SSLContext`` remembers which trust store was loaded into
it and by which library; a failed certificate verification with a declared service is recorded as a
``TLSFailure`` (library, trust stores, whether the run's authority was among them, the provider's line), one
with any other host is not, and the provider still sees its exception. Without the variable nothing is
patched. ``install`` patches ``ssl`` for the whole process, so every test runs in a child interpreter of the
same version. Handshake tests use the certificate authority Go's ``TestPythonSuites`` writes into
``$HARNESS_TLS_DIR`` (``ca.pem``, named like the run's authority, and a leaf for ``localhost``)."""

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

PYTHON_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")
BASE_ENV = {k: v for k, v in os.environ.items() if not k.startswith(("ASTRABOX_", "PYTHON"))}
TLS_DIR = os.environ.get("HARNESS_TLS_DIR", "")

# A stand-in for the installed certifi package, with the layout of the real one (certifi/core.py re-exported).
CERTIFI = {
    "__init__.py": "from .core import contents, where\n",
    "core.py": textwrap.dedent("""\
        import os

        def where():
            return os.path.join(os.path.dirname(__file__), "cacert.pem")

        def contents():
            with open(where(), encoding="ascii") as fh:
                return fh.read()
        """),
    "cacert.pem": "certifi's own roots\n",
}

# A client library as third-party code is written: it builds its TLS context itself.
TLSLIB = textwrap.dedent("""\
    import asyncio, socket, ssl

    def context(cafile=None, cadata=None):
        ctx = ssl.create_default_context(cafile=cafile, cadata=cadata)
        return ctx

    def bare_context():
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)

    def get(ctx, port, server_hostname):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            with ctx.wrap_socket(sock, server_hostname=server_hostname):
                return "verified"

    async def aget(ctx, port, server_hostname):
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port, ssl=ctx, server_hostname=server_hostname), 10)
        writer.close()
        return "verified"
    """)

# The provider's own module: it calls the library (MARKER lines are looked up, not hard-coded).
PROVIDER = textwrap.dedent("""\
    import asyncio, ssl
    import tlslib

    def fetch(ctx, port, host):
        try:
            return tlslib.get(ctx, port, host)  # MARKER fetch
        except ssl.SSLCertVerificationError as exc:
            return "raised " + type(exc).__name__

    def afetch(ctx, port, host):
        try:
            return asyncio.run(tlslib.aget(ctx, port, host))  # MARKER afetch
        except ssl.SSLCertVerificationError as exc:
            return "raised " + type(exc).__name__

    def own_context(**kwargs):
        return tlslib.context(**kwargs)  # MARKER context

    def own_default():
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_default_certs()  # MARKER default
        return ctx
    """)

PRELUDE = textwrap.dedent("""\
    import json, os, ssl, sys, threading, socket
    sys.path.insert(0, sys.argv[1])
    work = sys.argv[2]
    sys.path.insert(0, os.path.join(work, "lib"))
    sys.path.insert(0, os.path.join(work, "prov"))
    from astrabox._harness import trust
    from astrabox._harness.sources import Location

    records = []
    prov_dir = os.path.join(work, "prov") + os.sep
    is_provider = lambda f: f.startswith(prov_dir)
    declared = lambda host: host in ("localhost", "api.example")

    def guarded(fn, *args):
        fn(*args)

    def locate(frame):
        while frame is not None:
            if is_provider(frame.f_code.co_filename):
                return Location(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)
            frame = frame.f_back
        return Location(None, None, None)

    originals = (ssl.SSLContext.load_verify_locations, ssl.SSLSocket.do_handshake)
    installed = trust.install(records.append, guarded, locate, is_provider, declared)
    out = {"installed": installed, "patched": originals != (ssl.SSLContext.load_verify_locations,
                                                             ssl.SSLSocket.do_handshake)}
    """)

SERVER = textwrap.dedent("""\
    tls = sys.argv[3]
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(os.path.join(tls, "cert.pem"), os.path.join(tls, "key.pem"))
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]

    def serve():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            try:
                server_ctx.wrap_socket(conn, server_side=True).close()
            except (OSError, ssl.SSLError):
                conn.close()

    threading.Thread(target=serve, daemon=True).start()
    run_ca = os.path.join(tls, "ca.pem")
    import provider
    """)


def marker(name):
    for number, line in enumerate(PROVIDER.splitlines(), 1):
        if line.endswith("# MARKER " + name):
            return number
    raise AssertionError("no MARKER " + name)


class Child(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.work = os.path.realpath(tmp.name)
        self.files = {os.path.join("lib", "tlslib.py"): TLSLIB, os.path.join("prov", "provider.py"): PROVIDER}
        for name, text in CERTIFI.items():
            self.files[os.path.join("lib", "certifi", name)] = text
        for name, text in self.files.items():
            path = os.path.join(self.work, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as fh:
                fh.write(text)
        self.bundle = os.path.join(self.work, "bundle.pem")
        with open(self.bundle, "w") as fh:
            fh.write("the run's bundle\n")

    def run_child(self, code, env, *args, prelude=PRELUDE):
        full = dict(BASE_ENV, PYTHONDONTWRITEBYTECODE="1")
        full.update(env)
        proc = subprocess.run([sys.executable, "-B", "-c", prelude + textwrap.dedent(code), PYTHON_DIR, self.work]
                              + list(args), env=full, capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return json.loads(proc.stdout.splitlines()[-1])


class Install(Child):
    def test_without_a_bundle_nothing_is_patched(self):
        out = self.run_child("""
            import certifi
            out["own"] = certifi.where() == os.path.join(os.path.dirname(certifi.__file__), "cacert.pem")
            print(json.dumps(out))
            """, {})
        self.assertEqual(out, {"installed": False, "patched": False, "own": True})

    def test_certifi_answers_the_runs_bundle_and_its_own_file_is_untouched(self):
        out = self.run_child("""
            import certifi, certifi.core
            out["where"] = [certifi.where(), certifi.core.where()]
            out["contents"] = certifi.contents()
            with open(os.path.join(os.path.dirname(certifi.__file__), "cacert.pem")) as fh:
                out["own_file_is_the_bundle"] = fh.read() == out["contents"]
            out["again"] = trust.install(records.append, guarded, locate, is_provider, declared)
            out["patched_once"] = ssl.SSLContext.load_verify_locations.__code__.co_name == "load_verify_locations"
            print(json.dumps(out))
            """, {"ASTRABOX_EGRESS_CA_BUNDLE": self.bundle})
        self.assertEqual(out, {"installed": True, "patched": True, "where": [self.bundle, self.bundle],
                               "contents": "the run's bundle\n", "own_file_is_the_bundle": False, "again": True,
                               "patched_once": True})
        with open(os.path.join(self.work, "lib", "certifi", "cacert.pem")) as fh:
            self.assertEqual(fh.read(), CERTIFI["cacert.pem"])  # when the stand-in was the one imported

    def test_certifi_imported_before_install_answers_the_bundle_too(self):
        out = self.run_child("""
            out["where"] = [certifi.where(), certifi.core.where()]
            print(json.dumps(out))
            """, {"ASTRABOX_EGRESS_CA_BUNDLE": self.bundle},
            prelude=PRELUDE.replace("from astrabox._harness import trust\n",
                                    "import certifi, certifi.core\nfrom astrabox._harness import trust\n"))
        self.assertEqual(out["where"], [self.bundle, self.bundle])

    def test_without_certifi_install_still_watches_contexts(self):
        os.rename(os.path.join(self.work, "lib", "certifi"), os.path.join(self.work, "lib", "not_certifi"))
        out = self.run_child("""
            import importlib.util
            out["certifi"] = importlib.util.find_spec("certifi") is not None
            print(json.dumps(out))
            """, {"ASTRABOX_EGRESS_CA_BUNDLE": self.bundle})
        if out["certifi"]:
            self.skipTest("this interpreter has certifi installed")
        self.assertEqual(out, {"installed": True, "patched": True, "certifi": False})


@unittest.skipUnless(TLS_DIR, "no certificate in $HARNESS_TLS_DIR")
class Contexts(Child):
    def test_each_context_remembers_its_trust_stores_and_the_library_that_loaded_them(self):
        out = self.run_child("""
            import provider, tlslib
            run_ca = os.path.join(sys.argv[3], "ca.pem")
            with open(run_ca) as fh:
                pem = fh.read()
            ctxs = {"file": provider.own_context(cafile=run_ca), "data": provider.own_context(cadata=pem),
                    "default": provider.own_context(), "own": provider.own_default(),
                    "none": tlslib.bare_context()}
            ctxs["file"].load_verify_locations(capath=os.path.dirname(run_ca))  # a second store, same context
            out["seen"] = {k: trust._contexts.get(c) for k, c in ctxs.items()}
            out["run_ca"] = {k: trust._run_ca_loaded(c) for k, c in ctxs.items()}
            print(json.dumps(out))
            """, {"ASTRABOX_EGRESS_CA_BUNDLE": self.bundle}, TLS_DIR)
        run_ca = os.path.join(TLS_DIR, "ca.pem")
        seen = out["seen"]
        self.assertEqual(seen["file"], ["tlslib", ["the CA file %s" % run_ca, "the CA directory %s" % TLS_DIR]])
        with open(run_ca) as fh:
            size = len(fh.read())
        self.assertEqual(seen["data"], ["tlslib", ["CA data given in code (%d bytes)" % size]])
        self.assertEqual(seen["default"][0], "tlslib")
        self.assertEqual(len(seen["default"][1]), 1)
        self.assertTrue(seen["default"][1][0].startswith("OpenSSL's default trust store ("), seen["default"])
        # The provider's own call to the standard library: no library between them.
        self.assertEqual(seen["own"][0], "")
        self.assertTrue(seen["own"][1][0].startswith("OpenSSL's default trust store ("))
        self.assertIsNone(seen["none"])
        self.assertEqual(out["run_ca"], {"file": True, "data": True, "default": False, "own": False, "none": False})

    def test_ssl_cert_file_is_named_as_the_default_store(self):
        out = self.run_child("""
            import provider
            out["seen"] = trust._contexts.get(provider.own_default())
            print(json.dumps(out))
            """, {"ASTRABOX_EGRESS_CA_BUNDLE": self.bundle, "SSL_CERT_FILE": self.bundle}, TLS_DIR)
        self.assertEqual(out["seen"], ["", ["OpenSSL's default trust store (SSL_CERT_FILE=%s)" % self.bundle]])


@unittest.skipUnless(TLS_DIR, "no certificate in $HARNESS_TLS_DIR")
class Handshakes(Child):
    def handshake(self, code):
        return self.run_child(SERVER + textwrap.dedent(code) + "\nout['records'] = [dict(vars(r)) for r in records]\nprint(json.dumps(out, default=repr))\n",
                              {"ASTRABOX_EGRESS_CA_BUNDLE": self.bundle}, TLS_DIR)

    def record(self, out):
        self.assertEqual(len(out["records"]), 1, out)
        rec = out["records"][0]
        return {k: rec.get(k) for k in ("host", "library", "context_library", "trust", "run_ca", "file", "line",
                                        "function")}

    def test_a_declared_service_failing_verification_is_recorded_with_what_was_trusted(self):
        out = self.handshake("""
            ctx = provider.own_context()
            out["result"] = provider.fetch(ctx, port, "localhost")
            """)
        self.assertEqual(out["result"], "raised SSLCertVerificationError")  # the provider still sees it
        rec = self.record(out)
        trusted = rec.pop("trust")
        self.assertEqual(rec, {"host": "localhost", "library": "tlslib", "context_library": "tlslib", "run_ca": False,
                               "file": os.path.join(self.work, "prov", "provider.py"), "line": marker("fetch"),
                               "function": "fetch"})
        self.assertEqual(len(trusted), 1)
        self.assertTrue(trusted[0].startswith("OpenSSL's default trust store ("), trusted)
        self.assertIn("certificate verify failed", out["records"][0]["message"])

    def test_the_run_ca_loaded_but_the_name_wrong_says_so(self):
        out = self.handshake("""
            ctx = provider.own_context(cafile=run_ca)
            out["result"] = provider.fetch(ctx, port, "api.example")
            """)
        self.assertEqual(out["result"], "raised SSLCertVerificationError")
        rec = self.record(out)
        self.assertEqual((rec["host"], rec["run_ca"], rec["trust"]),
                         ("api.example", True, ["the CA file %s" % os.path.join(TLS_DIR, "ca.pem")]))

    def test_a_context_with_no_trust_store_says_so(self):
        out = self.handshake("""
            import tlslib
            out["result"] = provider.fetch(tlslib.bare_context(), port, "localhost")
            """)
        self.assertEqual(self.record(out)["trust"], ["no trust store loaded into its context"])

    def test_asyncio_handshakes_are_watched_too(self):
        out = self.handshake("""
            ctx = provider.own_context()
            out["result"] = provider.afetch(ctx, port, "localhost")
            """)
        self.assertEqual(out["result"], "raised SSLCertVerificationError")
        rec = self.record(out)
        self.assertEqual((rec["host"], rec["library"], rec["line"], rec["function"]),
                         ("localhost", "tlslib", marker("afetch"), "afetch"))

    def test_other_hosts_and_verified_handshakes_are_not_recorded(self):
        out = self.handshake("""
            out["undeclared"] = provider.fetch(provider.own_context(), port, "elsewhere.example")
            out["verified"] = provider.fetch(provider.own_context(cafile=run_ca), port, "localhost")
            """)
        self.assertEqual((out["undeclared"], out["verified"], out["records"]),
                         ("raised SSLCertVerificationError", "verified", []))


if __name__ == "__main__":
    unittest.main()
