"""Test fixture: a careless provider whose log record and warning carry a secret as their source file.

A log record's pathname and a warning's filename are the provider's to set. This one logs the workload
identity token in a record that names the token as its file, and warns about the configuration with the
model API key (a canary) as the warning's filename, so that a report shows those secrets as locations unless
the kit masks locations too; and it prints the client secret in two writes. Everything else is the reference
provider's.
"""

from __future__ import annotations

import logging
import sys
import warnings

from reference_provider.provider import ReferenceProvider

logger = logging.getLogger("secret_locations")


class Provider(ReferenceProvider):
    name = "secret-locations"

    async def prepare_session(self, *, context):
        token = context.workload_identity.token
        key = context.config["secrets"]["model_api_key"]
        record = logger.makeRecord(logger.name, logging.INFO, "/srv/" + token + "/client.py", 7,
                                   "exchanging %s", (token,), None)
        logger.handle(record)
        warnings.warn_explicit("deprecated setting " + key, UserWarning, filename=key + ".py", lineno=3)
        # The client secret, printed in two writes (as a progress line might be): found all the same.
        secret = context.config["secrets"]["client_secret"]
        sys.stdout.write("using " + secret[:15])
        sys.stdout.flush()
        sys.stdout.write(secret[15:] + "\n")
        return await super().prepare_session(context=context)
