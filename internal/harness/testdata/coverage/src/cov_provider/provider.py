"""A provider whose reached lines are known exactly (coverage tests): keep the line numbers as they are."""

from astrabox.seams import RuntimePreparationPlan, RuntimePreparationProvider


def helper(flag):
    if flag:
        return "yes"
    return "no"


def never_called():
    return 1


class Provider(RuntimePreparationProvider):
    name = "cov"

    def plan(self, *, config):
        answer = helper(config.get("flag"))
        for key in sorted(config):
            if key == "skip":
                continue
        return RuntimePreparationPlan(session_bound=False, declaration={"answer": answer})

    async def prepare_turn(self, *, context):
        if context.refresh:
            return None
        return None
