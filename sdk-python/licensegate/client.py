"""The runtime client: license-key calls only (has-paid, self-service deactivation, metered usage),
over urllib from the standard library or a transport passed in."""
import json
import secrets
import socket
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, Callable, Dict, Mapping, Optional, Tuple
from urllib.parse import urlencode, urlsplit

from nacl.signing import VerifyKey

from .errors import LicenseGateError
from .results import CheckResult, UsageResult
from .signed import (
    PublicKeyInput,
    answer_problem,
    new_nonce,
    normalize_domain,
    public_key as load_public_key,
    sha256_hex,
    open_token,
    token_problem,
)
from .stores import MemoryStore


@dataclass(frozen=True)
class HttpResponse:
    """One answer as received: status, headers (names lowercased) and the body's exact bytes."""

    status: int
    headers: Mapping[str, str]
    body: bytes


#: fn(method, url, headers, body, timeout) -> HttpResponse; raises LicenseGateError (status 0) when no answer came.
Transport = Callable[[str, str, Dict[str, str], Optional[bytes], float], HttpResponse]


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:  # a redirect is an answer, not followed
        return None


_opener = urllib.request.build_opener(_NoRedirects)


def urllib_transport(
    method: str, url: str, headers: Dict[str, str], body: Optional[bytes], timeout: float
) -> HttpResponse:
    """The default transport: urllib, with the timeout on connecting and on every read."""
    payload = body if body is not None else (b"" if method == "POST" else None)
    request = urllib.request.Request(url, data=payload, headers=headers, method=method)
    try:
        with _opener.open(request, timeout=timeout) as res:
            return HttpResponse(res.status, {k.lower(): v for k, v in res.headers.items()}, res.read())
    except urllib.error.HTTPError as e:
        try:
            return HttpResponse(e.code, {k.lower(): v for k, v in e.headers.items()}, e.read())
        finally:
            e.close()
    except (socket.timeout, TimeoutError) as e:
        raise _timed_out(timeout) from e
    except urllib.error.URLError as e:
        if isinstance(e.reason, (socket.timeout, TimeoutError)):
            raise _timed_out(timeout) from e
        raise LicenseGateError(f"Could not reach LicenseGate: {e.reason}", 0, "unreachable") from e
    except OSError as e:
        raise LicenseGateError(f"Could not reach LicenseGate: {e}", 0, "unreachable") from e


def _timed_out(timeout: float) -> LicenseGateError:
    return LicenseGateError(f"LicenseGate did not answer within {round(timeout * 1000)} ms.", 0, "timeout")


def normalize_base_url(base_url: str) -> str:
    """Normalises a base address to ``.../api/v1`` without a trailing slash."""
    parts = urlsplit((base_url or "").strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"LicenseGate: base_url must be an http or https URL: {base_url}")
    path = parts.path.rstrip("/")
    if path == "":
        path = "/api/v1"
    elif path.endswith("/api"):
        path += "/v1"
    return f"{parts.scheme}://{parts.netloc}{path}"


def parse_retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[int]:
    """``Retry-After`` as seconds: delta-seconds or an HTTP date; None when absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return int(value)
    try:
        at = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
    return max(0, int(at - (time.time() if now is None else now) + 0.999))


class Client:
    """A client for one license key.

    - ``base_url``: ``https://host/api/v1``, or the bare origin (then ``/api/v1`` is appended).
    - ``license_key``: the license's ``uuid``, sent as ``X-LICENSE-KEY``.
    - ``domain``: the calling domain, sent as ``X-Service-Domain``.
    - ``timeout``: seconds before a call is given up (LicenseGateError code ``timeout``). Default 10.
    - ``public_key`` + ``project_id``: verify every answer (signature, own nonce, date within
      ``max_skew_seconds``, default 300); otherwise LicenseGateError code ``bad_signature``.
    - ``offline``: True (memory) or a store such as ``FileStore(path)`` (needs ``public_key``):
      has-paid asks for an offline token, keeps the last verified paid answer per domain, and answers
      from it while the service cannot be reached (network error, timeout, 5xx) and its token is valid.
    - ``transport``: fn(method, url, headers, body, timeout) -> HttpResponse instead of urllib.
    """

    def __init__(
        self,
        base_url: str,
        license_key: str,
        domain: Optional[str] = None,
        timeout: float = 10.0,
        public_key: Optional[PublicKeyInput] = None,
        project_id: Optional[int] = None,
        max_skew_seconds: int = 300,
        offline: Any = None,
        transport: Optional[Transport] = None,
    ) -> None:
        if not isinstance(license_key, str) or license_key.strip() == "":
            raise ValueError("LicenseGate: license_key is required")
        self.base_url = normalize_base_url(base_url)
        # Header values travel trimmed: the signed text must hold what the service received.
        self._license_key = license_key.strip()
        self._domain = (domain or "").strip() or None
        if not timeout or timeout <= 0:
            raise ValueError("LicenseGate: timeout must be a positive number of seconds")
        self._timeout = float(timeout)
        self._key: Optional[VerifyKey] = None
        self._project_id = 0
        self._max_skew = max_skew_seconds
        if public_key is not None:
            if not isinstance(project_id, int) or isinstance(project_id, bool) or project_id <= 0:
                raise ValueError("LicenseGate: project_id (the project's id) is required with public_key")
            self._key = load_public_key(public_key)
            self._project_id = project_id
        if offline:
            if self._key is None:
                raise ValueError(
                    "LicenseGate: offline mode needs public_key and project_id "
                    "(answers are verified before they are trusted)"
                )
            self._store = MemoryStore() if offline is True else offline
        else:
            self._store = None
        self._transport: Transport = transport or urllib_transport
        #: the last verified answer of check(), which can() and limit() read
        self._last: Optional[CheckResult] = None

    def check(
        self, check_project: bool = False, include_injectables: bool = False, domain: Optional[str] = None
    ) -> CheckResult:
        """``POST /project/has-paid``: paid or not, with ``grace_until``, ``plan`` and ``entitlements``.
        Raises LicenseGateError on any refusal (401, 403, 400, 429...); in offline mode answers from
        the stored answer while the service cannot be reached."""
        include = [w for w, on in (("injectables", include_injectables), ("token", self._store is not None)) if on]
        query = {}
        if check_project:
            query["action"] = "check_project"
        if include:
            query["include"] = ",".join(include)
        sent_domain = self._calling_domain(domain)
        if self._store is None:
            self._last = CheckResult.from_data(self._call("POST", "/project/has-paid", query, sent_domain))
            return self._last

        # Offline mode: the answer kept for this call's domain (none for a project-level check).
        slot_domain = None if check_project else normalize_domain(sent_domain)
        slot = f"{sha256_hex(self._license_key)}:{self._project_id}:{slot_domain or '*'}"
        try:
            answer = self._send("POST", "/project/has-paid", query, sent_domain)
        except LicenseGateError as e:
            if e.status == 0:
                self._last = self._from_store(slot, slot_domain, e)
                return self._last
            raise
        res, envelope, _problem, signed = answer
        if res.status >= 500:
            self._last = self._from_store(slot, slot_domain, _error_from(res, envelope))
            return self._last
        if res.status in (401, 403, 429):
            # A refusal ends offline use, even one that cannot be verified (a key the service no
            # longer knows is refused unsigned): for a paywall, the safe side of doubt is closed.
            self._store.delete(slot)
        data = self._accept(answer)
        result = CheckResult.from_data(data)
        token = data.get("token") if isinstance(data, dict) else None
        if not result.has_paid:
            self._store.delete(slot)
        elif isinstance(token, str) and self._token_payload(token, slot_domain) is not None:
            self._keep_newest(slot, signed or {}, token, slot_domain)
        self._last = result
        return result

    has_paid = check

    def deactivate(self, domain: Optional[str] = None) -> int:
        """``POST /license/deactivate``: frees the slot this license holds for a host (default: the
        client's ``domain``) -> the number of activations deleted (0 when there were none). A few a
        day per license (429, ``retry_after`` set, past them)."""
        data = self._call("POST", "/license/deactivate", {}, self._calling_domain(domain))
        value = data.get("deactivated") if isinstance(data, dict) else None
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    def record(self, meter: str, amount: int = 1, idempotency_key: Optional[str] = None) -> UsageResult:
        """``POST /license/usage``: counts ``amount`` of a metered entitlement (``meter.*``) this UTC
        month. The idempotency key makes a retry count once (a random one when omitted: pass your own
        to retry safely). Past the limit: LicenseGateError 429 with the meter in ``data``."""
        body = json.dumps(
            {"meter": meter, "amount": amount, "idempotency_key": idempotency_key or secrets.token_hex(16)}
        ).encode("utf-8")
        return UsageResult.from_data(self._call("POST", "/license/usage", {}, self._calling_domain(None), body))

    def can(self, code: str) -> bool:
        """True when the last verified answer (online or offline) grants ``code``: ``True``, a
        positive integer or a non-empty string. Checks once first when nothing was checked yet; a
        failed check answers False (closed)."""
        last = self._last_result()
        return last.can(code) if last is not None else False

    def limit(self, code: str) -> Optional[int]:
        """The integer value of an entitlement in the last verified answer, else None."""
        last = self._last_result()
        return last.limit(code) if last is not None else None

    def _last_result(self) -> Optional[CheckResult]:
        if self._last is None:
            try:
                self.check()
            except LicenseGateError:
                return None
        return self._last

    def _calling_domain(self, domain: Optional[str]) -> Optional[str]:
        return (domain or "").strip() or self._domain

    def _call(
        self, method: str, path: str, query: Dict[str, str], domain: Optional[str], body: Optional[bytes] = None
    ) -> Any:
        return self._accept(self._send(method, path, query, domain, body))

    def _accept(self, answer: Tuple[HttpResponse, Optional[Dict[str, Any]], Optional[str], Any]) -> Any:
        res, envelope, problem, _signed = answer
        if problem is not None:
            raise LicenseGateError(
                f"LicenseGate's answer (HTTP {res.status}) was refused: {problem}.",
                res.status,
                "bad_signature",
                request_id=res.headers.get("x-request-id"),
            )
        if 200 <= res.status < 300:
            if envelope is not None and envelope.get("status") == "success":
                return envelope.get("data")
            raise LicenseGateError(
                "LicenseGate answered with something other than its JSON envelope.",
                res.status,
                request_id=res.headers.get("x-request-id"),
            )
        raise _error_from(res, envelope)

    def _send(
        self, method: str, path: str, query: Dict[str, str], domain: Optional[str], body: Optional[bytes] = None
    ) -> Tuple[HttpResponse, Optional[Dict[str, Any]], Optional[str], Optional[Dict[str, Any]]]:
        """Sends one request and reads its answer, verified when a public key is set: every answer
        but a 5xx (which only ever leads to offline mode) must carry a valid signature, else the
        problem says why not. The last item holds what the signature covers, for the store."""
        qs = urlencode(query)
        url = f"{self.base_url}{path}{'?' + qs if qs else ''}"
        headers = {"Accept": "application/json", "X-LICENSE-KEY": self._license_key}
        if domain is not None:
            headers["X-Service-Domain"] = domain
        if body is not None:
            headers["Content-Type"] = "application/json"
        nonce = new_nonce() if self._key is not None else None
        if nonce is not None:
            headers["X-Service-Nonce"] = nonce
        res = self._transport(method, url, headers, body, self._timeout)
        try:
            parsed = json.loads(res.body.decode("utf-8")) if res.body else None
        except ValueError:
            parsed = None
        envelope = parsed if isinstance(parsed, dict) else None
        problem = None
        signed = None
        if self._key is not None and nonce is not None and res.status < 500:
            signed = {
                "date": res.headers.get("x-service-date"),
                "signature": res.headers.get("x-service-signature"),
                "nonce": nonce,
                "method": method,
                "target": urlsplit(url).path + (f"?{qs}" if qs else ""),
                "domain": domain or "",
                "body": res.body.decode("utf-8", errors="surrogateescape"),
            }
            verdict = self._signed_problem(signed, self._max_skew)
            problem = verdict[1] if verdict else None
        return res, envelope, problem, signed

    def _signed_problem(self, signed: Mapping[str, Any], max_skew: Optional[int]) -> Optional[Tuple[str, str]]:
        def text(name: str) -> str:
            value = signed.get(name)
            return value if isinstance(value, str) else ""

        return answer_problem(
            signed.get("signature") if isinstance(signed.get("signature"), str) else None,
            signed.get("date") if isinstance(signed.get("date"), str) else None,
            text("nonce"),
            text("method"),
            text("target"),
            self._license_key,
            text("domain"),
            text("body").encode("utf-8", errors="surrogateescape"),
            self._key,  # type: ignore[arg-type]
            max_skew,
        )

    def _token_payload(self, token: str, domain: Optional[str]) -> Optional[Dict[str, Any]]:
        """The token's payload when usable by this project, license and domain now."""
        key = self._key
        assert key is not None
        if token_problem(token, key, self._project_id, self._license_key, domain) is not None:
            return None
        return open_token(token, key)

    def _keep_newest(self, slot: str, signed: Dict[str, Any], token: str, domain: Optional[str]) -> None:
        """Keeps ``signed`` (a verified paid answer carrying ``token``) unless the stored one is valid and newer."""
        held = self._stored(slot, domain)
        fresh = self._token_payload(token, domain)
        if held is not None and fresh is not None and held[1]["iat"] > fresh["iat"]:
            return
        self._store.set(slot, json.dumps(signed))  # type: ignore[union-attr]

    def _stored(self, slot: str, domain: Optional[str]) -> Optional[Tuple[Dict[str, Any], Dict[str, Any]]]:
        """The stored answer of a slot, verified again as it is read (its date may be old: its token
        bounds how long it counts), with its token's payload; None when none is usable."""
        text = self._store.get(slot) if self._store is not None else None
        try:
            signed = json.loads(text) if isinstance(text, str) else None
        except ValueError:
            signed = None
        if not isinstance(signed, dict) or self._signed_problem(signed, None) is not None:
            return None
        try:
            body = json.loads(signed.get("body") or "")
        except ValueError:
            return None
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, dict) or data.get("has_paid") is not True or not isinstance(data.get("token"), str):
            return None
        payload = self._token_payload(data["token"], domain)
        return None if payload is None else (data, payload)

    def _from_store(self, slot: str, domain: Optional[str], failure: LicenseGateError) -> CheckResult:
        """The answer from the store while the service cannot be reached; ``failure`` when there is none."""
        held = self._stored(slot, domain)
        if held is None:
            # Expired or no longer valid: fail closed, and forget it.
            if self._store is not None:
                self._store.delete(slot)
            raise failure
        return CheckResult.from_data(held[0], offline=True, expires_at=held[1]["exp"])


def _error_from(res: HttpResponse, envelope: Optional[Dict[str, Any]]) -> LicenseGateError:
    body = envelope or {}
    data = body.get("data") if isinstance(body.get("data"), dict) else None
    message = body.get("message")
    if not isinstance(message, str) or message == "":
        message = f"LicenseGate answered HTTP {res.status} without a readable message."
    return LicenseGateError(
        message,
        res.status,
        "http",
        redirect_url=data.get("redirect_url") if data and isinstance(data.get("redirect_url"), str) else None,
        retry_after=parse_retry_after(res.headers.get("retry-after")),
        errors=body.get("errors") if isinstance(body.get("errors"), dict) else None,
        request_id=res.headers.get("x-request-id"),
        data=data,
    )
