"""Typed errors: every failure is a TsfmError carrying the API's ``code``."""

from __future__ import annotations

from typing import Any, Dict, List, Optional


class TsfmError(Exception):
    """A failed call.

    ``status`` is the HTTP status (0 when no answer came), ``code`` the API's machine-readable code
    (``billing_required``, ``model_not_found``, ``rate_limit_exceeded``, ``validation_error`` for a
    422 whose ``detail`` names the fields) or the client's own (``timeout``, ``network_error``,
    ``invalid_input``, ``invalid_response``); ``request_id`` is the server's x-request-id.
    """

    def __init__(
        self,
        message: str,
        status: int = 0,
        code: str = "invalid_response",
        request_id: Optional[str] = None,
        detail: Optional[List[Dict[str, Any]]] = None,
        retry_after: Optional[float] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.request_id = request_id
        self.detail = detail or []
        self.retry_after = retry_after

    def __str__(self) -> str:
        where = f"HTTP {self.status}, " if self.status else ""
        rid = f", request id {self.request_id}" if self.request_id else ""
        return f"{self.message} ({where}{self.code}{rid})"


class AuthenticationError(TsfmError):
    """401, or the codes ``missing_credential`` (answered with 400) and ``invalid_credential``:
    no credential, or a bad or revoked one."""


class BillingRequiredError(TsfmError):
    """402: credits exhausted and billing inactive."""


class PermissionDeniedError(TsfmError):
    """403: the credential may not do this."""


class NotFoundError(TsfmError):
    """404: unknown model or resource."""


class InvalidRequestError(TsfmError):
    """400/413/415/422, or input the client cannot send."""


class RateLimitError(TsfmError):
    """429 after the retries ran out."""


class ServiceError(TsfmError):
    """5xx (after retries for 503), a timeout, no answer at all, or an answer that is not the API's JSON."""


# Codes about the credential whatever the status (the server answers a missing one with 400).
_CREDENTIAL_CODES = {"missing_credential", "invalid_credential", "invalid_credentials"}


def error_for(status: int, **kw: Any) -> TsfmError:
    """The typed error for an HTTP status (and, for credentials and the client's input checks, the code)."""
    code = kw.get("code")
    if status == 401 or code in _CREDENTIAL_CODES:
        return AuthenticationError(status=status, **kw)
    if code == "invalid_input":
        return InvalidRequestError(status=status, **kw)
    if status == 402:
        return BillingRequiredError(status=status, **kw)
    if status == 403:
        return PermissionDeniedError(status=status, **kw)
    if status == 404:
        return NotFoundError(status=status, **kw)
    if status == 429:
        return RateLimitError(status=status, **kw)
    if 400 <= status < 500:
        return InvalidRequestError(status=status, **kw)
    return ServiceError(status=status, **kw)
