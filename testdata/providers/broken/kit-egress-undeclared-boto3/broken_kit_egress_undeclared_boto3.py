"""Kestrel, publishing a CloudWatch metric per prepared Session (monitoring.eu-west-1.amazonaws.com is not a
declared service); failures are logged at DEBUG and ignored."""
import boto3
from botocore.config import Config

from kestrel.provider import REGION, KestrelProvider, logger, off_loop


class Provider(KestrelProvider):
    name = "broken-kit-egress-undeclared-boto3"

    def __init__(self):
        super().__init__()
        self.cw = boto3.session.Session(region_name=REGION).client("cloudwatch", config=Config(retries={"max_attempts": 1}))

    def _metric(self):
        try:
            self.cw.put_metric_data(Namespace="Kestrel/Runtime", MetricData=[{"MetricName": "SessionsPrepared", "Value": 1.0}])
        except Exception as exc:  # metrics are best effort
            logger.debug("metric not sent: %s", type(exc).__name__)

    async def prepare_session(self, *, context):
        materials = await super().prepare_session(context=context)
        await off_loop(self._metric)
        return materials
