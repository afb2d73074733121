"""Python client for the TSFM forecasting service: ``Client(api_key, base_url).forecast(df, h=12)``."""

from .client import DEFAULT_BASE_URL, HAS_PANDAS, MAX_PER_CALL, Client
from .errors import (
    AuthenticationError,
    BillingRequiredError,
    InvalidRequestError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ServiceError,
    TsfmError,
)

__version__ = "0.1.0"
__all__ = [
    "Client",
    "DEFAULT_BASE_URL",
    "HAS_PANDAS",
    "MAX_PER_CALL",
    "TsfmError",
    "AuthenticationError",
    "BillingRequiredError",
    "PermissionDeniedError",
    "NotFoundError",
    "InvalidRequestError",
    "RateLimitError",
    "ServiceError",
]
