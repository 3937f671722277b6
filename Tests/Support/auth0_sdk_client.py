#!/usr/bin/env python3
"""Drives a running Modgud with Auth0's own Python SDK (auth0-python), unchanged but for the
domain and client id (issue 24): passwordless email start, the passwordless OTP grant,
refresh, userinfo, revocation and the JWKS. The code is read from the mail a real SMTP
server received (Tests/Support/smtp_sink.py writes each message to --mail-dir).

Exits non-zero, naming the step, when any answer is not what an Auth0 app expects. Prints each
request and the shape of its answer (token values elided).
"""
import argparse
import glob
import json
import re
import sys
import time
import urllib.request

from auth0.authentication import GetToken, Passwordless, RevokeToken, Users
from auth0.authentication.exceptions import Auth0Error, RateLimitError
from auth0.authentication.token_verifier import AsymmetricSignatureVerifier, TokenVerifier


def fail(step, detail):
    print(f"auth0-sdk: FAILED at {step}: {detail}", file=sys.stderr)
    sys.exit(1)


def shape(answer):
    return {k: ("<%d chars>" % len(v) if isinstance(v, str) and k.endswith("token") else v) for k, v in answer.items()}


def code_for(mail_dir, address, seen, timeout=120):
    """The six-digit code of the first mail to `address` not in `seen` (mail order is not assumed)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for path in sorted(glob.glob(f"{mail_dir}/*.json")):
            if path in seen:
                continue
            record = json.load(open(path))
            if record["rcpt_tos"] == [address]:
                match = re.search(r"code is (\d{6})", record.get("text") or "")
                if match:
                    seen.add(path)
                    return match.group(1)
        time.sleep(0.1)
    fail("mail", f"no code mail to {address} within {timeout} s")


def verify_sign_in(domain, client, issuer, mail_dir, email, expect):
    """Signs `email` in on `domain` with auth0-python and runs its TokenVerifier on the ID token
    (issuer `issuer`, RS256 keys from the domain's JWKS, audience the client id). `expect` is
    "pass" or "fail": a realm whose JWKS holds a non-RSA key fails, as auth0-python reads
    every key as RSA (issue 41)."""
    seen = set(glob.glob(f"{mail_dir}/*.json"))
    Passwordless(domain, client, protocol="http").email(email, send="code")
    otp = code_for(mail_dir, email, seen)
    login = GetToken(domain, client, protocol="http").passwordless_login(
        username=email, otp=otp, realm="email", scope="openid email", audience="")
    verifier = TokenVerifier(
        signature_verifier=AsymmetricSignatureVerifier(f"http://{domain}/.well-known/jwks.json"), issuer=issuer, audience=client)
    with urllib.request.urlopen(f"http://{domain}/.well-known/jwks.json") as answer:
        keys = [k["kty"] for k in json.load(answer)["keys"]]
    try:
        verifier.verify(login["id_token"])
        outcome, detail = "pass", "verified"
    except Exception as error:  # TokenValidationError, or PyJWT's InvalidKeyError for a non-RSA key
        outcome, detail = "fail", repr(error)
    print(f"TokenVerifier on {domain} (JWKS {keys}) -> {outcome}: {detail}")
    if outcome != expect:
        fail(f"TokenVerifier on {domain}", f"expected {expect}, got {outcome}: {detail}")


def rate_limited(domain, client):
    """A passwordless start past the realm's limit: auth0-python raises RateLimitError with
    `reset_at` from Auth0's X-RateLimit-Reset header (Unix seconds).

    The limit (one start per hour per source) was just set by the CLI: the server learns it by
    the settings notification, or at the latest when its settings cache ages out (5 s). Until
    then, and for the one start the new limit admits, a start is answered 200. So starts go
    on, each for its own address (the per-address limit must not be the one that answers),
    until the first 429; every start is at least the uniform answer's 100 ms, so 80 of them
    outlast the cache's age whatever the machine's load."""
    for attempt in range(80):
        try:
            Passwordless(domain, client, protocol="http").email(f"limited{attempt}@example.com", send="code")
        except RateLimitError as error:
            print("POST /passwordless/start (past the limit) ->", error.status_code, error.error_code, "reset_at", error.reset_at,
                  f"(after {attempt} admitted)")
            if error.error_code != "too_many_requests" or not error.reset_at > time.time():
                fail("rate limit", f"{error.error_code} reset_at={error.reset_at}")
            return
    fail("rate limit", "80 starts past a limit of one an hour were all answered 200")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--domain", required=True, help="host:port of modgud")
    parser.add_argument("--client-id", required=True)
    parser.add_argument("--mail-dir", required=True)
    parser.add_argument("--verify-sign-in", choices=["pass", "fail"], help="only sign in and run TokenVerifier, expecting this")
    parser.add_argument("--issuer", help="the issuer TokenVerifier expects (with --verify-sign-in)")
    parser.add_argument("--email", default="verify@example.com")
    parser.add_argument("--rate-limited", action="store_true", help="only check a 429 as auth0-python reads it")
    args = parser.parse_args()
    if args.verify_sign_in:
        verify_sign_in(args.domain, args.client_id, args.issuer, args.mail_dir, args.email, args.verify_sign_in)
        return
    if args.rate_limited:
        rate_limited(args.domain, args.client_id)
        return
    domain, client, seen = args.domain, args.client_id, set()
    email = "grace@example.com"
    scope = "openid email offline_access"

    started = Passwordless(domain, client, protocol="http").email(email, send="code")
    print("POST /passwordless/start", json.dumps({"connection": "email", "email": email, "send": "code"}), "->", started)
    if started.get("email") != email or "_id" not in started:
        fail("passwordless start", started)

    tokens = GetToken(domain, client, protocol="http")
    otp = code_for(args.mail_dir, email, seen)
    login = tokens.passwordless_login(username=email, otp=otp, realm="email", scope=scope, audience="")
    print("POST /oauth/token passwordless/otp ->", shape(login))
    for member in ("access_token", "refresh_token", "id_token", "expires_in", "token_type"):
        if member not in login:
            fail("passwordless_login", f"no {member} in {sorted(login)}")

    # The SDK's own ID-token verification, as an Auth0 app configures it: issuer
    # `<scheme>://<domain>/`, RS256 keys from the domain's JWKS, audience the client id.
    verifier = TokenVerifier(
        signature_verifier=AsymmetricSignatureVerifier(f"http://{domain}/.well-known/jwks.json"),
        issuer=f"http://{domain}/", audience=client)
    try:
        claims = verifier.verify(login["id_token"])
    except Exception as error:  # the SDK raises TokenValidationError and friends
        fail("id token verification", repr(error))
    print("TokenVerifier.verify(id_token) ->", {k: claims[k] for k in ("iss", "aud") if k in claims})

    try:
        tokens.passwordless_login(username=email, otp=otp, realm="email", scope=scope, audience="")
        fail("code replay", "a spent code signed in again")
    except Auth0Error as error:
        print("POST /oauth/token (the same code again) ->", error.status_code, error.error_code, error.message)
        if error.error_code != "invalid_grant" or error.message != "Wrong email or verification code.":
            fail("code replay", f"{error.status_code} {error.error_code}")

    profile = Users(domain, protocol="http").userinfo(login["access_token"])
    print("GET /userinfo ->", profile)
    if profile.get("email") != email or not profile.get("sub"):
        fail("userinfo", profile)

    refreshed = tokens.refresh_token(login["refresh_token"])
    print("POST /oauth/token refresh_token ->", shape(refreshed))
    if refreshed.get("refresh_token") in (None, login["refresh_token"]):
        fail("refresh_token", "no rotated refresh token")

    revoked = RevokeToken(domain, client, protocol="http").revoke_refresh_token(refreshed["refresh_token"])
    print("POST /oauth/revoke ->", repr(revoked))
    try:
        tokens.refresh_token(refreshed["refresh_token"])
        fail("after revoke", "a revoked refresh token still refreshes")
    except Auth0Error as error:
        print("POST /oauth/token (revoked refresh token) ->", error.status_code, error.error_code, error.message)
        # Auth0's words, which its SDKs' isInvalidRefreshToken compares (issue 41).
        if error.error_code != "invalid_grant" or error.message != "Unknown or invalid refresh token.":
            fail("after revoke", f"{error.status_code} {error.error_code} {error.message}")

    try:
        Users(domain, protocol="http").userinfo(login["access_token"])
        fail("userinfo after revoke", "a revoked sign-in's access token still reads userinfo")
    except Auth0Error as error:
        print("GET /userinfo (revoked) ->", error.status_code)

    try:
        Passwordless(domain, client, protocol="http").sms("+15555550100")
        fail("sms", "an SMS connection was accepted")
    except Auth0Error as error:
        print("POST /passwordless/start (sms) ->", error.status_code, error.error_code)
        if error.error_code != "bad.connection":
            fail("sms", f"{error.status_code} {error.error_code}")

    with urllib.request.urlopen(f"http://{domain}/.well-known/jwks.json") as answer:
        keys = json.load(answer)["keys"]
    print("GET /.well-known/jwks.json ->", [{"kty": k["kty"], "kid": k["kid"]} for k in keys])
    if not keys:
        fail("jwks", "no keys")
    print("auth0-sdk: every step answered as an Auth0 app expects")


if __name__ == "__main__":
    main()
