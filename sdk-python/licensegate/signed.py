"""Signed answers and offline tokens (docs/sdk-formats.md), checked with PyNaCl.

    X-Service-Signature = "v1," + base64 Ed25519 over
      "LG1-ANSWER\\n" + date + "\\n" + nonce + "\\n" + METHOD + " " + path?query + "\\n"
      + hex(SHA-256(license key)) + "\\n" + (X-Service-Domain or "") + "\\n" + hex(SHA-256(body))
    token = "LG1." + base64url(payload JSON) + "." + base64url(Ed25519 over "LG1-TOKEN\\n" + payload part)
"""
import base64
import binascii
import hashlib
import hmac
import json
import re
import secrets
import time
from datetime import datetime
from typing import Any, Dict, Mapping, Optional, Tuple, Union
from urllib.parse import urlsplit

from nacl.exceptions import BadSignatureError
from nacl.signing import VerifyKey

# DER prefix of an Ed25519 SubjectPublicKeyInfo; the raw 32-byte key follows it.
_SPKI_PREFIX = bytes.fromhex("302a300506032b6570032100")
_PEM = re.compile(r"-----BEGIN PUBLIC KEY-----([\s\S]*?)-----END PUBLIC KEY-----")

PublicKeyInput = Union[str, bytes, Mapping[str, str]]


def public_key(value: PublicKeyInput) -> VerifyKey:
    """The project's key from ``public_key`` (base64 of the raw key or of the SPKI DER),
    ``public_key_pem``, raw bytes, or the signing-key dict of ``GET /project/{id}/signing-key``."""
    if isinstance(value, VerifyKey):
        return value
    if isinstance(value, Mapping):
        value = value.get("public_key") or value.get("public_key_pem") or ""
    raw: Optional[bytes]
    if isinstance(value, bytes):
        raw = value
    else:
        match = _PEM.search(value)
        raw = _b64(re.sub(r"\s+", "", match.group(1)) if match else value.strip())
    if raw is not None and len(raw) == 44 and raw.startswith(_SPKI_PREFIX):
        raw = raw[12:]
    if raw is None or len(raw) != 32:
        raise ValueError("Public key: pass the PEM, the base64 public_key or the signing-key dict.")
    return VerifyKey(raw)


def _b64(text: str) -> Optional[bytes]:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def _b64url(part: str) -> Optional[bytes]:
    if not re.fullmatch(r"[A-Za-z0-9_-]*", part):
        return None
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError):
        return None


def _verify(key: VerifyKey, signature: bytes, message: bytes) -> bool:
    if len(signature) != 64:
        return False
    try:
        key.verify(message, signature)
        return True
    except BadSignatureError:
        return False


def sha256_hex(data: Union[str, bytes]) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def answer_text(
    date: str, nonce: str, method: str, target: str, license_key: str, domain: str, body: bytes
) -> bytes:
    """The exact bytes X-Service-Signature covers."""
    text = (
        f"LG1-ANSWER\n{date}\n{nonce}\n{method} {target}\n{sha256_hex(license_key)}\n"
        f"{domain}\n{sha256_hex(body)}"
    )
    return text.encode("utf-8")


def answer_problem(
    signature: Optional[str],
    date: Optional[str],
    nonce: str,
    method: str,
    target: str,
    license_key: str,
    domain: str,
    body: bytes,
    key: VerifyKey,
    max_skew_seconds: Optional[int] = 300,
    now: Optional[float] = None,
) -> Optional[Tuple[str, str]]:
    """Why an answer cannot be trusted, as (verdict, sentence), or None when its signature verifies
    and, unless ``max_skew_seconds`` is None, its date is within that many seconds of ``now``. The
    verdict is one of the shared vectors' words: ``unsigned``, ``signature`` or ``date``."""
    if not signature or not date:
        return ("unsigned", "the answer is not signed")
    if not signature.startswith("v1,"):
        return ("signature", "the answer is signed with an unknown scheme")
    raw = _b64(signature[3:])
    if raw is None or not _verify(
        key, raw, answer_text(date, nonce, method, target, license_key, domain, body)
    ):
        return (
            "signature",
            "the answer's signature does not verify (altered in transit, or signed by another key)",
        )
    if max_skew_seconds is not None:
        at = parse_date(date)
        if at is None or abs((time.time() if now is None else now) - at) > max_skew_seconds:
            return ("date", f"the answer's date {date} is more than {max_skew_seconds} s from this clock")
    return None


def open_token(token: str, key: VerifyKey) -> Optional[Dict[str, Any]]:
    """An offline token's payload when its signature verifies and it is well formed; else None."""
    if not isinstance(token, str):
        return None
    parts = token.split(".")
    if len(parts) != 3 or parts[0] != "LG1":
        return None
    signature = _b64url(parts[2])
    if signature is None or not _verify(key, signature, f"LG1-TOKEN\n{parts[1]}".encode("utf-8")):
        return None
    raw = _b64url(parts[1])
    try:
        payload = json.loads(raw.decode("utf-8")) if raw is not None else None
    except ValueError:
        return None
    if (
        not isinstance(payload, dict)
        or payload.get("has_paid") is not True
        or not _is_int(payload.get("exp"))
        or not _is_int(payload.get("iat"))
        or not isinstance(payload.get("key_sha256"), str)
    ):
        return None
    return payload


def token_problem(
    token: str,
    key: VerifyKey,
    project_id: int,
    license_key: str,
    domain: Optional[str],
    now: Optional[float] = None,
) -> Optional[str]:
    """Why a token is not usable by this project, license key and domain at ``now``, or None:
    ``signature``, ``project``, ``license``, ``domain`` or ``expired`` (the shared vectors' words)."""
    payload = open_token(token, key)
    if payload is None:
        return "signature"
    if not _is_int(payload.get("project_id")) or payload["project_id"] != project_id:
        return "project"
    if not hmac.compare_digest(sha256_hex(license_key), payload["key_sha256"]):
        return "license"
    if payload.get("domain") != domain:
        return "domain"
    return None if payload["exp"] > (time.time() if now is None else now) else "expired"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def new_nonce() -> str:
    """A fresh nonce: 16 random bytes, base64url (22 characters)."""
    return base64.urlsafe_b64encode(secrets.token_bytes(16)).decode("ascii").rstrip("=")


def normalize_domain(value: Optional[str]) -> Optional[str]:
    """A calling domain as the service normalises it: the host of a URL or ``host:port``,
    lowercased, without a trailing dot, IDN as punycode. None for nothing usable."""
    if value is None or value.strip() == "":
        return None
    value = value.strip()
    try:
        host = urlsplit(value if "://" in value else f"http://{value}").hostname or value
    except ValueError:
        host = value
    host = host.lower().rstrip(".")
    if host and not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            pass
    return host or None


def parse_date(value: Any) -> Optional[float]:
    """ISO-8601 (``2026-12-01T10:00:00Z``) to unix seconds; None when unreadable."""
    if not isinstance(value, str) or value == "":
        return None
    text = value[:-1] + "+00:00" if value.endswith("Z") else value
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        return None
    return at.timestamp() if at.tzinfo is not None else None
