"""Acme's model-key provider: every Session gets the team's model API key from AWS Secrets Manager, read
with boto3 exactly as in production (default endpoint, default TLS verification)."""
import asyncio
import logging

import boto3
from botocore.config import Config

from astrabox.seams import RuntimeFile, RuntimeMaterials, RuntimePreparationProvider

log = logging.getLogger("acme.aws")


class SecretsProvider(RuntimePreparationProvider):
    name = "acme-aws-secrets"

    def __init__(self):
        self._client = boto3.client(
            "secretsmanager",
            region_name="us-east-1",
            aws_access_key_id="AKIAEXAMPLEEXAMPLE00",
            aws_secret_access_key="example-secret-access-key",
            config=Config(retries={"max_attempts": 2, "mode": "standard"}, connect_timeout=3, read_timeout=5),
        )

    def _model_key(self):
        answer = self._client.get_secret_value(SecretId="acme/agents/model-key")
        return answer["SecretString"]

    async def prepare_session(self, *, context):
        key = await asyncio.to_thread(self._model_key)
        log.info("model key ready for session %s", context.session_id)
        return RuntimeMaterials(
            files=(RuntimeFile(name="model-key", content=key.encode()),),
            environment={"ACME_MODEL_KEY_FILE": context.file_path("model-key")},
        )
