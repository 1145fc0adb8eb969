"""Times one request on a kept-alive TLS connection through the kit's egress proxy, with and without the
harness's attribution (its audit hook, the connection tag, the metered socket and TLS object, the send
records and the call header), in the same kind of process.

Usage: python3 scripts/attribution_cost.py SDK_DIR PROXY_URL CA_FILE HOST MODE N
MODE is "bare" (no harness) or "attributed" (the harness's observer installed, the requests made inside a
call, as a provider's callback makes them). Prints the best of five batch medians of one PUT, in microseconds,
for http.client (CONNECT tunnel, ssl.SSLSocket) and, when httpx is importable, httpx's async client (TLS over
memory BIOs, anyio): "http.client 812.3" and "httpx-async 1450.2", one per line.
internal/bench's BenchmarkAttributionCost runs it; docs/performance.md records the figures.
"""

import asyncio
import http.client
import os
import ssl
import statistics
import sys
import time
from urllib.parse import urlsplit


def batches(one, n):
    medians = []
    for _ in range(5):
        times = []
        for _ in range(n):
            start = time.perf_counter_ns()
            one()
            times.append(time.perf_counter_ns() - start)
        medians.append(statistics.median(times))
    return min(medians) / 1000


def main() -> None:
    sdk, proxy, ca_file, host, mode, n = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6])
    observer = None
    if mode == "attributed":
        sys.path.insert(0, sdk)
        import astrabox
        from astrabox._harness.observe import Observer

        observer = Observer(os.path.dirname(astrabox.__file__))
        observer.install()
        observer.begin_call(1)
    px = urlsplit(proxy)
    ctx = ssl.create_default_context(cafile=ca_file)
    name, _, port = host.partition(":")
    conn = http.client.HTTPSConnection(px.hostname, px.port, context=ctx)
    conn.set_tunnel(name, int(port or 443))
    body = b'{"data":{"value":"v"}}'

    def put():
        conn.request("PUT", "/v1/ledger/entry", body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        if observer is not None:
            observer.take_current()  # what the reply would carry: keep the records from piling up

    put()
    out = ["http.client %.1f" % batches(put, n)]
    try:
        import httpx
    except ImportError:
        httpx = None
    if httpx is not None:
        loop = asyncio.new_event_loop()
        client = httpx.AsyncClient(proxies=proxy, verify=ctx, base_url="https://" + host)

        async def aput():
            r = await client.put("/v1/ledger/entry", content=body, headers={"Content-Type": "application/json"})
            r.read()

        def one():
            loop.run_until_complete(aput())
            if observer is not None:
                observer.take_current()

        one()
        out.append("httpx-async %.1f" % batches(one, n))
        loop.run_until_complete(client.aclose())
    print("\n".join(out))


if __name__ == "__main__":
    main()
