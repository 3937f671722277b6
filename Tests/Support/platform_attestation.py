"""Test authorities standing in for Apple's App Attestation root and Google's hardware attestation
roots (issue 47), written with the `cryptography` package, not with Modgud's code: a second,
independent reading of the platforms' formats (the Swift one is WebAuthnTesting's
PlatformAttestationForge).

    python3 platform_attestation.py init DIR    # DIR/apple-root.pem, DIR/google-root.pem (+ keys)

Then `app_attestation(DIR, ...)` makes an App Attest attestation object and `android_chain(DIR, ...)`
a KeyStore attestation chain, exactly as the platforms lay them out:

- App Attest (Apple, "Validating apps that connect to your server"): CBOR {fmt: "apple-appattest",
  attStmt: {x5c: [credCert, intermediate], receipt}, authData}; authData = SHA-256(App ID) | flags
  0x40 | counter 0 (4 bytes) | AAGUID "appattest" + 7 zero bytes | credential id length (2) |
  key id = SHA-256(04|X|Y) | COSE EC2 key; credCert's extension 1.2.840.113635.100.8.2 is
  SEQUENCE { [1] EXPLICIT OCTET STRING nonce }, nonce = SHA-256(authData | clientDataHash).
- Android ("Verify hardware-backed key pairs with key attestation"): leaf, intermediate, root; the
  leaf's extension 1.3.6.1.4.1.11129.2.1.17 is a KeyDescription (version 400, TEE, the challenge,
  softwareEnforced attestationApplicationId [709], hardwareEnforced purpose [1], origin [702],
  rootOfTrust [704] with a locked, verified boot).
- Play Integrity, classic request ("Make a classic API request", "Integrity verdicts"): a compact
  JWE {"alg":"A256KW","enc":"A256GCM"} (the CEK wrapped with the app owner's decryption key per
  RFC 3394, a 12-byte IV, the ciphertext, a 16-byte tag, the protected header's base64url as
  additional data) of a compact JWS {"alg":"ES256"} (r | s) of the verdict JSON:
  requestDetails {requestPackageName, nonce, timestampMillis}, appIntegrity
  {appRecognitionVerdict, packageName, certificateSha256Digest, versionCode}, deviceIntegrity
  {deviceRecognitionVerdict}, accountDetails {appLicensingVerdict}. `play_integrity_token` makes one.
"""
import datetime
import hashlib
import os
import sys

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model_test import cbor  # noqa: E402  (the CBOR of the passkey model test)


def _name(text):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])


def _certificate(subject, issuer, public_key, signing_key, ca, days, extension=None):
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(_name(issuer)).public_key(public_key)
               .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
               .not_valid_after(now + datetime.timedelta(days=days)))
    if ca:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        # As Apple's and Google's CAs: keyUsage keyCertSign (RFC 5280 §4.2.1.3), which the server requires of their issuers.
        builder = builder.add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                                      data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                                                      encipher_only=False, decipher_only=False), critical=True)
    if extension:
        oid, value = extension
        builder = builder.add_extension(x509.UnrecognizedExtension(x509.ObjectIdentifier(oid), value), critical=False)
    return builder.sign(signing_key, hashes.SHA256())


def _pem_key(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def init(folder):
    """Two authorities (a root and an intermediate each), written once."""
    os.makedirs(folder, exist_ok=True)
    for name in ("apple", "google"):
        if os.path.exists(os.path.join(folder, f"{name}-root.pem")):
            continue
        root_key, intermediate_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
        root = _certificate(f"Test {name} attestation root", f"Test {name} attestation root", root_key.public_key(), root_key, True, 3650)
        intermediate = _certificate(f"Test {name} attestation CA 1", f"Test {name} attestation root", intermediate_key.public_key(), root_key, True, 3650)
        with open(os.path.join(folder, f"{name}-root.pem"), "wb") as out:
            out.write(root.public_bytes(serialization.Encoding.PEM))
        with open(os.path.join(folder, f"{name}-intermediate.pem"), "wb") as out:
            out.write(intermediate.public_bytes(serialization.Encoding.PEM) + _pem_key(intermediate_key))


def _intermediate(folder, name):
    data = open(os.path.join(folder, f"{name}-intermediate.pem"), "rb").read()
    return x509.load_pem_x509_certificate(data), serialization.load_pem_private_key(data, None)


# DER, the few shapes needed.

def _tlv(tag, content):
    n = len(content)
    length = bytes([n]) if n < 0x80 else bytes([0x81, n]) if n < 0x100 else bytes([0x82, n >> 8, n & 0xFF])
    return bytes(tag) + length + content


def _point(key):
    return key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)


def app_attestation(folder, app_id, client_data_hash, key=None):
    """(key id, attestation object) for a new App Attest key (`attestKey(_:clientDataHash:)`)."""
    key = key or ec.generate_private_key(ec.SECP256R1())
    point = _point(key)
    key_id = hashlib.sha256(point).digest()
    cose = cbor({1: 2, 3: -7, -1: 1, -2: point[1:33], -3: point[33:65]})
    auth_data = (hashlib.sha256(app_id.encode()).digest() + b"\x40" + b"\x00\x00\x00\x00" + b"appattest" + b"\x00" * 7
                 + len(key_id).to_bytes(2, "big") + key_id + cose)
    nonce = hashlib.sha256(auth_data + client_data_hash).digest()
    intermediate, intermediate_key = _intermediate(folder, "apple")
    leaf = _certificate(key_id.hex(), intermediate.subject.rfc4514_string()[3:], key.public_key(), intermediate_key, False, 3,
                        ("1.2.840.113635.100.8.2", _tlv([0x30], _tlv([0xA1], _tlv([0x04], nonce)))))
    statement = {"x5c": [leaf.public_bytes(serialization.Encoding.DER), intermediate.public_bytes(serialization.Encoding.DER)],
                 "receipt": b"test receipt"}
    return key_id, cbor({"fmt": "apple-appattest", "attStmt": statement, "authData": auth_data})


def android_chain(folder, challenge, package, signature_digest, key=None):
    """The DER chain (leaf first) of a KeyStore key made with `setAttestationChallenge(challenge)`."""
    key = key or ec.generate_private_key(ec.SECP256R1())
    application = _tlv([0x30], _tlv([0x31], _tlv([0x30], _tlv([0x04], package.encode()) + _tlv([0x02], b"\x01")))
                       + _tlv([0x31], _tlv([0x04], signature_digest)))
    software = _tlv([0x30], _tlv([0xBF, 0x85, 0x45], _tlv([0x04], application)))
    root_of_trust = _tlv([0x30], _tlv([0x04], b"\x11" * 32) + _tlv([0x01], b"\xff") + _tlv([0x0A], b"\x00") + _tlv([0x04], b"\x22" * 32))
    hardware = _tlv([0x30], _tlv([0xA1], _tlv([0x31], _tlv([0x02], b"\x02"))) + _tlv([0xBF, 0x85, 0x3E], _tlv([0x02], b"\x00"))
                    + _tlv([0xBF, 0x85, 0x40], root_of_trust))
    description = _tlv([0x30], _tlv([0x02], b"\x01\x90") + _tlv([0x0A], b"\x01") + _tlv([0x02], b"\x01\x90") + _tlv([0x0A], b"\x01")
                       + _tlv([0x04], challenge) + _tlv([0x04], b"") + software + hardware)
    intermediate, intermediate_key = _intermediate(folder, "google")
    leaf = _certificate("Android Keystore Key", intermediate.subject.rfc4514_string()[3:], key.public_key(), intermediate_key, False, 3650,
                        ("1.3.6.1.4.1.11129.2.1.17", description))
    root = x509.load_pem_x509_certificate(open(os.path.join(folder, "google-root.pem"), "rb").read())
    return [c.public_bytes(serialization.Encoding.DER) for c in (leaf, intermediate, root)]


def _b64url(data):
    import base64
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def play_integrity_verdict(package, nonce, digest, millis):
    """A genuine app's verdict on a genuine device (`nonce` base64url, `digest` the signing certificate's SHA-256)."""
    return {"requestDetails": {"requestPackageName": package, "nonce": nonce, "timestampMillis": str(millis)},
            "appIntegrity": {"appRecognitionVerdict": "PLAY_RECOGNIZED", "packageName": package,
                             "certificateSha256Digest": [_b64url(digest)], "versionCode": "7"},
            "deviceIntegrity": {"deviceRecognitionVerdict": ["MEETS_DEVICE_INTEGRITY"]},
            "accountDetails": {"appLicensingVerdict": "LICENSED"}}


def play_integrity_token(decryption_key, signing_key, verdict):
    """The integrity token Google's servers return for `verdict`: JWS ES256 by `signing_key`
    (an EC private key), then JWE A256KW/A256GCM to `decryption_key` (32 bytes)."""
    import json
    from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    from cryptography.hazmat.primitives.keywrap import aes_key_wrap
    signed = _b64url(json.dumps({"alg": "ES256"}).encode()) + "." + _b64url(json.dumps(verdict).encode())
    r, s = decode_dss_signature(signing_key.sign(signed.encode(), ec.ECDSA(hashes.SHA256())))
    jws = signed + "." + _b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big"))
    protected = _b64url(json.dumps({"alg": "A256KW", "enc": "A256GCM"}).encode())
    cek, iv = os.urandom(32), os.urandom(12)
    sealed = AESGCM(cek).encrypt(iv, jws.encode(), protected.encode())
    return ".".join([protected, _b64url(aes_key_wrap(decryption_key, cek)), _b64url(iv), _b64url(sealed[:-16]), _b64url(sealed[-16:])])


def p256_pkcs8_pem():
    """A new P-256 key as a .p8 file holds it (Sign in with Apple's key, PKCS#8 PEM)."""
    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()


def play_console_keys():
    """(decryption key bytes, signing key, the Play Console's two keys as it shows them: base64)."""
    import base64
    decryption, signing = os.urandom(32), ec.generate_private_key(ec.SECP256R1())
    verification = signing.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return decryption, signing, {"DecryptionKey": base64.b64encode(decryption).decode(), "VerificationKey": base64.b64encode(verification).decode()}


def make(request):
    """Evidence for a test of Modgud's verifiers: stdin {folder, app_id, client_data_hash, package,
    digest, millis} (hashes hex) -> {key_id, attestation_object, chain, play_integrity} (base64), after
    `init(folder)`; play_integrity holds the Play Console keys and a token whose nonce is the hash."""
    import base64
    import json
    init(request["folder"])
    client_data_hash = bytes.fromhex(request["client_data_hash"])
    key_id, attestation = app_attestation(request["folder"], request["app_id"], client_data_hash)
    chain = android_chain(request["folder"], client_data_hash, request["package"], bytes.fromhex(request["digest"]))
    encode = lambda data: base64.b64encode(data).decode()  # noqa: E731
    decryption, signing, console = play_console_keys()
    verdict = play_integrity_verdict(request["package"], _b64url(client_data_hash), bytes.fromhex(request["digest"]), request["millis"])
    console["Token"] = play_integrity_token(decryption, signing, verdict)
    return json.dumps({"key_id": encode(key_id), "attestation_object": encode(attestation), "chain": [encode(c) for c in chain],
                       "play_integrity": console})


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "init":
        init(sys.argv[2])
    elif len(sys.argv) == 1:
        import json
        print(make(json.load(sys.stdin)))
    else:
        sys.exit("usage: platform_attestation.py init DIR  |  platform_attestation.py < request.json")
