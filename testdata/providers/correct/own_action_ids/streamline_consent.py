"""The asyncio-streams provider plus user actions of its own: it offers the operation id
"check-current-consent" (not the "check-consent" the kit's default suite performs).

read_user_actions reports a pending consent with that operation; perform_user_action re-checks consent at
the identity service (an idempotent POST) and returns the new state.
"""

from __future__ import annotations

from astrabox.seams import SessionUserActionCommand, SessionUserActionState
from streamline import StreamlineProvider, consent_path, request_json

CHECK = SessionUserActionCommand(id="check-current-consent", label="I have granted access; check again")


def _state(answer) -> SessionUserActionState:
    if answer.get("status") != "pending":
        return SessionUserActionState(ready=True)
    url = answer.get("url")
    return SessionUserActionState(
        ready=False,
        user_action={
            "message": "Grant the assistant access to your account to continue.",
            "status": "pending",
            "url": url if isinstance(url, str) and url.startswith("https://") else None,
        },
        actions=(CHECK,),
    )


class ConsentAwareProvider(StreamlineProvider):
    name = "streamline-consent"

    async def read_user_actions(self, *, context):
        status, answer = await request_json("GET", consent_path(context.owner_id))
        if status != 200:
            raise RuntimeError("the identity service answered %d" % status)
        return _state(answer)

    async def perform_user_action(self, *, context, action_id):
        if action_id != CHECK.id:
            raise ValueError("unknown operation %r" % action_id)
        status, answer = await request_json("POST", consent_path(context.owner_id) + "/check")
        if status != 200:
            raise RuntimeError("the identity service answered %d" % status)
        return _state(answer)
