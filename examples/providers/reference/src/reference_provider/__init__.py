"""reference_provider: the astrabox reference runtime preparation provider.

The entry point ``astrabox.providers.runtime_preparation:reference`` targets
:class:`reference_provider.provider.ReferenceProvider`.
"""

from .provider import ReferenceProvider

__all__ = ["ReferenceProvider"]
