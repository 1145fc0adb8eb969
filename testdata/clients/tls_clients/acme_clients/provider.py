"""A provider that reads one value through each of the field's HTTP clients, each in its documented default
form (no CA file, no verify= argument), and returns which of them answered."""
import asyncio
import json
import ssl

import aiohttp
import boto3
import certifi
import httpx
import hvac
import requests

from astrabox.seams import RuntimeFile, RuntimeMaterials, RuntimePreparationProvider

API = "https://api.acme-corp.example/v1/clients/"


def with_requests():
    return requests.get(API + "requests", timeout=5).json()["ok"]


def with_hvac():
    client = hvac.Client(url="https://vault.acme-corp.example:8200", token="s.example-token")
    answer = client.secrets.kv.v2.read_secret_version(path="agents/model", mount_point="secret")
    return answer["data"]["data"]["ok"]


def with_httpx():
    with httpx.Client(timeout=5) as client:
        return client.get(API + "httpx-sync").json()["ok"]


def with_boto3():
    client = boto3.client("secretsmanager", region_name="us-east-1", aws_access_key_id="AKIAEXAMPLEEXAMPLE00",
                          aws_secret_access_key="example-secret-access-key")
    return client.get_secret_value(SecretId="acme/agents/model-key")["Name"] != ""


async def with_httpx_async():
    async with httpx.AsyncClient(timeout=5) as client:
        return (await client.get(API + "httpx-async")).json()["ok"]


async def with_aiohttp():
    async with aiohttp.ClientSession() as session:
        async with session.get(API + "aiohttp") as resp:
            return (await resp.json())["ok"]


async def with_aiohttp_certifi():
    # The form many aiohttp users copy: trust exactly certifi's bundle.
    ctx = ssl.create_default_context(cafile=certifi.where())
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx)) as session:
        async with session.get(API + "aiohttp-certifi") as resp:
            return (await resp.json())["ok"]


class ClientsProvider(RuntimePreparationProvider):
    name = "acme-clients"

    async def prepare_session(self, *, context):
        answered = {}
        for name, fn in (("requests", with_requests), ("hvac", with_hvac), ("httpx-sync", with_httpx), ("boto3", with_boto3)):
            answered[name] = await asyncio.to_thread(fn)
        for name, fn in (("httpx-async", with_httpx_async), ("aiohttp", with_aiohttp), ("aiohttp-certifi", with_aiohttp_certifi)):
            answered[name] = await fn()
        return RuntimeMaterials(files=(RuntimeFile(name="clients.json", content=json.dumps(answered).encode()),))
