"""A stand-in for Sign in with Apple's and Sign in with Google's token side (issue 48), written
with Python's `cryptography` package, not Modgud's code. It serves each provider's JWKS and
mints ID tokens with the providers' exact claim shapes, signed RS256 as theirs are.

    python3 id_provider.py --port PORT [--forever]   # prints {"port": PORT} when listening;
                                                     # serves until stdin closes (or SIGTERM)

    GET  /apple/auth/keys            Apple's JWKS (https://appleid.apple.com/auth/keys shape)
    GET  /google/oauth2/v3/certs     Google's JWKS (https://www.googleapis.com/oauth2/v3/certs shape)
    POST /apple/mint  {claims...}    an Apple ID token: defaults below, overridden by the body;
    POST /google/mint {claims...}    a Google ID token; a member set to null is left out.
                                     "_kid" picks the key ("rotated" is published only after
                                     POST /{provider}/rotate), "_alg" sets the header's alg
                                     ("none" leaves the signature empty), "_key": "stranger" signs
                                     with a key never published.
    POST /apple/notify {type, sub, ...}  a server-to-server notification as Apple posts it:
                                     {"payload": JWS} whose claims are iss, aud (default the
                                     bundle id), iat, jti and events, a JSON *string* of
                                     {type, sub, email?, is_private_email?, event_time (ms)};
                                     "_aud", "_iat", "_jti", "_key" override.
    GET  /apple/team-key             the team's Sign in with Apple key as Apple hands it out once
                                     (a .p8: PKCS#8 PEM, P-256), with its team id and key id
    POST /apple/code {claims...}     an authorization code whose redemption mints these claims
    POST /apple/auth/token (form)    Apple's token endpoint ("Generate and validate tokens"):
                                     client_id, client_secret (an ES256 JWT by the team key: kid
                                     the key id, iss the team, sub the client id, aud
                                     https://appleid.apple.com, current), code (single use, for
                                     that client), grant_type=authorization_code. 200 {access_token,
                                     token_type, expires_in, refresh_token, id_token}; 400
                                     {"error": "invalid_client" | "invalid_grant" | ...}.

Apple's ID token ("Authenticating users with Sign in with Apple", "Retrieve the user's
information from Apple ID servers"): iss https://appleid.apple.com, aud the bundle id, exp, iat,
sub (e.g. 001234.5a6b...1234), nonce (as given to ASAuthorizationAppleIDRequest.nonce),
nonce_supported true, c_hash, email, email_verified and is_private_email as the strings
"true"/"false", auth_time, real_user_status 2. Google's ("Verify the Google ID token on your
server side", OpenID Connect reference): iss https://accounts.google.com, azp the Android client
id, aud the server (web) client id, sub (digits), email, email_verified true (a JSON boolean),
nonce, name, given_name, family_name, picture, iat, exp.
"""
import argparse
import base64
import http.server
import json
import os
import signal
import sys
import threading
import time

from cryptography.hazmat.primitives import hashes
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from urllib.parse import parse_qs


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _int(value):
    return b64(value.to_bytes((value.bit_length() + 7) // 8, "big"))


class Provider:
    def __init__(self, name):
        self.name = name
        self.keys = {f"{name}-1": rsa.generate_private_key(public_exponent=65537, key_size=2048)}
        self.rotated = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def jwks(self):
        keys = []
        for kid, key in self.keys.items():
            numbers = key.public_key().public_numbers()
            keys.append({"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256", "n": _int(numbers.n), "e": _int(numbers.e)})
        return {"keys": keys}

    def rotate(self):
        self.keys[f"{self.name}-rotated"] = self.rotated

    def defaults(self):
        now = int(time.time())
        if self.name == "apple":
            return {"iss": "https://appleid.apple.com", "aud": "com.example.app", "exp": now + 600, "iat": now,
                    "sub": "001234.5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d.1234", "c_hash": "abc", "email": "someone@privaterelay.appleid.com",
                    "email_verified": "true", "is_private_email": "true", "auth_time": now, "nonce_supported": True, "real_user_status": 2}
        return {"iss": "https://accounts.google.com", "azp": "android-client.apps.googleusercontent.com",
                "aud": "server-client.apps.googleusercontent.com", "sub": "110169484474386276334", "email": "someone@gmail.com",
                "email_verified": True, "name": "Some One", "given_name": "Some", "family_name": "One",
                "picture": "https://lh3.googleusercontent.com/a/photo", "iat": now, "exp": now + 3600}

    def notification(self, body):
        """Apple's "Processing changes for Sign in with Apple accounts": the events claim is a
        JSON string, event_time in milliseconds."""
        now = int(time.time())
        event = {"type": body["type"], "sub": body["sub"], "event_time": now * 1000}
        if body.get("email"):
            event.update({"email": body["email"], "is_private_email": "true"})
        claims = {"iss": "https://appleid.apple.com", "aud": body.get("_aud", "com.example.app"), "iat": body.get("_iat", now),
                  "jti": body.get("_jti", b64(os.urandom(12))), "events": json.dumps(event)}
        overrides = {name: value for name, value in claims.items()}
        overrides["_key"] = body.get("_key")
        for name in list(self.defaults()):
            overrides.setdefault(name, None)
        return self.mint(overrides)

    def mint(self, overrides):
        claims = self.defaults()
        kid = overrides.pop("_kid", f"{self.name}-1")
        alg = overrides.pop("_alg", "RS256")
        stranger = overrides.pop("_key", None) == "stranger"
        for name, value in overrides.items():
            if value is None:
                claims.pop(name, None)
            else:
                claims[name] = value
        signing = self.stranger if stranger else self.rotated if kid.endswith("rotated") else self.keys.get(kid, self.stranger)
        header = b64(json.dumps({"alg": alg, "kid": kid, "typ": "JWT"}).encode())
        body = b64(json.dumps(claims).encode())
        if alg == "none":
            return f"{header}.{body}."
        signature = signing.sign(f"{header}.{body}".encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{header}.{body}.{b64(signature)}"


PROVIDERS = {"apple": Provider("apple"), "google": Provider("google")}
TEAM = {"team_id": "TEAM123456", "key_id": "KEY1234567", "key": ec.generate_private_key(ec.SECP256R1())}
CODES = {}
REDEMPTIONS = {"ok": 0, "refused": 0}


def b64decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def client_secret_refusal(secret, client_id):
    """Why Apple would refuse this client secret, or None."""
    try:
        header_b64, claims_b64, signature_b64 = secret.split(".")
        header, claims = json.loads(b64decode(header_b64)), json.loads(b64decode(claims_b64))
        raw = b64decode(signature_b64)
    except Exception:
        return "not a JWT"
    if header.get("alg") != "ES256" or header.get("kid") != TEAM["key_id"] or len(raw) != 64:
        return "header"
    signature = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    try:
        TEAM["key"].public_key().verify(signature, f"{header_b64}.{claims_b64}".encode(), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        return "signature"
    now = int(time.time())
    if claims.get("iss") != TEAM["team_id"] or claims.get("sub") != client_id or claims.get("aud") != "https://appleid.apple.com":
        return "claims"
    if not (claims.get("iat", now + 999) <= now + 60 < claims.get("exp", 0) + 60) or claims["exp"] - claims["iat"] > 15777000:
        return "time"
    return None


def apple_token(form):
    client_id, code = form.get("client_id", ""), form.get("code", "")
    if form.get("grant_type") != "authorization_code":
        return 400, {"error": "unsupported_grant_type"}
    if client_secret_refusal(form.get("client_secret", ""), client_id):
        REDEMPTIONS["refused"] += 1
        return 400, {"error": "invalid_client"}
    issued = CODES.pop(code, None)
    if issued is None or issued["client_id"] != client_id:
        REDEMPTIONS["refused"] += 1
        return 400, {"error": "invalid_grant"}
    REDEMPTIONS["ok"] += 1
    return 200, {"access_token": "a" + b64(os.urandom(16)), "token_type": "Bearer", "expires_in": 3600,
                 "refresh_token": "r" + b64(os.urandom(16)), "id_token": PROVIDERS["apple"].mint(dict(issued["claims"]))}
JWKS_PATHS = {"/apple/auth/keys": "apple", "/google/oauth2/v3/certs": "google"}
FETCHES = {"apple": 0, "google": 0}


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, body):
        data = json.dumps(body).encode() if not isinstance(body, str) else body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path in JWKS_PATHS:
            name = JWKS_PATHS[self.path]
            FETCHES[name] += 1
            return self.answer(200, PROVIDERS[name].jwks())
        if self.path == "/fetches":
            return self.answer(200, FETCHES)
        if self.path == "/apple/team-key":
            pem = TEAM["key"].private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
            return self.answer(200, {"team_id": TEAM["team_id"], "key_id": TEAM["key_id"], "private_key": pem.decode()})
        if self.path == "/apple/redemptions":
            return self.answer(200, REDEMPTIONS)
        self.answer(404, {"error": "not found"})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path == "/apple/auth/token":
            form = {name: values[0] for name, values in parse_qs(raw.decode()).items()}
            return self.answer(*apple_token(form))
        body = json.loads(raw or b"{}")
        parts = self.path.strip("/").split("/")
        if len(parts) == 2 and parts[0] in PROVIDERS and parts[1] == "mint":
            return self.answer(200, {"id_token": PROVIDERS[parts[0]].mint(body)})
        if self.path == "/apple/code":
            code = "c" + b64(os.urandom(24))
            CODES[code] = {"claims": body, "client_id": body.get("aud", "com.example.app")}
            return self.answer(200, {"code": code})
        if self.path == "/apple/notify":
            return self.answer(200, {"payload": PROVIDERS["apple"].notification(body)})
        if len(parts) == 2 and parts[0] in PROVIDERS and parts[1] == "rotate":
            PROVIDERS[parts[0]].rotate()
            return self.answer(200, {})
        self.answer(404, {"error": "not found"})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--forever", action="store_true", help="serve until SIGTERM, not until standard input closes")
    args = parser.parse_args()
    # The test runner's threads may block SIGTERM, and a child inherits the mask: unblock it, so
    # the test can stop this process.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(json.dumps({"port": args.port}), flush=True)
    if args.forever:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        threading.Event().wait()
    sys.stdin.read()  # until the test closes standard input
    server.shutdown()


if __name__ == "__main__":
    main()
