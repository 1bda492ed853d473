"""The client against a live LicenseGate (conftest.py)."""
import json
import os
import secrets
import socket
import stat
import time
import urllib.request

import pytest

from licensegate import Client, FileStore, HttpResponse, LicenseGateError, urllib_transport


def client(seed, **options):
    settings = {"base_url": seed["base_url"], "license_key": seed["license_key"], "domain": seed["domains"]["paid"]}
    settings.update(options)
    return Client(**settings)


def signed(seed, **options):
    options.setdefault("public_key", seed["public_key"])
    options.setdefault("project_id", seed["project_id"])
    return client(seed, **options)


def test_paid_domain(live):
    seed = live.seed
    for c in (client(seed), signed(seed)):
        result = c.check()
        assert result.has_paid is True
        assert result.offline is False
        assert result.grace_until is None
        assert result.redirect_url is None
    # The bare origin works as the base address; a subdomain of a paid domain is paid.
    origin = seed["base_url"][: -len("/api/v1")]
    assert client(seed, base_url=origin).check(domain="www." + seed["domains"]["paid"]).has_paid is True


def test_unpaid_domain(live):
    result = signed(live.seed, domain=live.seed["domains"]["unpaid"]).check()
    assert result.has_paid is False
    assert result.redirect_url == live.seed["redirect_url"]
    assert result.entitlements == {}
    assert result.plan is None


def test_unregistered_domain_is_refused(live):
    with pytest.raises(LicenseGateError) as caught:
        signed(live.seed, domain="not-registered.example.org").check()
    e = caught.value
    assert (e.status, e.code) == (403, "http")
    assert str(e) == "Domain is not registered under this project."
    assert e.redirect_url == live.seed["redirect_url"]
    assert e.is_refusal and not e.is_retryable


def test_revoked_license_is_refused(live):
    with pytest.raises(LicenseGateError) as caught:
        signed(live.seed, license_key=live.seed["revoked_license_key"]).check()
    assert caught.value.status == 403
    assert caught.value.message == "This license has been revoked."
    assert caught.value.redirect_url == live.seed["redirect_url"]


def test_grace(live):
    result = signed(live.seed, domain=live.seed["domains"]["grace"]).check()
    assert result.has_paid is True
    assert result.grace_until is not None
    # grace_days 3 on the connector that reported the failed payment.
    assert abs(result.grace_until.timestamp() - (time.time() + 3 * 86400)) < 600


def test_plan_and_entitlements(live):
    c = signed(live.seed)
    plan = live.seed["plan"]
    if plan is None:
        # This build of the service has no plans yet: answers carry neither.
        assert c.check().plan is None
        assert c.can("feature.reports") is False
        assert c.limit("seats") is None
        return
    result = c.check()
    assert result.plan == plan["code"]
    assert result.entitlements == plan["entitlements"]
    assert c.can("feature.reports") is True
    assert c.limit("seats") == 5
    assert c.can("not.granted") is False


def test_can_checks_once_when_nothing_was_checked(live):
    calls = []

    def transport(method, url, headers, body, timeout):
        calls.append(url)
        data = {"has_paid": True, "is_test_license": False, "plan": "pro", "entitlements": {"seats": 3}}
        envelope = {"status": "success", "message": "Success", "data": data, "errors": None}
        return HttpResponse(200, {}, json.dumps(envelope).encode())

    c = client(live.seed, transport=transport)
    assert c.limit("seats") == 3
    assert c.can("seats") is True
    assert len(calls) == 1
    # A check that fails answers closed.
    failing = client(live.seed, base_url="http://127.0.0.1:9", timeout=2)
    assert failing.can("seats") is False
    assert failing.limit("seats") is None


def test_answer_signed_with_another_key_is_refused(live):
    c = client(live.seed, public_key=live.seed["other_public_key"], project_id=live.seed["project_id"])
    with pytest.raises(LicenseGateError) as caught:
        c.check()
    assert (caught.value.code, caught.value.status) == ("bad_signature", 200)
    assert str(caught.value) == (
        "LicenseGate's answer (HTTP 200) was refused: the answer's signature does not verify "
        "(altered in transit, or signed by another key)."
    )


def test_altered_answer_is_refused(live):
    # A proxy that turns an unpaid answer into a paid one, keeping the signature headers.
    def proxy(method, url, headers, body, timeout):
        res = urllib_transport(method, url, headers, body, timeout)
        assert b'"has_paid":false' in res.body
        return HttpResponse(res.status, res.headers, res.body.replace(b'"has_paid":false', b'"has_paid":true'))

    c = signed(live.seed, domain=live.seed["domains"]["unpaid"], transport=proxy)
    with pytest.raises(LicenseGateError) as caught:
        c.check()
    assert caught.value.code == "bad_signature"
    assert "does not verify" in str(caught.value)


def test_unreachable_and_timeout(live):
    with pytest.raises(LicenseGateError) as caught:
        client(live.seed, base_url="http://127.0.0.1:9").check()
    assert (caught.value.status, caught.value.code) == (0, "unreachable")
    assert str(caught.value).startswith("Could not reach LicenseGate: ")

    # A server that accepts the connection and never answers.
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        started = time.monotonic()
        with pytest.raises(LicenseGateError) as caught:
            client(live.seed, base_url=f"http://127.0.0.1:{port}", timeout=0.5).check()
    assert caught.value.code == "timeout"
    assert str(caught.value) == "LicenseGate did not answer within 500 ms."
    assert time.monotonic() - started < 5


def test_deactivate(live):
    c = signed(live.seed, license_key=live.seed["spare_license_key"])
    assert c.check().has_paid is True  # takes the slot
    assert c.deactivate() == 1
    assert c.deactivate(domain=live.seed["domains"]["paid"]) == 0


def test_record(live):
    usage = client(live.seed).record("meter.api_calls", 2, "py-" + secrets.token_hex(6))
    assert (usage.meter, usage.used, usage.limit, usage.remaining) == ("meter.api_calls", 2, 1000, 998)
    assert usage.resets_at is not None
    assert signed(live.seed).record("meter.api_calls", 1, "py-once").used == 3
    # The same idempotency key counts once and answers the first answer's data.
    assert signed(live.seed).record("meter.api_calls", 1, "py-once").used == 3
    with pytest.raises(LicenseGateError) as caught:
        signed(live.seed).record("meter.api_calls", 1000, "py-over")
    assert caught.value.status == 429
    assert caught.value.data["used"] == 3
    assert caught.value.retry_after is not None


def test_offline_from_the_stored_answer(live, tmp_path):
    seed = live.seed
    path = str(tmp_path / "answers.json")
    online = signed(seed, offline=FileStore(path))
    paid = online.check()
    assert paid.has_paid is True and paid.offline is False
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    # The unpaid domain's answer is not kept: offline, it fails closed.
    assert online.check(domain=seed["domains"]["unpaid"]).has_paid is False

    live.stop()
    try:
        # A later process (a new client, the same file) while the service is down.
        offline = signed(seed, offline=FileStore(path))
        result = offline.check()
        assert result.has_paid is True
        assert result.offline is True
        assert abs(result.expires_at.timestamp() - (time.time() + 72 * 3600)) < 120
        assert result.plan == paid.plan

        with pytest.raises(LicenseGateError) as caught:
            offline.check(domain=seed["domains"]["unpaid"])
        assert caught.value.code == "unreachable"

        # A stored answer edited on disk no longer verifies: closed.
        with open(path, encoding="utf-8") as f:
            stored = json.load(f)
        edited = str(tmp_path / "edited.json")
        with open(edited, "w", encoding="utf-8") as f:
            json.dump({k: v.replace('\\"has_paid\\":true', '\\"has_paid\\":true ') for k, v in stored.items()}, f)
        assert json.load(open(edited, encoding="utf-8")) != stored
        with pytest.raises(LicenseGateError) as caught:
            signed(seed, offline=FileStore(edited)).check()
        assert caught.value.code == "unreachable"
    finally:
        live.start()


def test_refusal_forgets_the_stored_answer(live, tmp_path):
    seed = live.seed
    path = str(tmp_path / "refusal.json")
    c = signed(seed, license_key=seed["spare_license_key"], offline=FileStore(path))
    assert c.check().has_paid is True
    assert len(json.load(open(path, encoding="utf-8"))) == 1

    license_path = f"/project/{seed['project_id']}/licenses/{seed['spare_license_id']}"
    live.api("POST", f"{license_path}/revoke")
    with pytest.raises(LicenseGateError) as caught:
        c.check()
    assert str(caught.value) == "This license has been revoked."
    assert json.load(open(path, encoding="utf-8")) == {}

    live.stop()
    try:
        with pytest.raises(LicenseGateError) as caught:
            c.check()
        assert caught.value.code == "unreachable"
    finally:
        live.start()
        live.api("POST", f"{license_path}/reactivate")


def test_options_are_checked(live):
    from licensegate import normalize_base_url

    assert normalize_base_url("https://lg.example.com") == "https://lg.example.com/api/v1"
    assert normalize_base_url("https://lg.example.com:8443/x/api/") == "https://lg.example.com:8443/x/api/v1"
    with pytest.raises(ValueError, match=r"offline mode needs public_key and project_id"):
        client(live.seed, offline=True)
