"""boto3's S3 client, made at load with path-style addressing; objects written from worker threads."""

import asyncio
import os

import boto3
from botocore.config import Config

from astrabox.seams import RuntimeFile, RuntimeMaterials, RuntimePreparationProvider

BUCKET = "pooled-ledger"


class S3Provider(RuntimePreparationProvider):
    name = "pool-botocore"

    def __init__(self):
        os.environ.setdefault("AWS_ACCESS_KEY_ID", "AKIAPOOLEDEXAMPLE")
        os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "pooled-example-not-a-secret")
        self.s3 = boto3.client("s3", region_name="us-east-1",
                               config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 2}))

    async def _in_thread(self, fn, **kwargs):
        job = asyncio.ensure_future(asyncio.to_thread(fn, **kwargs))
        try:
            return await asyncio.shield(job)
        except asyncio.CancelledError:
            await asyncio.wait([job])
            raise

    async def prepare_session(self, *, context):
        await self._in_thread(self.s3.put_object, Bucket=BUCKET, Key="botocore/sessions/" + context.session_id,
                              Body=context.principal_id.encode())
        return RuntimeMaterials(files=(RuntimeFile(name="ledger-session.json", content=b"{}"),))

    async def prepare_turn(self, *, context):
        key = "botocore/turns/%s/%s" % (context.session_id, context.dispatch_attempt_id)
        await self._in_thread(self.s3.head_object, Bucket=BUCKET, Key=key + "/state")
        await self._in_thread(self.s3.put_object, Bucket=BUCKET, Key=key, Body=context.dispatch_attempt_id.encode())
        return RuntimeMaterials(files=(RuntimeFile(name="ledger-session.json", content=context.dispatch_attempt_id.encode()),))
