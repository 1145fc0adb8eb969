"""Deliberately broken fixture for GEN-SETTLES: the material file's content is a str, not bytes.

The keep-alive provider of correct/http_keepalive, forgetting to encode the token: RuntimeFile(content=str).
The harness reports the type problem; the platform cannot deliver such a file (the kit used to deliver it
empty and pass).
"""

from ledgerline import LedgerlineProvider


class Provider(LedgerlineProvider):
    name = "broken-gen-settles-malformed"

    def _content(self, token):
        return token
