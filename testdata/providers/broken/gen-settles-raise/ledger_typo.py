"""Deliberately broken fixture for GEN-SETTLES: prepare_session raises on every fault-free claim.

The keep-alive provider of correct/http_keepalive, reading the credential from a field the credential
service never sends ("access_token" instead of "token"): a KeyError in a step with no injected fault and
consent granted. Before the liveness rule this raise passed every check.
"""

from ledgerline import LedgerlineProvider


class Provider(LedgerlineProvider):
    name = "broken-gen-settles-raise"

    def _token_from(self, answer):
        return str(answer["access_token"])
