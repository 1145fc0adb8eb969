"""A provider that talks to its own services at production URLs over https: with urllib (it honours the
proxy variables and the default SSL context), with http.client (which ignores them), with raw asyncio
streams; and tries destinations it never declared, through both."""
import asyncio
import http.client
import json
import ssl
import urllib.error
import urllib.request

from astrabox.seams import RuntimeFile, RuntimeMaterials, RuntimePreparationProvider

TOKENS = "https://login.tokens-corp.example/oauth2/token"
RECORDS_HOST = "records.corp.example"
UNDECLARED = "https://telemetry.example.net/v1/ping"


def _post(url, body):
    req = urllib.request.Request(url, data=body.encode(), method="POST",
                                 headers={"Content-Type": "application/x-www-form-urlencoded"})
    with urllib.request.urlopen(req, context=ssl.create_default_context(), timeout=5) as r:
        return json.load(r)


def _keep_record(session_id):
    conn = http.client.HTTPSConnection(RECORDS_HOST, 8443, timeout=5, context=ssl.create_default_context())
    try:
        conn.request("PUT", "/v2/records/" + session_id, body=b'{"kept": true}', headers={"Content-Type": "application/json"})
        return conn.getresponse().status
    finally:
        conn.close()


async def _audit_line(session_id):
    reader, writer = await asyncio.open_connection("audit.corp.example", 80)
    writer.write(("POST /events/%s HTTP/1.1\r\nHost: audit.corp.example\r\nContent-Length: 0\r\nConnection: close\r\n\r\n" % session_id).encode())
    await writer.drain()
    status = (await reader.readline()).split()[1]
    writer.close()
    return int(status)


class Egress(RuntimePreparationProvider):
    name = "egress-fixture"

    async def prepare_session(self, *, context):
        doc = _post(TOKENS, "grant_type=client_credentials&scope=" + context.principal_id)
        doc["record_status"] = _keep_record(context.session_id)
        doc["audit_status"] = await _audit_line(context.session_id)
        if context.principal_id == "mallory":
            try:
                urllib.request.urlopen(UNDECLARED, timeout=5)
            except (urllib.error.URLError, OSError):
                pass
            try:
                http.client.HTTPSConnection("metrics.example.org", timeout=5).request("GET", "/")
            except OSError:
                pass
        return RuntimeMaterials(files=(RuntimeFile(name="token.json", content=json.dumps(doc).encode()),))
