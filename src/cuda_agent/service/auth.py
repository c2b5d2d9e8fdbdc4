"""Bearer tokens: loaded from a file (one per line, `#` comments) or the environment, checked in
constant time. Tokens are never logged; a client is known to the server only by a short hash of its
token (which scopes its idempotency keys)."""

from __future__ import annotations

import hashlib
import hmac
import os
from pathlib import Path

TOKENS_ENV = "CUDA_AGENT_SERVE_TOKENS"  # server: tokens separated by commas or whitespace
CLIENT_TOKEN_ENV = "CUDA_AGENT_JUDGE_TOKEN"  # client: the token RemoteJudge sends
MIN_TOKEN_CHARS = 16


class AuthConfigError(ValueError):
    """No usable tokens: the server refuses to start rather than serve without authentication."""


class Tokens:
    """The accepted tokens, kept only as SHA-256 digests."""

    def __init__(self, tokens: list[str]) -> None:
        weak = [t for t in tokens if len(t) < MIN_TOKEN_CHARS]
        if weak:
            raise AuthConfigError(
                f"{len(weak)} token(s) shorter than {MIN_TOKEN_CHARS} characters; "
                "make them with: python -c 'import secrets; print(secrets.token_urlsafe(32))'"
            )
        if not tokens:
            raise AuthConfigError(
                f"no tokens: pass --token-file FILE (one token per line) or set {TOKENS_ENV}; "
                "the server does not run without authentication"
            )
        self._digests = [hashlib.sha256(t.encode()).digest() for t in dict.fromkeys(tokens)]

    @classmethod
    def load(cls, token_file: Path | None = None, environ: dict[str, str] | None = None) -> Tokens:
        environ = dict(os.environ) if environ is None else environ
        tokens: list[str] = []
        if token_file is not None:
            try:
                text = Path(token_file).read_text(encoding="utf-8")
            except OSError as exc:
                raise AuthConfigError(f"cannot read the token file {token_file}: {exc.strerror}") from exc
            tokens += [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
        tokens += environ.get(TOKENS_ENV, "").replace(",", " ").split()
        return cls(tokens)

    def client_of(self, authorization: str | None) -> str | None:
        """The client id (a hash of its token) when the `Authorization: Bearer ...` header holds an
        accepted token, else None. Every accepted digest is compared, whatever matched first."""
        if not authorization:
            return None
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        given = hashlib.sha256(token.strip().encode()).digest()
        matched = False
        for digest in self._digests:
            matched |= hmac.compare_digest(given, digest)
        return given.hex()[:16] if matched else None
