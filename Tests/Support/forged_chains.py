"""The forged-chain corpus (issue 66): for each platform, the certificate chains a device owner or
an attacker can build, and the correct chains beside them, written with the `cryptography`
package (not Modgud's code) into Tests/ForgedChains/ as one JSON file per case:

    {"name", "platform": "android" | "apple" | "webauthn", "chain": [base64 DER, leaf first],
     "anchors": [base64 DER], "revoked": [serial hex], "time": ISO 8601, "expect": "accepted" | a
     PathRefusal.Reason raw value, "why": what the case stands for}

    python3 Tests/Support/forged_chains.py [DIR]     # rewrites the corpus (new keys each time)

ForgedChainTests runs every file through CertificatePathValidator under its platform's rules and
expects exactly its verdict; ops/fuzz seeds the x509-chain target with the same chains. Every
certificate is valid from 2025-01-01 to 2035-01-01 and checked at 2026-06-01, except where a case
says otherwise.
"""
import base64
import datetime
import json
import os
import sys

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

UTC = datetime.timezone.utc
START, END = datetime.datetime(2025, 1, 1, tzinfo=UTC), datetime.datetime(2035, 1, 1, tzinfo=UTC)
TIME = "2026-06-01T00:00:00Z"
KEY_DESCRIPTION = x509.ObjectIdentifier("1.3.6.1.4.1.11129.2.1.17")
SIGN, ATTEST_KEY = 2, 7


def _tlv(tag, content):
    n = len(content)
    length = bytes([n]) if n < 0x80 else bytes([0x81, n]) if n < 0x100 else bytes([0x82, n >> 8, n & 0xFF])
    return bytes(tag) + length + content


def key_description(purpose):
    """An Android KeyDescription (version 400, TEE) whose hardware-enforced list says `purpose`."""
    root_of_trust = _tlv([0x30], _tlv([0x04], b"\x11" * 32) + _tlv([0x01], b"\xff") + _tlv([0x0A], b"\x00") + _tlv([0x04], b"\x22" * 32))
    hardware = _tlv([0x30], _tlv([0xA1], _tlv([0x31], _tlv([0x02], bytes([purpose])))) + _tlv([0xBF, 0x85, 0x40], root_of_trust))
    return _tlv([0x30], _tlv([0x02], b"\x01\x90") + _tlv([0x0A], b"\x01") + _tlv([0x02], b"\x01\x90") + _tlv([0x0A], b"\x01")
                + _tlv([0x04], b"challenge") + _tlv([0x04], b"") + _tlv([0x30], b"") + hardware)


class Cert:
    """A certificate and its key."""

    def __init__(self, name, issuer=None, ca=True, path_length=None, key_usage="ca", start=START, end=END, extensions=(), serial=None):
        self.key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer.name if issuer else subject)
                   .public_key(self.key.public_key()).serial_number(serial or x509.random_serial_number())
                   .not_valid_before(start).not_valid_after(end))
        if ca is not None:
            builder = builder.add_extension(x509.BasicConstraints(ca=ca, path_length=path_length if ca else None), critical=True)
        if key_usage:
            ca_usage = key_usage == "ca"
            builder = builder.add_extension(x509.KeyUsage(
                digital_signature=not ca_usage, content_commitment=False, key_encipherment=False, data_encipherment=False,
                key_agreement=False, key_cert_sign=ca_usage, crl_sign=ca_usage, encipher_only=False, decipher_only=False), critical=True)
        for oid, value, critical in extensions:
            builder = builder.add_extension(x509.UnrecognizedExtension(x509.ObjectIdentifier(oid), value), critical=critical)
        self.name = subject
        self.cert = builder.sign((issuer or self).key, hashes.SHA256())

    @property
    def der(self):
        return base64.b64encode(self.cert.public_bytes(serialization.Encoding.DER)).decode()


def leaf(name, issuer, android=False, **kwargs):
    extensions = [(KEY_DESCRIPTION.dotted_string, key_description(SIGN), False)] if android else []
    return Cert(name, issuer, ca=False, key_usage="leaf", extensions=tuple(extensions) + tuple(kwargs.pop("extensions", ())), **kwargs)


def platform_cases(platform, root_name, android=False):
    """The cases every platform shares: the correct chain, and each forgery RFC 5280 refuses."""
    root = Cert(root_name)
    ca = Cert(f"{root_name} CA 1", root, path_length=0)
    cases = {"genuine": ([leaf("device key", ca, android), ca], "accepted", "a correct chain: leaf, intermediate, root")}
    # A leaf issued by an ordinary key (not a CA): what any device owner can make with a key of their own.
    device_key = leaf("device key", ca, android=False)
    cases["leaf-issued-by-non-ca"] = ([leaf("minted key", device_key, android), device_key, ca], "issuer_not_ca",
                                      "a leaf issued by a key that is not a CA")
    no_sign = Cert(f"{root_name} CA 2", root, path_length=0, key_usage="leaf")
    cases["issuer-without-keycertsign"] = ([leaf("device key", no_sign, android), no_sign], "issuer_without_key_cert_sign",
                                           "an issuer whose keyUsage lacks keyCertSign")
    sub = Cert(f"{root_name} CA 1 sub", ca)
    cases["pathlen-exceeded"] = ([leaf("device key", sub, android), sub, ca], "path_length_exceeded",
                                 "an intermediate with pathLenConstraint 0 above another CA")
    expired = Cert(f"{root_name} CA 3", root, path_length=0, end=datetime.datetime(2026, 1, 1, tzinfo=UTC))
    cases["expired-intermediate"] = ([leaf("device key", expired, android), expired], "outside_validity",
                                     "an intermediate expired before the verification time")
    fake_root = Cert(root_name)  # the same name, another key
    fake_ca = Cert(f"{root_name} CA 1", fake_root, path_length=0)
    cases["wrong-root"] = ([leaf("device key", fake_ca, android), fake_ca, fake_root], "no_path_to_trust_anchor",
                           "a right-looking chain to a root with the genuine root's name and another key")
    critical = Cert(f"{root_name} CA 4", root, path_length=0, extensions=(("1.3.6.1.4.1.99999.1", b"\x05\x00", True),))
    cases["unknown-critical-extension"] = ([leaf("device key", critical, android), critical], "unhandled_critical_extension",
                                           "an intermediate with a critical extension nobody understands")
    cases["unknown-critical-extension-in-leaf"] = (
        [leaf("device key", ca, android, extensions=(("1.3.6.1.4.1.99999.2", b"\x05\x00", True),)), ca], "unhandled_critical_extension",
        "a leaf with a critical extension nobody understands")
    return root, ca, cases


def android_cases():
    root, ca, cases = platform_cases("android", "Test Key Attestation", android=True)
    attest_key = Cert("attest key", ca, ca=False, key_usage="leaf", extensions=((KEY_DESCRIPTION.dotted_string, key_description(ATTEST_KEY), False),))
    cases["attest-key"] = ([leaf("attested key", attest_key, True), attest_key, ca], "accepted",
                           "Android's attestation-key case: the issuer's key description says ATTEST_KEY and it chains to the root")
    signing_key = Cert("signing key", ca, ca=False, key_usage="leaf", extensions=((KEY_DESCRIPTION.dotted_string, key_description(SIGN), False),))
    cases["attest-key-without-purpose"] = ([leaf("attested key", signing_key, True), signing_key, ca], "attest_key_without_purpose",
                                           "an attest-key chain whose issuer is a KeyStore key without ATTEST_KEY")
    outside_root = Cert("Test Key Attestation")  # the root's name, another key
    outside = Cert("attest key", outside_root, ca=False, key_usage="leaf",
                   extensions=((KEY_DESCRIPTION.dotted_string, key_description(ATTEST_KEY), False),))
    cases["attest-key-to-wrong-root"] = ([leaf("attested key", outside, True), outside, outside_root], "no_path_to_trust_anchor",
                                         "an ATTEST_KEY issuer that does not itself chain to the root")
    revoked_ca = Cert("Test Key Attestation CA 5", root, path_length=0, serial=0x2C8CDDDFD5E03BFC)
    cases["revoked-serial"] = ([leaf("device key", revoked_ca, True), revoked_ca], "revoked",
                               "an intermediate whose serial is on the status list", ["2c8cdddfd5e03bfc"])
    return root, cases


def apple_cases():
    root, ca, cases = platform_cases("apple", "Test App Attestation")
    self_made = Cert("Test App Attestation CA 1", None)  # the attacker's own CA, named as Apple's intermediate
    cases["self-made-intermediate"] = ([leaf("credential key", self_made), self_made], "no_path_to_trust_anchor",
                                       "an App Attest chain with a self-made intermediate")
    return root, cases


def webauthn_cases():
    root, _, cases = platform_cases("webauthn", "Test FIDO Authenticator Root")
    return root, cases


def write(directory):
    os.makedirs(directory, exist_ok=True)
    for old in os.listdir(directory):
        if old.endswith(".json"):
            os.remove(os.path.join(directory, old))
    count = 0
    for platform, (root, cases) in (("android", android_cases()), ("apple", apple_cases()), ("webauthn", webauthn_cases())):
        for name, case in cases.items():
            chain, expect, why = case[:3]
            revoked = case[3] if len(case) > 3 else []
            record = {"name": f"{platform}-{name}", "platform": platform, "chain": [c.der for c in chain], "anchors": [root.der],
                      "revoked": revoked, "time": TIME, "expect": expect, "why": why}
            with open(os.path.join(directory, f"{platform}-{name}.json"), "w") as out:
                json.dump(record, out, indent=1)
                out.write("\n")
            count += 1
    print(f"forged_chains: {count} cases in {directory}")


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    write(sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "ForgedChains"))
