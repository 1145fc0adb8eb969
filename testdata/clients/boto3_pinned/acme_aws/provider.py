"""Acme's model-key provider after a hardening review: boto3 verifies AWS against botocore's own vendored
CA bundle, so that the image's trust store cannot weaken it."""
import asyncio
import logging
import os

import boto3
import botocore
from botocore.config import Config

from astrabox.seams import RuntimeFile, RuntimeMaterials, RuntimePreparationProvider

log = logging.getLogger("acme.aws")
AWS_ROOTS = os.path.join(os.path.dirname(botocore.__file__), "cacert.pem")
# Fail fast: a session waits on its model key, and a certificate AWS's roots reject will not be accepted on a
# fourth try; one retry covers a dropped connection.
AWS_CONFIG = Config(retries={"mode": "standard", "total_max_attempts": 2}, connect_timeout=5, read_timeout=10)


class SecretsProvider(RuntimePreparationProvider):
    name = "acme-aws-secrets"

    def __init__(self):
        self._client = boto3.client(
            "secretsmanager",
            region_name="us-east-1",
            aws_access_key_id="AKIAEXAMPLEEXAMPLE00",
            aws_secret_access_key="example-secret-access-key",
            verify=AWS_ROOTS,
            config=AWS_CONFIG,
        )

    def _model_key(self):
        return self._client.get_secret_value(SecretId="acme/agents/model-key")["SecretString"]

    async def prepare_session(self, *, context):
        key = await asyncio.to_thread(self._model_key)
        log.info("model key ready for session %s", context.session_id)
        return RuntimeMaterials(
            files=(RuntimeFile(name="model-key", content=key.encode()),),
            environment={"ACME_MODEL_KEY_FILE": context.file_path("model-key")},
        )
