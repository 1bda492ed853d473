"""The one exception every failed call raises."""
from typing import Any, Dict, List, Optional


class LicenseGateError(Exception):
    """Any refusal or failure of a LicenseGate call.

    - ``status``: the HTTP status (401, 403, 400, 404, 422, 429, 5xx...), or 0 when the service
      could not be reached (DNS, connection refused, timed out).
    - ``code``: ``unreachable`` (status 0), ``timeout`` (status 0, after the client's timeout),
      ``bad_signature`` (an answer that did not verify with the project's public key), ``http``
      (the service's own refusal or failure).
    - ``message``: the service's own message, e.g. ``This license has been revoked.``
    - ``redirect_url``: the project's ``default_redirect_url``, sent with every runtime 403.
    - ``retry_after``: seconds from ``Retry-After`` (429).
    - ``errors``: field errors of a 422; ``data``: the answer's ``data`` (a 429 of record()
      carries the meter).
    """

    def __init__(
        self,
        message: str,
        status: int = 0,
        code: Optional[str] = None,
        redirect_url: Optional[str] = None,
        retry_after: Optional[int] = None,
        errors: Optional[Dict[str, List[str]]] = None,
        request_id: Optional[str] = None,
        data: Optional[Dict[str, Any]] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code or ("unreachable" if status == 0 else "http")
        self.redirect_url = redirect_url
        self.retry_after = retry_after
        self.errors = errors
        self.request_id = request_id
        self.data = data

    @property
    def is_refusal(self) -> bool:
        """A refusal of the license itself or its use (401/403): show the redirect, do not retry."""
        return self.status in (401, 403)

    @property
    def is_retryable(self) -> bool:
        """Retrying later may help: network failures, 429 and 5xx."""
        return self.status == 0 or self.status == 429 or self.status >= 500
