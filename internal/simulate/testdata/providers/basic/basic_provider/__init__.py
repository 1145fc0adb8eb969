"""A small, correct, session-bound provider used by the simulator's own tests."""
import hashlib

from astrabox.seams import (
    PreparationUserActionRequired,
    RuntimeFile,
    RuntimeMaterials,
    RuntimePreparationPlan,
    RuntimePreparationProvider,
    SessionUserActionCommand,
    SessionUserActionState,
)


class Basic(RuntimePreparationProvider):
    name = "basic"
    bound = True

    def plan(self, *, config):
        return RuntimePreparationPlan(session_bound=self.bound, declaration={"model": config["agent"]["model"]})

    async def prepare_session(self, *, context):
        token = hashlib.sha256(("session:" + context.session_id + context.principal_id).encode()).hexdigest()
        return RuntimeMaterials(
            files=(RuntimeFile("token.json", ('{"token": "%s"}' % token).encode()),),
            environment={"BASIC_TOKEN_FILE": context.file_path("token.json")},
        )

    async def prepare_turn(self, *, context):
        if context.principal_id == "bob":
            raise PreparationUserActionRequired(message="Complete consent first.", url="https://identity.example/consent")
        token = hashlib.sha256(("turn:" + context.dispatch_attempt_id).encode()).hexdigest()
        return RuntimeMaterials(files=(RuntimeFile("token.json", token.encode()),), turn_validity_seconds=300.0)

    async def read_user_actions(self, *, context):
        if context.owner_id == "bob":
            return SessionUserActionState(
                ready=False,
                user_action={"status": "pending", "message": "Complete consent.", "url": "https://identity.example/consent"},
                actions=(SessionUserActionCommand("check", "Check consent"),),
            )
        return SessionUserActionState(ready=True)

    async def perform_user_action(self, *, context, action_id):
        return await self.read_user_actions(context=context)
