"""An app's own API checking Modgud's access tokens, DPoP-bound or not (docs/guides/dpop.md,
section 5): introspection for the token's state and `cnf.jkt`, then the proof, with PyJWT.

Reads {"introspect": URL, "client_id", "client_secret", "requests": [{"method", "url",
"authorization", "dpop"?}]} on stdin and prints one verdict per request: {"ok": true, "sub"}
or {"ok": false, "error"}. jtis seen are kept for the run (a real API shares them between
its instances for the window).
"""
import base64
import hashlib
import json
import sys
import time
import urllib.parse
import urllib.request

import jwt


class Unauthorized(Exception):
    pass


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def introspect(config, token):
    body = urllib.parse.urlencode({"token": token}).encode()
    request = urllib.request.Request(config["introspect"], data=body, method="POST")
    secret = base64.b64encode(f'{config["client_id"]}:{config["client_secret"]}'.encode()).decode()
    request.add_header("Authorization", "Basic " + secret)
    request.add_header("Content-Type", "application/x-www-form-urlencoded")
    with urllib.request.urlopen(request) as answer:
        return json.load(answer)


def check(config, request, seen_jtis):
    scheme, _, token = request["authorization"].partition(" ")
    info = introspect(config, token)
    if not info.get("active"):
        raise Unauthorized("invalid_token")
    jkt = info.get("cnf", {}).get("jkt")
    if jkt is None:  # a bearer token
        if scheme.lower() != "bearer":
            raise Unauthorized("invalid_token")
        return info
    if scheme.lower() != "dpop":  # the bearer downgrade of a bound token
        raise Unauthorized("invalid_token")
    proof = request.get("dpop")
    if not proof:
        raise Unauthorized("invalid_dpop_proof")
    header = jwt.get_unverified_header(proof)
    jwk = header.get("jwk", {})
    members = {"EC": ["crv", "kty", "x", "y"], "OKP": ["crv", "kty", "x"]}.get(jwk.get("kty"))
    if header.get("typ") != "dpop+jwt" or members is None:
        raise Unauthorized("invalid_dpop_proof")
    canonical = json.dumps({k: jwk[k] for k in members}, separators=(",", ":"), sort_keys=True)
    if b64(hashlib.sha256(canonical.encode()).digest()) != jkt:  # another key than the token's
        raise Unauthorized("invalid_dpop_proof")
    try:
        claims = jwt.decode(proof, jwt.PyJWK(jwk).key, algorithms=["ES256", "EdDSA"])
    except jwt.InvalidTokenError:
        raise Unauthorized("invalid_dpop_proof")
    if (
        claims.get("htm") != request["method"]
        or claims.get("htu") != request["url"].split("?")[0]
        or claims.get("ath") != b64(hashlib.sha256(token.encode()).digest())
        or abs(claims.get("iat", 0) - time.time()) > 60
        or claims.get("jti") in seen_jtis
    ):
        raise Unauthorized("invalid_dpop_proof")
    seen_jtis.add(claims["jti"])
    return info


config = json.load(sys.stdin)
seen = set()
verdicts = []
for each in config["requests"]:
    try:
        info = check(config, each, seen)
        verdicts.append({"ok": True, "sub": info.get("sub")})
    except Unauthorized as refusal:
        verdicts.append({"ok": False, "error": str(refusal)})
print(json.dumps(verdicts))
