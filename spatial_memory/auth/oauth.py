"""OAuth 2.1 resource-server mode: JWT access tokens checked against the issuer's JWKS.

Per the MCP authorization specification this server is a resource server only: an authorization
server of the team's (Keycloak, Auth0, Entra, ...) issues the tokens; this server checks the
signature (RS256/ES256, keys from the issuer's JWKS), exp/nbf, iss and aud, and takes `sub` as the
principal. Its namespaces come from two claims (settings `oauth_namespaces_claim`, read-write, and
`oauth_read_namespaces_claim`, read-only), each a list or a space-separated string; a token
without them sees no namespace. The SDK serves the protected-resource metadata (RFC 9728) and
answers 401 with WWW-Authenticate naming it.

The JWKS is fetched in a worker thread with a timeout, cached, and fetched again when a token
names a key id it does not hold (key rotation). Needs PyJWT with `cryptography` (the `team` extra).
"""

from __future__ import annotations

import json
import logging
import threading
import urllib.parse
import urllib.request
from typing import Any

import anyio

from ..errors import ConfigurationError
from .principal import PrincipalToken

log = logging.getLogger(__name__)

ALGORITHMS = ("RS256", "ES256")
FETCH_TIMEOUT_SECONDS = 5.0
JWKS_LIFESPAN_SECONDS = 300
CLOCK_LEEWAY_SECONDS = 30


def _names(value: Any) -> list[str]:
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be: RFC 8414 (well-known before the issuer's path), then
    OpenID Connect discovery (after it)."""
    parts = urllib.parse.urlsplit(issuer.rstrip("/"))
    root = f"{parts.scheme}://{parts.netloc}"
    return [
        f"{root}/.well-known/oauth-authorization-server{parts.path}",
        f"{root}/.well-known/openid-configuration{parts.path}",
        f"{root}{parts.path}/.well-known/openid-configuration",
    ]


def discover_jwks_url(issuer: str) -> str:
    """jwks_uri from the issuer's metadata."""
    for url in metadata_urls(issuer):
        try:
            with urllib.request.urlopen(url, timeout=FETCH_TIMEOUT_SECONDS) as response:  # noqa: S310 - https/http only
                found = json.loads(response.read(1 << 20)).get("jwks_uri")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(found, str) and found:
            return found
    raise ConfigurationError(f"no jwks_uri in the metadata of issuer {issuer}: set SPATIAL_MEMORY_OAUTH_JWKS_URL")


class JwtVerifier:
    """The SDK's TokenVerifier for JWT access tokens of one issuer and audience."""

    def __init__(
        self,
        *,
        issuer: str,
        audience: str,
        jwks_url: str | None,
        namespaces_claim: str,
        read_namespaces_claim: str,
    ) -> None:
        try:
            import cryptography  # noqa: F401 - RS256/ES256 need it
            import jwt  # noqa: F401
        except ImportError:
            raise ConfigurationError(
                "OAuth needs PyJWT with cryptography: pip install 'spatial-memory-mcp[team]'"
            ) from None
        self._issuer = issuer
        self._audience = audience
        self._jwks_url = jwks_url
        self._claims = (namespaces_claim, read_namespaces_claim)
        self._client: Any = None
        self._lock = threading.Lock()

    def _keys(self) -> Any:
        with self._lock:
            if self._client is None:
                # PyJWT and cryptography: the optional `team` extra, checked in __init__ (the module loads
                # without them).
                from jwt import PyJWKClient

                url = self._jwks_url or discover_jwks_url(self._issuer)
                self._client = PyJWKClient(url, lifespan=JWKS_LIFESPAN_SECONDS, timeout=FETCH_TIMEOUT_SECONDS)
            return self._client

    def decode(self, token: str) -> dict[str, Any]:
        """The token's claims once signature, exp/nbf, iss and aud check out (blocking: JWKS fetches)."""
        import jwt  # the optional `team` extra (see _keys)

        key = self._keys().get_signing_key_from_jwt(token).key  # an unknown kid fetches the JWKS again
        return jwt.decode(
            token,
            key,
            algorithms=list(ALGORITHMS),
            audience=self._audience,
            issuer=self._issuer,
            leeway=CLOCK_LEEWAY_SECONDS,
            options={"require": ["exp", "iss", "aud", "sub"]},
        )

    async def verify_token(self, token: str) -> PrincipalToken | None:
        import jwt  # the optional `team` extra (see _keys)

        try:
            claims = await anyio.to_thread.run_sync(self.decode, token)
        except (jwt.PyJWTError, ConfigurationError, ValueError) as exc:
            log.info("access token refused: %s", type(exc).__name__)  # never the token itself
            return None
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            return None
        writable, readable = (_names(claims.get(name)) for name in self._claims)
        return PrincipalToken(
            token=token,
            client_id=str(claims.get("client_id") or claims.get("azp") or subject),
            subject=subject,
            scopes=_names(claims.get("scope")),
            expires_at=int(claims["exp"]),
            resource=self._audience,
            claims={"iss": self._issuer},
            namespaces=writable,
            read_namespaces=readable,
        )
