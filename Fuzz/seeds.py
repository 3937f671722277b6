#!/usr/bin/env python3
"""Writes a fuzz target's seed corpus from real inputs: the WebAuthn vectors
(../shared/webauthn-vectors) and the project's committed regression inputs.

Usage: seeds.py TARGET OUTDIR
"""
import base64
import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
VECTORS = os.path.join(HERE, "..", "..", "shared", "webauthn-vectors")


def b64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def vectors():
    for path in sorted(glob.glob(os.path.join(VECTORS, "*.json"))):
        if path.endswith("index.json"):
            continue
        with open(path) as handle:
            yield os.path.basename(path)[:-5], json.load(handle)


def cbor_items():
    """Attestation objects (CBOR maps) and the COSE keys inside authenticator data are CBOR."""
    for name, vector in vectors():
        response = vector.get("credential", {}).get("response", {})
        for field in ("attestationObject",):
            if isinstance(response.get(field), str):
                try:
                    yield f"{name}.{field}", b64url(response[field])
                except Exception:
                    pass


def field(data):
    return len(data).to_bytes(2, "big") + data


def webauthn_items():
    """Vectors framed as Fuzz/WebAuthnFuzz.swift reads them: registrations (mode 0), assertions
    with their stored key (mode 1), authenticator data (mode 2), COSE keys with a signature
    over the signed data (mode 3)."""
    import hashlib
    for name, vector in vectors():
        credential = vector.get("credential") or {}
        response = credential.get("response") or {}
        expected = vector.get("expected") or {}
        try:
            rp = (expected.get("rp_id") or "").encode()
            origin = expected.get("origin") or ""
            origin = (origin[0] if isinstance(origin, list) else origin).encode()
            challenge = b64url(expected.get("challenge") or "")
            client_data = b64url(response.get("clientDataJSON") or "")
            head = field(rp) + field(origin) + field(challenge) + field(client_data)
            if isinstance(response.get("attestationObject"), str):
                yield f"{name}.registration", b"\x00" + head + b64url(response["attestationObject"])
            stored = vector.get("stored_credential") or {}
            if isinstance(response.get("authenticatorData"), str) and isinstance(stored.get("public_key_cose"), str):
                auth_data = b64url(response["authenticatorData"])
                signature = b64url(response.get("signature") or "")
                key = b64url(stored["public_key_cose"])
                yield f"{name}.assertion", b"\x01" + head + field(auth_data) + field(signature) + key
                yield f"{name}.authdata", b"\x02" + auth_data
                signed = auth_data + hashlib.sha256(client_data).digest()
                yield f"{name}.cose", b"\x03" + field(key) + field(signature) + signed
        except Exception:
            pass


def requests_items():
    """Form bodies (mode 0) and JSON bodies (1: exact names, 2: any case) like the endpoints get."""
    forms = [
        b"grant_type=urn%3Acocoar%3Aotp&client_id=app&email=ada%40example.com&code=123456&scope=openid+offline_access",
        b"grant_type=refresh_token&client_id=app&refresh_token=abc_DEF-123&resource=https%3A%2F%2Fapi.example&resource=x",
        b"grant_type=authorization_code&code=x&redirect_uri=com.example.app%3A%2Fcb&code_verifier=" + b"a" * 43,
        b"a=%zz&b=%00&c=%C3%A9&&=&d",
    ]
    bodies = [
        b'{"Email":"ada@example.com","Code":"123456"}',
        b'{"email":"ada@example.com","scopes":["a","b"],"enabled":true,"count":3}',
        b'{"Email":"a\\u0000b","Unknown":1}',
        b'{"Scopes":[],"Count":-1e308,"Enabled":null,"Code":"\\ud800"}',
    ]
    for index, body in enumerate(forms):
        yield f"form-{index}", b"\x00" + body
    for index, body in enumerate(bodies):
        yield f"json-{index}", b"\x01" + body
        yield f"json-any-case-{index}", b"\x02" + body


def dpop_items():
    """DPoP proofs by ES256 and EdDSA keys, signed here with `cryptography`: as sent (mode 0)
    and as header, payload and signature (mode 1)."""
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519
    from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
    from cryptography.hazmat.primitives import hashes

    def b64(data):
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    es = ec.generate_private_key(ec.SECP256R1())
    numbers = es.public_key().public_numbers()
    ed = ed25519.Ed25519PrivateKey.generate()
    keys = [
        ("ES256", {"kty": "EC", "crv": "P-256", "x": b64(numbers.x.to_bytes(32, "big")), "y": b64(numbers.y.to_bytes(32, "big"))}),
        ("EdDSA", {"kty": "OKP", "crv": "Ed25519", "x": b64(ed.public_key().public_bytes_raw())}),
    ]
    for alg, jwk in keys:
        for extra in ({}, {"ath": b64(__import__("hashlib").sha256(b"an-access-token").digest())}, {"nonce": "n-1"}):
            header = json.dumps({"typ": "dpop+jwt", "alg": alg, "jwk": jwk}).encode()
            claims = {"jti": "j-1", "htm": "POST", "htu": "https://login.example.test/connect/token", "iat": 1800000000}
            claims.update(extra)
            payload = json.dumps(claims).encode()
            signing_input = (b64(header) + "." + b64(payload)).encode()
            if alg == "ES256":
                r, s = decode_dss_signature(es.sign(signing_input, ec.ECDSA(hashes.SHA256())))
                signature = r.to_bytes(32, "big") + s.to_bytes(32, "big")
            else:
                signature = ed.sign(signing_input)
            name = f"{alg}-{'-'.join(extra) or 'plain'}"
            yield f"{name}.jws", b"\x00" + signing_input + b"." + b64(signature).encode()
            yield f"{name}.framed", b"\x01" + field(header) + field(payload) + signature
    # Form 2: headers with the harness's fixed key (the scalar 1..32), signed by the harness.
    fixed = ec.derive_private_key(int.from_bytes(bytes(range(1, 33)), "big"), ec.SECP256R1()).public_key().public_numbers()
    fixed_jwk = {"kty": "EC", "crv": "P-256", "x": b64(fixed.x.to_bytes(32, "big")), "y": b64(fixed.y.to_bytes(32, "big"))}
    for index, extra in enumerate(({}, {"ath": b64(__import__("hashlib").sha256(b"an-access-token").digest())}, {"nonce": "n-1"}, {"iat": "x"})):
        header = json.dumps({"typ": "dpop+jwt", "alg": "ES256", "jwk": fixed_jwk}).encode()
        claims = {"jti": "j-1", "htm": "POST", "htu": "https://login.example.test/connect/token", "iat": 1800000000}
        claims.update(extra)
        yield f"fixed-key-{index}.signed-here", b"\x02" + field(header) + field(json.dumps(claims).encode())


def signed_note_items():
    """Checkpoints signed by RFC 8032 section 7.1 test 1's key (the harness's), proofs' shapes."""
    import hashlib
    from cryptography.hazmat.primitives.asymmetric import ed25519

    key = ed25519.Ed25519PrivateKey.from_private_bytes(bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"))
    public = key.public_key().public_bytes_raw()
    name = b"fuzz.example/log"
    key_id = hashlib.sha256(name + b"\n\x01" + public).digest()[:4]
    for size in (0, 1, 7, 1 << 20):
        root = hashlib.sha256(str(size).encode()).digest()
        body = f"fuzz.example/log\n{size}\n{base64.b64encode(root).decode()}\nTimestamp: 1800000000\n".encode()
        note = body + "\n\u2014 ".encode() + name + b" " + base64.b64encode(key_id + key.sign(body)) + b"\n"
        yield f"checkpoint-{size}", b"\x00" + note
    leaf = hashlib.sha256(b"\x00leaf").digest()
    for index, size in ((0, 1), (3, 7), (6, 7)):
        yield f"inclusion-{index}-{size}", b"\x01" + index.to_bytes(8, "big") + size.to_bytes(8, "big") + leaf * 4
        yield f"consistency-{index + 1}-{size}", b"\x02" + (index + 1).to_bytes(8, "big") + size.to_bytes(8, "big") + leaf * 4


def smtp_reply_items():
    """A real server's replies (aiosmtpd's and Postfix's shapes), whole and in small chunks."""
    replies = [
        b"220 mail.example.test ESMTP ready\r\n",
        b"250-mail.example.test\r\n250-SIZE 33554432\r\n250-8BITMIME\r\n250-STARTTLS\r\n250-AUTH PLAIN LOGIN\r\n250 SMTPUTF8\r\n",
        b"354 End data with <CR><LF>.<CR><LF>\r\n250 2.0.0 Ok: queued as 4C1F2\r\n221 Bye\r\n",
        b"451 4.7.1 Try again later\n550-5.1.1 no such user\n550 5.1.1 rejected\n",
    ]
    for index, reply in enumerate(replies):
        yield f"reply-{index}-whole", b"\xff" + reply
        yield f"reply-{index}-chunked", b"\x03" + reply


FORGED = os.path.join(HERE, "..", "Tests", "ForgedChains")


def x509_chain_items():
    """The forged-chain corpus (Tests/ForgedChains) framed as Fuzz/X509ChainFuzz.swift reads it:
    the rules' byte (webauthn 0, apple 2, android 3; +4 when a serial is revoked), then each
    certificate of the chain and the anchor, each framed by a two-byte length."""
    rules = {"webauthn": 0, "apple": 2, "android": 3}
    for path in sorted(glob.glob(os.path.join(FORGED, "*.json"))):
        with open(path) as handle:
            case = json.load(handle)
        head = rules[case["platform"]] | (4 if case["revoked"] else 0)
        certificates = [base64.b64decode(c) for c in case["chain"] + case["anchors"][:1]]
        yield case["name"], bytes([head]) + b"".join(field(c) for c in certificates)


def _fixed_key(first):
    from cryptography.hazmat.primitives.asymmetric import ec
    return ec.derive_private_key(int.from_bytes(bytes(range(first, first + 32)), "big"), ec.SECP256R1())


def _jwk(key):
    numbers = key.public_key().public_numbers()
    b64 = lambda data: base64.urlsafe_b64encode(data).rstrip(b"=").decode()
    return {"kty": "EC", "crv": "P-256", "x": b64(numbers.x.to_bytes(32, "big")), "y": b64(numbers.y.to_bytes(32, "big"))}


def play_integrity_items():
    """Verdicts (form 1: signed and encrypted by the harness) as "Integrity verdicts" shows them,
    and JWS texts (form 2)."""
    import hashlib
    digest = base64.urlsafe_b64encode(hashlib.sha256(b"certificate").digest()).rstrip(b"=").decode()
    genuine = {
        "requestDetails": {"requestPackageName": "com.example.app", "nonce": "fuzz-nonce", "timestampMillis": "1800000000000"},
        "appIntegrity": {"appRecognitionVerdict": "PLAY_RECOGNIZED", "packageName": "com.example.app", "certificateSha256Digest": [digest],
                         "versionCode": "42"},
        "deviceIntegrity": {"deviceRecognitionVerdict": ["MEETS_DEVICE_INTEGRITY"]},
        "accountDetails": {"appLicensingVerdict": "LICENSED"},
    }
    variants = [genuine, dict(genuine, deviceIntegrity={"deviceRecognitionVerdict": []}),
                dict(genuine, requestDetails=dict(genuine["requestDetails"], timestampMillis=1800000000000))]
    for index, verdict in enumerate(variants):
        yield f"verdict-{index}", b"\x01" + json.dumps(verdict).encode()
    yield "jws-text", b"\x02" + b"eyJhbGciOiJFUzI1NiJ9.e30." + b"A" * 86
    yield "token-text", b"\x00" + b"a.b.c.d.e"


def client_attestation_items():
    """Attestation claims binding the harness's instance key, and PoP claims (form 1)."""
    instance = _jwk(_fixed_key(2))
    claims = {"iss": "https://login.example.test", "sub": "app", "iat": 1800000000, "exp": 4000000000, "cnf": {"jwk": instance},
              "platform": "android-key-attestation", "app": "com.example.app"}
    pops = [{"aud": "https://login.example.test", "jti": "j-1", "iat": 1800000000},
            {"aud": ["https://login.example.test"], "jti": "j-2", "iat": 1800000000, "challenge": "c-1", "iss": "app"},
            {"aud": "https://elsewhere.example", "jti": "", "iat": "x"}]
    for index, pop in enumerate(pops):
        yield f"framed-{index}", b"\x01" + field(json.dumps(claims).encode()) + json.dumps(pop).encode()
    yield "headers", b"\x00" + b"eyJhbGciOiJFUzI1NiJ9.e30.AA~eyJhbGciOiJFUzI1NiJ9.e30.AA"


def _signed_claims(claims):
    header = json.dumps({"alg": "ES256", "kid": "fuzz", "typ": "JWT"}).encode()
    return b"\x01" + field(header) + json.dumps(claims).encode()


def id_token_items():
    """Google ID tokens' claims (form 1, signed by the harness with the provider key)."""
    import hashlib
    nonce = hashlib.sha256(b"fuzz-nonce").hexdigest()
    base = {"iss": "https://accounts.google.com", "aud": "fuzz-client.apps.googleusercontent.com", "sub": "1234567890", "iat": 1799999990,
            "exp": 1800003600, "nonce": nonce, "email": "ada@example.com", "email_verified": True}
    for index, claims in enumerate([base, dict(base, aud=["other", "fuzz-client.apps.googleusercontent.com"], email_verified="true"),
                                    dict(base, iss="accounts.google.com"), dict(base, exp=1)]):
        yield f"claims-{index}", _signed_claims(claims)
    yield "token-text", b"\x00" + b"eyJhbGciOiJFUzI1NiIsImtpZCI6ImZ1enoifQ.e30.AA"


def apple_notification_items():
    """Apple's server-to-server notifications' claims (form 1, signed by the harness)."""
    for index, kind in enumerate(["consent-revoked", "account-delete", "email-disabled"]):
        events = json.dumps({"type": kind, "sub": "001234.abcdef", "email": "x@privaterelay.appleid.com", "event_time": 1800000000000})
        claims = {"iss": "https://appleid.apple.com", "aud": "com.example.app.services", "iat": 1799999000, "jti": f"jti-{index}", "events": events}
        yield f"claims-{index}", _signed_claims(claims)
    yield "payload-text", b"\x00" + b"eyJhbGciOiJFUzI1NiJ9.eyJhdWQiOiJjb20uZXhhbXBsZS5hcHAuc2VydmljZXMifQ.AA"


def main():
    target, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    sources = {
        "cbor": cbor_items, "webauthn": webauthn_items, "requests": requests_items, "dpop": dpop_items,
        "signed-note": signed_note_items, "smtp-reply": smtp_reply_items, "x509-chain": x509_chain_items,
        "play-integrity": play_integrity_items, "client-attestation": client_attestation_items, "id-token": id_token_items,
        "apple-notification": apple_notification_items,
    }
    count = 0
    for name, data in sources[target]():
        with open(os.path.join(out, name), "wb") as handle:
            handle.write(data)
        count += 1
    print(f"seeds: {count} inputs for {target}")


if __name__ == "__main__":
    main()
