"""Deliberately broken twin of correct/outbox-entry-waits for GEN-CANCEL-CLEAN.

On cancellation (only) it "cancels" the outbox entry's future and re-raises at once. A running
``concurrent.futures`` job cannot be cancelled: the pool thread goes on and its PUT lands whenever it lands.
In the default suite it lands *before* the platform has the turn's reply (the entry's PUT reaches the
double first, and the reference's own in-flight request, which it waits for on cancellation, is slowed as
long), so a rule that only counts writes landing after the reply never sees it; the kit fails it because the
job that issued it is one the cancelled callback never waited for.
"""

from __future__ import annotations

import asyncio

from tailwind_outbox import OUTBOX, check_filed, file_entry
from tailwind_outbox import Provider as Tailwind
from reference_provider.provider import ReferenceProvider


class Provider(Tailwind):
    name = "broken-gen-cancel-clean-outbox"

    async def prepare_turn(self, *, context):
        entry = asyncio.get_running_loop().run_in_executor(
            OUTBOX, file_entry, context.session_id, context.dispatch_attempt_id)
        try:
            materials = await ReferenceProvider.prepare_turn(self, context=context)  # the twin's, minus its wait
        except asyncio.CancelledError:
            entry.cancel()  # the future is cancelled; the pool thread, already sending, is not
            raise
        except BaseException:
            await self._entry_done(entry)  # a refusal still waits for the entry, as the twin does
            raise
        check_filed(await entry)
        return materials
