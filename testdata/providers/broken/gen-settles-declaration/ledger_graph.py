"""Deliberately broken fixture for GEN-SETTLES: plan returns a declaration the platform cannot store.

The keep-alive provider of correct/http_keepalive, declaring its files as a small graph whose nodes point
back at their parent: a cycle, which no JSON document (and so no runtime generation) can hold. The harness
reports the declaration error; the kit used to drop it and pass.
"""

from astrabox.seams import RuntimePreparationPlan
from ledgerline import AUDIENCE, TOKEN_FILE, LedgerlineProvider


class Provider(LedgerlineProvider):
    name = "broken-gen-settles-declaration"

    def plan(self, *, config):
        root = {"audience": AUDIENCE, "files": []}
        root["files"].append({"name": TOKEN_FILE, "parent": root})
        return RuntimePreparationPlan(declaration=root)
