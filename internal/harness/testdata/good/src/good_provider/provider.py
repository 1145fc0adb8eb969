"""Uses output, logging, the sandbox handle and file paths, and returns materials."""

import asyncio
import logging
import resource
import time
import sys

from astrabox.seams import (
    RuntimeFile,
    RuntimeMaterials,
    RuntimePreparationPlan,
    RuntimePreparationProvider,
    SessionUserActionState,
)

log = logging.getLogger("good_provider")


class Provider(RuntimePreparationProvider):
    name = "good"

    def plan(self, *, config):
        print("plan stdout")
        if config.get("sleep"):
            time.sleep(config["sleep"])  # synchronous code cannot be cancelled
        limits = {
            "nofile": resource.getrlimit(resource.RLIMIT_NOFILE)[0],
            "as": resource.getrlimit(resource.RLIMIT_AS)[0],
            "core": resource.getrlimit(resource.RLIMIT_CORE)[0],
        }
        return RuntimePreparationPlan(session_bound=True, declaration={"region": config.get("region", "none"), "limits": limits})

    async def prepare_session(self, *, context):
        print("session stdout for " + context.session_id)
        print("session stderr", file=sys.stderr)
        log.info("preparing session %s", context.session_id)
        return RuntimeMaterials(
            files=(RuntimeFile(name="token.json", content=b'{"t": 1}'),),
            environment={"GOOD_TOKEN_PATH": context.file_path("token.json")},
        )

    async def prepare_turn(self, *, context):
        handle = context.sandbox_handle
        await handle.write_file(handle.home + "/marker", b"turn " + context.dispatch_attempt_id.encode())
        back = await handle.read_file(handle.home + "/marker")
        try:
            await handle.read_file(handle.home + "/missing")
        except FileNotFoundError as exc:
            log.warning("missing as expected: %s", exc)
        print("turn read back " + back.decode())
        return RuntimeMaterials(environment={"BACK": back.decode()}, turn_validity_seconds=300.0)

    async def recover(self, *, operation):
        raise RuntimeError("cannot recover " + operation.operation_id)

    async def read_user_actions(self, *, context):
        if context.session_id == "slow":
            await asyncio.sleep(3600)
        if context.session_id == "holds-loop":
            time.sleep(0.3)  # holds the event loop through its deadline: no cancel can reach it
        if context.session_id == "yields-late":
            await asyncio.sleep(0.2)  # past its deadline, but the loop is free when the deadline passes
        return SessionUserActionState(ready=True)

    async def perform_user_action(self, *, context, action_id):
        async def later():
            await asyncio.sleep(0.05)
            log.info("late log for %s", action_id)

        self._late = asyncio.get_running_loop().create_task(later())
        return SessionUserActionState(ready=True)
