"""What check() and record() return."""
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional, Union

from .signed import parse_date

Entitlement = Union[bool, int, str]


def _at(value: Any) -> Optional[datetime]:
    seconds = parse_date(value)
    return None if seconds is None else datetime.fromtimestamp(seconds, tz=timezone.utc)


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class CheckResult:
    """The answer of ``Client.check()``."""

    has_paid: bool
    is_test_license: bool = False
    #: the project's ``default_redirect_url`` when not paid, else None
    redirect_url: Optional[str] = None
    #: the active paid-only injectables (include_injectables, paid)
    injectables: List[Dict[str, Any]] = field(default_factory=list)
    #: True when the service could not be reached and the answer comes from a stored, verified answer
    offline: bool = False
    #: offline: when the stored token expires (then the client fails closed)
    expires_at: Optional[datetime] = None
    #: while a payment grace runs: when the gate closes unless paid again
    grace_until: Optional[datetime] = None
    #: the license's plan code, when the service has plans and the license one
    plan: Optional[str] = None
    #: the effective entitlements when paid, else {}
    entitlements: Dict[str, Entitlement] = field(default_factory=dict)

    @classmethod
    def from_data(cls, data: Any, offline: bool = False, expires_at: Optional[int] = None) -> "CheckResult":
        d = data if isinstance(data, dict) else {}
        has_paid = d.get("has_paid") is True
        entitlements = d.get("entitlements")
        return cls(
            has_paid=has_paid,
            is_test_license=d.get("is_test_license") is True,
            redirect_url=d.get("redirect_url") if isinstance(d.get("redirect_url"), str) else None,
            injectables=list(d.get("injectables")) if isinstance(d.get("injectables"), list) else [],
            offline=offline,
            expires_at=None if expires_at is None else datetime.fromtimestamp(expires_at, tz=timezone.utc),
            grace_until=_at(d.get("grace_until")),
            plan=d.get("plan") if isinstance(d.get("plan"), str) else None,
            entitlements=dict(entitlements) if has_paid and isinstance(entitlements, dict) else {},
        )

    def can(self, code: str) -> bool:
        """True for an entitlement that is ``True``, a positive integer or a non-empty string."""
        value = self.entitlements.get(code)
        if value is True:
            return True
        if _int(value) is not None:
            return value > 0
        return isinstance(value, str) and value != ""

    def limit(self, code: str) -> Optional[int]:
        """The integer value of an entitlement, else None."""
        return _int(self.entitlements.get(code))


@dataclass(frozen=True)
class UsageResult:
    """The answer of ``Client.record()``: the meter's count this UTC month after the call."""

    meter: str
    used: int
    limit: Optional[int]
    remaining: Optional[int]
    resets_at: Optional[datetime]

    @classmethod
    def from_data(cls, data: Any) -> "UsageResult":
        d = data if isinstance(data, dict) else {}
        return cls(
            meter=d.get("meter") if isinstance(d.get("meter"), str) else "",
            used=_int(d.get("used")) or 0,
            limit=_int(d.get("limit")),
            remaining=_int(d.get("remaining")),
            resets_at=_at(d.get("resets_at")),
        )
