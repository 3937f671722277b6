#!/usr/bin/env python3
"""A client for OAuth 2.0 for First-Party Applications (draft-ietf-oauth-first-party-apps), written
from the draft and Modgud's profile (docs/guides/first-party-apps.md) only, and the test driver that
runs it against a live `modgud dev` (issue 45 item 6). Run it through ops/first-party-test.

    first_party_client.py --issuer URL --admin-token TOKEN --smtp-port PORT [--peers URL,URL] [--only a,b,...]

The client (`FirstPartyClient`) knows one URL: the issuer. Everything else comes from the
authorization server metadata (RFC 8414, `/.well-known/oauth-authorization-server`):
`authorization_challenge_endpoint`, `token_endpoint`, `userinfo_endpoint`, `jwks_uri`. It
makes PKCE pairs (RFC 7636, S256), DPoP proofs (RFC 9449, ES256, with `cryptography`; it retries
once on `use_dpop_nonce`), and TOTP codes (RFC 6238); `SoftPasskey` is a software WebAuthn
authenticator (ES256, `none` attestation) as in schemathesis_fixtures.py and enumeration_bench.py.
It follows draft -04: `response_type=code` (REQUIRED, section 5.1) on every request that begins an
authorization (the first one, and a step-up), `insufficient_authorization` and `redirect_to_web` are
403 (section 5.2.2), other errors 400 (`invalid_client` 401 when the client authenticated by the
Authorization header, RFC 6749 section 5.2), `error` and `error_description` within section 5.2.2's
characters, answers JSON with `Cache-Control: no-store`. Being an OpenID Connect client too, it
sends a `nonce` with the sign-in of flow a and checks the ID token's (OpenID Connect Core 3.1.3.7).
The only Modgud-specific knowledge in the client is the profile's parameter names (`login_hint`,
`email_delivery=link`, `email_code`, `user_id` + `magic_token`, `passkey_assertion`, `totp_code`,
and the answer members `expecting`, `passkey_options`).

The set-up (`ModgudSetup`) is Modgud's own, not the draft's: the admin API (MODGUD_ADMIN_TOKEN) makes
a realm on the host 127.0.0.1 (the `dev` realm moves to `localhost`), its clients, users and a TOTP
secret; a passkey is enrolled through `/connect/passkey/enroll/begin` and `/connect/passkey/enroll`
with a bearer token the client got by flow a. Mail arrives over real SMTP at an aiosmtpd server
started in this process on --smtp-port (the server was started with MODGUD_SMTP_HOST/PORT).

Flows (each prints its requests and answers, secrets shortened; a failed assertion fails the flow,
the others still run; exit 1 when any failed):
  a  email code: login_hint (and a nonce) -> insufficient_authorization [email_code] -> code from the
     mail -> authorization_code -> token (authorization_code + code_verifier) -> ID token verified
     (its nonce the request's) -> userinfo
  b  the same DPoP-bound (one ES256 key on every request): token_type DPoP, cnf.jkt, userinfo with
     the DPoP scheme; refusals: another key or no proof continuing the session -> invalid_session, a
     session begun without DPoP continued with it -> invalid_session, another key redeeming ->
     invalid_grant (and the code is spent)
  c  magic link: login_hint + email_delivery=link -> the link from the mail -> user_id + magic_token
  d  passkey: enrol a passkey (after flow a's sign-in), then no login_hint -> passkey_options ->
     passkey_assertion
  e  TOTP: email_code -> insufficient_authorization [totp_code] -> (a wrong one: asked again) -> totp_code
  f  refusals: a first request without response_type, another client's session, a replayed
     auth_session, a reused code (and the auth_session of its token response then), a wrong verifier
     (the code is then spent), another client redeeming, no code_challenge, the plain method, an
     unknown auth_session, an unknown client, a wrong email code. Expired sessions (10 min) and
     codes (60 s) are not tested live (AuthorizationChallengeRulesTests moves the server's clock).
  g  three instances on one database (--peers): begun on the first, the code on the second, redeemed on
     the third, DPoP-bound; two instances racing one session's last step (one code), three racing to
     redeem one code (one token response)
  h  step-up (section 6.1, RFC 9470): the token response's auth_session with a new PKCE challenge,
     max_age=0 and acr_values -> a code to the person's own address -> a fresh sign-in of the same sub
     (auth_time not earlier, a new refresh token); the presented auth_session is spent
  j  OpenID Connect Native SSO (draft 07) across instances: a sign-in with device_sso on the first
     -> device_secret, sid, ds_hash; the teammate app's token exchange (ID token + device secret,
     audience the issuer) on the second; its refresh on the third; the device secret revoked there
     -> both apps' refreshes and a new exchange refused
  k  the device authorization grant (RFC 8628) across instances: discovery, section 3.2's answer,
     authorization_pending and slow_down on two instances, the phone app's approval with a passkey (one
     without user verification refused first), three polls at once on three instances: one token response
  i  recovery codes across instances (Modgud's extension, issue 46): ten codes made on the first
     instance; login_hint + recovery_code on the second -> a code -> a recovery session redeemed on
     the third (scope urn:modgud:recovery, acr urn:modgud:acr:recovery, no refresh token), refused
     at userinfo with RFC 9470's challenge; the same code on every instance refused; one code
     redeemed on three instances at once at the token endpoint: one session
"""
import argparse
import base64
import email
import email.policy
import hashlib
import hmac
import json
import os
import re
import secrets
import struct
import sys
import threading
import time
import traceback
import urllib.parse

import jwt
import requests
from aiosmtpd.controller import Controller
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

SCOPE = "openid email offline_access"


def b64u(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64u_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Failed(AssertionError):
    pass


def check(condition, what):
    if not condition:
        raise Failed(what)


# MARK: What is printed: secrets shortened

SECRET_NAMES = {"auth_session", "authorization_code", "code", "code_verifier", "code_challenge", "access_token", "refresh_token",
                "id_token", "magic_token", "email_code", "totp_code", "passkey_assertion", "challenge", "dpop", "authorization",
                "dpop-nonce", "user_id", "Secret", "OtpauthUri", "device_code"}


def short(value):
    text = str(value)
    if len(text) <= 8:
        return text[:2] + "…"
    return f"{text[:6]}…({len(text)})"


def shorten(value, name=""):
    if isinstance(value, dict):
        return {k: shorten(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [shorten(v, name) for v in value]
    if isinstance(value, str) and name in SECRET_NAMES:
        if name == "authorization" and " " in value:
            scheme, token = value.split(" ", 1)
            return f"{scheme} {short(token)}"
        return short(value)
    return value


class Transcript:
    def __init__(self):
        self.lines = []

    def exchange(self, method, url, headers, form, response):
        shown = {k: v for k, v in headers.items() if k.lower() in ("dpop", "authorization")}
        self.lines.append(f"  > {method} {url}")
        for k, v in shown.items():
            self.lines.append(f"    {k}: {shorten(v, k.lower())}")
        if form:
            self.lines.append("    " + "&".join(f"{k}={shorten(v, k)}" for k, v in form.items()))
        extra = "".join(f"  {h}: {response.headers[h]}" for h in ("Cache-Control", "DPoP-Nonce", "WWW-Authenticate") if h in response.headers)
        self.lines.append(f"  < {response.status_code} {response.headers.get('Content-Type', '')}{extra}")
        try:
            body = response.json()
            self.lines.append("    " + json.dumps(shorten(body), ensure_ascii=False))
        except ValueError:
            if response.text:
                self.lines.append("    " + response.text[:200])

    def note(self, text):
        self.lines.append(f"  # {text}")


# MARK: PKCE, DPoP, TOTP


class PKCE:
    """RFC 7636: a 43-character verifier (32 random bytes) and its S256 challenge."""

    def __init__(self):
        self.verifier = b64u(os.urandom(32))
        self.challenge = b64u(hashlib.sha256(self.verifier.encode()).digest())


class DPoPKey:
    """An ES256 key and its proofs (RFC 9449 section 4.2)."""

    def __init__(self):
        self.key = ec.generate_private_key(ec.SECP256R1())
        numbers = self.key.public_key().public_numbers()
        self.jwk = {"kty": "EC", "crv": "P-256", "x": b64u(numbers.x.to_bytes(32, "big")), "y": b64u(numbers.y.to_bytes(32, "big"))}
        canonical = json.dumps({k: self.jwk[k] for k in ("crv", "kty", "x", "y")}, separators=(",", ":"), sort_keys=True)
        self.thumbprint = b64u(hashlib.sha256(canonical.encode()).digest())  # RFC 7638
        self.nonce = None

    def proof(self, method, url, access_token=None):
        htu = urllib.parse.urlunsplit(urllib.parse.urlsplit(url)._replace(query="", fragment=""))
        header = {"typ": "dpop+jwt", "alg": "ES256", "jwk": self.jwk}
        claims = {"jti": b64u(os.urandom(16)), "htm": method, "htu": htu, "iat": int(time.time())}
        if self.nonce:
            claims["nonce"] = self.nonce
        if access_token:
            claims["ath"] = b64u(hashlib.sha256(access_token.encode()).digest())
        signing_input = b64u(json.dumps(header, separators=(",", ":")).encode()) + "." + b64u(json.dumps(claims, separators=(",", ":")).encode())
        r, s = decode_dss_signature(self.key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
        return signing_input + "." + b64u(r.to_bytes(32, "big") + s.to_bytes(32, "big"))


def totp(otpauth_uri, at=None, offset=0):
    """RFC 6238 (RFC 4226's HOTP on the time step) from an otpauth:// URI's secret, algorithm, digits and period."""
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(otpauth_uri).query))
    secret = base64.b32decode(query["secret"].upper() + "=" * (-len(query["secret"]) % 8))
    algorithm = {"SHA1": hashlib.sha1, "SHA256": hashlib.sha256, "SHA512": hashlib.sha512}[query.get("algorithm", "SHA1").upper()]
    digits, period = int(query.get("digits", 6)), int(query.get("period", 30))
    counter = int((at or time.time()) // period) + offset
    digest = hmac.new(secret, struct.pack(">Q", counter), algorithm).digest()
    start = digest[-1] & 0x0F
    value = (struct.unpack(">I", digest[start:start + 4])[0] & 0x7FFFFFFF) % 10 ** digits
    return str(value).zfill(digits)


# MARK: A software authenticator (ES256, `none` attestation)


def cbor(value):
    def head(major, n):
        if n < 24:
            return bytes([major << 5 | n])
        for size, code in ((1, 24), (2, 25), (4, 26), (8, 27)):
            if n < 1 << (8 * size):
                return bytes([major << 5 | code]) + n.to_bytes(size, "big")
        raise ValueError(n)

    if isinstance(value, int):
        return head(0, value) if value >= 0 else head(1, -1 - value)
    if isinstance(value, bytes):
        return head(2, len(value)) + value
    if isinstance(value, str):
        return head(3, len(value.encode())) + value.encode()
    if isinstance(value, dict):
        return head(5, len(value)) + b"".join(cbor(k) + cbor(v) for k, v in value.items())
    raise TypeError(type(value))


class SoftPasskey:
    """A platform authenticator: origin https://<rpId>, user present and verified."""

    def __init__(self):
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.credential_id = os.urandom(32)
        self.user_handle = None
        self.count = 0

    def attestation(self, options):
        rp_id = options["rp"]["id"]
        self.user_handle = options["user"]["id"]
        numbers = self.key.public_key().public_numbers()
        cose = cbor({1: 2, 3: -7, -1: 1, -2: numbers.x.to_bytes(32, "big"), -3: numbers.y.to_bytes(32, "big")})
        auth_data = (hashlib.sha256(rp_id.encode()).digest() + bytes([0x01 | 0x04 | 0x40]) + (0).to_bytes(4, "big") + bytes(16)
                     + len(self.credential_id).to_bytes(2, "big") + self.credential_id + cose)
        client_data = json.dumps({"type": "webauthn.create", "challenge": options["challenge"], "origin": "https://" + rp_id},
                                 separators=(",", ":")).encode()
        return {"id": b64u(self.credential_id), "rawId": b64u(self.credential_id), "type": "public-key",
                "response": {"clientDataJSON": b64u(client_data), "attestationObject": b64u(cbor({"fmt": "none", "attStmt": {}, "authData": auth_data})),
                             "transports": ["internal"]}, "clientExtensionResults": {}}

    def assertion(self, options, verified=True):
        """For WebAuthn request options (`challenge`, `rpId`, `allowCredentials`); `verified=False`: the
        user was present but not verified (a tap, no biometric or PIN: UV flag 0x04 clear)."""
        rp_id = options["rpId"]
        allowed = [c["id"] for c in options.get("allowCredentials") or []]
        check(not allowed or b64u(self.credential_id) in allowed, "the passkey is not among allowCredentials")
        self.count += 1
        flags = 0x01 | (0x04 if verified else 0)
        auth_data = hashlib.sha256(rp_id.encode()).digest() + bytes([flags]) + self.count.to_bytes(4, "big")
        client_data = json.dumps({"type": "webauthn.get", "challenge": options["challenge"], "origin": "https://" + rp_id},
                                 separators=(",", ":")).encode()
        signature = self.key.sign(auth_data + hashlib.sha256(client_data).digest(), ec.ECDSA(hashes.SHA256()))
        return {"id": b64u(self.credential_id), "rawId": b64u(self.credential_id), "type": "public-key",
                "response": {"clientDataJSON": b64u(client_data), "authenticatorData": b64u(auth_data), "signature": b64u(signature),
                             "userHandle": self.user_handle}, "clientExtensionResults": {}, "authenticatorAttachment": "platform"}


# MARK: The client


class Answer:
    def __init__(self, response):
        self.status = response.status_code
        self.headers = response.headers
        try:
            self.body = response.json()
        except ValueError:
            self.body = None

    @property
    def error(self):
        return (self.body or {}).get("error")

    def __repr__(self):
        return f"{self.status} {json.dumps(shorten(self.body)) if self.body is not None else ''}"


class FirstPartyClient:
    """A first-party app: its client id, the issuer, and what discovery tells."""

    def __init__(self, issuer, client_id, transcript, http=None, secret=None):
        self.issuer, self.client_id, self.transcript, self.secret = issuer, client_id, transcript, secret
        self.http = http or requests.Session()
        self.metadata = None

    def with_client(self, client_id, secret=None):
        other = FirstPartyClient(self.issuer, client_id, self.transcript, self.http, secret)
        other.metadata = self.metadata
        return other

    def discover(self):
        """RFC 8414 section 3: the well-known suffix goes between the host and the issuer's path."""
        parts = urllib.parse.urlsplit(self.issuer)
        url = f"{parts.scheme}://{parts.netloc}/.well-known/oauth-authorization-server{parts.path.rstrip('/')}"
        response = self.http.get(url, timeout=30)
        check(response.status_code == 200, f"discovery {url}: {response.status_code}")
        metadata = response.json()
        check(metadata.get("issuer") == self.issuer, f"discovery: issuer {metadata.get('issuer')!r} is not {self.issuer!r} (RFC 8414 section 3.3)")
        for member in ("authorization_challenge_endpoint", "token_endpoint"):
            check(metadata.get(member, "").startswith(("https://", "http://")), f"discovery: no {member}")
        check("S256" in metadata.get("code_challenge_methods_supported", []), "discovery: S256 not in code_challenge_methods_supported")
        check("authorization_code" in metadata.get("grant_types_supported", []), "discovery: authorization_code not in grant_types_supported")
        if "userinfo_endpoint" not in metadata:  # an OpenID provider lists it in its own discovery document
            oidc = self.http.get(f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}/.well-known/openid-configuration", timeout=30)
            if oidc.status_code == 200:
                metadata.setdefault("userinfo_endpoint", oidc.json().get("userinfo_endpoint"))
        self.metadata = metadata
        return metadata

    def _post(self, url, form, dpop=None):
        if self.secret is not None:  # client_secret_basic (RFC 6749 section 2.3.1) instead of client_id in the body
            form = {k: v for k, v in form.items() if k != "client_id"}
        for attempt in range(2):
            headers = {"Accept": "application/json"}
            if self.secret is not None:
                pair = urllib.parse.quote(self.client_id, safe="") + ":" + urllib.parse.quote(self.secret, safe="")
                headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
            if dpop is not None:
                headers["DPoP"] = dpop.proof("POST", url)
            response = self.http.post(url, data=form, headers=headers, timeout=60)
            self.transcript.exchange("POST", url, headers, form, response)
            nonce = response.headers.get("DPoP-Nonce")
            if dpop is not None and nonce:
                dpop.nonce = nonce
            answer = Answer(response)
            # RFC 9449 section 8: a server nonce is asked for by use_dpop_nonce; retry once with it.
            if not (dpop is not None and answer.error == "use_dpop_nonce" and attempt == 0):
                return answer
        return answer

    def challenge(self, dpop=None, **params):
        """One request to the Authorization Challenge Endpoint (draft section 5.1)."""
        form = {"client_id": self.client_id, **{k: v for k, v in params.items() if v is not None}}
        answer = self._post(self.metadata["authorization_challenge_endpoint"], form, dpop)
        check(answer.body is not None and answer.headers.get("Content-Type", "").startswith("application/json"),
              f"challenge: not JSON: {answer.status} {answer.headers.get('Content-Type')}")
        return answer

    def start(self, pkce, login_hint=None, scope=SCOPE, dpop=None, **extra):
        # Draft section 5.1 (-04): response_type=code is required on the first request.
        return self.challenge(dpop=dpop, response_type="code", login_hint=login_hint, scope=scope, code_challenge=pkce.challenge,
                              code_challenge_method="S256", **extra)

    def token(self, form, dpop=None):
        answer = self._post(self.metadata["token_endpoint"], {"client_id": self.client_id, **form}, dpop)
        check(answer.body is not None, f"token endpoint: not JSON: {answer.status}")
        return answer

    def redeem(self, code, verifier, dpop=None):
        """Draft section 6: the token request with the authorization code and the PKCE verifier."""
        return self.token({"grant_type": "authorization_code", "code": code, "code_verifier": verifier}, dpop)

    def userinfo(self, tokens, dpop=None):
        url = self.metadata["userinfo_endpoint"]
        headers = {"Accept": "application/json"}
        access = tokens["access_token"]
        if dpop is not None:
            headers["Authorization"] = "DPoP " + access
            headers["DPoP"] = dpop.proof("GET", url, access_token=access)
        else:
            headers["Authorization"] = "Bearer " + access
        response = self.http.get(url, headers=headers, timeout=30)
        self.transcript.exchange("GET", url, headers, None, response)
        return Answer(response)

    def verify_id_token(self, id_token):
        """OpenID Connect Core section 3.1.3.7: signature by a key of jwks_uri, iss, aud."""
        jwks = self.http.get(self.metadata["jwks_uri"], timeout=30).json()
        kid = jwt.get_unverified_header(id_token).get("kid")
        key = next((k for k in jwks["keys"] if k.get("kid") == kid), None)
        check(key is not None, f"ID token: no key {kid} in the JWKS")
        signing = jwt.PyJWK(key)
        return jwt.decode(id_token, signing.key, algorithms=[signing.algorithm_name], audience=self.client_id, issuer=self.issuer)


# MARK: Assertions on the draft's answers


def expect_insufficient(answer, expecting):
    """Draft section 5.2.2.1 (-04): 403, error insufficient_authorization, an auth_session to continue with."""
    check(answer.status == 403 and answer.error == "insufficient_authorization",
          f"expected 403 insufficient_authorization {expecting}, got {answer!r}")
    check(isinstance(answer.body.get("auth_session"), str) and answer.body["auth_session"], "insufficient_authorization without auth_session")
    check(answer.body.get("expecting") == expecting, f"expecting {answer.body.get('expecting')}, not {expecting}")
    error_characters(answer)
    no_store(answer)
    return answer.body["auth_session"]


def no_store(answer):
    """An answer carrying a session or a code is not cached (the draft's examples; RFC 6749 section 5.1)."""
    check("no-store" in answer.headers.get("Cache-Control", ""), f"Cache-Control {answer.headers.get('Cache-Control')!r}, not no-store")


def expect_code(answer):
    """Draft section 5.2.1: 200 with authorization_code."""
    check(answer.status == 200 and isinstance((answer.body or {}).get("authorization_code"), str),
          f"expected 200 authorization_code, got {answer!r}")
    no_store(answer)
    return answer.body["authorization_code"]


def expect_error(answer, error, status=400):
    """Draft section 5.2.2 / RFC 6749 section 5.2: 400 (401 for invalid_client), error, a string error_description."""
    check(answer.status == status and answer.error == error, f"expected {status} {error}, got {answer!r}")
    check(isinstance(answer.body.get("error_description", ""), str), "error_description is not a string")
    error_characters(answer)


def error_characters(answer):
    """Draft section 5.2.2: error and error_description keep to %x20-21 / %x23-5B / %x5D-7E."""
    for member in ("error", "error_description"):
        text = (answer.body or {}).get(member, "")
        outside = [c for c in text if not (0x20 <= ord(c) <= 0x7E) or c in '"\\']
        check(not outside, f"{member} has characters outside section 5.2.2's set: {outside!r} in {text!r}")


def expect_tokens(answer, token_type="Bearer"):
    """RFC 6749 section 5.1 (and RFC 9449 section 5 for DPoP)."""
    check(answer.status == 200, f"token request: {answer!r}")
    body = answer.body
    for member in ("access_token", "token_type", "expires_in", "refresh_token", "id_token"):
        check(member in body, f"token response without {member}: {sorted(body)}")
    check(body["token_type"].lower() == token_type.lower(), f"token_type {body['token_type']}, not {token_type}")
    check(isinstance(body["expires_in"], int) and body["expires_in"] > 0, f"expires_in {body['expires_in']!r}")
    no_store(answer)
    return body


def race(calls):
    """Runs the calls at once (a thread each, released together); their answers in order."""
    barrier = threading.Barrier(len(calls))
    answers = [None] * len(calls)

    def run(i):
        barrier.wait()
        answers[i] = calls[i]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def jwt_claims(token):
    """The claims of a JWT without checking it (what the access token says of itself), or None."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        return json.loads(b64u_decode(parts[1]))
    except ValueError:
        return None


# MARK: Mail over real SMTP (aiosmtpd, in this process)


class Mailbox:
    def __init__(self, port):
        self.messages = []
        self.condition = threading.Condition()
        self.controller = Controller(self, hostname="127.0.0.1", port=port)
        self.controller.start()

    def stop(self):
        self.controller.stop()

    async def handle_DATA(self, server, session, envelope):
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        body = message.get_body(("plain",))
        with self.condition:
            self.messages.append({"to": [a.lower() for a in envelope.rcpt_tos], "subject": str(message["subject"]),
                                  "text": body.get_content() if body is not None else ""})
            self.condition.notify_all()
        return "250 Message accepted"

    def mark(self):
        with self.condition:
            return len(self.messages)

    def wait(self, address, since, find, timeout=60):
        """The first non-None find(text) of a mail to address received after `since`."""
        deadline = time.monotonic() + timeout
        with self.condition:
            while True:
                for message in self.messages[since:]:
                    if address.lower() in message["to"]:
                        found = find(message["text"])
                        if found is not None:
                            return found
                left = deadline - time.monotonic()
                if left <= 0:
                    # Modgud sends no new code or link while one went out to the address within 120 s and is unspent.
                    raise Failed(f"no matching mail to {address} within {timeout} s (an unspent code or link of the last 2 minutes?)")
                self.condition.wait(left)

    def code(self, address, since):
        return self.wait(address, since, lambda text: (m.group(1) if (m := re.search(r"\b(\d{6})\b", text)) else None))

    def link(self, address, since):
        """(userId, token) of the link in the mail."""
        def find(text):
            for url in re.findall(r"https?://\S+", text):
                query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
                if "userId" in query and "token" in query:
                    return query["userId"], query["token"]
            return None
        return self.wait(address, since, find)


# MARK: Modgud's set-up (admin API and passkey enrollment: not the draft's)


class ModgudSetup:
    REALM = "fp"
    APP = "fp-app"
    OTHER = "fp-other"
    TEAMMATE = "fp-app2"
    TV = "fp-tv"
    RP_ID = "fp.modgud.test"

    def __init__(self, issuer, admin_token):
        self.issuer = issuer
        self.http = requests.Session()
        self.http.headers["Authorization"] = "Bearer " + admin_token

    def admin(self, method, path, body=None, expect=(200, 201)):
        response = self.http.request(method, self.issuer + "/admin/api" + path, json=body, timeout=60)
        if response.status_code not in expect:
            raise Failed(f"set-up: admin {method} {path}: {response.status_code} {response.text[:300]}")
        return response.json() if response.text else None

    def realm(self):
        # The dev realm holds 127.0.0.1 and localhost; the test's realm takes 127.0.0.1 (as ops/auth0-sdk-test does).
        self.admin("PATCH", "/realms/dev", {"Hosts": ["localhost"]})
        # Every session names its own address but a few users sign in more than once: the per-mailbox
        # limits are raised; the other limits stay the defaults.
        self.admin("POST", "/realms", {
            "Id": self.REALM, "Hosts": ["127.0.0.1"], "DisplayName": "First-party test", "PrimaryDomain": self.RP_ID,
            "NativeGrants": {"Enabled": True}, "RegistrationPosture": "JitOnOtp", "MagicLinkEnabled": True,
            "RateLimits": {"otp-request.mailbox": {"Limit": 1000, "WindowSeconds": 3600, "Burst": 1000},
                           # flow i tries one address's codes seven times (the limit's own test is RecoveryCodeTests)
                           "recovery-code.mailbox": {"Limit": 1000, "WindowSeconds": 3600, "Burst": 1000},
                           # every flow's requests come from one address and mostly one client: all ten
                           # flows in a row pass the default 120 a minute per client and source
                           "token.client-source": {"Limit": 6000, "WindowSeconds": 60, "Burst": 6000}},
            # flow j: the app and its teammate share a sign-in on a device (Native SSO)
            "NativeSSOTeams": [{"Name": "fp-team", "Clients": [self.APP, self.TEAMMATE]}],
            "SigningAlgorithm": "ES256"})
        self.admin("POST", f"/realms/{self.REALM}/clients", {
            "Id": self.APP, "Type": "public", "Grants": ["urn:cocoar:otp", "urn:cocoar:magic", "urn:cocoar:passkey", "refresh_token",
                                                        "urn:modgud:recovery-code"],
            "Scopes": ["openid", "email", "offline_access"], "RpId": self.RP_ID})
        self.admin("POST", f"/realms/{self.REALM}/clients", {
            "Id": self.TEAMMATE, "Type": "public", "Grants": ["urn:ietf:params:oauth:grant-type:token-exchange", "refresh_token"],
            "Scopes": ["openid", "email", "offline_access"]})
        # flow k: a TV that signs in with the device grant (RFC 8628)
        self.admin("POST", f"/realms/{self.REALM}/clients", {
            "Id": self.TV, "Type": "public", "DisplayName": "First-party TV",
            "Grants": ["urn:ietf:params:oauth:grant-type:device_code", "refresh_token"], "Scopes": ["openid", "email", "offline_access"]})
        self.admin("POST", f"/realms/{self.REALM}/clients", {
            "Id": self.OTHER, "Type": "public", "Grants": ["urn:cocoar:otp", "refresh_token"], "Scopes": ["openid", "email", "offline_access"]})
        # The instance hears of the changes by NOTIFY: wait until 127.0.0.1 is the new realm's.
        for _ in range(300):
            info = requests.get(self.issuer + "/api/app-info", timeout=10)
            if info.status_code == 200 and info.json().get("DisplayName") == "First-party test":
                return
            time.sleep(0.1)
        raise Failed("set-up: 127.0.0.1 is not served by the new realm after 30 s")

    def user(self, address):
        return self.admin("POST", f"/realms/{self.REALM}/users", {"Email": address})["Id"]

    def totp_on(self, user_id):
        return self.admin("POST", f"/realms/{self.REALM}/users/{user_id}/totp")

    def enroll_passkey(self, access_token, transcript):
        """docs/guides/passkeys-in-an-app.md step 4, within 10 minutes of the sign-in."""
        passkey = SoftPasskey()
        bearer = {"Authorization": "Bearer " + access_token}
        url = self.issuer + "/connect/passkey/enroll/begin"
        begun = requests.post(url, headers=bearer, timeout=60)
        transcript.exchange("POST", url, bearer, None, begun)
        check(begun.status_code == 200, f"enroll/begin: {begun.status_code} {begun.text[:200]}")
        options = begun.json()
        url = self.issuer + "/connect/passkey/enroll"
        done = requests.post(url, headers=bearer, timeout=60, json={
            "ceremonyId": options["ceremonyId"], "attestation": passkey.attestation(options["options"]), "DisplayName": "first-party-test"})
        transcript.exchange("POST", url, bearer, {"ceremonyId": options["ceremonyId"], "attestation": "<attestation>"}, done)
        check(done.status_code == 200, f"enroll: {done.status_code} {done.text[:200]}")
        check(options["options"]["rp"]["id"] == self.RP_ID, f"enrolled under rp {options['options']['rp']['id']}")
        return passkey


# MARK: The flows


class Run:
    def __init__(self, args):
        self.issuer = args.issuer.rstrip("/")
        self.setup = ModgudSetup(self.issuer, args.admin_token)
        self.mail = Mailbox(args.smtp_port)
        self.tag = secrets.token_hex(3)
        self.signed_in = {}  # flow a's sign-in, for the passkey enrollment of flow d
        self.peers = [p.rstrip("/") for p in (args.peers or "").split(",") if p]

    def address(self, name):
        return f"{name}-{self.tag}@fp.modgud.test"

    def client(self, transcript, client_id=ModgudSetup.APP, issuer=None):
        client = FirstPartyClient(issuer or self.issuer, client_id, transcript)
        client.discover()
        return client

    def email_code_sign_in(self, client, address, dpop=None, **extra):
        """login_hint -> email_code -> authorization_code; returns (code, pkce)."""
        pkce = PKCE()
        since = self.mail.mark()
        session = expect_insufficient(client.start(pkce, login_hint=address, dpop=dpop, **extra), ["email_code"])
        code = self.mail.code(address, since)
        return expect_code(client.challenge(dpop=dpop, auth_session=session, email_code=code)), pkce

    def tokens_and_userinfo(self, client, code, pkce, address, dpop=None):
        tokens = expect_tokens(client.redeem(code, pkce.verifier, dpop), "DPoP" if dpop else "Bearer")
        claims = client.verify_id_token(tokens["id_token"])
        profile = client.userinfo(tokens, dpop)
        check(profile.status == 200, f"userinfo: {profile!r}")
        check(profile.body.get("sub") == claims["sub"], f"userinfo sub {profile.body.get('sub')} is not the ID token's {claims['sub']}")
        if address:
            check(profile.body.get("email") == address, f"userinfo email {profile.body.get('email')}, not {address}")
        return tokens, claims

    # a
    def flow_email_code(self, t):
        client = self.client(t)
        address = self.address("ada")
        user = self.setup.user(address)
        nonce = b64u(os.urandom(16))
        code, pkce = self.email_code_sign_in(client, address, nonce=nonce)
        tokens, claims = self.tokens_and_userinfo(client, code, pkce, address)
        check(claims["sub"] == user, f"ID token sub {claims['sub']}, the user is {user}")
        # OpenID Connect Core 3.1.3.7 step 11: the nonce of the request.
        check(claims.get("nonce") == nonce, f"ID token nonce {claims.get('nonce')!r}, the request's was {nonce!r}")
        self.signed_in = {"address": address, "user": user, "tokens": tokens}
        t.note(f"ID token verified (iss, aud, signature, nonce); amr {claims.get('amr')}")

    # b
    def flow_dpop(self, t):
        client = self.client(t)
        check("ES256" in client.metadata.get("dpop_signing_alg_values_supported", []), "discovery: ES256 not in dpop_signing_alg_values_supported")
        address = self.address("dpop")
        self.setup.user(address)
        key, other = DPoPKey(), DPoPKey()
        pkce = PKCE()
        since = self.mail.mark()
        session = expect_insufficient(client.start(pkce, login_hint=address, dpop=key), ["email_code"])
        otp = self.mail.code(address, since)
        expect_error(client.challenge(dpop=other, auth_session=session, email_code=otp), "invalid_session")
        t.note("another key continuing the session: invalid_session")
        expect_error(client.challenge(auth_session=session, email_code=otp), "invalid_session")
        t.note("no proof continuing the session: invalid_session")
        code = expect_code(client.challenge(dpop=key, auth_session=session, email_code=otp))
        tokens, _ = self.tokens_and_userinfo(client, code, pkce, address, dpop=key)
        access = jwt_claims(tokens["access_token"])
        if access is not None:
            check((access.get("cnf") or {}).get("jkt") == key.thumbprint, f"access token cnf {access.get('cnf')}, key {key.thumbprint}")
            t.note("access token cnf.jkt is the key's thumbprint")
        bearer = client.userinfo(tokens)
        check(bearer.status == 401, f"a DPoP-bound token sent as Bearer: {bearer!r}")
        t.note("the DPoP-bound token sent as Bearer: 401")
        # Another key redeeming: invalid_grant, and the code is spent.
        code, pkce = self.email_code_sign_in(client, address, dpop=key)
        expect_error(client.redeem(code, pkce.verifier, dpop=other), "invalid_grant")
        expect_error(client.redeem(code, pkce.verifier, dpop=key), "invalid_grant")
        t.note("another key redeeming: invalid_grant; then the right key: invalid_grant (spent)")
        # A session begun without DPoP cannot be continued with it.
        pkce = PKCE()
        since = self.mail.mark()
        session = expect_insufficient(client.start(pkce, login_hint=address), ["email_code"])
        otp = self.mail.code(address, since)
        expect_error(client.challenge(dpop=key, auth_session=session, email_code=otp), "invalid_session")
        t.note("a session begun without DPoP continued with a proof: invalid_session")

    # c
    def flow_magic_link(self, t):
        client = self.client(t)
        address = self.address("link")
        user = self.setup.user(address)
        pkce = PKCE()
        since = self.mail.mark()
        answer = client.start(pkce, login_hint=address, email_delivery="link")
        if answer.error == "insufficient_authorization" and (answer.body or {}).get("expecting") == ["email_code"]:
            raise Failed("the server ignored email_delivery=link: it answered expecting [email_code] (and mailed a code)")
        session = expect_insufficient(answer, ["user_id", "magic_token"])
        user_id, token = self.mail.link(address, since)
        check(user_id == user, f"the link's userId {user_id} is not the user {user}")
        code = expect_code(client.challenge(auth_session=session, user_id=user_id, magic_token=token))
        _, claims = self.tokens_and_userinfo(client, code, pkce, address)
        t.note(f"amr {claims.get('amr')}")

    # d
    def flow_passkey(self, t):
        client = self.client(t)
        if not self.signed_in:  # flow a did not run (or failed before signing in): sign in the same way
            address = self.address("pk")
            user = self.setup.user(address)
            code, pkce = self.email_code_sign_in(client, address)
            self.signed_in = {"address": address, "user": user, "tokens": expect_tokens(client.redeem(code, pkce.verifier))}
        t.note("set-up (Modgud's endpoints): enrol a passkey with flow a's access token")
        passkey = self.setup.enroll_passkey(self.signed_in["tokens"]["access_token"], t)
        pkce = PKCE()
        answer = client.start(pkce)
        session = expect_insufficient(answer, ["passkey_assertion"])
        options = answer.body.get("passkey_options")
        check(isinstance(options, dict) and options.get("challenge") and options.get("rpId") == ModgudSetup.RP_ID,
              f"passkey_options {shorten(options)}")
        code = expect_code(client.challenge(auth_session=session, passkey_assertion=json.dumps(passkey.assertion(options))))
        _, claims = self.tokens_and_userinfo(client, code, pkce, self.signed_in["address"])
        check(claims["sub"] == self.signed_in["user"], f"passkey sign-in is {claims['sub']}, not {self.signed_in['user']}")
        t.note(f"amr {claims.get('amr')}")

    # e
    def flow_totp(self, t):
        client = self.client(t)
        address = self.address("totp")
        user = self.setup.user(address)
        secret = self.setup.totp_on(user)
        t.note("set-up: TOTP on by the admin API, its otpauth URI kept")
        pkce = PKCE()
        since = self.mail.mark()
        session = expect_insufficient(client.start(pkce, login_hint=address), ["email_code"])
        otp = self.mail.code(address, since)
        session = expect_insufficient(client.challenge(auth_session=session, email_code=otp), ["totp_code"])
        right = totp(secret["OtpauthUri"])
        wrong = str((int(right) + 1) % 10 ** len(right)).zfill(len(right))
        session = expect_insufficient(client.challenge(auth_session=session, totp_code=wrong), ["totp_code"])
        t.note("a wrong totp_code: asked again")
        code = expect_code(client.challenge(auth_session=session, totp_code=totp(secret["OtpauthUri"])))
        _, claims = self.tokens_and_userinfo(client, code, pkce, address)
        check("mfa" in (claims.get("amr") or []), f"amr {claims.get('amr')} without mfa")
        t.note(f"amr {claims.get('amr')}")

    # f
    def flow_refusals(self, t):
        client = self.client(t)
        other = client.with_client(ModgudSetup.OTHER)
        address = self.address("refuse")
        self.setup.user(address)
        # Another client continuing the session (with the right code): invalid_session; the session is still its client's.
        pkce = PKCE()
        since = self.mail.mark()
        session = expect_insufficient(client.start(pkce, login_hint=address), ["email_code"])
        otp = self.mail.code(address, since)
        expect_error(other.challenge(auth_session=session, email_code=otp), "invalid_session")
        t.note("another client's auth_session: invalid_session")
        code = expect_code(client.challenge(auth_session=session, email_code=otp))
        # The auth_session replayed after its code was issued.
        expect_error(client.challenge(auth_session=session, email_code=otp), "invalid_session")
        t.note("auth_session replayed after success: invalid_session")
        # A wrong verifier: invalid_grant, and the code is spent.
        expect_error(client.redeem(code, PKCE().verifier), "invalid_grant")
        expect_error(client.redeem(code, pkce.verifier), "invalid_grant")
        t.note("wrong code_verifier: invalid_grant; then the right one: invalid_grant (spent)")
        # A code redeemed twice: its tokens and the auth_session of its token response are revoked (-04).
        code, pkce = self.email_code_sign_in(client, address)
        tokens = expect_tokens(client.redeem(code, pkce.verifier))
        expect_error(client.redeem(code, pkce.verifier), "invalid_grant")
        check(client.userinfo(tokens).status == 401, "the access token of a reused code still works")
        expect_error(client.challenge(response_type="code", auth_session=tokens["auth_session"], code_challenge=PKCE().challenge,
                                      code_challenge_method="S256", scope=SCOPE), "invalid_session")
        t.note("a code redeemed again: invalid_grant; its access token 401, its auth_session invalid_session")
        # Another client redeeming the code: invalid_grant, and the code is spent.
        code, pkce = self.email_code_sign_in(client, address)
        expect_error(other.redeem(code, pkce.verifier), "invalid_grant")
        expect_error(client.redeem(code, pkce.verifier), "invalid_grant")
        t.note("another client redeeming: invalid_grant; then its own: invalid_grant (spent)")
        # Section 5.1: response_type is REQUIRED.
        expect_error(client.challenge(login_hint=address, scope=SCOPE, code_challenge=PKCE().challenge, code_challenge_method="S256"),
                     "invalid_request")
        t.note("no response_type: invalid_request")
        # The first request without PKCE, or with the plain method.
        expect_error(client.challenge(response_type="code", login_hint=address, scope=SCOPE), "invalid_request")
        t.note("no code_challenge: invalid_request")
        verifier = PKCE().verifier
        expect_error(client.challenge(response_type="code", login_hint=address, scope=SCOPE, code_challenge=verifier, code_challenge_method="plain"),
                     "invalid_request")
        t.note("code_challenge_method=plain: invalid_request")
        # An auth_session the server never issued.
        expect_error(client.challenge(auth_session=b64u(os.urandom(32)), email_code="123456"), "invalid_session")
        t.note("unknown auth_session: invalid_session")
        # An unknown client (RFC 6749 section 5.2: invalid_client; 401 when it authenticated with the Authorization header).
        expect_error(client.with_client("no-such-app").start(PKCE(), login_hint=address), "invalid_client")
        t.note("unknown public client_id: 400 invalid_client")
        answer = client.with_client("no-such-app", secret="wrong").start(PKCE(), login_hint=address)
        expect_error(answer, "invalid_client", status=401)
        check("WWW-Authenticate" in answer.headers, "401 without WWW-Authenticate")
        t.note("unknown client by client_secret_basic: 401 invalid_client")
        # A wrong email code: invalid_grant; the session goes on with the right one.
        pkce = PKCE()
        since = self.mail.mark()
        session = expect_insufficient(client.start(pkce, login_hint=address), ["email_code"])
        otp = self.mail.code(address, since)
        wrong = str((int(otp) + 1) % 1000000).zfill(6)
        expect_error(client.challenge(auth_session=session, email_code=wrong), "invalid_grant")
        expect_code(client.challenge(auth_session=session, email_code=otp))
        t.note("a wrong email_code: invalid_grant; the right one then: authorization_code")
        t.note("not tested live: an expired auth_session (10 min) or code (60 s)")

    # h
    def flow_step_up(self, t):
        """Section 6.1 with RFC 9470: the token response's auth_session, presented again with a new PKCE
        challenge and the API's max_age and acr_values, asks for a code to the person's own address (no
        login_hint) and signs the same person in afresh; the presented session is spent."""
        client = self.client(t)
        address = self.address("stepup")
        user = self.setup.user(address)
        code, pkce = self.email_code_sign_in(client, address)
        tokens = expect_tokens(client.redeem(code, pkce.verifier))
        session = tokens.get("auth_session")
        check(isinstance(session, str) and session, f"token response without auth_session: {sorted(tokens)}")
        first = client.verify_id_token(tokens["id_token"])
        t.note("the token response carries an auth_session (section 6.1)")
        pkce = PKCE()
        since = self.mail.mark()
        answer = client.challenge(response_type="code", auth_session=session, code_challenge=pkce.challenge, code_challenge_method="S256",
                                  scope=SCOPE, max_age="0", acr_values="urn:modgud:email-code")
        following = expect_insufficient(answer, ["email_code"])
        check(following != session, "the step-up answered with the presented auth_session")
        otp = self.mail.code(address, since)
        code = expect_code(client.challenge(auth_session=following, email_code=otp))
        again = expect_tokens(client.redeem(code, pkce.verifier))
        claims = client.verify_id_token(again["id_token"])
        check(claims["sub"] == user and first["sub"] == user, f"step-up signed in {claims['sub']}, not {user}")
        # auth_time has a resolution of one second: not before the first, and a new sign-in (its own refresh token).
        check(claims["auth_time"] >= first["auth_time"], f"auth_time {claims['auth_time']} is before {first['auth_time']}")
        check(again["refresh_token"] != tokens["refresh_token"], "the step-up gave the old refresh token")
        t.note(f"step-up with max_age=0: a code to the own address, the same sub, auth_time {first['auth_time']} -> {claims['auth_time']}")
        expect_error(client.challenge(response_type="code", auth_session=session, code_challenge=PKCE().challenge, code_challenge_method="S256"),
                     "invalid_session")
        t.note("the token response's auth_session presented again: invalid_session")

    # g
    def flow_instances(self, t):
        """Every step on another instance (one database): begin on the first, the code on the second,
        the redemption on the third, DPoP-bound; then two instances racing the last step of one session,
        and three racing to redeem one code: the database lets exactly one through each time."""
        check(len(self.peers) >= 2, "flow g needs --peers with two more instances")
        one = self.client(t)
        two, three = (self.client(t, issuer=peer) for peer in self.peers[:2])
        address = self.address("instances")
        self.setup.user(address)
        key = DPoPKey()
        pkce = PKCE()
        since = self.mail.mark()
        session = expect_insufficient(one.start(pkce, login_hint=address, dpop=key), ["email_code"])
        otp = self.mail.code(address, since)
        code = expect_code(two.challenge(dpop=key, auth_session=session, email_code=otp))
        tokens = expect_tokens(three.redeem(code, pkce.verifier, dpop=key), "DPoP")
        check(one.userinfo(tokens, key).status == 200, "the tokens from the third instance at the first")
        t.note("begun on instance 1, code on 2, redeemed on 3 (DPoP-bound): tokens; userinfo on 1")
        expect_error(one.challenge(dpop=key, auth_session=session, email_code=otp), "invalid_session")
        t.note("the session replayed on instance 1: invalid_session")

        # The last step twice at once, on two instances.
        pkce = PKCE()
        since = self.mail.mark()
        session = expect_insufficient(one.start(pkce, login_hint=address), ["email_code"])
        otp = self.mail.code(address, since)
        answers = race([lambda c=c: c.challenge(auth_session=session, email_code=otp) for c in (two, three)])
        codes = [a.body["authorization_code"] for a in answers if a.status == 200 and "authorization_code" in (a.body or {})]
        check(len(codes) == 1, f"two instances raced one session's last step: {answers}")
        check(all(a.status in (200, 400) for a in answers), f"the loser's answer: {answers}")
        t.note(f"one session's last step on instances 2 and 3 at once: one code ({[a.status for a in answers]})")

        # One code redeemed on three instances at once.
        answers = race([lambda c=c: c.redeem(codes[0], pkce.verifier) for c in (one, two, three)])
        won = [a for a in answers if a.status == 200]
        check(len(won) == 1, f"three instances redeemed one code: {answers}")
        check(all(a.error == "invalid_grant" for a in answers if a.status != 200), f"the losers' answers: {answers}")
        t.note(f"one code redeemed on instances 1, 2 and 3 at once: one token response ({[a.status for a in answers]})")

    # j
    def flow_native_sso(self, t):
        """OpenID Connect Native SSO for Mobile Apps, draft 07, written from the draft alone: app 1 signs in
        (the first-party flow above) with `device_sso` and gets a `device_secret`, its ID token `sid` and
        `ds_hash` (section 3); the teammate app exchanges the ID token and the secret at the token endpoint
        (section 4.1: token exchange, the device secret as actor, `audience` the issuer) on instance 2,
        refreshes on instance 3; revoking the device secret (RFC 7009) on instance 3 signs both apps out.
        The other instances are reached as a load balancer would: the issuer's Host header, another port."""
        check(len(self.peers) >= 2, "flow j needs --peers with two more instances")
        one = self.client(t)
        check(one.metadata.get("native_sso_supported") is True or self.oidc(one).get("native_sso_supported") is True,
              "discovery: native_sso_supported is not true (section 5)")
        host = urllib.parse.urlsplit(self.issuer).netloc

        def post(base, path, form):
            url = base + path
            response = requests.post(url, data=form, headers={"Host": host, "Accept": "application/json"}, timeout=60)
            t.exchange("POST", url, {"Host": host}, form, response)
            return Answer(response)

        address = self.address("sso")
        user = self.setup.user(address)
        code, pkce = self.email_code_sign_in(one, address, scope="openid email offline_access device_sso")
        tokens = expect_tokens(one.redeem(code, pkce.verifier))
        secret = tokens.get("device_secret")
        check(isinstance(secret, str) and len(secret) >= 32, f"section 3.3: no device_secret in {sorted(tokens)}")
        first = one.verify_id_token(tokens["id_token"])
        check(first["sub"] == user and first.get("sid"), f"the ID token names the user and a session: {first}")
        check(first.get("ds_hash") == b64u(hashlib.sha256(secret.encode()).digest()), "ds_hash is the secret's SHA-256 (base64url)")
        t.note(f"app 1 signed in with device_sso: device_secret, sid {short(first['sid'])}, ds_hash checked")

        exchange = {
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "client_id": ModgudSetup.TEAMMATE,
            "subject_token": tokens["id_token"], "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
            "actor_token": secret, "actor_token_type": "urn:openid:params:token-type:device-secret",
            "audience": self.issuer, "scope": "openid email offline_access"}
        answer = post(self.peers[0], "/connect/token", exchange)
        second = expect_tokens(answer)
        check(second.get("issued_token_type") == "urn:ietf:params:oauth:token-type:access_token", f"issued_token_type: {second}")
        claims = one.with_client(ModgudSetup.TEAMMATE).verify_id_token(second["id_token"])
        check(claims["sub"] == user and claims.get("sid") == first["sid"], f"the teammate's ID token is the same person and session: {claims}")
        t.note("the teammate exchanged them on instance 2: its own tokens, the same sub and sid")
        expect_error(post(self.peers[0], "/connect/token", {k: v for k, v in exchange.items() if k != "audience"}), "invalid_request")
        t.note("without audience (REQUIRED, section 4.1): invalid_request")

        refreshed = expect_tokens(post(self.peers[1], "/connect/token", {
            "grant_type": "refresh_token", "client_id": ModgudSetup.TEAMMATE, "refresh_token": second["refresh_token"]}))
        t.note("the teammate refreshed on instance 3")
        signed_out = post(self.peers[1], "/connect/revoke", {"client_id": ModgudSetup.TEAMMATE, "token": secret})
        check(signed_out.status == 200, f"revoking the device secret: {signed_out!r}")
        expect_error(one.token({"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]}), "invalid_grant")
        expect_error(post(self.peers[0], "/connect/token", {
            "grant_type": "refresh_token", "client_id": ModgudSetup.TEAMMATE, "refresh_token": refreshed["refresh_token"]}), "invalid_grant")
        expect_error(post(self.peers[0], "/connect/token", exchange), "invalid_grant")
        t.note("the device secret revoked on instance 3: app 1's and the teammate's refresh refused, the exchange refused")

    # k
    def flow_device_grant(self, t):
        """The device authorization grant (RFC 8628) across instances, the device side written from the RFC
        alone: the TV finds `device_authorization_endpoint` by discovery (section 4), asks on instance 1
        (section 3.1) and checks section 3.2's answer; its poll on instance 2 is `authorization_pending`, a
        poll at once on instance 3 `slow_down` (section 3.5: the interval then grows by 5 seconds, and the
        TV keeps to it). The person's side is Modgud's (docs/guides/device-grant.md): signed in on the phone
        app, they type the code on instance 3 (`/connect/device/verify`, with the app's bearer token), see
        the TV's client and name, and approve with a passkey assertion; one without user verification (a
        phished approval) is refused first. After the interval, three polls at once on three instances:
        one gets the person's tokens, the others `invalid_grant`."""
        check(len(self.peers) >= 2, "flow k needs --peers with two more instances")
        phone = self.client(t)
        metadata = self.oidc(phone)
        endpoint = metadata.get("device_authorization_endpoint", "")
        check(endpoint.startswith(("http://", "https://")), f"discovery: no device_authorization_endpoint (section 4): {sorted(metadata)}")
        grant = "urn:ietf:params:oauth:grant-type:device_code"
        check(grant in metadata.get("grant_types_supported", []), "discovery: the device_code grant is not in grant_types_supported")
        host = urllib.parse.urlsplit(self.issuer).netloc
        path = urllib.parse.urlsplit(endpoint).path

        def post(base, path, form=None, json_body=None, bearer=None):
            url = base + path
            headers = {"Host": host, "Accept": "application/json"}
            if bearer:
                headers["Authorization"] = "Bearer " + bearer
            response = requests.post(url, data=form, json=json_body, headers=headers, timeout=60)
            t.exchange("POST", url, {"Host": host}, form or json_body, response)
            return Answer(response)

        def poll(base, device_code):
            return post(base, urllib.parse.urlsplit(phone.metadata["token_endpoint"]).path,
                        {"grant_type": grant, "device_code": device_code, "client_id": ModgudSetup.TV})

        asked = post(self.issuer, path, {"client_id": ModgudSetup.TV, "scope": SCOPE, "device_name": "Living room TV"})
        check(asked.status == 200 and asked.headers.get("Cache-Control") == "no-store", f"section 3.2: {asked!r}")
        for member in ("device_code", "user_code", "verification_uri", "expires_in"):
            check(member in asked.body, f"section 3.2: {member} is REQUIRED: {sorted(asked.body)}")
        interval = asked.body.get("interval", 5)  # section 3.2: 5 when absent
        complete = asked.body.get("verification_uri_complete")
        check(complete is None or asked.body["user_code"] in urllib.parse.unquote(complete), "verification_uri_complete carries the user code")
        device_code, user_code = asked.body["device_code"], asked.body["user_code"]
        t.note(f"device authorization on instance 1: user_code {user_code}, interval {interval}, expires_in {asked.body['expires_in']}")
        expect_error(poll(self.peers[0], device_code), "authorization_pending")
        expect_error(poll(self.peers[1], device_code), "slow_down")
        interval += 5  # section 3.5: "the interval MUST be increased by 5 seconds for this and all subsequent requests"
        t.note("instance 2: authorization_pending; instance 3 at once: slow_down (the pace is the database's, not an instance's)")

        address = self.address("tv")
        user = self.setup.user(address)
        code, pkce = self.email_code_sign_in(phone, address)
        tokens = expect_tokens(phone.redeem(code, pkce.verifier))
        passkey = self.setup.enroll_passkey(tokens["access_token"], t)
        bearer = tokens["access_token"]
        shown = post(self.peers[1], "/connect/device/verify", json_body={"user_code": user_code.lower().replace("-", " ")}, bearer=bearer)
        check(shown.status == 200, f"verify: {shown!r}")
        check(shown.body.get("client_id") == ModgudSetup.TV and shown.body.get("client_name") == "First-party TV"
              and shown.body.get("device_name") == "Living room TV", f"the person sees what asks: {shown!r}")
        phished = post(self.peers[1], "/connect/device/approve", bearer=bearer, json_body={
            "authorization_id": shown.body["authorization_id"], "ceremonyId": shown.body["ceremonyId"],
            "assertion": passkey.assertion(shown.body["options"], verified=False)})
        check(phished.status == 400, f"an approval without user verification: {phished!r}")
        again = post(self.peers[0], "/connect/device/verify", json_body={"user_code": user_code}, bearer=bearer)
        approved = post(self.peers[1], "/connect/device/approve", bearer=bearer, json_body={
            "authorization_id": again.body["authorization_id"], "ceremonyId": again.body["ceremonyId"],
            "assertion": passkey.assertion(again.body["options"])})
        check(approved.status == 200 and approved.body.get("status") == "approved", f"approve: {approved!r}")
        t.note("the phone app: without user verification refused; with it approved (verify on instance 2, approve on instance 3)")

        time.sleep(interval)  # the protocol's own pace (section 3.5), not a wait for the server
        answers = race([lambda base=base: poll(base, device_code) for base in (self.issuer, *self.peers[:2])])
        won = [a for a in answers if a.status == 200]
        check(len(won) == 1, f"three polls at once after the approval: {answers}")
        check(all(a.error == "invalid_grant" for a in answers if a.status != 200), f"the other polls: {answers}")
        issued = expect_tokens(won[0])
        claims = phone.with_client(ModgudSetup.TV).verify_id_token(issued["id_token"])
        check(claims["sub"] == user, f"the TV's ID token is the person's: {claims}")
        t.note(f"three polls at once on three instances: one token response ({[a.status for a in answers]}), sub {short(claims['sub'])}")

    def oidc(self, client):
        parts = urllib.parse.urlsplit(self.issuer)
        return requests.get(f"{parts.scheme}://{parts.netloc}/.well-known/openid-configuration", timeout=30).json()

    # i
    def flow_recovery(self, t):
        """Recovery codes (issue 46) on three instances: made on the first, a first-party step on the
        second, the code redeemed on the third; each code once, whichever instance and endpoint."""
        check(len(self.peers) >= 2, "flow i needs --peers with two more instances")
        one = self.client(t)
        two, three = (self.client(t, issuer=peer) for peer in self.peers[:2])
        address = self.address("recovery")
        self.setup.user(address)
        code, pkce = self.email_code_sign_in(one, address)
        tokens = expect_tokens(one.redeem(code, pkce.verifier))
        claims = one.verify_id_token(tokens["id_token"])
        check(claims.get("acr") == "urn:modgud:acr:single-factor" and claims.get("amr") == ["otp"], f"email code claims {claims}")
        t.note(f"email code sign-in: amr {claims['amr']}, acr {claims['acr']}, auth_time {claims['auth_time']}")
        url = self.issuer + "/connect/recovery-codes"
        headers = {"Authorization": "Bearer " + tokens["access_token"], "Accept": "application/json"}
        made = one.http.post(url, headers=headers, timeout=60)
        one.transcript.exchange("POST", url, headers, None, made)
        check(made.status_code == 201, f"recovery codes: {made.status_code} {made.text[:200]}")
        codes = made.json()["codes"]
        check(len(codes) == 10 and all(re.fullmatch(r"[0-9A-HJKMNP-TV-Z]{5}-[0-9A-HJKMNP-TV-Z]{5}", c) for c in codes), f"codes {codes}")
        t.note("ten recovery codes made on instance 1 (shown once)")

        pkce = PKCE()
        answer = two.challenge(response_type="code", login_hint=address, recovery_code=codes[0], code_challenge=pkce.challenge,
                               code_challenge_method="S256", scope=SCOPE)
        recovered = three.redeem(expect_code(answer), pkce.verifier)
        check(recovered.status == 200 and recovered.body.get("scope") == "urn:modgud:recovery", f"recovery session: {recovered!r}")
        check("refresh_token" not in recovered.body and "id_token" not in recovered.body, f"a recovery session lasts: {recovered!r}")
        introspected = three.userinfo(recovered.body)
        challenge = introspected.headers.get("WWW-Authenticate", "")
        check(introspected.status == 401 and 'error="insufficient_user_authentication"' in challenge and "acr_values=" in challenge,
              f"userinfo with a recovery session: {introspected.status} {challenge}")
        t.note(f"login_hint + recovery_code on instance 2, redeemed on 3: scope urn:modgud:recovery; userinfo on 3: 401 {challenge}")
        for client in (one, two, three):
            expect_error(client._post(client.metadata["token_endpoint"], {
                "grant_type": "urn:modgud:recovery-code", "client_id": client.client_id, "username": address, "recovery_code": codes[0]}),
                "invalid_grant")
        t.note("the used code at the token endpoint of instances 1, 2 and 3: invalid_grant")

        answers = race([lambda c=c: c._post(c.metadata["token_endpoint"], {
            "grant_type": "urn:modgud:recovery-code", "client_id": c.client_id, "username": address, "recovery_code": codes[1]})
            for c in (one, two, three)])
        won = [a for a in answers if a.status == 200]
        check(len(won) == 1, f"three instances redeemed one recovery code: {answers}")
        check(all(a.error == "invalid_grant" for a in answers if a.status != 200), f"the losers' answers: {answers}")
        t.note(f"one recovery code redeemed on instances 1, 2 and 3 at once: one session ({[a.status for a in answers]})")


FLOWS = [
    ("a", "email code", Run.flow_email_code),
    ("b", "email code, DPoP-bound", Run.flow_dpop),
    ("c", "magic link", Run.flow_magic_link),
    ("d", "passkey", Run.flow_passkey),
    ("e", "email code + TOTP", Run.flow_totp),
    ("f", "refusals", Run.flow_refusals),
    ("g", "three instances", Run.flow_instances),
    ("h", "step-up", Run.flow_step_up),
    ("i", "recovery codes, three instances", Run.flow_recovery),
    ("j", "Native SSO, three instances", Run.flow_native_sso),
    ("k", "device grant, three instances", Run.flow_device_grant),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--issuer", required=True, help="e.g. http://127.0.0.1:PORT (the realm this script makes serves it)")
    parser.add_argument("--admin-token", required=True)
    parser.add_argument("--smtp-port", type=int, required=True, help="where the server sends mail: this script listens there")
    parser.add_argument("--only", help="comma-separated flow letters (a-k)")
    parser.add_argument("--peers", help="comma-separated base URLs of two more instances on the same database (flow g)")
    args = parser.parse_args()
    wanted = set(args.only.split(",")) if args.only else {k for k, _, _ in FLOWS}
    started = time.monotonic()
    run = Run(args)
    try:
        run.setup.realm()
        passed, failed = [], []
        for key, name, flow in FLOWS:
            if key not in wanted:
                continue
            transcript = Transcript()
            began = time.monotonic()
            try:
                flow(run, transcript)
                outcome = "passed"
                passed.append(key)
            except Exception as error:  # a failed assertion, or an answer the client could not read
                outcome = f"FAILED: {error}" if isinstance(error, Failed) else f"FAILED: {traceback.format_exc()}"
                failed.append(key)
            print(f"--- flow {key} ({name}): {outcome} [{time.monotonic() - began:.1f} s]")
            print("\n".join(transcript.lines), flush=True)
    finally:
        run.mail.stop()
    print(f"run time {time.monotonic() - started:.1f} s")
    if failed:
        print(f"first-party-test: {len(passed)} flows passed, {len(failed)} failed ({', '.join(failed)})")
        return 1
    print(f"first-party-test: {len(passed)} flows passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
