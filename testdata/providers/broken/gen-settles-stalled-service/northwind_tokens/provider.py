"""Northwind's token provider, against an identity service that hangs: every Session gets an access token for its
principal from the company's identity service (OAuth2 client credentials, over https at its production address),
with the 30 s client timeout the team uses in production, delivered as a file."""
import json
import logging
import ssl
import urllib.parse
import urllib.request

from astrabox.seams import RuntimeFile, RuntimeMaterials, RuntimePreparationProvider

IDENTITY = "https://id.northwind-corp.example/oauth2/v2.0/token"
log = logging.getLogger("northwind.tokens")


def fetch_token(principal):
    form = urllib.parse.urlencode({"grant_type": "client_credentials", "client_id": "agents", "scope": "tools:" + principal})
    req = urllib.request.Request(IDENTITY, data=form.encode(), headers={"Content-Type": "application/x-www-form-urlencoded"})
    with urllib.request.urlopen(req, context=ssl.create_default_context(), timeout=30) as resp:
        return json.load(resp)


class TokenProvider(RuntimePreparationProvider):
    name = "northwind-tokens"

    async def prepare_session(self, *, context):
        grant = fetch_token(context.principal_id)
        log.info("issued a token for session %s (expires in %ss)", context.session_id, grant.get("expires_in"))
        body = json.dumps({"access_token": grant["access_token"], "principal": context.principal_id}).encode()
        return RuntimeMaterials(
            files=(RuntimeFile(name="northwind-token.json", content=body),),
            environment={"NORTHWIND_TOKEN_FILE": context.file_path("northwind-token.json")},
        )
