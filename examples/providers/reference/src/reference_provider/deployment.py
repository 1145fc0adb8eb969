"""A small client for the deployment's own HTTP systems (records, fences, credentials, consents).

Everything here is standard library. Requests are blocking ``urllib`` calls run in a worker thread; the
async wrapper :func:`settled` makes sure that a cancelled caller never leaves a request in flight: it waits
for the thread to finish (bounded by the request timeout) and only then re-raises the cancellation.

Error texts name the method, the path and the HTTP status, never a request or response body, because
bodies carry credentials.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import urllib.error
import urllib.request
from typing import Any, Callable, Mapping, Optional, TypeVar
from urllib.parse import quote, urlsplit

__all__ = [
    "Answer",
    "DeploymentClient",
    "DeploymentError",
    "deployment_url",
    "record_path",
    "settled",
]

T = TypeVar("T")

#: Environment variables that may name the deployment's base URL, first match wins. A real deployment
#: sets ``REFERENCE_DEPLOYMENT_URL``; the astrabox kit sets ``ASTRABOX_DOUBLE_URL`` for its double.
URL_VARIABLES = ("REFERENCE_DEPLOYMENT_URL", "ASTRABOX_DOUBLE_URL")

#: The longest any single request may wait, whatever the deadline says.
MAX_TIMEOUT_S = 5.0
#: The shortest timeout a request gets, so that a deadline already passed still fails cleanly.
MIN_TIMEOUT_S = 0.5


class DeploymentError(Exception):
    """The deployment answered something unexpected or could not be reached. The text holds no secrets."""


class Answer:
    """One HTTP answer: the status code and the decoded JSON body (None when absent or not JSON)."""

    __slots__ = ("status", "body")

    def __init__(self, status: int, body: Any) -> None:
        self.status = status
        self.body = body

    def __repr__(self) -> str:  # never show the body: it may hold a credential
        return "Answer(status=%d)" % self.status


def _is_http_url(value: object) -> bool:
    if not isinstance(value, str) or not value:
        return False
    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def deployment_url(config: Optional[Mapping[str, Any]] = None) -> str:
    """Return the deployment base URL: ``config.deployment.base_url`` when set, else the environment."""
    if config is not None:
        deployment = config.get("deployment")
        if isinstance(deployment, Mapping) and _is_http_url(deployment.get("base_url")):
            return str(deployment.get("base_url")).rstrip("/")
    for variable in URL_VARIABLES:
        value = os.environ.get(variable, "")
        if _is_http_url(value):
            return value.rstrip("/")
    raise DeploymentError(
        "no deployment URL: set deployment.base_url in the Agent configuration or %s in the environment"
        % " or ".join(URL_VARIABLES)
    )


def record_path(*segments: str) -> str:
    """Return ``/v1/records/<key>`` for a key made of ``segments``, each percent-encoded."""
    return "/v1/records/" + "/".join(quote(str(s), safe="") for s in segments)


async def settled(fn: Callable[..., T], *args: Any) -> T:
    """Run the blocking ``fn(*args)`` in a worker thread and return its result.

    If the caller is cancelled meanwhile, keep waiting for the thread (a thread cannot be interrupted) and
    re-raise the cancellation only once the request has finished: no write stays in flight behind a
    cancelled callback. The wait is bounded by the request's own timeout.
    """
    task = asyncio.ensure_future(asyncio.to_thread(fn, *args))
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.cancelled():  # pragma: no cover - nobody cancels the inner task
                raise
            cancelled = True
        except BaseException:
            break  # the task finished with an error; task.result() re-raises it below
    if cancelled:
        if not task.cancelled():
            task.exception()  # mark the outcome retrieved; the cancellation wins
        raise asyncio.CancelledError()
    return task.result()


class DeploymentClient:
    """Talks to the deployment. Writes carry ``X-Astrabox-Operation`` when an operation is given."""

    def __init__(
        self,
        base_url: str,
        *,
        deadline: Optional[float] = None,
        operation_id: Optional[str] = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.deadline = deadline
        self.operation_id = operation_id

    def _timeout(self) -> float:
        if self.deadline is None:
            return MAX_TIMEOUT_S
        return min(MAX_TIMEOUT_S, max(MIN_TIMEOUT_S, self.deadline - time.time()))

    def request_blocking(
        self, method: str, path: str, body: Any = None, if_match: Optional[int] = None
    ) -> Answer:
        """Send one request and wait for the answer. Raises :class:`DeploymentError` on transport errors."""
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body, sort_keys=True).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if if_match is not None:
            headers["If-Match"] = str(int(if_match))
        if self.operation_id and method in ("PUT", "POST", "DELETE"):
            headers["X-Astrabox-Operation"] = self.operation_id
        request = urllib.request.Request(self.base_url + path, data=data, headers=headers, method=method)
        try:
            with _OPENER.open(request, timeout=self._timeout()) as response:
                return Answer(response.status, _decode(response.read()))
        except urllib.error.HTTPError as exc:
            try:
                payload = exc.read()
            except Exception:
                payload = b""
            finally:
                exc.close()
            return Answer(exc.code, _decode(payload))
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise DeploymentError("%s %s failed: %s" % (method, path, type(exc).__name__)) from None

    async def request(
        self, method: str, path: str, body: Any = None, if_match: Optional[int] = None
    ) -> Answer:
        """Send one request from async code; see :func:`settled` for cancellation."""
        return await settled(self.request_blocking, method, path, body, if_match)


#: No proxy: the deployment's systems are reached directly (the kit's double listens on loopback).
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _decode(payload: bytes) -> Any:
    if not payload:
        return None
    try:
        return json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
