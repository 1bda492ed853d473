"""sdk/vectors/vectors.json: signed answers and offline tokens written by the service's own signing
code; the JS and PHP SDKs judge the same file alike."""
import json
import os
from datetime import datetime, timezone

import pytest

from licensegate import CheckResult, answer_problem, new_nonce, normalize_domain, public_key, token_problem

with open(
    os.path.join(os.path.dirname(__file__), "..", "..", "sdk", "vectors", "vectors.json"), encoding="utf-8"
) as _f:
    VECTORS = json.load(_f)


def judge_answer(v, key):
    problem = answer_problem(
        v["signature"],
        v["date"],
        v["nonce"],
        v["method"],
        v["target"],
        VECTORS["license_key"],
        v["domain"],
        v["body"].encode("utf-8"),
        public_key(key),
        VECTORS["max_skew_seconds"],
        VECTORS["now"],
    )
    return "ok" if problem is None else problem[0]


@pytest.mark.parametrize("v", VECTORS["answers"], ids=[v["name"] for v in VECTORS["answers"]])
def test_answer(v):
    assert judge_answer(v, VECTORS["public_key"]) == v["expect"]
    assert judge_answer(v, VECTORS["public_key_pem"]) == v["expect"]
    if v["expect"] == "ok":
        assert judge_answer(v, VECTORS["other_public_key"]) == "signature"


@pytest.mark.parametrize("v", VECTORS["tokens"], ids=[v["name"] for v in VECTORS["tokens"]])
def test_token(v):
    problem = token_problem(
        v["token"],
        public_key(VECTORS["public_key"]),
        VECTORS["project_id"],
        VECTORS["license_key"],
        v["domain"],
        VECTORS["now"],
    )
    assert (problem or "ok") == v["expect"]


def _body(name):
    return json.loads(next(v for v in VECTORS["answers"] if v["name"] == name)["body"])["data"]


def test_the_paid_answer_reads_as_every_sdk_reads_it():
    expected = VECTORS["paid_result"]
    result = CheckResult.from_data(_body("paid"))
    assert result.has_paid is True
    assert result.plan == expected["plan"]
    assert result.entitlements == expected["entitlements"]
    assert result.grace_until == datetime(2026, 12, 4, 10, 0, tzinfo=timezone.utc)
    assert [result.can(c) for c in ("feature.reports", "seats", "support")] == [True, True, True]
    assert [result.can(c) for c in ("feature.export", "empty", "zero", "not.granted")] == [False] * 4
    assert result.limit("seats") == 5
    assert result.limit("zero") == 0
    assert result.limit("support") is None
    # True is not the integer 1 here: a boolean entitlement has no limit.
    assert result.limit("feature.reports") is None

    unpaid = CheckResult.from_data(_body("unpaid"))
    assert unpaid.has_paid is False
    assert unpaid.plan is None
    assert unpaid.entitlements == {}
    assert unpaid.redirect_url == "https://pay.example.com/renew?from=café"


def test_public_key_forms_and_refusals():
    raw = public_key(VECTORS["public_key"])
    assert bytes(raw) == bytes(public_key(VECTORS["public_key_pem"]))
    assert bytes(raw) == bytes(public_key({"public_key_pem": VECTORS["public_key_pem"]}))
    with pytest.raises(ValueError, match="^Public key: pass the PEM, the base64 public_key or the signing-key dict.$"):
        public_key("bm90IGEga2V5")


def test_nonces_and_domains():
    nonce = new_nonce()
    assert len(nonce) == 22 and nonce.replace("-", "").replace("_", "").isalnum()
    assert nonce != new_nonce()
    assert normalize_domain(" https://Shop.Example.com.:8443/x ") == "shop.example.com"
    assert normalize_domain("SHOP.example.com") == "shop.example.com"
    assert normalize_domain("  ") is None
