"""LicenseGate runtime SDK for Python: license checks with signed answers, offline tokens, grace,
plans and entitlements, and metered usage. One dependency: PyNaCl (Ed25519)."""
from .client import Client, HttpResponse, normalize_base_url, parse_retry_after, urllib_transport
from .errors import LicenseGateError
from .results import CheckResult, UsageResult
from .signed import (
    answer_problem,
    answer_text,
    new_nonce,
    normalize_domain,
    open_token,
    public_key,
    token_problem,
)
from .stores import FileStore, MemoryStore

__all__ = [
    "CheckResult",
    "Client",
    "FileStore",
    "HttpResponse",
    "LicenseGateError",
    "MemoryStore",
    "UsageResult",
    "answer_problem",
    "answer_text",
    "new_nonce",
    "normalize_base_url",
    "normalize_domain",
    "open_token",
    "parse_retry_after",
    "public_key",
    "token_problem",
    "urllib_transport",
]
__version__ = "0.1.0"
