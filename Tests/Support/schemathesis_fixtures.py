#!/usr/bin/env python3
"""Real data for the contract test (ops/schemathesis, issue 44): what schemathesis' generated
requests need to get past the 401, 404 and 400 branches of every operation.

    schemathesis_fixtures.py --lb URL --bin MODGUD --out FIXTURES.json

Made through the admin API (MODGUD_ADMIN_TOKEN), the app's own endpoints and `modgud bench
sessions` (MODGUD_DATABASE_URL), all with a fresh tag so that it runs again on the same cluster:

- a realm `ct<tag>` (Host `ct<tag>.localhost`, every rate limit lifted) for the app's endpoints:
  a public client with every grant, passkey sign-up, an iOS and an Android app (the association
  files); a My Account client (audience `https://ct<tag>.localhost/me/`, the four
  `…:me:authentication_methods` scopes); a confidential client (introspection,
  client_credentials); users signed in with a live access token each: one with passkeys to read
  and rename and others to delete, one for My Account likewise, four with TOTP pending, one to
  enroll TOTP; three users signed up by passkey (their addresses unconfirmed) with the software
  authenticators that sign in again; refresh tokens to spend at /connect/token and /connect/revoke;
  Shared Signals receivers: one with a poll stream, four with streams to delete, four without one
  to create;
- a realm `ct<tag>-admin` for the admin API (clients and users to read, change and delete, users
  with passkeys and TOTP), `ct<tag>-patch` for PATCH, `ct<tag>-keys` with rotated-out signing keys
  to retire; the audit log's checkpoint size and leaf positions of `dev` (ops/cluster's realm,
  read only) for the proofs.

Each destructive operation gets its own disposable objects, so it cannot break the rest of the
run. Also the software authenticator (SoftPasskey) and the reader of the mail the instances print
(MailLog) that the hooks use. Standard library, cryptography, and model_test.py's CBOR.
"""
import argparse
import base64
import glob
import hashlib
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model_test import b64u, cbor, passkey_attestation  # noqa: E402
import platform_attestation  # noqa: E402

ME_SCOPES = ["read:me:authentication_methods", "create:me:authentication_methods", "update:me:authentication_methods",
             "delete:me:authentication_methods"]
APPLE_APP = "ABCDE12345.org.modgud.contract"
ANDROID_APP = {"PackageName": "org.modgud.contract", "Sha256CertFingerprints": [":".join(["AB"] * 32)]}


class SoftPasskey:
    """A platform authenticator (ES256, `none` attestation) that keeps its key: it signs up, then signs in."""

    def __init__(self, key=None, credential_id=None, user_handle=None):
        self.key = key or ec.generate_private_key(ec.SECP256R1())
        self.credential_id = credential_id or os.urandom(32)
        self.user_handle = user_handle
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
                             "transports": ["internal"]}}

    def assertion(self, options):
        rp_id = options["rpId"]
        self.count += 1
        auth_data = hashlib.sha256(rp_id.encode()).digest() + bytes([0x01 | 0x04]) + self.count.to_bytes(4, "big")
        client_data = json.dumps({"type": "webauthn.get", "challenge": options["challenge"], "origin": "https://" + rp_id},
                                 separators=(",", ":")).encode()
        signature = self.key.sign(auth_data + hashlib.sha256(client_data).digest(), ec.ECDSA(hashes.SHA256()))
        return {"id": b64u(self.credential_id), "rawId": b64u(self.credential_id), "type": "public-key",
                "response": {"clientDataJSON": b64u(client_data), "authenticatorData": b64u(auth_data), "signature": b64u(signature),
                             "userHandle": self.user_handle}}

    def dump(self):
        pem = self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        return {"key": pem.decode(), "id": b64u(self.credential_id), "user_handle": self.user_handle}

    @classmethod
    def load(cls, data):
        key = serialization.load_pem_private_key(data["key"].encode(), None)
        return cls(key, base64.urlsafe_b64decode(data["id"] + "=" * (-len(data["id"]) % 4)), data["user_handle"])


class MailLog:
    """Mail the instances print (ops/cluster's MODGUD_MAIL_TRANSPORT=console): codes and magic links by address."""

    START = re.compile(r"── mail to (\S+) ─")

    def __init__(self, folder):
        self.files = sorted(glob.glob(os.path.join(folder, "instance*.log"))) if folder else []
        self.offsets = {f: os.path.getsize(f) for f in self.files}
        self.current = {f: None for f in self.files}
        self.mail = {}

    def poll(self):
        for name in self.files:
            with open(name, "rb") as f:
                f.seek(self.offsets[name])
                data = f.read()
            end = data.rfind(b"\n") + 1
            self.offsets[name] += end
            for line in data[:end].decode("utf-8", "replace").split("\n")[:-1]:
                start = self.START.search(line)
                if start:
                    self.current[name] = self.mail.setdefault(start.group(1).lower(), [])
                    self.current[name].append("")
                elif self.current[name] is not None:
                    if line.startswith("─────"):
                        self.current[name] = None
                    else:
                        self.current[name][-1] += line + "\n"

    def count(self, address):
        """How many mails address has had: call before the request whose mail `wait` is to find."""
        self.poll()
        return len(self.mail.get(address.lower(), []))

    def wait(self, address, pattern, since, seconds=5.0):
        """The newest match of pattern in mail to address after the first `since` ones, within seconds, or None."""
        deadline = time.monotonic() + seconds
        while self.files:
            self.poll()
            for text in reversed(self.mail.get(address.lower(), [])[since:]):
                found = re.search(pattern, text)
                if found:
                    return found
            if time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        return None


class Api:
    def __init__(self, lb, admin_token, host):
        self.lb = lb.rstrip("/")
        self.admin_token = admin_token
        self.host = host

    def request(self, method, path, body=None, form=None, token=None, host=None, expect=(200, 201, 202, 204)):
        headers = {"Host": host or self.host, "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if form is not None:
            data = urllib.parse.urlencode(form).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        if token:
            headers["Authorization"] = "Bearer " + token
        request = urllib.request.Request(self.lb + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                status, text = response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            status, text = error.code, error.read().decode()
        if status not in expect:
            raise SystemExit(f"schemathesis_fixtures: {method} {path}: {status} {text[:300]}")
        return json.loads(text) if text.startswith(("{", "[")) else None

    def admin(self, method, path, body=None, **kw):
        return self.request(method, "/admin/api/realms" + path, body=body, token=self.admin_token, **kw)


def create_realm(api, name, **settings):
    api.admin("POST", "", {"Id": name, "Hosts": [f"{name}.localhost"], "DisplayName": f"Contract {name}", "PrimaryDomain": f"{name}.localhost",
                           "NativeGrants": {"Enabled": True}, "SigningAlgorithm": "ES256", **settings})


def served(api, host):
    """Until both instances behind the balancer know the new realm (hang guard: 30 s)."""
    for _ in range(300):
        answers = [api.request("GET", "/.well-known/openid-configuration", host=host, expect=(200, 404)) for _ in range(4)]
        if all("issuer" in answer for answer in answers):
            return
        time.sleep(0.1)
    raise SystemExit(f"schemathesis_fixtures: no instance serves {host}")


def sessions(binary, realm, client, count, scope, passkey=False):
    args = [binary, "bench", "sessions", realm, client, "--count", str(count), "--scope", scope]
    if passkey:
        args.append("--passkey")
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return [line.strip() for line in out.splitlines() if line.strip()]


def refresh(api, client, refresh_token):
    answer = api.request("POST", "/connect/token", form={"grant_type": "refresh_token", "client_id": client, "refresh_token": refresh_token})
    return {"client": client, "access": answer["access_token"], "refresh": answer["refresh_token"]}


def signed_in(api, binary, realm, client, scope, passkey=False):
    return refresh(api, client, sessions(binary, realm, client, 1, scope, passkey)[0])


def enroll_passkeys(api, token, count):
    ids = []
    for i in range(count):
        begun = api.request("POST", "/connect/passkey/enroll/begin", token=token)
        done = api.request("POST", "/connect/passkey/enroll", token=token, body={
            "ceremonyId": begun["ceremonyId"], "attestation": passkey_attestation(begun["options"]), "DisplayName": f"Contract {i}"})
        ids.append(done["Id"])
    return ids


def enroll_my_account(api, token, count):
    ids = []
    for i in range(count):
        begun = api.request("POST", "/me/v1/authentication-methods", token=token, body={"type": "passkey"})
        done = api.request("POST", "/me/v1/authentication-methods/passkey%7Cnew/verify", token=token, body={
            "auth_session": begun["auth_session"], "authn_response": passkey_attestation(begun["authn_params_public_key"]),
            "name": f"Contract {i}"})
        ids.append(done["id"])
    return ids


def client_credentials(api, client, secret, scope):
    answer = api.request("POST", "/connect/token", form={"grant_type": "client_credentials", "client_id": client, "client_secret": secret,
                                                         "scope": scope})
    return answer["access_token"]


# The app's realm lifts every rate limit: the run sends many sign-ups and grants from one address.
NO_LIMITS = {name: {"Limit": 1000000, "WindowSeconds": 60, "Burst": 100000} for name in
             ["otp-request.ip", "otp-request.mailbox", "signup.ip", "token.ip", "token.client", "token.client-source", "passkey.ip", "attestation.ip",
              "device.user-code.ip", "device.user-code.realm"]}


TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"


def idp_post(path, body):
    """The stand-in Apple and Google that ops/schemathesis runs (MODGUD_SCHEMATHESIS_IDP)."""
    request = urllib.request.Request(os.environ["MODGUD_SCHEMATHESIS_IDP"] + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


def providers():
    """The app realm's Google (links by a verified address) and Apple, served by the stand-in."""
    idp = os.environ["MODGUD_SCHEMATHESIS_IDP"]
    return [{"Id": "google", "Kind": "google", "JwksUrl": f"{idp}/google/oauth2/v3/certs", "Audiences": ["server-client.apps.googleusercontent.com"],
             "Linking": "VerifiedEmail"},
            {"Id": "apple", "Kind": "apple", "JwksUrl": f"{idp}/apple/auth/keys", "Audiences": ["com.example.app"]}]


def federated_users(api, client, scope, prefix, count):
    """People who signed up with Google (issue 48), each with a live token and a linked Google
    account: what DELETE /connect/identities/{provider} and its My Account path unlink."""
    users = []
    for i in range(count):
        nonce = api.request("POST", "/connect/federation/nonce")
        token = idp_post("/google/mint", {"nonce": nonce["nonce_sha256"], "email": f"{prefix}-{i}@example.com", "sub": f"{prefix}-{uuid.uuid4()}"})
        tokens = api.request("POST", "/connect/token", form={
            "grant_type": TOKEN_EXCHANGE, "client_id": client, "subject_token": token["id_token"], "nonce": nonce["nonce"],
            "subject_token_type": "urn:ietf:params:oauth:token-type:id_token", "scope": scope})
        users.append(tokens["access_token"])
    return users


def app_fixtures(api, binary, tag):
    """The app's realm `ct<tag>` (Host `ct<tag>.localhost`): what the app's endpoints, My Account and Shared Signals need."""
    realm, host = f"ct{tag}", f"ct{tag}.localhost"
    create_realm(api, realm, RateLimits=NO_LIMITS, MagicLinkEnabled=True, RegistrationPosture="JitOnOtp", FederatedProviders=providers())
    served(api, host)
    me_audience = f"https://{host}/me/"
    app, me, conf = "app", "my-account", "service"
    api.admin("POST", f"/{realm}/clients", {
        "Id": app, "Type": "public", "Grants": ["urn:cocoar:otp", "urn:cocoar:magic", "urn:cocoar:passkey", "refresh_token", TOKEN_EXCHANGE,
                                                "urn:ietf:params:oauth:grant-type:device_code"],
        "Scopes": ["openid", "email", "profile", "offline_access", "modgud:passkeys:enroll"], "PasskeySignUp": True,
        "AppleAppIds": [APPLE_APP], "AndroidApps": [ANDROID_APP]})
    api.admin("POST", f"/{realm}/clients", {
        "Id": me, "Type": "public", "Grants": ["refresh_token", "urn:cocoar:passkey", TOKEN_EXCHANGE],
        "Scopes": ["openid", "offline_access", "modgud:passkeys:enroll"] + ME_SCOPES, "Audiences": [me_audience],
        "DefaultAudience": me_audience})
    # The Play Console's keys for the app's Android package (issue 47): the hooks make verdicts with them.
    play_decryption, play_signing, play_console = platform_attestation.play_console_keys()
    api.admin("PUT", f"/{realm}/clients/{app}/play-integrity/{ANDROID_APP['PackageName']}", play_console)
    play_integrity = {"decryption": base64.b64encode(play_decryption).decode(), "signing": play_signing.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()}
    conf_secret = api.admin("POST", f"/{realm}/clients", {
        "Id": conf, "Type": "confidential", "Grants": ["client_credentials"], "Scopes": ["ssf.read"]})["Secret"]
    app_scope = "openid email profile offline_access modgud:passkeys:enroll"
    user = signed_in(api, binary, realm, app, app_scope, passkey=True)
    # TOTP pending (enrolled, not confirmed): each is turned on once by POST /api/account/totp/confirm.
    totp_pending = [signed_in(api, binary, realm, app, app_scope) for _ in range(4)]
    totp_enroll = signed_in(api, binary, realm, app, app_scope)
    my_account = signed_in(api, binary, realm, me, " ".join(["openid", "offline_access", "modgud:passkeys:enroll"] + ME_SCOPES), passkey=True)
    user_passkeys = [p["Id"] for p in api.request("GET", "/connect/passkey", token=user["access"])] + enroll_passkeys(api, user["access"], 6)
    me_passkeys = [m["id"] for m in api.request("GET", "/me/v1/authentication-methods", token=my_account["access"])["authentication_methods"]]
    me_passkeys += enroll_my_account(api, my_account["access"], 6)
    for pending in totp_pending:
        pending["secret"] = api.request("POST", "/api/account/totp/enroll", token=pending["access"])["Secret"]
    # Passkey sign-ups: users whose address is unconfirmed (POST /api/account/email/confirm),
    # with authenticators that sign in again (urn:cocoar:passkey and Auth0's webauthn grant).
    signed_up = []
    for i in range(3):
        passkey = SoftPasskey()
        begun = api.request("POST", "/connect/passkey/register/begin", body={"ClientId": app, "Email": f"signup-{i}@{host}"})
        tokens = api.request("POST", "/connect/token", form={
            "grant_type": "urn:cocoar:passkey", "client_id": app, "ceremony_id": begun["ceremonyId"],
            "attestation": json.dumps(passkey.attestation(begun["options"])), "scope": "openid email offline_access"})
        signed_up.append({"access": tokens["access_token"], "email": f"signup-{i}@{host}", "passkey": passkey.dump()})
    pool = sessions(binary, realm, app, 40, "openid email offline_access")
    identities = federated_users(api, app, "openid email", f"fed-{tag}", 12)
    me_identities = federated_users(api, me, " ".join(["openid"] + ME_SCOPES), f"fed-me-{tag}", 12)
    # Addresses to sign in with: not the users whose TOTP the run turns on (a code alone is not enough for them).
    second_factor = {api.request("GET", "/connect/userinfo", token=t["access"])["sub"] for t in totp_pending + [totp_enroll]}
    users = [u for u in api.admin("GET", f"/{realm}/users") if u["Id"] not in second_factor][:20]
    return {
        "realm": realm, "host": host, "issuer": f"https://{host}", "app_client": app, "me_client": me, "conf_client": conf, "conf_secret": conf_secret,
        "tokens": {"user": user, "totp_pending": totp_pending, "totp_enroll": totp_enroll, "me": my_account},
        "user_passkeys": {"keep": user_passkeys[:2], "delete": user_passkeys[2:]},
        "me_passkeys": {"keep": me_passkeys[:2], "delete": me_passkeys[2:]},
        "refresh_pool": pool, "signed_up": signed_up,
        "emails": [u["Email"] for u in users if not u["Email"].startswith("signup-")], "subjects": [u["Id"] for u in users],
        "ssf": ssf_fixtures(api, realm), "play_integrity": play_integrity,
        "identities": {"connect": identities, "me": me_identities},
    }


def ssf_fixtures(api, realm):
    """Receivers: `main` with a poll stream; `delete` ones with a stream each; `create` ones without."""
    def receiver(name, stream):
        secret = api.admin("POST", f"/{realm}/clients", {
            "Id": name, "Type": "confidential", "Grants": ["client_credentials"], "Scopes": ["ssf.manage", "email"]})["Secret"]
        token = client_credentials(api, name, secret, "ssf.manage")
        entry = {"client": name, "token": token}
        if stream:
            entry["stream"] = api.request("POST", "/ssf/stream", token=token, body={"description": "contract test"})["stream_id"]
        return entry
    return {
        "main": receiver("receiver", True),
        "delete": [receiver(f"receiver-d{i}", True) for i in range(4)],
        "create": [receiver(f"receiver-c{i}", False) for i in range(4)],
    }


def audit_leaves(api, realm):
    """The size of the realm's latest checkpoint and log positions of events in it (for the proofs)."""
    for _ in range(300):  # hang guard: a realm's first checkpoint follows its first events within seconds
        checkpoint = api.admin("GET", f"/{realm}/audit/checkpoint", expect=(200, 404))
        if "tree_size" in checkpoint:
            break
        time.sleep(0.1)
    size = checkpoint["tree_size"]
    try:
        positions = subprocess.run(
            ["psql", os.environ["MODGUD_DATABASE_URL"], "-Atc",
             f"SELECT position FROM audit_leaves WHERE realm = '{realm}' AND leaf_index < {int(size)} ORDER BY leaf_index DESC LIMIT 40"],
            check=True, capture_output=True, text=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        # No psql: the realm's earliest events (`dev` is ops/cluster's first realm), by asking for their proofs.
        positions = [p for p in range(1, 200) if "leaf_index" in api.admin("GET", f"/{realm}/audit/proof/inclusion?position={p}", expect=(200, 400, 404))]
    return size, [int(p) for p in positions]


def admin_fixtures(api, binary, tag, app_realm):
    """Realms of their own for the admin API: what it changes or deletes is nobody else's."""
    realm, patch, keys = f"ct{tag}-admin", f"ct{tag}-patch", f"ct{tag}-keys"
    for name in (realm, patch, keys):
        create_realm(api, name)
    kids = []
    for _ in range(8):
        kids.append(api.admin("POST", f"/{keys}/signing-keys", {"Algorithm": "ES256"})["Kid"])
    # An Apple provider whose Sign in with Apple key the apple-key operations set and remove.
    api.admin("PATCH", f"/{realm}", {"FederatedProviders": [{"Id": "apple", "Kind": "apple", "Audiences": ["com.example.app"]}]})
    web = "web"
    api.admin("POST", f"/{realm}/clients", {"Id": web, "Type": "public", "Grants": ["urn:cocoar:otp", "urn:cocoar:passkey", "refresh_token"],
                                            "Scopes": ["openid", "email", "offline_access"]})
    api.admin("POST", f"/{realm}/clients", {"Id": "service", "Type": "confidential", "Grants": ["client_credentials"], "Scopes": ["ssf.read"]})
    api.admin("POST", f"/{realm}/clients", {"Id": "android", "Type": "public", "Grants": ["urn:cocoar:otp", "refresh_token"],
                                            "Scopes": ["openid"], "AndroidApps": [ANDROID_APP]})
    disposable = [f"gone-{i}" for i in range(8)]
    for name in disposable:
        api.admin("POST", f"/{realm}/clients", {"Id": name, "Type": "confidential", "Grants": ["client_credentials"], "Scopes": ["ssf.read"]})
    sessions(binary, realm, web, 20, "openid email offline_access", passkey=True)
    listed = api.admin("GET", f"/{realm}/users")
    users = [u["Id"] for u in listed]
    passkeys = [[u, p["Id"]] for u in users[14:] for p in api.admin("GET", f"/{realm}/users/{u}/passkeys")]
    for u in users[:2]:
        api.admin("POST", f"/{realm}/users/{u}/totp")
    size, positions = audit_leaves(api, "dev")
    return {
        "realm": realm, "patch_realm": patch, "keys_realm": keys, "read_realms": [realm, app_realm, keys, "dev"],
        "kids": kids[:-1], "active_kid": kids[-1],
        "clients": {"keep": [web, "service", "android"], "confidential": ["service"], "android": ["android"], "delete": disposable},
        # Every user has a passkey (bench sessions --passkey): 0-1 have TOTP on (to turn off), 2-5 off (to turn on), 6-9 are
        # for the account verbs but delete, 10-13 may be deleted, 14-19 have their passkeys revoked.
        "users": {"totp_on": users[:2], "totp_off": users[2:6], "keep": users[6:10], "delete": users[10:14], "passkey_owners": users[14:]},
        "passkeys": passkeys, "emails": {u["Id"]: u["Email"] for u in listed},
        "existing_realms": [r["Id"] for r in api.admin("GET", "")],
        "audit": {"realm": "dev", "size": size, "positions": positions},
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lb", required=True)
    parser.add_argument("--bin", required=True)
    parser.add_argument("--out", required=True)
    a = parser.parse_args()
    tag = uuid.uuid4().hex[:6]
    api = Api(a.lb, os.environ["MODGUD_ADMIN_TOKEN"], f"ct{tag}.localhost")
    started = time.monotonic()
    app = app_fixtures(api, a.bin, tag)
    fixtures = {"tag": tag, "app": app, "admin": admin_fixtures(api, a.bin, tag, app["realm"])}
    with open(a.out, "w") as f:
        json.dump(fixtures, f, indent=1)
    print(f"schemathesis_fixtures: tag {tag} in {time.monotonic() - started:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
