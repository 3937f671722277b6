"""DPoP proofs (RFC 9449) made with PyJWT and cryptography, not with Modgud's code.

Reads a JSON list of specs on stdin and prints a JSON list of {"proof", "jkt", "key_pem"}. A spec has
"alg" (ES256 or EdDSA), "htm", "htu", "iat", "jti", and optionally "nonce", "access_token"
(sets ath), "key" (an index: specs with the same index share a key), "key_pem" (a key an
earlier run printed, to sign with it again), "typ" (default
dpop+jwt), "private_jwk" (true: leak the private member into the header), "header_alg" (to
claim another alg than the key's).
"""
import base64
import hashlib
import json
import sys

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def public_jwk(key):
    if isinstance(key, ec.EllipticCurvePrivateKey):
        numbers = key.public_key().public_numbers()
        return {"kty": "EC", "crv": "P-256", "x": b64(numbers.x.to_bytes(32, "big")), "y": b64(numbers.y.to_bytes(32, "big"))}
    raw = key.public_key().public_bytes_raw()
    return {"kty": "OKP", "crv": "Ed25519", "x": b64(raw)}


def thumbprint(jwk):
    """RFC 7638: the required members, sorted, no whitespace."""
    required = {"EC": ["crv", "kty", "x", "y"], "OKP": ["crv", "kty", "x"]}[jwk["kty"]]
    canonical = json.dumps({k: jwk[k] for k in required}, separators=(",", ":"), sort_keys=True)
    return b64(hashlib.sha256(canonical.encode()).digest())


keys = {}
out = []
for spec in json.load(sys.stdin):
    index = (spec.get("key", id(spec)), spec["alg"])
    if index not in keys:
        keys[index] = ec.generate_private_key(ec.SECP256R1()) if spec["alg"] == "ES256" else ed25519.Ed25519PrivateKey.generate()
    key = keys[index]
    if "key_pem" in spec:
        key = serialization.load_pem_private_key(spec["key_pem"].encode(), password=None)
    jwk = public_jwk(key)
    if spec.get("private_jwk"):
        jwk = dict(jwk, d="AAAA")
    claims = {"jti": spec["jti"], "htm": spec["htm"], "htu": spec["htu"], "iat": spec["iat"]}
    if "nonce" in spec:
        claims["nonce"] = spec["nonce"]
    if "access_token" in spec:
        claims["ath"] = b64(hashlib.sha256(spec["access_token"].encode()).digest())
    headers = {"typ": spec.get("typ", "dpop+jwt"), "jwk": jwk}
    token = jwt.encode(claims, key, algorithm=spec["alg"], headers=headers)
    if "header_alg" in spec:
        head, payload, signature = token.split(".")
        header = json.loads(base64.urlsafe_b64decode(head + "=="))
        header["alg"] = spec["header_alg"]
        token = ".".join([b64(json.dumps(header).encode()), payload, signature])
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    out.append({"proof": token, "jkt": thumbprint(public_jwk(key)), "key_pem": pem})
print(json.dumps(out))
