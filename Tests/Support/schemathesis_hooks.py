"""Schemathesis hooks of the contract test (ops/schemathesis, issue 44): real data for generated requests.

Loaded by schemathesis through SCHEMATHESIS_HOOKS; reads the fixtures schemathesis_fixtures.py
wrote (MODGUD_SCHEMATHESIS_FIXTURES) and the admin token (MODGUD_ADMIN_TOKEN).

`before_call` gives every request the Host of the run's app realm and, per operation, the token
it needs (a user's, a My Account token, a Shared Signals receiver's, the admin token) and, often,
real identifiers in its path and query (realms, clients, users, passkeys, kids, streams, audit
positions) and a valid body in place of the generated one: a known client id, an address, a
passkey attestation or assertion from a software authenticator after a begin call of its own, a
code or magic link read from the mail the instances print (every grant of the token endpoint),
the TOTP code of the moment, a realm or client patch... The rest of the time the generated values
go out as they are, so the 401, 404 and 400 branches are still tried; negative cases keep their
bodies.

Destructive operations take their objects from pools of disposable ones (fixtures, and what
generated calls create: `after_call` adds created realms, clients, users, rotated-out keys,
passkeys, streams, signed-up users and refreshed tokens, which are then read, changed and
deleted), never from what other operations read; `guard` swaps values schemathesis took from
earlier responses for names nothing has when they would change or delete kept objects or
realms that are not the run's own.

`after_call` also counts statuses per operation into MODGUD_SCHEMATHESIS_STATS (JSON, at exit),
which ops/schemathesis prints when an operation never reached a success.
"""
import atexit
import base64
import collections
import hashlib
import hmac
import json
import os
import random
import struct
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import schemathesis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model_test import passkey_attestation  # noqa: E402
from schemathesis_fixtures import ANDROID_APP, APPLE_APP, MailLog, SoftPasskey  # noqa: E402
import platform_attestation  # noqa: E402

FIXTURES = json.load(open(os.environ["MODGUD_SCHEMATHESIS_FIXTURES"]))
APP, ADM = FIXTURES["app"], FIXTURES["admin"]
TAG = FIXTURES["tag"]
ADMIN_TOKEN = os.environ["MODGUD_ADMIN_TOKEN"]
HOST = FIXTURES["app"]["host"]
LB = os.environ.get("MODGUD_SCHEMATHESIS_LB", "http://127.0.0.1:18080").rstrip("/")
RNG = random.Random(int(os.environ.get("MODGUD_SCHEMATHESIS_SEED", "20261123")))
STATS = collections.defaultdict(collections.Counter)
SLOWEST = {}  # operation -> its slowest answer, seconds
SERIAL = iter(range(1, 1 << 30))
DEBUG = os.environ.get("MODGUD_SCHEMATHESIS_DEBUG")  # an operation's label (or part of it), or *: its calls on stderr

# Pools of disposable objects: each destructive call takes one; creations put theirs in.
POOLS = {
    "refresh": list(APP["refresh_pool"]),
    "user_passkeys": list(APP["user_passkeys"]["delete"]),
    "me_passkeys": list(APP["me_passkeys"]["delete"]),
    "ssf_delete": list(APP["ssf"]["delete"]),
    "ssf_create": list(APP["ssf"]["create"]),
    "clients": list(ADM["clients"]["delete"]),
    "users": list(ADM["users"]["delete"]),
    "passkeys": [tuple(p) for p in ADM["passkeys"]],
    "kids": list(ADM["kids"]),
    "totp_pending": list(APP["tokens"]["totp_pending"]),
    "realms": [],  # created by the run's POST /admin/api/realms: read and changed
}
STATE = {"active_kid": ADM["active_kid"]}
USED = {}  # case id -> (pool, object) of the disposable object it took
MAIN_STREAM = APP["ssf"]["main"]


def chance(p):
    return RNG.random() < p


def pick(values):
    return RNG.choice(values) if values else None


def positive(case):
    meta = case.meta
    return meta is None or not meta.generation.mode.is_negative


def rate(case, fuzzing=0.75):
    """How often a generated value is replaced by a real one: always for the coverage phase's few
    positive cases, mostly for the fuzzing phase's, never for negative ones (their bodies are the test)."""
    if not positive(case):
        return 0.0
    return 1.0 if coverage_positive(case) else fuzzing


def coverage_positive(case):
    meta = case.meta
    return positive(case) and meta is not None and meta.phase.name == "coverage"


def take(case, pool, p=0.8):
    """A disposable object for a destructive call; it leaves its pool when the call succeeds."""
    if POOLS[pool] and (coverage_positive(case) or chance(p)):
        item = RNG.choice(POOLS[pool][:3])
        USED[case.id] = (pool, item)
        return item
    return None


def text(value, fallback):
    """A generated string when it is a reasonable one, else the fallback."""
    if isinstance(value, str) and 0 < len(value.strip()) <= 40 and value.isprintable():
        return value
    return fallback


def bearer(case, token, p=0.92):
    if coverage_positive(case) or chance(p):
        case.headers["Authorization"] = "Bearer " + token


def fresh_address():
    return f"ct{TAG}-{next(SERIAL)}@example.com"


def totp(secret, offset=0):
    key = base64.b32decode(secret.upper() + "=" * (-len(secret) % 8))
    counter = int(time.time() // 30) + offset
    mac = hmac.new(key, struct.pack(">Q", counter), hashlib.sha1).digest()
    start = mac[-1] & 0x0F
    return f"{(struct.unpack('>I', mac[start:start + 4])[0] & 0x7FFFFFFF) % 1000000:06d}"


def call(method, path, token=None, body=None, form=None, errors=False):
    """A request of the hook's own (a ceremony's begin step, a code request), outside the generated
    ones. With errors, a 4xx answer's JSON body too (the challenge endpoint's steps are 400s)."""
    headers = {"Host": HOST, "Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    data = json.dumps(body if body is not None else {}).encode()
    if form is not None:
        headers["Content-Type"], data = "application/x-www-form-urlencoded", urllib.parse.urlencode(form).encode()
    request = urllib.request.Request(LB + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as answer:
        try:
            return json.loads(answer.read()) if errors else None
        except ValueError:
            return None
    except (urllib.error.URLError, ValueError):
        return None


def path(case, name, value, p=None):
    if value is not None and (coverage_positive(case) or chance(p if p is not None else 0.85 if positive(case) else 0.6)):
        case.path_parameters = {**(case.path_parameters or {}), name: value}


def body(case, value):
    if chance(rate(case)):
        case.body = value


def generated(case, key):
    return case.body.get(key) if isinstance(case.body, dict) else None


# The app's endpoints (the run's app realm, Host ct<tag>.localhost).

USER = APP["tokens"]["user"]
ME = APP["tokens"]["me"]


def code_request(case):
    value = {"Email": pick(APP["emails"]) if chance(0.3) else fresh_address()}
    body(case, value)


def magic_link(case):
    body(case, {"Email": pick(APP["emails"]) if chance(0.3) else fresh_address()})


def passwordless_start(case):
    value = {"client_id": APP["app_client"], "connection": pick(["email", APP["realm"]]), "email": fresh_address(), "send": pick(["code", "link"])}
    body(case, value)


def auth0_challenge(case):
    value = {"client_id": APP["app_client"]}
    if chance(0.5):
        value["realm"] = APP["realm"]
    body(case, value)


def auth0_register(case):
    body(case, {"client_id": APP["app_client"], "user_profile": {"email": fresh_address(), "name": text(generated(case, "name"), "Contract")}})


def passkey_begin(case):
    body(case, {"client_id": APP["app_client"]})


# The device grant (RFC 8628, issue 69): a live device authorization of the app client, typed on the
# realm's page (no token: whoever's passkey asserts approves), approved by a signed-up user's passkey.

def new_device_code():
    return call("POST", "/connect/device_authorization", form={"client_id": APP["app_client"], "scope": "openid"})


def device_authorization(case):
    body(case, {"client_id": APP["app_client"], "scope": "openid", "device_name": text(generated(case, "device_name"), "Contract TV")})


def device_shown():
    """A device authorization typed on the page: its id and an approval ceremony."""
    asked = new_device_code()
    return call("POST", "/connect/device/verify", body={"user_code": asked["user_code"]}) if asked and "user_code" in asked else None


def device_verify(case):
    case.headers.pop("Authorization", None)
    asked = new_device_code() if chance(rate(case)) else None
    if asked and "user_code" in asked:
        case.body = {"user_code": asked["user_code"]}


def device_approve(case):
    case.headers.pop("Authorization", None)
    shown = device_shown() if chance(rate(case)) else None
    if shown and "ceremonyId" in shown:
        case.body = {"authorization_id": shown["authorization_id"], "ceremonyId": shown["ceremonyId"],
                     "assertion": pick(PASSKEYS).assertion(shown["options"])}


def device_deny(case):
    case.headers.pop("Authorization", None)
    shown = device_shown() if chance(rate(case)) else None
    if shown and "ceremonyId" in shown:
        case.body = {"authorization_id": shown["authorization_id"], "ceremonyId": shown["ceremonyId"]}


def sign_up_begin(case):
    body(case, {"ClientId": APP["app_client"], "Email": fresh_address(), "DisplayName": text(generated(case, "DisplayName"), "Contract")})


def enroll_begin(case):
    bearer(case, USER["access"])


def end_session(case):
    # A disposable session (a pool refresh token, refreshed here) ends itself; otherwise an
    # unknown id (404) with the user's own session, which serves the other operations.
    if POOLS["refresh"] and chance(rate(case, 0.5)):
        tokens = call("POST", "/connect/token", form={"grant_type": "refresh_token", "client_id": APP["app_client"],
                                                       "refresh_token": POOLS["refresh"].pop(0)})
        listed = call("GET", "/connect/sessions", tokens["access_token"]) if tokens and "access_token" in tokens else None
        current = [s["id"] for s in listed or [] if isinstance(s, dict) and s.get("current")]
        if current:
            bearer(case, tokens["access_token"])
            path(case, "id", current[0], 1)
            return
    bearer(case, USER["access"])
    path(case, "id", "00000000-0000-4000-8000-%012d" % next(SERIAL), 1)


def enroll(case):
    bearer(case, USER["access"])
    if chance(rate(case)):
        begun = call("POST", "/connect/passkey/enroll/begin", USER["access"])
        if begun and "ceremonyId" in begun:
            case.body = {"ceremonyId": begun["ceremonyId"], "attestation": passkey_attestation(begun["options"]),
                         "DisplayName": text(generated(case, "DisplayName"), "Contract")}


def passkey_list(case):
    bearer(case, USER["access"])


def passkey_read(case):
    bearer(case, USER["access"])
    path(case, "id", pick(APP["user_passkeys"]["keep"] * 2 + POOLS["user_passkeys"]))
    if case.method.upper() == "PATCH":
        body(case, {"DisplayName": text(generated(case, "DisplayName"), f"Renamed {next(SERIAL)}")})


def passkey_delete(case):
    bearer(case, USER["access"])
    path(case, "id", take(case, "user_passkeys"), 1)


def totp_enroll(case):
    bearer(case, APP["tokens"]["totp_enroll"]["access"])


def totp_confirm(case):
    # Users with TOTP pending from the fixtures, each turned on once (then 409); another user enrolls.
    user = take(case, "totp_pending", 1) or APP["tokens"]["totp_pending"][-1]
    bearer(case, user["access"])
    body(case, {"Code": totp(user["secret"])})


def email_request(case):
    # A signed-up user's address is unconfirmed: a code goes out (202); anyone else's is confirmed (200).
    bearer(case, pick(UNCONFIRMED)["access"] if UNCONFIRMED and chance(0.3) else USER["access"])


def email_confirm(case):
    if UNCONFIRMED and chance(rate(case, 0.5)):
        user = pick(UNCONFIRMED)
        bearer(case, user["access"], p=1)
        code = mailed(user["email"], CODE, lambda: call("POST", "/api/account/email/confirm/request", user["access"]), resend=True)
        if code:
            case.body = {"Code": code.group(1)}
            PENDING[case.id] = ("confirmed", user)
            return
    bearer(case, USER["access"])
    body(case, {"Code": f"{RNG.randrange(1000000):06d}"})


def userinfo(case):
    bearer(case, USER["access"])


def introspect(case):
    token = pick([USER["access"], ME["access"], pick(POOLS["refresh"]) or USER["access"], "not-a-token"])
    value = {"client_id": APP["conf_client"], "client_secret": APP["conf_secret"], "token": token}
    if chance(0.3):
        value["token_type_hint"] = pick(["access_token", "refresh_token"])
    body(case, value)


def revoke(case):
    if POOLS["refresh"] and chance(rate(case, 0.6)):
        value = {"client_id": APP["app_client"], "token": POOLS["refresh"].pop(0)}
        if chance(0.3):
            value["token_type_hint"] = "refresh_token"
        case.body = value
    elif chance(0.3):
        body(case, {"client_id": APP["app_client"], "token": "not-a-token"})


CODE = r"code is (\d{6})"
LINK = r"userId=([0-9a-f-]+)&token=([A-Za-z0-9_-]+)"
SCOPE = "openid email offline_access"


def mailed(address, pattern, send, resend=False):
    """Sends (a code or link request) and reads the mail it causes. With resend, the newest earlier
    mail stands in for one the resend cooldown held back."""
    seen = MAIL.count(address)
    send()
    found = MAIL.wait(address, pattern, seen, seconds=2.0 if resend else 5.0)
    if found is None and resend:
        found = MAIL.wait(address, pattern, 0, seconds=0)
    return found


def json_text(case, value):
    """An object member of a grant: as is in a JSON body, its JSON text in a form."""
    return value if case.media_type == "application/json" else json.dumps(value)


def grant_refresh(case):
    if not POOLS["refresh"]:
        return None
    return {"grant_type": "refresh_token", "client_id": APP["app_client"], "refresh_token": POOLS["refresh"].pop(0)}


def grant_client_credentials(case):
    value = {"grant_type": "client_credentials", "client_id": APP["conf_client"], "client_secret": APP["conf_secret"]}
    if chance(0.5):
        value["scope"] = "ssf.read"
    return value


def grant_otp(case):
    email = pick(APP["emails"])
    code = mailed(email, CODE, lambda: call("POST", "/api/account/native/otp/request", body={"Email": email}))
    return code and {"grant_type": "urn:cocoar:otp", "client_id": APP["app_client"], "username": email, "otp_code": code.group(1), "scope": SCOPE}


def grant_auth0_otp(case):
    email = pick(APP["emails"])
    code = mailed(email, CODE, lambda: call("POST", "/passwordless/start", body={
        "client_id": APP["app_client"], "connection": "email", "email": email, "send": "code"}))
    return code and {"grant_type": "http://auth0.com/oauth/grant-type/passwordless/otp", "client_id": APP["app_client"], "username": email,
                     "otp": code.group(1), "realm": "email", "scope": SCOPE}


def grant_magic(case):
    email = pick(APP["emails"])
    link = mailed(email, LINK, lambda: call("POST", "/api/account/magic-link/request", body={"Email": email}))
    return link and {"grant_type": "urn:cocoar:magic", "client_id": APP["app_client"], "user_id": link.group(1), "magic_token": link.group(2),
                     "scope": SCOPE}


def grant_passkey_sign_up(case):
    passkey, email = SoftPasskey(), fresh_address()
    begun = call("POST", "/connect/passkey/register/begin", body={"ClientId": APP["app_client"], "Email": email})
    if not begun or "ceremonyId" not in begun:
        return None
    PENDING[case.id] = ("signed_up", {"email": email, "passkey": passkey})
    return {"grant_type": "urn:cocoar:passkey", "client_id": APP["app_client"], "ceremony_id": begun["ceremonyId"],
            "attestation": json.dumps(passkey.attestation(begun["options"])), "scope": SCOPE}


def grant_passkey_sign_in(case):
    begun = call("POST", "/connect/passkey/begin", form={"client_id": APP["app_client"]})
    if not begun or "ceremonyId" not in begun:
        return None
    return {"grant_type": "urn:cocoar:passkey", "client_id": APP["app_client"], "ceremony_id": begun["ceremonyId"],
            "assertion": json.dumps(pick(PASSKEYS).assertion(begun["options"]))}


def grant_auth0_webauthn(case):
    begun = call("POST", "/passkey/challenge", body={"client_id": APP["app_client"]})
    if not begun or "auth_session" not in begun:
        return None
    return {"grant_type": "urn:okta:params:oauth:grant-type:webauthn", "client_id": APP["app_client"], "auth_session": begun["auth_session"],
            "authn_response": json_text(case, pick(PASSKEYS).assertion(begun["authn_params_public_key"])), "scope": SCOPE}


# Every grant the token endpoint serves, with real credentials: refresh tokens from the pool (their
# successors go back into it), client credentials, codes and links read from the mail the
# instances print, passkeys signed up by a software authenticator, which then signs in with them.
GRANTS = [(grant_refresh, 30), (grant_client_credentials, 15), (grant_otp, 10), (grant_auth0_otp, 8), (grant_magic, 8),
          (grant_passkey_sign_up, 10), (grant_passkey_sign_in, 10), (grant_auth0_webauthn, 9)]


def token(case):
    if not chance(rate(case, 0.8)):
        return
    grant = RNG.choices([g for g, _ in GRANTS], weights=[w for _, w in GRANTS])[0]
    value = grant(case) or grant_client_credentials(case)
    case.body = value


def my_account_list(case):
    bearer(case, ME["access"])


def idp_post(path, value):
    """The stand-in Apple and Google of ops/schemathesis (issue 48)."""
    request = urllib.request.Request(os.environ["MODGUD_SCHEMATHESIS_IDP"] + path, data=json.dumps(value).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


def apple_notification(case):
    # A notification the stand-in Apple signed (acknowledged: nobody is linked to these subjects),
    # or the generated payload (refused with the check it failed).
    if chance(rate(case)):
        kind = pick(["consent-revoked", "account-delete", "email-disabled", "email-enabled"])
        body(case, {"payload": idp_post("/apple/notify", {"type": kind, "sub": f"000{next(SERIAL)}.contract"})["payload"]})


IDENTITIES = APP["identities"]


def identity_unlink(case):
    # A person who signed up with Google unlinks it (204, once each); else the user's token
    # with whatever provider was generated (404).
    pool = IDENTITIES["me" if case.path.startswith("/me/") else "connect"]
    if pool and chance(rate(case, 0.5)):
        bearer(case, pool.pop(0))
        path(case, "provider", "google", 1)
        return
    bearer(case, ME["access"] if case.path.startswith("/me/") else USER["access"])


def my_account_begin(case):
    bearer(case, ME["access"])
    value = {"type": "passkey"}
    if chance(0.3):
        value["connection"] = APP["realm"]
    body(case, value)


def my_account_verify(case):
    bearer(case, ME["access"])
    if chance(rate(case)):
        begun = call("POST", "/me/v1/authentication-methods", ME["access"], {"type": "passkey"})
        if begun and "auth_session" in begun:
            case.body = {"auth_session": begun["auth_session"], "authn_response": passkey_attestation(begun["authn_params_public_key"]),
                         "name": text(generated(case, "name"), "Contract")}


def my_account_read(case):
    bearer(case, ME["access"])
    path(case, "id", pick(APP["me_passkeys"]["keep"] * 2 + POOLS["me_passkeys"]))
    if case.method.upper() == "PATCH":
        body(case, {"name": text(generated(case, "name"), f"Renamed {next(SERIAL)}")})


def my_account_delete(case):
    bearer(case, ME["access"])
    path(case, "id", take(case, "me_passkeys"), 1)


# Shared Signals: the main receiver's poll stream; disposable receivers for create and delete.

EVENTS = ["https://schemas.openid.net/secevent/caep/event-type/session-revoked",
          "https://schemas.openid.net/secevent/caep/event-type/credential-change",
          "https://schemas.openid.net/secevent/risc/event-type/account-disabled"]


MAIL = MailLog(os.environ.get("MODGUD_SCHEMATHESIS_MAIL_LOGS"))
PASSKEYS = [SoftPasskey.load(u["passkey"]) for u in APP["signed_up"]]  # they sign in
UNCONFIRMED = list(APP["signed_up"])  # signed up by passkey: their addresses are unconfirmed
PENDING = {}  # case id -> what its success means (a sign-up to keep, an address confirmed)


def ssf_main(case):
    bearer(case, MAIN_STREAM["token"])


def stream_body(include_id):
    value = {"description": f"contract {next(SERIAL)}"}
    if include_id:
        value["stream_id"] = MAIN_STREAM["stream"]
    if chance(0.5):
        value["delivery"] = {"method": "urn:ietf:rfc:8936"}
    if chance(0.5):
        value["events_requested"] = RNG.sample(EVENTS, RNG.randint(1, len(EVENTS)))
    if chance(0.2):
        value["format"] = pick(["iss_sub", "email"])
    return value


def ssf_create(case):
    receiver = take(case, "ssf_create") or MAIN_STREAM
    bearer(case, receiver["token"])
    body(case, stream_body(False))


def ssf_delete(case):
    receiver = take(case, "ssf_delete")
    if receiver is not None:
        bearer(case, receiver["token"], p=1)
        case.query = {"stream_id": receiver["stream"]}
    else:
        bearer(case, MAIN_STREAM["token"])
        if chance(0.5):
            case.query = {"stream_id": "no-such-stream"}


def ssf_read(case):
    ssf_main(case)
    if coverage_positive(case) or chance(0.75):
        case.query = {"stream_id": MAIN_STREAM["stream"]} if coverage_positive(case) or chance(0.8) or "status" in case.path else {}


def ssf_configure(case):
    ssf_main(case)
    body(case, stream_body(True))


def ssf_set_status(case):
    ssf_main(case)
    status = generated(case, "status")
    value = {"stream_id": MAIN_STREAM["stream"], "status": status if status in ("enabled", "paused", "disabled") else "enabled"}
    if chance(0.3):
        value["reason"] = "contract test"
    body(case, value)


def ssf_subject(case):
    ssf_main(case)
    subject = pick([
        {"format": "opaque", "id": pick(APP["subjects"])},
        {"format": "email", "email": pick(APP["emails"]) or fresh_address()},
        {"format": "iss_sub", "iss": APP["issuer"], "sub": pick(APP["subjects"])},
        {"format": "complex", "user": {"format": "email", "email": fresh_address()}},
    ])
    body(case, {"stream_id": MAIN_STREAM["stream"], "subject": subject})


def ssf_verify(case):
    # At most one verification per stream in 5 s (429): the receivers with streams take turns.
    receiver = pick([MAIN_STREAM] + POOLS["ssf_delete"])
    bearer(case, receiver["token"])
    body(case, {"stream_id": receiver["stream"], "state": f"contract-{next(SERIAL)}"})


def ssf_poll(case):
    ssf_main(case)
    path(case, "stream", MAIN_STREAM["stream"])
    if chance(rate(case)):
        case.body = {"maxEvents": RNG.randint(0, 20), "ack": [], "returnImmediately": True}
    # Never the 20 s wait of an empty poll: a live stream answers at once.
    if isinstance(case.body, dict):
        case.body = {**case.body, "returnImmediately": True}


# The admin API: realms of its own (ct<tag>...), read-only calls also on dev.

def admin_auth(case):
    if coverage_positive(case) or chance(0.95):
        case.headers["Authorization"] = "Bearer " + ADMIN_TOKEN


def realm(case, realm_id):
    path(case, "realm", realm_id)


def realm_create(case):
    admin_auth(case)
    name = f"ct{TAG}-n{next(SERIAL)}"
    value = {"Id": name, "Hosts": [f"{name}.localhost"], "DisplayName": text(generated(case, "DisplayName"), name)}
    if chance(0.5):
        value["SigningAlgorithm"] = pick(["ES256", "ES256", "RS256"])
    if chance(0.5):
        value["NativeGrants"] = {"Enabled": True, "AccessTokenLifetimeMinutes": RNG.randint(5, 60)}
    if chance(0.3):
        value["RegistrationPosture"] = pick(["JitOnOtp", "Off", "ExplicitEndpoint"])
    body(case, value)


REALM_PATCHES = [
    lambda: {"DisplayName": f"Contract {next(SERIAL)}"},
    lambda: {"MagicLinkEnabled": chance(0.5)},
    lambda: {"RegistrationPosture": pick(["JitOnOtp", "Off", "ExplicitEndpoint"])},
    lambda: {"SessionLimits": {"EnrollmentFreshnessMinutes": RNG.randint(1, 60), "RefreshReuseGraceSeconds": RNG.randint(0, 30)}},
    lambda: {"RateLimits": {pick(["token.ip", "otp-request.ip", "passkey.ip"]): {"Limit": RNG.randint(1, 1000), "WindowSeconds": 60}}},
    lambda: {"RateLimits": {"token.ip": None}},
    lambda: {"NativeGrants": {"Enabled": chance(0.5), "AccessTokenLifetimeMinutes": RNG.randint(5, 60)}},
    lambda: {"Connections": [f"conn{RNG.randint(1, 9)}"]},
    lambda: {"IssuerTrailingSlash": chance(0.5)},
    lambda: {"WebFallbackURL": pick(["https://example.com/signin", ""])},
    lambda: {"RegistrationFields": {pick(["Username", "Firstname", "Lastname"]): pick(["Off", "Optional", "Required"])}},
    lambda: {"Hosts": None},  # the realm's own host again (set below)
]


def realm_read(case):
    admin_auth(case)
    if case.method.upper() == "PATCH":
        target = pick([ADM["patch_realm"]] * 2 + POOLS["realms"])
        realm(case, target)
        value = {}
        for make in RNG.sample(REALM_PATCHES, RNG.randint(1, 3)):
            value.update(make())
        if "Hosts" in value:
            value["Hosts"] = [f"{target}.localhost"]
        body(case, value)
    else:
        realm(case, pick(ADM["read_realms"] + POOLS["realms"]))


def audit(case):
    admin_auth(case)
    realm(case, ADM["audit"]["realm"])
    size = ADM["audit"]["size"]
    if not chance(rate(case)):
        return
    if case.path.endswith("consistency"):
        first = RNG.randint(1, size)
        case.query = {"from": first, "to": RNG.randint(first, size)}
    elif case.path.endswith("inclusion"):
        case.query = {"position": pick(ADM["audit"]["positions"])}
        if chance(0.5):
            case.query["size"] = size


def admin_realm_only(case):
    admin_auth(case)
    realm(case, ADM["realm"])


def client_create(case):
    admin_auth(case)
    realm(case, ADM["realm"])
    name = f"new-{next(SERIAL)}"
    if chance(0.5):
        value = {"Id": name, "Type": "public", "Grants": ["urn:cocoar:otp", "refresh_token"], "Scopes": ["openid", "email", "offline_access"]}
    else:
        value = {"Id": name, "Type": "confidential", "Grants": ["client_credentials"], "Scopes": ["ssf.read"]}
    if chance(0.3):
        value["DisplayName"] = text(generated(case, "DisplayName"), name)
    body(case, value)


CLIENT_PATCHES = [
    lambda: {"DisplayName": f"Contract {next(SERIAL)}"},
    lambda: {"Scopes": RNG.sample(["openid", "email", "offline_access", "ssf.read"], RNG.randint(1, 3))},
    lambda: {"Audiences": ["https://api.example.com/"]},
    lambda: {"Dpop": pick(["off", "allowed", "required"])},
    lambda: {"DpopNonce": chance(0.5)},
    lambda: {"AccessTokenFormat": pick(["reference", "jwt"])},
    lambda: {"AppleAppIds": pick([[], ["ABCDE12345.org.example.app"]])},
]


def client_read(case):
    admin_auth(case)
    realm(case, ADM["realm"])
    method = case.method.upper()
    if method == "PATCH":
        path(case, "client", pick(ADM["clients"]["keep"] * 2 + POOLS["clients"]))
        value = {}
        for make in RNG.sample(CLIENT_PATCHES, RNG.randint(1, 2)):
            value.update(make())
        body(case, value)
    elif method == "DELETE":
        path(case, "client", take(case, "clients"), 1)
    elif case.path.endswith("/secret"):
        confidential = ADM["clients"]["confidential"]
        path(case, "client", pick(confidential if coverage_positive(case) else confidential * 3 + ADM["clients"]["keep"]))
    else:
        path(case, "client", pick(ADM["clients"]["keep"] + POOLS["clients"]))


def signing_key(case):
    admin_auth(case)
    realm(case, ADM["keys_realm"])
    body(case, {"Algorithm": pick(["ES256", "ES256", "RS256"])} if chance(0.8) else {})


def retire_key(case):
    admin_auth(case)
    realm(case, ADM["keys_realm"])
    kid = take(case, "kids")
    if kid is not None and chance(0.15):
        USED.pop(case.id, None)
        kid = STATE["active_kid"]  # the active key: refused
    path(case, "kid", kid, 1)
    body(case, {"Force": True} if chance(0.8) else pick([{}, {"Force": False}]))


def user_create(case):
    admin_auth(case)
    realm(case, ADM["realm"])
    value = {"Email": fresh_address()}
    for key in ("FirstName", "LastName", "Username"):
        if chance(0.3):
            value[key] = text(generated(case, key), key.lower())
    body(case, value)


def user_delete(case):
    admin_auth(case)
    realm(case, ADM["realm"])
    user = take(case, "users")
    if user is not None:
        path(case, "user", user, 1)
        if positive(case):
            case.query = pick([{}, {"erase": "true"}, {"erase": "false"}])


def user_read(case):
    admin_auth(case)
    realm(case, ADM["realm"])
    if case.path.endswith("/passkeys"):
        path(case, "user", pick(ADM["users"]["passkey_owners"]))
    else:
        path(case, "user", pick(ADM["users"]["keep"] * 2 + POOLS["users"]))


def user_totp(case):
    admin_auth(case)
    realm(case, ADM["realm"])
    path(case, "user", pick(ADM["users"]["totp_on" if case.method.upper() == "DELETE" else "totp_off"]))


def user_action(case):
    admin_auth(case)
    realm(case, ADM["realm"])
    user = take(case, "users", 0.1)
    if user is not None:
        path(case, "user", user, 1)
        path(case, "action", "delete", 0.9)
    else:
        path(case, "user", pick(ADM["users"]["keep"]))
        path(case, "action", pick(["disable", "enable", "enable", "logout-everywhere"]))


def passkey_revoke(case):
    admin_auth(case)
    realm(case, ADM["realm"])
    taken = take(case, "passkeys")
    if taken is not None:
        path(case, "user", taken[0], 1)
        path(case, "passkey", taken[1], 1)


VERIFIER = "contract-" + "v" * 40
CHALLENGE = base64.urlsafe_b64encode(hashlib.sha256(VERIFIER.encode()).digest()).rstrip(b"=").decode()


def authorization_challenge(case):
    """The Authorization Challenge Endpoint (issue 45): a first step (an identifier, or a
    usernameless passkey), or a whole email-code sign-in whose last step answers the code."""
    if not chance(rate(case)):
        return
    first = {"response_type": "code", "client_id": APP["app_client"], "code_challenge": CHALLENGE, "code_challenge_method": "S256", "scope": SCOPE}
    if chance(0.3):
        case.body = dict(first, login_hint=fresh_address()) if chance(0.7) else first
        return
    email, began = fresh_address(), {}
    code = mailed(email, CODE, lambda: began.update(call("POST", "/connect/authorization-challenge", form=dict(first, login_hint=email), errors=True) or {}))
    if code and "auth_session" in began:
        case.body = {"client_id": APP["app_client"], "auth_session": began["auth_session"], "email_code": code.group(1)}



# The client attester (issue 47): evidence from the cluster's test authorities (ops/cluster), for an
# instance key of the hook's own, bound to a challenge from the challenge endpoint.

ATTESTATION = os.path.dirname(os.environ.get("MODGUD_ATTESTATION_ROOTS_APPLE", ""))
ATTESTED_KEYS = []  # (key id, private key) of App Attest keys attested in this run: for assertions


def instance_key():
    from cryptography.hazmat.primitives.asymmetric import ec
    key = ec.generate_private_key(ec.SECP256R1()).public_key().public_numbers()
    jwk = {"kty": "EC", "crv": "P-256", "x": b64(key.x.to_bytes(32, "big")), "y": b64(key.y.to_bytes(32, "big"))}
    canonical = json.dumps({"crv": "P-256", "kty": "EC", "x": jwk["x"], "y": jwk["y"]}, separators=(",", ":"), sort_keys=True)
    return jwk, b64(hashlib.sha256(canonical.encode()).digest())


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def attestation_evidence(case):
    """A fresh challenge, an instance key and the client data hash binding them, or None (a
    generated case goes out as it is)."""
    if not chance(rate(case)):
        return None
    answer = call("POST", "/connect/attestation/challenge") or {}
    challenge = answer.get("attestation_challenge")
    if not challenge or not ATTESTATION:
        return None
    jwk, thumbprint = instance_key()
    return challenge, jwk, hashlib.sha256(f"{challenge}.{thumbprint}".encode()).digest()


def attest_apple(case):
    evidence = attestation_evidence(case)
    if evidence is None:
        return
    from cryptography.hazmat.primitives.asymmetric import ec
    challenge, jwk, client_data_hash = evidence
    key = ec.generate_private_key(ec.SECP256R1())
    key_id, attestation = platform_attestation.app_attestation(ATTESTATION, APPLE_APP, client_data_hash, key)
    ATTESTED_KEYS.append((key_id, key, [0]))
    case.body = {"client_id": APP["app_client"], "key_id": b64(key_id), "attestation_object": b64(attestation), "challenge": challenge, "jwk": jwk}


def assert_apple(case):
    evidence = attestation_evidence(case) if ATTESTED_KEYS else None
    if evidence is None:
        return
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    challenge, jwk, client_data_hash = evidence
    key_id, key, counter = pick(ATTESTED_KEYS)
    counter[0] += 1
    auth_data = hashlib.sha256(APPLE_APP.encode()).digest() + b"\x40" + counter[0].to_bytes(4, "big")
    nonce = hashlib.sha256(auth_data + client_data_hash).digest()
    assertion = platform_attestation.cbor({"signature": key.sign(nonce, ec.ECDSA(hashes.SHA256())), "authenticatorData": auth_data})
    case.body = {"client_id": APP["app_client"], "key_id": b64(key_id), "assertion": b64(assertion), "challenge": challenge, "jwk": jwk}


def attest_android(case):
    evidence = attestation_evidence(case)
    if evidence is None:
        return
    challenge, jwk, client_data_hash = evidence
    digest = bytes.fromhex(ANDROID_APP["Sha256CertFingerprints"][0].replace(":", ""))
    chain = platform_attestation.android_chain(ATTESTATION, client_data_hash, ANDROID_APP["PackageName"], digest)
    case.body = {"client_id": APP["app_client"], "certificate_chain": [base64.b64encode(c).decode() for c in chain], "challenge": challenge, "jwk": jwk}

def attest_play_integrity(case):
    evidence = attestation_evidence(case)
    if evidence is None:
        return
    from cryptography.hazmat.primitives import serialization
    challenge, jwk, client_data_hash = evidence
    keys = APP["play_integrity"]
    digest = bytes.fromhex(ANDROID_APP["Sha256CertFingerprints"][0].replace(":", ""))
    verdict = platform_attestation.play_integrity_verdict(ANDROID_APP["PackageName"], b64(client_data_hash), digest, int(time.time() * 1000))
    token = platform_attestation.play_integrity_token(
        base64.b64decode(keys["decryption"]), serialization.load_pem_private_key(keys["signing"].encode(), None), verdict)
    case.body = {"client_id": APP["app_client"], "integrity_token": token, "challenge": challenge, "jwk": jwk}
    if chance(0.5):
        case.body["package_name"] = ANDROID_APP["PackageName"]


def play_integrity_keys(case):
    """A client of the admin realm's with an Android app, given keys (PUT) or losing them (DELETE)."""
    admin_auth(case)
    realm(case, ADM["realm"])
    if chance(rate(case)):
        path(case, "client", pick(ADM["clients"]["android"]))
        path(case, "package", ANDROID_APP["PackageName"])
        if case.method.upper() == "PUT":
            body(case, platform_attestation.play_console_keys()[2])


def apple_key(case):
    """The admin realm's Apple provider given a Sign in with Apple key (PUT) or losing it (DELETE)."""
    admin_auth(case)
    realm(case, ADM["realm"])
    if chance(rate(case)):
        path(case, "provider", "apple")
        if case.method.upper() == "PUT":
            body(case, {"TeamId": "TEAM123456", "KeyId": "KEY1234567", "ClientId": "com.example.app",
                        "PrivateKey": platform_attestation.p256_pkcs8_pem()})


HANDLERS = {
    "POST /api/account/native/otp/request": code_request,
    "POST /api/account/native/register": code_request,
    "POST /api/account/magic-link/request": magic_link,
    "POST /passwordless/start": passwordless_start,
    "POST /passkey/challenge": auth0_challenge,
    "POST /passkey/register": auth0_register,
    "POST /connect/passkey/begin": passkey_begin,
    "POST /connect/device_authorization": device_authorization,
    "POST /connect/device/verify": device_verify,
    "POST /connect/device/approve": device_approve,
    "POST /connect/device/deny": device_deny,
    "POST /connect/passkey/register/begin": sign_up_begin,
    "POST /connect/passkey/enroll/begin": enroll_begin,
    "POST /connect/passkey/enroll": enroll,
    "GET /connect/passkey": passkey_list,
    "GET /connect/passkey/signals": passkey_list,
    "POST /connect/recovery-codes": passkey_list,
    "GET /connect/recovery-codes": passkey_list,
    "DELETE /connect/recovery-codes": passkey_list,
    "GET /connect/sessions": passkey_list,
    "GET /connect/identities": passkey_list,
    "DELETE /connect/identities/{provider}": identity_unlink,
    "GET /me/v1/identities": my_account_list,
    "DELETE /me/v1/identities/{provider}": identity_unlink,
    "POST /connect/federation/apple/notifications": apple_notification,
    "DELETE /connect/sessions/{id}": end_session,
    "GET /connect/passkey/{id}": passkey_read,
    "PATCH /connect/passkey/{id}": passkey_read,
    "DELETE /connect/passkey/{id}": passkey_delete,
    "POST /api/account/totp/enroll": totp_enroll,
    "POST /api/account/totp/confirm": totp_confirm,
    "POST /api/account/email/confirm/request": email_request,
    "POST /api/account/email/confirm": email_confirm,
    "GET /connect/userinfo": userinfo,
    "POST /connect/userinfo": userinfo,
    "GET /userinfo": userinfo,
    "POST /connect/introspect": introspect,
    "POST /connect/revoke": revoke,
    "POST /oauth/revoke": revoke,
    "POST /connect/token": token,
    "POST /connect/attestation/apple": attest_apple,
    "POST /connect/attestation/apple/assertion": assert_apple,
    "POST /connect/attestation/android": attest_android,
    "POST /connect/attestation/play-integrity": attest_play_integrity,
    "POST /connect/authorization-challenge": authorization_challenge,
    "POST /oauth/token": token,
    "GET /me/v1/authentication-methods": my_account_list,
    "POST /me/v1/authentication-methods": my_account_begin,
    "POST /me/v1/authentication-methods/{id}/verify": my_account_verify,
    "GET /me/v1/authentication-methods/{id}": my_account_read,
    "PATCH /me/v1/authentication-methods/{id}": my_account_read,
    "DELETE /me/v1/authentication-methods/{id}": my_account_delete,
    "POST /ssf/stream": ssf_create,
    "DELETE /ssf/stream": ssf_delete,
    "GET /ssf/stream": ssf_read,
    "GET /ssf/status": ssf_read,
    "PATCH /ssf/stream": ssf_configure,
    "PUT /ssf/stream": ssf_configure,
    "POST /ssf/status": ssf_set_status,
    "POST /ssf/subjects/add": ssf_subject,
    "POST /ssf/subjects/remove": ssf_subject,
    "POST /ssf/verify": ssf_verify,
    "POST /ssf/poll/{stream}": ssf_poll,
    "GET /admin/api/realms": admin_auth,
    "POST /admin/api/realms": realm_create,
    "GET /admin/api/realms/{realm}": realm_read,
    "PATCH /admin/api/realms/{realm}": realm_read,
    "GET /admin/api/realms/{realm}/audit/checkpoint": audit,
    "GET /admin/api/realms/{realm}/audit/proof/consistency": audit,
    "GET /admin/api/realms/{realm}/audit/proof/inclusion": audit,
    "GET /admin/api/realms/{realm}/clients": admin_realm_only,
    "POST /admin/api/realms/{realm}/clients": client_create,
    "GET /admin/api/realms/{realm}/clients/{client}": client_read,
    "PATCH /admin/api/realms/{realm}/clients/{client}": client_read,
    "DELETE /admin/api/realms/{realm}/clients/{client}": client_read,
    "POST /admin/api/realms/{realm}/clients/{client}/secret": client_read,
    "PUT /admin/api/realms/{realm}/clients/{client}/play-integrity/{package}": play_integrity_keys,
    "DELETE /admin/api/realms/{realm}/clients/{client}/play-integrity/{package}": play_integrity_keys,
    "PUT /admin/api/realms/{realm}/federated-providers/{provider}/apple-key": apple_key,
    "DELETE /admin/api/realms/{realm}/federated-providers/{provider}/apple-key": apple_key,
    "POST /admin/api/realms/{realm}/signing-keys": signing_key,
    "POST /admin/api/realms/{realm}/signing-keys/{kid}/retire": retire_key,
    "GET /admin/api/realms/{realm}/users": admin_realm_only,
    "POST /admin/api/realms/{realm}/users": user_create,
    "DELETE /admin/api/realms/{realm}/users/{user}": user_delete,
    "GET /admin/api/realms/{realm}/users/{user}/audit": user_read,
    "GET /admin/api/realms/{realm}/users/{user}/passkeys": user_read,
    "GET /admin/api/realms/{realm}/users/{user}/recovery-codes": user_read,
    "DELETE /admin/api/realms/{realm}/users/{user}/recovery-codes": user_read,
    "DELETE /admin/api/realms/{realm}/users/{user}/passkeys/{passkey}": passkey_revoke,
    "DELETE /admin/api/realms/{realm}/users/{user}/totp": user_totp,
    "POST /admin/api/realms/{realm}/users/{user}/totp": user_totp,
    "POST /admin/api/realms/{realm}/users/{user}/{action}": user_action,
}


def label(case):
    return f"{case.method.upper()} {case.path}"


# Schemathesis also fills parameters with values it saw in earlier responses (a realm id from the
# list of realms, a passkey id from a list of passkeys...). A call that changes or deletes never
# gets one that names what other operations read: it is swapped for a name nothing has.
OURS = {ADM["realm"], ADM["patch_realm"], ADM["keys_realm"]}
KEPT_USERS = {u for group in ("totp_on", "totp_off", "keep", "passkey_owners") for u in ADM["users"][group]}
KEPT_USERS |= {ADM["emails"][u] for u in KEPT_USERS if u in ADM["emails"]}
PROTECTED = {
    "DELETE /admin/api/realms/{realm}/clients/{client}": {"client": set(ADM["clients"]["keep"])},
    "DELETE /admin/api/realms/{realm}/users/{user}": {"user": KEPT_USERS},
    "DELETE /connect/passkey/{id}": {"id": set(APP["user_passkeys"]["keep"])},
    "DELETE /me/v1/authentication-methods/{id}": {"id": {k.split("|")[-1] for k in APP["me_passkeys"]["keep"]}},
}


def guard(case):
    name = label(case)
    params = dict(case.path_parameters or {})
    before = dict(params)
    realm_id = params.get("realm")
    if name.startswith("GET ") or not name.startswith(("POST /admin/api/realms/", "PATCH /admin/", "DELETE /admin/")):
        realm_id = None
    if realm_id is not None and realm_id not in OURS and not str(realm_id).startswith(f"ct{TAG}-n"):
        if realm_id in ADM["existing_realms"] or realm_id == APP["realm"] or str(realm_id).lower() == "dev":
            params["realm"] = f"no-such-realm-{next(SERIAL)}"
    for param, kept in PROTECTED.get(name, {}).items():
        value = str(params.get(param, ""))
        if value.replace("%7C", "|").replace("%7c", "|").split("|")[-1] in kept or value in kept:
            params[param] = f"no-such-{param}-{next(SERIAL)}"
    if name == "POST /admin/api/realms/{realm}/users/{user}/{action}" and params.get("action") == "delete" and str(params.get("user")) in KEPT_USERS:
        params["user"] = f"no-such-user-{next(SERIAL)}"
    if params != before:
        case.path_parameters = params
    if name == "DELETE /ssf/stream" and isinstance(case.query, dict) and case.query.get("stream_id") == MAIN_STREAM["stream"]:
        case.query = {"stream_id": f"no-such-stream-{next(SERIAL)}"}


@schemathesis.hook
def before_call(context, case, kwargs):
    case.headers["Host"] = HOST
    handler = HANDLERS.get(label(case))
    if handler is not None:
        handler(case)
    guard(case)


def answer(response):
    try:
        return json.loads(response.content)
    except ValueError:
        return None


RECEIVERS = {"Bearer " + r["token"]: r for r in APP["ssf"]["create"] + APP["ssf"]["delete"]}


@schemathesis.hook
def after_call(context, case, response):
    name = label(case)
    status = response.status_code
    STATS[name][str(status)] += 1
    SLOWEST[name] = max(SLOWEST.get(name, 0.0), response.elapsed)
    if DEBUG is not None and (DEBUG == "*" or DEBUG in name):
        sent = case.body if not isinstance(case.body, (bytes, bytearray)) else repr(case.body)[:200]
        print(json.dumps({"op": name, "status": status, "positive": positive(case), "path": case.path_parameters, "query": case.query,
                          "body": sent, "media_type": case.media_type, "headers": dict(case.headers or {}), "answer": response.content[:300].decode("utf-8", "replace")}, default=str), file=sys.stderr)
    receiver = RECEIVERS.get(case.headers.get("Authorization"))
    used = USED.pop(case.id, None)
    if used is not None and status < 300 and used[1] in POOLS[used[0]]:
        POOLS[used[0]].remove(used[1])
    if name == "DELETE /ssf/stream" and status == 204 and receiver is not None:
        POOLS["ssf_create"].append({"client": receiver["client"], "token": receiver["token"]})
    pending = PENDING.pop(case.id, None)
    if status >= 300:
        return
    if pending is not None and pending[0] == "confirmed" and pending[1] in UNCONFIRMED:
        UNCONFIRMED.remove(pending[1])
    data = answer(response)
    if not isinstance(data, dict):
        return
    if name in ("POST /connect/token", "POST /oauth/token") and data.get("refresh_token"):
        POOLS["refresh"].append(data["refresh_token"])
        if pending is not None and pending[0] == "signed_up":
            PASSKEYS.append(pending[1]["passkey"])
            UNCONFIRMED.append({"access": data["access_token"], "email": pending[1]["email"]})
    elif name == "POST /connect/passkey/enroll" and data.get("Id"):
        POOLS["user_passkeys"].append(data["Id"])
    elif name == "POST /me/v1/authentication-methods/{id}/verify" and data.get("id"):
        POOLS["me_passkeys"].append(data["id"])
    elif name == "POST /ssf/stream" and data.get("stream_id") and receiver is not None:
        POOLS["ssf_delete"].append({"client": receiver["client"], "token": receiver["token"], "stream": data["stream_id"]})
    elif name == "POST /admin/api/realms" and data.get("Id"):
        POOLS["realms"].append(data["Id"])
    elif name == "POST /admin/api/realms/{realm}/clients" and case.path_parameters.get("realm") == ADM["realm"]:
        client = (data.get("Client") or {}).get("Id")
        if client:
            POOLS["clients"].append(client)
    elif name == "POST /admin/api/realms/{realm}/users" and case.path_parameters.get("realm") == ADM["realm"] and data.get("Id"):
        POOLS["users"].append(data["Id"])
    elif name == "POST /admin/api/realms/{realm}/signing-keys" and case.path_parameters.get("realm") == ADM["keys_realm"] and data.get("Kid"):
        POOLS["kids"].append(STATE["active_kid"])
        STATE["active_kid"] = data["Kid"]


def write_stats():
    target = os.environ.get("MODGUD_SCHEMATHESIS_STATS")
    if target:
        with open(target, "w") as f:
            json.dump({name: {**dict(counts), "slowest_s": round(SLOWEST.get(name, 0.0), 3)} for name, counts in sorted(STATS.items())}, f, indent=1)


atexit.register(write_stats)
