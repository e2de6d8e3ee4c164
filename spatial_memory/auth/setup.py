"""The HTTP server's authorization from the settings: the token verifier and the SDK's AuthSettings."""

from __future__ import annotations

from typing import Any

from ..config import Settings
from .principal import PrincipalToken


class EitherVerifier:
    """Tokens-file tokens and OAuth access tokens side by side: the first verifier that accepts wins."""

    def __init__(self, verifiers: list[Any]) -> None:
        self._verifiers = verifiers

    async def verify_token(self, token: str) -> PrincipalToken | None:
        for verifier in self._verifiers:
            found = await verifier.verify_token(token)
            if found is not None:
                return found
        return None


def authorization(settings: Settings) -> tuple[Any, Any]:
    """(token verifier, AuthSettings) for the configured tokens file and/or OAuth issuer; (None, None)
    when neither is configured (a localhost server with full access)."""
    if not settings.authorization_configured:
        return None, None
    # What follows only for a server with authorization: a localhost server never loads it.
    from mcp.server.auth.settings import AuthSettings
    from pydantic import AnyHttpUrl

    verifiers: list[Any] = []
    if settings.tokens_file is not None:
        from .tokens import TokensFileVerifier  # only with a tokens file (see above)

        # A tokens-file token holds the required scopes: the file itself is its grant.
        verifiers.append(TokensFileVerifier(settings.tokens_file, scopes=settings.oauth_required_scopes))
    resource = settings.resource_url
    if settings.oauth_issuer is not None:
        from .oauth import JwtVerifier  # only in OAuth mode (see above)

        verifiers.append(
            JwtVerifier(
                issuer=settings.oauth_issuer,
                audience=settings.oauth_audience or resource,
                jwks_url=settings.oauth_jwks_url,
                namespaces_claim=settings.oauth_namespaces_claim,
                read_namespaces_claim=settings.oauth_read_namespaces_claim,
            )
        )
    auth = AuthSettings(
        # Tokens-file only: no authorization server to name, so no protected-resource metadata.
        issuer_url=AnyHttpUrl(settings.oauth_issuer or resource),
        resource_server_url=AnyHttpUrl(resource) if settings.oauth_issuer is not None else None,
        required_scopes=settings.oauth_required_scopes or None,
        validate_token_resource=False,  # JwtVerifier checks the audience itself
    )
    return (verifiers[0] if len(verifiers) == 1 else EitherVerifier(verifiers)), auth
