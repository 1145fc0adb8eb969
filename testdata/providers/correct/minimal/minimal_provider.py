"""The smallest correct provider: a name and every default."""

from astrabox.seams import RuntimePreparationProvider


class Provider(RuntimePreparationProvider):
    name = "minimal"
