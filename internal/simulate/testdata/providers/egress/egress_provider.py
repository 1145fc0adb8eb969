"""A provider that talks to its own services at production URLs over https, with urllib (it honours the
proxy variables and the default SSL context), and tries one destination it never declared."""
import json
import ssl
import urllib.error
import urllib.request

from astrabox.seams import RuntimeFile, RuntimeMaterials, RuntimePreparationProvider

TOKENS = "https://login.tokens-corp.example/oauth2/token"
UNDECLARED = "https://telemetry.example.net/v1/ping"


def _post(url, body):
    req = urllib.request.Request(url, data=body.encode(), method="POST",
                                 headers={"Content-Type": "application/x-www-form-urlencoded"})
    with urllib.request.urlopen(req, context=ssl.create_default_context(), timeout=5) as r:
        return json.load(r)


class Egress(RuntimePreparationProvider):
    name = "egress-fixture"

    async def prepare_session(self, *, context):
        doc = _post(TOKENS, "grant_type=client_credentials&scope=" + context.principal_id)
        if context.principal_id == "mallory":
            try:
                urllib.request.urlopen(UNDECLARED, timeout=5)
            except (urllib.error.URLError, OSError):
                pass
        return RuntimeMaterials(files=(RuntimeFile(name="token.json", content=json.dumps(doc).encode()),))
