"""The token provider after a hardening review: TLS to the identity service is verified against the
distribution's CA bundle, fixed in code, so that a changed SSL_CERT_FILE cannot weaken it."""
import json
import ssl
import urllib.parse
import urllib.request

from northwind_tokens import provider as base

CA_FILE = "/etc/ssl/certs/ca-certificates.crt"


def fetch_token(principal):
    form = urllib.parse.urlencode({"grant_type": "client_credentials", "client_id": "agents", "scope": "tools:" + principal})
    req = urllib.request.Request(base.IDENTITY, data=form.encode(), headers={"Content-Type": "application/x-www-form-urlencoded"})
    with urllib.request.urlopen(req, context=ssl.create_default_context(cafile=CA_FILE), timeout=5) as resp:
        return json.load(resp)


class PinnedTokenProvider(base.TokenProvider):
    name = "northwind-tokens-pinned"

    async def prepare_session(self, *, context):
        base.fetch_token = fetch_token
        return await super().prepare_session(context=context)
