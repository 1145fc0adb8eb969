"""Unit tests of the reference provider against an in-process deployment double.

Run from the project directory with the kit's seams on PYTHONPATH:

    PYTHONPATH=/path/to/astrabox/internal/harness/python python3 -m unittest discover -s tests -t .
"""

from __future__ import annotations

import asyncio
import json
import os
import unittest
from unittest import mock

from tests import support
from tests.support import seams

from reference_provider import ReferenceProvider
from reference_provider.deployment import DeploymentError

SECRETS = ("canary-model-key-5d1f", "canary-client-secret-9a2e", "canary-workload-7c3b")


class ProviderTest(unittest.IsolatedAsyncioTestCase):
    def setUp(self) -> None:
        self.double = support.Double().__enter__()
        self.addCleanup(self.double.__exit__)
        env = mock.patch.dict(os.environ, {"ASTRABOX_DOUBLE_URL": self.double.url})
        env.start()
        self.addCleanup(env.stop)
        self.provider = ReferenceProvider()

    def assertClean(self, text: str) -> None:
        for secret in SECRETS + (support.INSTRUCTIONS,) + tuple(self.double.issued):
            self.assertNotIn(secret, text)


class PlanTest(ProviderTest):
    def test_plan_is_session_bound_stable_and_secret_free(self) -> None:
        first = self.provider.plan(config=support.config(self.double.url))
        second = ReferenceProvider().plan(config=support.config(self.double.url))
        self.assertTrue(first.session_bound)
        self.assertEqual(first, second)
        text = json.dumps(first.declaration, sort_keys=True)
        self.assertClean(text)
        self.assertNotIn("example.invalid", text)  # source URLs stay out of the declaration
        self.assertEqual(first.declaration["packages"], [{"name": "tools", "ref": "v1"}])

    def test_plan_changes_with_the_recipe(self) -> None:
        v1 = self.provider.plan(config=support.config(self.double.url, 1))
        v2 = self.provider.plan(config=support.config(self.double.url, 2))
        self.assertNotEqual(v1.declaration, v2.declaration)


class SynchronizeTest(ProviderTest):
    async def test_writes_once_keyed_by_agent_and_skips_unchanged(self) -> None:
        with self.assertLogs("reference_provider", "INFO") as logs:
            await self.provider.synchronize(context=support.agent_context(self.double.url, support.MemorySandbox()))
            # Another pool member (another instance, another sandbox) with the same inputs writes nothing.
            await ReferenceProvider().synchronize(
                context=support.agent_context(self.double.url, support.MemorySandbox("sb-2"), "op-2")
            )
        writes = self.double.writes("/v1/records/")
        self.assertEqual(len(writes), 1)
        self.assertEqual(writes[0]["method"], "PUT")
        self.assertEqual(writes[0]["headers"].get("X-Astrabox-Operation"), "op-1")
        self.assertEqual(writes[0]["headers"].get("If-Match"), "0")
        value, version = self.double.records["agents/agent-1"]
        self.assertEqual(version, 1)
        self.assertEqual(value["spec"]["skills"], ["summarize"])
        self.assertEqual(value["spec"]["packages"][0]["entries"], ["pyproject.toml", "tools"])
        self.assertClean("\n".join(logs.output))

    async def test_new_version_updates_the_same_record_and_old_version_does_not_undo_it(self) -> None:
        await self.provider.synchronize(context=support.agent_context(self.double.url, support.MemorySandbox()))
        await self.provider.synchronize(
            context=support.agent_context(self.double.url, support.MemorySandbox(), "op-2", version=2)
        )
        await self.provider.synchronize(
            context=support.agent_context(self.double.url, support.MemorySandbox(), "op-3", version=1)
        )
        self.assertEqual(list(self.double.records), ["agents/agent-1"])
        value, version = self.double.records["agents/agent-1"]
        self.assertEqual((value["spec"]["config_version"], version), (2, 2))
        self.assertEqual(len(self.double.writes("/v1/records/")), 2)

    async def test_fenced_operation_cannot_write(self) -> None:
        self.assertTrue(await self.provider.recover(operation=seams.AgentPreparationOperation("agent-1", "op-1", 1e12)))
        with self.assertRaises(DeploymentError) as caught:
            await self.provider.synchronize(context=support.agent_context(self.double.url, support.MemorySandbox()))
        self.assertIn("fenced", str(caught.exception))
        self.assertNotIn("agents/agent-1", self.double.records)


class RecoverTest(ProviderTest):
    async def test_fences_exactly_its_operation_and_is_idempotent(self) -> None:
        operation = seams.AgentPreparationOperation(agent_id="agent-1", operation_id="op-7", deadline=1e12)
        self.assertTrue(await self.provider.recover(operation=operation))
        self.assertTrue(await ReferenceProvider().recover(operation=operation))
        self.assertEqual(self.double.fenced, {"op-7"})
        for request in self.double.writes("/v1/fences"):
            self.assertNotIn("X-Astrabox-Operation", request["headers"])

    async def test_unreachable_deployment_is_no_proof(self) -> None:
        url = self.double.url
        await asyncio.to_thread(self.double.__exit__)
        with mock.patch.dict(os.environ, {"ASTRABOX_DOUBLE_URL": url}):
            operation = seams.AgentPreparationOperation(agent_id="agent-1", operation_id="op-8", deadline=1e12)
            with self.assertLogs("reference_provider", "WARNING") as logs:
                self.assertFalse(await self.provider.recover(operation=operation))
        self.assertIn("fence not confirmed", logs.output[0])


class SessionTest(ProviderTest):
    async def test_delivers_a_token_file_named_by_its_variable(self) -> None:
        context = support.session_context(self.double.url)
        materials = await self.provider.prepare_session(context=context)
        self.assertEqual([f.name for f in materials.files], ["token.json"])
        self.assertEqual(dict(materials.environment), {"REFERENCE_TOKEN_FILE": context.file_path("token.json")})
        document = json.loads(materials.files[0].content)
        self.assertEqual(document["principal_id"], "alice")
        self.assertEqual(document["token"], self.double.issued[-1])
        self.assertClean(repr(materials))
        self.assertTrue(seams.is_safe_file_name(materials.files[0].name))

    async def test_each_principal_gets_its_own_credential(self) -> None:
        self.double.consents["carol"] = "granted"
        alice = await self.provider.prepare_session(context=support.session_context(self.double.url, "alice"))
        carol = await self.provider.prepare_session(context=support.session_context(self.double.url, "carol", "s-2"))
        self.assertNotEqual(alice.files[0].content, carol.files[0].content)
        self.assertEqual(json.loads(carol.files[0].content)["principal_id"], "carol")

    async def test_pending_consent_requires_a_valid_user_action(self) -> None:
        with self.assertRaises(seams.PreparationUserActionRequired) as caught:
            await self.provider.prepare_session(context=support.session_context(self.double.url, "bob"))
        error = caught.exception
        self.assertEqual(seams.validate_user_action(error.message, error.url, error.status), [])
        self.assertTrue(error.url.startswith("https://"))
        self.assertEqual(self.double.issued, [])


class TurnTest(ProviderTest):
    async def asyncSetUp(self) -> None:
        await self.provider.prepare_session(context=support.session_context(self.double.url))

    async def test_retry_on_another_replica_gets_the_same_material(self) -> None:
        first = await self.provider.prepare_turn(context=support.turn_context())
        issued = len(self.double.issued)
        retry = await ReferenceProvider().prepare_turn(context=support.turn_context())
        self.assertEqual(len(self.double.issued), issued)
        self.assertEqual(first.files[0].content, retry.files[0].content)
        self.assertEqual(dict(first.environment), {})
        self.assertEqual([f.name for f in first.files], ["token.json"])
        self.assertTrue(0 < first.turn_validity_seconds <= 300)

    async def test_refresh_returns_fresh_material_that_retries_then_see(self) -> None:
        first = await self.provider.prepare_turn(context=support.turn_context())
        refreshed = await ReferenceProvider().prepare_turn(context=support.turn_context(refresh=True))
        self.assertNotEqual(first.files[0].content, refreshed.files[0].content)
        self.assertEqual(json.loads(refreshed.files[0].content)["token"], self.double.issued[-1])
        retry = await self.provider.prepare_turn(context=support.turn_context())
        self.assertEqual(retry.files[0].content, refreshed.files[0].content)

    async def test_expired_material_is_not_reused(self) -> None:
        self.double.expires_in = 1
        first = await self.provider.prepare_turn(context=support.turn_context())
        retry = await self.provider.prepare_turn(context=support.turn_context())
        self.assertNotEqual(first.files[0].content, retry.files[0].content)

    async def test_pending_consent_is_enforced_without_a_prior_state_read(self) -> None:
        with self.assertRaises(seams.PreparationUserActionRequired):
            await self.provider.prepare_turn(context=support.turn_context(principal="bob", session_id="s-bob"))
        with self.assertRaises(seams.PreparationUserActionRequired):
            await self.provider.prepare_turn(
                context=support.turn_context(principal="bob", session_id="s-bob", refresh=True)
            )

    async def test_cancellation_waits_for_the_request_in_flight(self) -> None:
        self.double.hold_credentials.clear()
        self.double.credential_arrived.clear()
        task = asyncio.ensure_future(self.provider.prepare_turn(context=support.turn_context(attempt="a-2")))
        await asyncio.to_thread(self.double.credential_arrived.wait, 10)
        task.cancel()
        await asyncio.sleep(0.05)
        self.assertFalse(task.done(), "the cancellation must wait for the held credential request")
        self.double.hold_credentials.set()
        with self.assertRaises(asyncio.CancelledError):
            await task
        credential = [r for r in self.double.requests if r["path"] == "/v1/credentials"][-1]
        self.assertIn("status", credential)  # the request had been answered before the task ended
        self.assertNotIn("turns/s-1/a-2", self.double.records)  # and nothing was written after it


class UserActionTest(ProviderTest):
    async def test_ready_when_granted(self) -> None:
        state = await self.provider.read_user_actions(context=support.ua_context("alice"))
        self.assertEqual(state, seams.SessionUserActionState(ready=True))

    async def test_pending_state_is_well_formed_and_check_is_idempotent(self) -> None:
        state = await self.provider.read_user_actions(context=support.ua_context("bob"))
        self.assertFalse(state.ready)
        action = state.user_action
        self.assertEqual(seams.validate_user_action(action["message"], action.get("url"), action["status"]), [])
        self.assertEqual([a.id for a in state.actions], ["check-consent"])
        once = await self.provider.perform_user_action(context=support.ua_context("bob"), action_id="check-consent")
        twice = await ReferenceProvider().perform_user_action(
            context=support.ua_context("bob"), action_id="check-consent"
        )
        self.assertEqual(once, twice)
        self.assertEqual(once, state)
        self.assertEqual({r["path"] for r in self.double.writes()}, {"/v1/consents/bob/check"})
        self.assertClean(repr(state))

    async def test_check_reports_ready_once_granted(self) -> None:
        self.double.consents["bob"] = "granted"
        state = await self.provider.perform_user_action(context=support.ua_context("bob"), action_id="check-consent")
        self.assertTrue(state.ready)

    async def test_unknown_action_is_refused(self) -> None:
        with self.assertRaises(ValueError):
            await self.provider.perform_user_action(context=support.ua_context("bob"), action_id="start-flow")
        self.assertEqual(self.double.writes(), [])


if __name__ == "__main__":
    unittest.main()
