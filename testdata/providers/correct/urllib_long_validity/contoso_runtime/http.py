"""Blocking urllib calls to Contoso's services, run in a worker thread that a cancellation waits for."""

import asyncio
import json
import os
import time
import urllib.error
import urllib.request

_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class ServiceError(Exception):
    """A Contoso service failed or could not be reached; the text names the request only."""


def _base():
    return (os.environ.get("CONTOSO_SERVICES") or os.environ["ASTRABOX_DOUBLE_URL"]).rstrip("/")


def _blocking(method, path, payload, headers, timeout):
    req = urllib.request.Request(_base() + path, data=payload, method=method, headers=headers)
    try:
        with _NO_PROXY.open(req, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        with err:
            return err.code, err.read()
    except OSError as err:
        raise ServiceError("%s %s: %s" % (method, path, type(err).__name__)) from None


async def call(method, path, body=None, *, deadline=None, if_match=None, operation=None):
    """One request; returns (status, json body or None). Cancellation waits until the request is over."""
    headers = {"Accept": "application/json"}
    payload = None
    if body is not None:
        payload = json.dumps(body).encode("utf-8")
        headers["Content-Type"] = "application/json"
    if if_match is not None:
        headers["If-Match"] = str(if_match)
    if operation:
        headers["X-Astrabox-Operation"] = operation
    timeout = 5.0 if deadline is None else min(5.0, max(0.5, deadline - time.time()))
    work = asyncio.ensure_future(asyncio.to_thread(_blocking, method, path, payload, headers, timeout))
    cancelled = None
    while not work.done():
        try:
            await asyncio.wait({work})
        except asyncio.CancelledError as exc:
            cancelled = exc
    if cancelled is not None:
        raise cancelled
    status, raw = work.result()
    try:
        return status, (json.loads(raw) if raw else None)
    except ValueError:
        return status, None
