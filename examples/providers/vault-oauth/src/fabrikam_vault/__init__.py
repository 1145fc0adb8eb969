"""Fabrikam's runtime preparation provider: OAuth2 client-credentials tokens per principal, per-attempt turn
state and the Agent record in Vault's KV version 2 secrets engine."""

from .provider import VaultOAuthProvider

__all__ = ["VaultOAuthProvider"]
