"""Blocking JSON-over-HTTPS requests, run from async code without ever leaving one in flight.

Standard library only: ``urllib.request`` with the default SSL context (certificates are verified), the
environment's proxy settings honoured as any urllib program does. Error texts name the method, the URL's
path and the status, never a body: bodies carry tokens.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from typing import Any, Callable, Mapping, Optional, TypeVar
from urllib.parse import urlsplit

__all__ = ["Answer", "ServiceError", "request", "settled", "timeout_for"]

T = TypeVar("T")

#: The longest any single request may wait, whatever the deadline says.
MAX_TIMEOUT_S = 5.0
#: The shortest timeout a request gets, so that a deadline already passed still fails cleanly.
MIN_TIMEOUT_S = 0.5


class ServiceError(Exception):
    """A service answered something unexpected or could not be reached. The text holds no secrets."""


class Answer:
    """One HTTP answer: the status code and the decoded JSON body (None when absent or not JSON)."""

    __slots__ = ("status", "body")

    def __init__(self, status: int, body: Any) -> None:
        self.status = status
        self.body = body

    def __repr__(self) -> str:  # never show the body: it may hold a token
        return "Answer(status=%d)" % self.status


def timeout_for(deadline: Optional[float]) -> float:
    """The timeout of one request made before ``deadline`` (epoch seconds, or None)."""
    if deadline is None:
        return MAX_TIMEOUT_S
    return min(MAX_TIMEOUT_S, max(MIN_TIMEOUT_S, deadline - time.time()))


def _decode(payload: bytes) -> Any:
    if not payload:
        return None
    try:
        return json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None


def request(
    method: str,
    url: str,
    *,
    body: Optional[bytes] = None,
    headers: Optional[Mapping[str, str]] = None,
    timeout: float = MAX_TIMEOUT_S,
) -> Answer:
    """Send one request and wait for its answer. Raises :class:`ServiceError` on transport errors."""
    all_headers = {"Accept": "application/json"}
    all_headers.update(headers or {})
    req = urllib.request.Request(url, data=body, headers=all_headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
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
        raise ServiceError("%s %s failed: %s" % (method, urlsplit(url).path, type(exc).__name__)) from None


async def settled(fn: Callable[..., T], *args: Any) -> T:
    """Run the blocking ``fn(*args)`` in a worker thread and return its result.

    A thread cannot be interrupted, so when the caller is cancelled meanwhile this keeps waiting for the
    request to finish (bounded by its timeout) and only then re-raises the cancellation: no write of a
    cancelled callback lands after the callback has returned.
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
            break  # the request failed; task.result() re-raises its error below
    if cancelled:
        if not task.cancelled():
            task.exception()  # mark the outcome retrieved; the cancellation wins
        raise asyncio.CancelledError()
    return task.result()
