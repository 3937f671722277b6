#!/usr/bin/env python3
"""A model-based test of the scaled layout (issue 40 item 5): three `modgud serve` instances on
one PostgreSQL, driven by a seeded generator and checked against a sequential model.

    model_test.py [--seed N] [--commands N] [--seconds S]      generate, run and check
    model_test.py --replay FILE                                 replay a recorded prefix, one
                                                                command at a time

Run it through ops/model-test, which brings up the cluster (or reuses one) and sets the
environment this script reads: MODGUD_ADMIN_TOKEN, MODGUD_DATABASE_URL, MODGUD_BIN (the CLI, for
role changes), MODGUD_CLUSTER_DIR (instance logs, when mail goes to the console).

Every command goes to one of the instances (http://127.0.0.1:1808{1,2,3}, the realm's Host) with
its own X-Request-Id. Rounds are sequential (one command; its answer and the events it wrote are
checked, then every instance is asked about what it touched) or concurrent (2 to 4 commands at
once, often on one entity: every order of them is tried against the model and the one the log and
the answers agree with is kept; when several orders leave different states, the reads decide).
The model knows, per realm: users (status, roles, security-stamp generation, passkeys), token
families (alive, revoked; the refresh token and DPoP key the client holds), clients (enabled,
secret) and the realm's settings. It predicts each command's answer and the exact events it
writes; a command that must write but wrote nothing is a divergence (issue 40: a stale cache
answered "disabled" without writing).

Commands: operators' user disable, enable, logout-everywhere, erase (admin API) and role grant
and revoke (`modgud user grant-role|revoke-role`: there is no HTTP interface for roles); client
disable and enable (the operator console on each instance; the CLI where a reused cluster has no
console), secret rotation (admin API) and client_credentials grants with the current or an old
secret; realm changes (admin PATCH: native grants on/off, registration posture, the
otp-request.ip limit, the access-token lifetime). Users' traffic: sign-in by email code (a real
SMTP sink, or the instances' logs), with a DPoP key or not; refresh (with the session's DPoP
proof, none, or another key's); sign-up by code; passkey enrollment (a software authenticator
in this file: ES256, `none` attestation), rename and delete, and an operator's passkey delete.
Races (issue 67), each one command whose requests race inside it: erase-versus-refresh (an
erasure on one instance while the user's live sessions refresh in a loop on the others, and maybe
another session is logged out by RFC 7009) and disable-versus-sign-in (a client's disable while
sign-ins by it redeem their codes on other instances).

Checks: every answer (status and the members that matter: Status, error and description,
token_type, expires_in, ErasedNow, FamiliesRevoked, ...); every event each command wrote, per
stream and in order (nothing missing, nothing extra); after each round, every instance's GET users
(status, address), GET clients (enabled), GET realm, the user's passkeys, and the roles and live
sessions from the database, plus what each instance's token endpoint and app-info make of a
client or the realm (a made-up refresh, an introspection with the current and the previous
secret); now and then and at the end each instance's console view of the user (status, roles,
each session live or ended). At the end: everything on every instance, one refresh of every
session that is not revoked, and each address received exactly the codes the model sent.
In the races every answer may come from either order, but the log must show one: an erasure's
FamiliesRevoked is the user's families live before less the one a racing logout ended (whether a
racing refresh or the erasure recorded the end), a refresh or a sign-in sent after the erasure or
the disable answered is refused, every refresh of the user's sessions afterwards is refused, and
no access token a racing sign-in got is active after the disable (userinfo on every instance).
The races' own counts are printed beside the command and check totals.

With --move-to CELL (ops/cells-test, issue 71) the realm moves to that cell (`modgud realm
move`) after the commands, and the final checks run against the target cell's database.

On the first divergence it prints the seed, the command, the instance, expected and actual, and
a replayable JSON list of the commands that lead to it (the failing round and the commands that
changed what it depends on), and exits 1. Reads that are caches of other instances' writes (a
client's or the realm's settings at the token endpoint) are polled until they agree, under a
60 s hang guard; reads of the database are compared at once.

A run that ends without a divergence still fails (exit 3) when it sent fewer commands or made
fewer checks than its minimum (issue 67: a run that tested next to nothing is not a pass):
--min-commands and --min-checks, by default MODGUD_MODEL_TEST_MIN_COMMANDS (200) and
MODGUD_MODEL_TEST_MIN_CHECKS (1500); both counts are printed. A replay has no minimum. --seconds
is what a run aims for, not a verdict: a run below its minimums then (a loaded machine) goes on
until it reaches them, and fails only past --max-seconds (4 x --seconds by default).

Standard library only, plus PyJWT and cryptography (DPoP proofs, the passkey authenticator) and
aiosmtpd (the SMTP sink).
"""
import argparse
import base64
import concurrent.futures
import copy
import hashlib
import html
import http.client
import itertools
import json
import os
import random
import re
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid

import jwt
from cryptography.hazmat.primitives.asymmetric import ec

class DISRUPTION:
    """--disruption: instances are restarted (SIGTERM, drained) while the test runs."""
    on = False


class MOVE:
    """--move-to: the realm has moved to another cell (issue 71); until every instance follows
    the flip, the realm's requests may be answered 503 with Retry-After, which a client retries."""
    on = False
    retried = 0


HANG_GUARD = 60.0  # seconds: how long a poll for an asynchronous outcome may take before it is a divergence
PORTS = {1: 18081, 2: 18082, 3: 18083}
ROLES = ["support", "auditor", "billing"]
POSTURES = ["JitOnOtp", "Off", "ExplicitEndpoint"]
PASSKEY_NAMES = ["Phone", "Laptop", "Key"]
OTP_MESSAGE = "If your email is registered, you will receive a verification code."
CLIENT_DISABLED = "The OAuth client is disabled."
REFRESH_INVALID = "The refresh token is invalid or expired."
CODE_INVALID = "Invalid or expired code."
CANNOT_SIGN_IN = "The account cannot sign in."
LIMIT_POLICIES = ["otp-request.ip", "otp-request.mailbox", "signup.ip", "token.ip", "token.client-source", "token.client", "passkey.ip"]


def b64u(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def token_hash(token):
    """OpaqueToken.hash: base64url(SHA-256(token)), unpadded."""
    return b64u(hashlib.sha256(token.encode()).digest())


class Divergence(Exception):
    def __init__(self, message, expected=None, actual=None):
        super().__init__(message)
        self.message, self.expected, self.actual = message, expected, actual


# MARK: Plumbing: HTTP, psql, mail, DPoP, passkeys, the operator console, the CLI


class Answer:
    def __init__(self, status, headers, body, rid):
        self.status, self.headers, self.body, self.rid = status, headers, body, rid
        try:
            self.json = json.loads(body) if body else None
        except ValueError:
            self.json = None

    def text(self):
        return self.body.decode("utf-8", "replace")

    def brief(self):
        if self.json is not None:
            return {"status": self.status, "json": self.json}
        return {"status": self.status, "location": self.headers.get("location"), "body": self.text()[:200]}


class Http:
    """Keep-alive connections per thread and instance; every request carries a unique X-Request-Id."""

    def __init__(self, host, admin_token, prefix):
        self.host, self.admin_token, self.prefix = host, admin_token, prefix
        self.local = threading.local()
        self.counter = itertools.count(1)
        self.lock = threading.Lock()

    def new_rid(self):
        with self.lock:
            return f"{self.prefix}-{next(self.counter)}"

    def request(self, inst, method, path, json_body=None, form=None, headers=None, host=None, rid=None):
        rid = rid or self.new_rid()
        conns = getattr(self.local, "conns", None)
        if conns is None:
            conns = self.local.conns = {}
        h = {"Host": host or self.host, "X-Request-Id": rid}
        body = None
        if json_body is not None:
            body = json.dumps(json_body).encode()
            h["Content-Type"] = "application/json"
        elif form is not None:
            body = urllib.parse.urlencode(form).encode()
            h["Content-Type"] = "application/x-www-form-urlencoded"
        h.update(headers or {})
        down_since = None
        attempt = 0
        while True:
            entry = conns.get(inst)
            if entry is None or time.monotonic() - entry[1] > 20:  # the server closes idle connections after 60 s
                if entry:
                    entry[0].close()
                entry = [http.client.HTTPConnection("127.0.0.1", PORTS[inst], timeout=HANG_GUARD), 0]
                conns[inst] = entry
            try:
                entry[0].request(method, path, body=body, headers=h)
                response = entry[0].getresponse()
                data = response.read()
                entry[1] = time.monotonic()
                headers_read = {k.lower(): v for k, v in response.getheaders()}
                if MOVE.on and response.status == 503 and "retry-after" in headers_read:
                    # The fence or an instance not yet following the flip: nothing was done (a hang guard, not a timing).
                    down_since = down_since or time.monotonic()
                    if time.monotonic() - down_since < HANG_GUARD:
                        MOVE.retried += 1
                        time.sleep(0.1)
                        continue
                return Answer(response.status, headers_read, data, rid)
            except ConnectionRefusedError:
                # The instance is down (a rolling restart): nothing was sent; wait for it to come
                # back (a hang guard, not a timing).
                entry[0].close()
                conns.pop(inst, None)
                if not DISRUPTION.on:
                    raise
                down_since = down_since or time.monotonic()
                if time.monotonic() - down_since > HANG_GUARD:
                    raise
                time.sleep(0.1)
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                # A kept-alive connection the server closed. In a restart the server drains: it
                # answers every request it has read, so one that got no answer was not read.
                entry[0].close()
                conns.pop(inst, None)
                attempt += 1
                if attempt > (3 if DISRUPTION.on else 1) or (method not in ("GET",) and not DISRUPTION.on):
                    raise

    def admin(self, inst, method, path, json_body=None, rid=None):
        return self.request(inst, method, "/admin/api" + path, json_body=json_body, headers={"Authorization": "Bearer " + self.admin_token}, rid=rid)


class Psql:
    """One psql process for the whole run (a process per query would cost more than the query)."""

    SEP = "\x1f"

    def __init__(self, url):
        self.proc = subprocess.Popen(
            ["psql", url, "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=0", "-F", self.SEP],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        self.lock = threading.Lock()
        self.errors = []
        threading.Thread(target=self._stderr, daemon=True).start()

    def _stderr(self):
        for line in self.proc.stderr:
            self.errors.append(line.rstrip())

    def query(self, sql):
        marker = "__mt_end_%s__" % uuid.uuid4().hex
        with self.lock:
            before = len(self.errors)
            self.proc.stdin.write(sql.strip().rstrip(";") + ";\n\\echo " + marker + "\n")
            self.proc.stdin.flush()
            rows = []
            while True:
                line = self.proc.stdout.readline()
                if line == "":
                    raise RuntimeError("psql ended: " + " ".join(self.errors[-5:]))
                line = line.rstrip("\n")
                if line == marker:
                    break
                if line:
                    rows.append(line.split(self.SEP))
            if len(self.errors) > before and any("ERROR" in e for e in self.errors[before:]):
                raise RuntimeError("psql: " + " ".join(self.errors[before:]))
            return rows

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()


CODE_RE = re.compile(r"Your verification code is (\d{6})")


class Mailbox:
    """Codes by address, in arrival order: [(code, kind)], kind login or registration."""

    def __init__(self):
        self.cond = threading.Condition()
        self.codes = {}

    def add(self, address, text):
        found = CODE_RE.search(text or "")
        if not found:
            return
        kind = "registration" if "finish creating" in text else "login"
        with self.cond:
            self.codes.setdefault(address.lower(), []).append((found.group(1), kind))
            self.cond.notify_all()

    def poll(self):
        pass

    def wait(self, address, index):
        """The index-th code mailed to address (0-based), waiting up to the hang guard."""
        deadline = time.monotonic() + HANG_GUARD
        address = address.lower()
        while True:
            self.poll()
            with self.cond:
                got = self.codes.get(address, [])
                if len(got) > index:
                    return got[index]
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(min(left, 0.05))

    def count(self, address):
        self.poll()
        with self.cond:
            return len(self.codes.get(address.lower(), []))


class SmtpMailbox(Mailbox):
    """A real SMTP server (aiosmtpd) in this process: the instances deliver to it."""

    def __init__(self, port):
        super().__init__()
        from aiosmtpd.controller import Controller
        import email
        import email.policy

        box = self

        class Handler:
            async def handle_DATA(self, server, session, envelope):
                message = email.message_from_bytes(envelope.content, policy=email.policy.default)
                part = message.get_body(("plain",))
                text = part.get_content() if part is not None else ""
                for rcpt in envelope.rcpt_tos:
                    box.add(rcpt, text)
                return "250 Message accepted"

        self.controller = Controller(Handler(), hostname="127.0.0.1", port=port)
        self.controller.start()

    def close(self):
        self.controller.stop()


class LogMailbox(Mailbox):
    """Mail printed by the instances (MODGUD_MAIL_TRANSPORT=console): read from their logs."""

    START = re.compile(r"── mail to (\S+) ─")

    def __init__(self, folder):
        super().__init__()
        self.files = {n: os.path.join(folder, f"instance{n}.log") for n in PORTS}
        self.offsets = {n: (os.path.getsize(f) if os.path.exists(f) else 0) for n, f in self.files.items()}
        self.partial = {n: "" for n in PORTS}
        self.current = {n: None for n in PORTS}
        self.poll_lock = threading.Lock()

    def poll(self):
        with self.poll_lock:
            for n, name in self.files.items():
                if not os.path.exists(name):
                    continue
                with open(name, "rb") as f:
                    f.seek(self.offsets[n])
                    data = f.read()
                self.offsets[n] += len(data)
                text = self.partial[n] + data.decode("utf-8", "replace")
                lines = text.split("\n")
                self.partial[n] = lines.pop()
                for line in lines:
                    start = self.START.search(line)
                    if start:
                        self.current[n] = [start.group(1), []]
                    elif self.current[n] is not None:
                        if line.startswith("─────"):
                            self.add(self.current[n][0], "\n".join(self.current[n][1]))
                            self.current[n] = None
                        else:
                            self.current[n][1].append(line)

    def close(self):
        pass


class DpopKey:
    """An ES256 key and its RFC 9449 proofs (PyJWT signs)."""

    def __init__(self):
        self.key = ec.generate_private_key(ec.SECP256R1())
        numbers = self.key.public_key().public_numbers()
        self.jwk = {"kty": "EC", "crv": "P-256", "x": b64u(numbers.x.to_bytes(32, "big")), "y": b64u(numbers.y.to_bytes(32, "big"))}
        canonical = json.dumps({k: self.jwk[k] for k in ["crv", "kty", "x", "y"]}, separators=(",", ":"), sort_keys=True)
        self.jkt = b64u(hashlib.sha256(canonical.encode()).digest())

    def proof(self, htm, htu, nonce=None, access_token=None):
        claims = {"jti": uuid.uuid4().hex, "htm": htm, "htu": htu, "iat": int(time.time())}
        if nonce:
            claims["nonce"] = nonce
        if access_token:
            claims["ath"] = b64u(hashlib.sha256(access_token.encode()).digest())
        return jwt.encode(claims, self.key, algorithm="ES256", headers={"typ": "dpop+jwt", "jwk": self.jwk})


def cbor(value):
    """Enough of CBOR (RFC 8949) for an attestation object: ints, bytes, text, maps in the given order."""

    def head(major, n):
        if n < 24:
            return bytes([major << 5 | n])
        for size, code in ((1, 24), (2, 25), (4, 26), (8, 27)):
            if n < 1 << (8 * size):
                return bytes([major << 5 | code]) + n.to_bytes(size, "big")
        raise ValueError(n)

    if isinstance(value, bool):
        return bytes([0xF5 if value else 0xF4])
    if isinstance(value, int):
        return head(0, value) if value >= 0 else head(1, -1 - value)
    if isinstance(value, bytes):
        return head(2, len(value)) + value
    if isinstance(value, str):
        data = value.encode()
        return head(3, len(data)) + data
    if isinstance(value, list):
        return head(4, len(value)) + b"".join(cbor(v) for v in value)
    if isinstance(value, dict):
        return head(5, len(value)) + b"".join(cbor(k) + cbor(v) for k, v in value.items())
    raise TypeError(type(value))


def passkey_attestation(options):
    """A platform authenticator's answer to navigator.credentials.create(): ES256, `none` attestation."""
    rp_id = options["rp"]["id"]
    key = ec.generate_private_key(ec.SECP256R1())
    numbers = key.public_key().public_numbers()
    credential_id = os.urandom(32)
    cose = cbor({1: 2, 3: -7, -1: 1, -2: numbers.x.to_bytes(32, "big"), -3: numbers.y.to_bytes(32, "big")})
    flags = 0x01 | 0x04 | 0x40  # user present, user verified, attested credential data
    auth_data = (hashlib.sha256(rp_id.encode()).digest() + bytes([flags]) + (0).to_bytes(4, "big") + bytes(16)
                 + len(credential_id).to_bytes(2, "big") + credential_id + cose)
    client_data = json.dumps({"type": "webauthn.create", "challenge": options["challenge"], "origin": "https://" + rp_id},
                             separators=(",", ":")).encode()
    attestation_object = cbor({"fmt": "none", "attStmt": {}, "authData": auth_data})
    return {"id": b64u(credential_id), "rawId": b64u(credential_id), "type": "public-key",
            "response": {"clientDataJSON": b64u(client_data), "attestationObject": b64u(attestation_object), "transports": ["internal"]}}


class Console:
    """The operator console (HTML) on the public port: client disable/enable on each instance, and each
    instance's view of a user (status, roles, sessions). Signed in once by an email code."""

    def __init__(self, http, cookie, csrf):
        self.http, self.cookie, self.csrf = http, cookie, csrf

    def post(self, inst, path, rid=None):
        return self.http.request(inst, "POST", path, form={"_csrf": self.csrf}, headers={"Cookie": self.cookie}, rid=rid)

    def get(self, inst, path):
        return self.http.request(inst, "GET", path, headers={"Cookie": self.cookie})

    def user(self, inst, realm, user_id):
        answer = self.get(inst, f"/console/realms/{realm}/users/{user_id}")
        if answer.status != 200:
            return {"status_code": answer.status}
        page = answer.text()
        facts = {html.unescape(k): html.unescape(v) for k, v in re.findall(r"<dt>(.*?)</dt><dd>(.*?)</dd>", page)}
        sessions = {}
        # A sessions row: the device cell ends with the family id; the state cell says live or ended.
        for fid, row in re.findall(r'<td class="device"[^>]*>.*?<code class="small">([0-9a-f-]{36})</code></td>(.*?)</tr>', page, re.S):
            sessions[fid] = "live" if '<span class="ok">live</span>' in row else "ended"
        return {"Status": facts.get("Status"), "Roles": facts.get("Roles"), "sessions": sessions}


class Cli:
    def __init__(self, binary):
        self.binary = binary

    def run(self, *args):
        result = subprocess.run([self.binary, *args], capture_output=True, text=True, timeout=120)
        return {"exit": result.returncode, "stdout": result.stdout.strip(), "stderr": result.stderr.strip()[-300:]}


# MARK: The model


class State:
    """What the model knows; deep-copied to try the orders of a concurrent round."""

    def __init__(self):
        self.realm = {}
        self.clients = {}   # key -> {type, enabled, secret, old}
        self.users = {}     # key -> {id, email, status, roles, gen, mails}
        self.sessions = {}  # key -> {user, client, fid, refresh, access, dpop (bool), revoked, gen}
        self.passkeys = {}  # key -> {user, id, name, deleted}
        self.signups = {}   # email -> number of codes expected

    def alive(self, skey):
        s = self.sessions[skey]
        u = self.users[s["user"]]
        return not s["revoked"] and u["status"] == "active" and s["gen"] == u["gen"]

    def signature(self):
        return json.dumps([self.realm, self.clients, self.users, self.sessions, self.passkeys, self.signups], sort_keys=True, default=str)


class Pred:
    """What one step must answer and write, and what it does to the model."""

    def __init__(self, expect, events=(), effect=None, follow=None):
        self.expect = expect
        self.events = list(events)  # [(stream, type)]; a stream starting "email-challenge-*" is a wildcard
        self.effect = effect or (lambda state, obs: None)
        self.follow = follow  # the next phase of a multi-step command, or None


def match(expect, answer):
    """None when the answer is the expected one, else what differs."""
    if "exit" in expect:  # a CLI command
        if expect["exit"] == "nonzero":
            return None if answer["exit"] != 0 else "expected a failure"
        if answer["exit"] != expect["exit"]:
            return f"exit {answer['exit']}: {answer['stderr']}"
        if "stdout" in expect and answer["stdout"] != expect["stdout"]:
            return f"stdout {answer['stdout']!r}"
        return None
    if answer.status != expect["status"]:
        return f"status {answer.status}"
    body = answer.json

    def subset(want, got, path):
        """Each member of want in got, recursively (got may have more)."""
        if isinstance(want, dict):
            if not isinstance(got, dict):
                return f"{path or 'body'} = {got!r}"
            for key, value in want.items():
                problem = subset(value, got.get(key), f"{path}.{key}" if path else key)
                if problem:
                    return problem
            return None
        return None if want == got else f"{path} = {got!r}"

    problem = subset(expect.get("json", {}), body if expect.get("json") else {}, "")
    if problem:
        return problem
    for key in expect.get("has", []):
        if not isinstance(body, dict) or not body.get(key):
            return f"no {key}"
    for key in expect.get("lacks", []):
        if isinstance(body, dict) and key in body:
            return f"unexpected {key}"
    if "location" in expect and answer.headers.get("location") != expect["location"]:
        return f"location {answer.headers.get('location')}"
    return None


class Model:
    def __init__(self, realm):
        self.realm = realm

    # Stream names as the server spells them (StreamNames).
    def user_stream(self, state, ukey):
        return "user-" + state.users[ukey]["id"]

    def client_stream(self, ckey):
        return f"client-{self.realm}/{ckey}"

    def realm_stream(self):
        return "realm-" + self.realm

    @staticmethod
    def family_stream(fid):
        return "token-family-" + fid

    @staticmethod
    def challenge_stream(email):
        return "email-challenge-*" + email

    def predict(self, state, cmd, phase, obs):
        return getattr(self, "p_" + cmd["kind"])(state, cmd, phase, obs)

    # Operators: users

    def _user_action(self, state, cmd, target, writes):
        u = state.users[cmd["user"]]
        if u["status"] == "erased":
            return Pred({"status": 400, "json": {"title": "User.Deleted"}})
        events, change = writes(u)
        status = change.get("status", u["status"])
        stream = self.user_stream(state, cmd["user"])

        def effect(st, obs):
            uu = st.users[cmd["user"]]
            uu.update({k: v for k, v in change.items() if k != "gen"})
            uu["gen"] += change.get("gen", 0)

        return Pred({"status": 200, "json": {"Id": u["id"], "Status": status}}, [(stream, e) for e in events], effect)

    def p_user_disable(self, state, cmd, phase, obs):
        return self._user_action(state, cmd, "disabled", lambda u: (
            (["user.disabled", "user.security_stamp_rotated"], {"status": "disabled", "gen": 1}) if u["status"] == "active" else ([], {})))

    def p_user_enable(self, state, cmd, phase, obs):
        return self._user_action(state, cmd, "active", lambda u: (
            (["user.enabled"], {"status": "active"}) if u["status"] == "disabled" else ([], {})))

    def p_user_logout(self, state, cmd, phase, obs):
        return self._user_action(state, cmd, None, lambda u: (["user.security_stamp_rotated"], {"gen": 1}))

    def p_user_erase(self, state, cmd, phase, obs):
        u = state.users[cmd["user"]]
        if u["status"] == "erased":
            return Pred({"status": 200, "json": {"Id": u["id"], "Status": "erased", "ErasedNow": False, "FamiliesRevoked": 0, "PasskeysDeleted": 0}})
        families = [k for k, s in state.sessions.items() if s["user"] == cmd["user"] and not s["revoked"]]
        passkeys = [k for k, p in state.passkeys.items() if p["user"] == cmd["user"] and not p["deleted"]]
        events = [(self.user_stream(state, cmd["user"]), "user.erased"), (self.user_stream(state, cmd["user"]), "user.security_stamp_rotated")]
        events += [(self.family_stream(state.sessions[k]["fid"]), "token_family.revoked") for k in families]
        events += [("passkey-" + state.passkeys[k]["id"], "passkey.deleted") for k in passkeys]

        def effect(st, obs):
            uu = st.users[cmd["user"]]
            uu["status"], uu["gen"] = "erased", uu["gen"] + 1
            for k in families:
                st.sessions[k]["revoked"] = True
            for k in passkeys:
                st.passkeys[k]["deleted"] = True

        return Pred({"status": 200, "json": {"Id": u["id"], "Status": "erased", "ErasedNow": True, "FamiliesRevoked": len(families),
                                             "PasskeysDeleted": len(passkeys)}}, events, effect)

    def _role(self, state, cmd, granted):
        u = state.users[cmd["user"]]
        if u["status"] == "erased":
            return Pred({"exit": "nonzero"})
        roles = set(u["roles"]) | {cmd["role"]} if granted else set(u["roles"]) - {cmd["role"]}
        changed = roles != set(u["roles"])
        listed = ", ".join(sorted(roles)) if roles else "-"

        def effect(st, obs):
            st.users[cmd["user"]]["roles"] = sorted(roles)

        return Pred({"exit": 0, "stdout": f"{u['id']} roles: {listed}"},
                    [(self.user_stream(state, cmd["user"]), "user.roles_changed")] if changed else [], effect)

    def p_role_grant(self, state, cmd, phase, obs):
        return self._role(state, cmd, True)

    def p_role_revoke(self, state, cmd, phase, obs):
        return self._role(state, cmd, False)

    # Operators: clients

    def _client_toggle(self, state, cmd, enabled):
        c = state.clients[cmd["client"]]
        expect = {"exit": 0} if cmd["inst"] == "cli" else {"status": 303, "location": f"/console/realms/{self.realm}/clients/{cmd['client']}"}
        if c["enabled"] == enabled:
            return Pred(expect)

        def effect(st, obs):
            st.clients[cmd["client"]]["enabled"] = enabled

        return Pred(expect, [(self.client_stream(cmd["client"]), "client.enabled" if enabled else "client.disabled")], effect)

    def p_client_disable(self, state, cmd, phase, obs):
        return self._client_toggle(state, cmd, False)

    def p_client_enable(self, state, cmd, phase, obs):
        return self._client_toggle(state, cmd, True)

    def p_client_rotate(self, state, cmd, phase, obs):
        def effect(st, obs):
            c = st.clients[cmd["client"]]
            c["old"] = c["old"] + [c["secret"]]
            c["secret"] = (obs.json or {}).get("Secret")

        return Pred({"status": 200, "has": ["Secret"]}, [(self.client_stream(cmd["client"]), "client.secret_rotated")], effect)

    def p_cc_grant(self, state, cmd, phase, obs):
        c = state.clients[cmd["client"]]
        presented = obs.presented
        if presented != c["secret"]:
            return Pred({"status": 401, "json": {"error": "invalid_client"}})
        if not c["enabled"]:
            return Pred({"status": 400, "json": {"error": "invalid_grant", "error_description": CLIENT_DISABLED}})
        minutes = state.realm["minutes"]
        return Pred({"status": 200, "json": {"token_type": "Bearer", "expires_in": minutes * 60}, "has": ["access_token"], "lacks": ["refresh_token"]},
                    [(self.family_stream(obs.fid or "?"), "token_family.started")])

    # Operators: the realm

    def _realm_patch(self, state, cmd, change, view):
        after = dict(state.realm, **change)
        changed = after != state.realm

        def effect(st, obs):
            st.realm.update(change)

        return Pred({"status": 200, "json": {"Realm": view(after)}}, [(self.realm_stream(), "realm.settings_changed")] if changed else [], effect)

    def p_realm_native(self, state, cmd, phase, obs):
        return self._realm_patch(state, cmd, {"native": cmd["on"]}, lambda r: {"NativeGrants": {"Enabled": r["native"]}})

    def p_realm_posture(self, state, cmd, phase, obs):
        return self._realm_patch(state, cmd, {"posture": cmd["posture"]}, lambda r: {"RegistrationPosture": r["posture"]})

    def p_realm_limit(self, state, cmd, phase, obs):
        return self._realm_patch(state, cmd, {"otp_ip_limit": cmd["limit"], "display": cmd["display"]}, lambda r: {"DisplayName": r["display"]})

    def p_realm_lifetime(self, state, cmd, phase, obs):
        return self._realm_patch(state, cmd, {"minutes": cmd["minutes"], "display": cmd["display"]},
                                 lambda r: {"NativeGrants": {"AccessTokenLifetimeMinutes": r["minutes"]}, "DisplayName": r["display"]})

    # User traffic

    def _token_expect(self, state, dpop):
        return {"status": 200, "json": {"token_type": "DPoP" if dpop else "Bearer", "expires_in": state.realm["minutes"] * 60},
                "has": ["access_token", "refresh_token"]}

    def p_signin(self, state, cmd, phase, obs):
        u = state.users[cmd["user"]]
        email = u["email"]
        if phase == "request":
            if not state.realm["native"]:
                return Pred({"status": 400, "json": {"title": "NativeGrants.Disabled"}})
            if u["status"] != "active":
                return Pred({"status": 200, "json": {"Message": OTP_MESSAGE}})

            def effect(st, obs):
                st.users[cmd["user"]]["mails"] += 1

            return Pred({"status": 200, "json": {"Message": OTP_MESSAGE}}, [(self.challenge_stream(email), "challenge.issued")], effect,
                        follow="redeem")
        if phase == "redeem":
            if not state.realm["native"]:
                return Pred({"status": 400, "json": {"error": "unsupported_grant_type"}})  # (not generated: realm changes do not race sign-ins)
            if not state.clients[cmd["client"]]["enabled"]:
                return Pred({"status": 400, "json": {"error": "invalid_grant", "error_description": CLIENT_DISABLED}}, follow="burn")
            if u["status"] != "active":
                return Pred({"status": 400, "json": {"error": "invalid_grant", "error_description": CANNOT_SIGN_IN}}, follow="burn")

            def effect(st, obs):
                st.sessions[cmd["session"]] = {
                    "user": cmd["user"], "client": cmd["client"], "fid": obs.fid, "refresh": obs.json["refresh_token"],
                    "access": obs.json["access_token"], "dpop": bool(cmd.get("dpop")), "revoked": False, "gen": st.users[cmd["user"]]["gen"]}

            return Pred(self._token_expect(state, cmd.get("dpop")),
                        [(self.challenge_stream(email), "challenge.consumed"), (self.family_stream(obs.fid or "?"), "token_family.started")], effect)
        # burn: wrong codes until the live code is burned (so that the next request mails a new one)
        n = int(phase[4:]) if phase != "burn" else 0
        events = [(self.challenge_stream(email), "challenge.attempt_failed")] + ([(self.challenge_stream(email), "challenge.burned")] if n == 2 else [])
        return Pred({"status": 400, "json": {"error": "invalid_grant", "error_description": CODE_INVALID}}, events,
                    follow=f"burn{n + 1}" if n < 2 else None)

    def p_signup(self, state, cmd, phase, obs):
        email = cmd["email"]
        if phase == "request":
            if not state.realm["native"]:
                return Pred({"status": 400, "json": {"title": "NativeGrants.Disabled"}})
            if state.realm["posture"] != "JitOnOtp":
                return Pred({"status": 200, "json": {"Message": OTP_MESSAGE}})

            def effect(st, obs):
                st.signups[email] = st.signups.get(email, 0) + 1

            return Pred({"status": 200, "json": {"Message": OTP_MESSAGE}}, [(self.challenge_stream(email), "challenge.issued")], effect,
                        follow="redeem")

        def effect(st, obs):
            # The registration code counts among the address's mails.
            st.users[cmd["new_user"]] = {"id": obs.user_id, "email": email, "status": "active", "roles": [], "gen": 0, "mails": st.signups[email]}
            st.sessions[cmd["session"]] = {"user": cmd["new_user"], "client": cmd["client"], "fid": obs.fid, "refresh": obs.json["refresh_token"],
                                           "access": obs.json["access_token"], "dpop": False, "revoked": False, "gen": 0}

        if not state.clients[cmd["client"]]["enabled"]:
            raise AssertionError("the generator signs up through enabled clients only")
        return Pred(self._token_expect(state, False),
                    [(self.challenge_stream(email), "challenge.consumed"), ("user-" + (obs.user_id or "?"), "user.registered"),
                     (self.family_stream(obs.fid or "?"), "token_family.started")], effect)

    def p_refresh(self, state, cmd, phase, obs):
        s = state.sessions[cmd["session"]]
        u = state.users[s["user"]]
        stream = self.family_stream(s["fid"])
        bad = {"status": 400, "json": {"error": "invalid_grant", "error_description": REFRESH_INVALID}}
        # In TokenService.refresh's order: the client (authenticated first), then the token's
        # family is looked up (spent and revoked families' tokens are still found), then a bound
        # family's key, and only then the family's own state.
        if not state.clients[s["client"]]["enabled"]:
            return Pred({"status": 400, "json": {"error": "invalid_grant", "error_description": CLIENT_DISABLED}})
        if s["dpop"] and cmd.get("proof", "key") != "key":
            return Pred({"status": 400, "json": {"error": "invalid_dpop_proof"}})
        if s["revoked"]:
            return self._refused_dead_family(state, cmd, stream, bad)
        if obs.presented != s["refresh"]:  # a spent token: reuse revokes the family
            def revoke(st, obs):
                st.sessions[cmd["session"]]["revoked"] = True
            return Pred(bad, [(stream, "token_family.revoked")], revoke)
        if u["status"] != "active" or s["gen"] != u["gen"]:
            def revoke(st, obs):
                st.sessions[cmd["session"]]["revoked"] = True
            return Pred(bad, [(stream, "token_family.revoked")], revoke)

        def effect(st, obs):
            ss = st.sessions[cmd["session"]]
            ss["refresh"], ss["access"] = obs.json["refresh_token"], obs.json["access_token"]

        return Pred(self._token_expect(state, s["dpop"]), [(stream, "token_family.refreshed")], effect)

    # A dead family's refusal is recorded (token_family.refresh_refused), at most one a minute
    # per family (TokenFamily.refusalInterval, on the server's clock). The model knows when it
    # saw each answer, not when the server decided: within REFUSAL_MARGIN of the minute the
    # record is optional (a type ending in "?"), and later decisions account for both outcomes.
    REFUSAL_INTERVAL, REFUSAL_MARGIN = 60.0, 10.0

    def _refused_dead_family(self, state, cmd, stream, bad):
        now = time.monotonic()
        ss = state.sessions[cmd["session"]]
        certain, maybe = ss.get("refused_certain"), ss.get("refused_maybe", [])
        latest = max([t for t in [certain] + maybe if t is not None], default=None)
        if latest is None or now - latest >= self.REFUSAL_INTERVAL + self.REFUSAL_MARGIN:
            mark = ""  # certainly recorded
        elif certain is not None and now - certain < self.REFUSAL_INTERVAL - self.REFUSAL_MARGIN:
            return Pred(bad)  # certainly not
        else:
            mark = "?"

        def effect(st, obs):
            s2 = st.sessions[cmd["session"]]
            if mark == "":
                s2["refused_certain"], s2["refused_maybe"] = now, []
            else:
                s2["refused_maybe"] = s2.get("refused_maybe", []) + [now]
        return Pred(bad, [(stream, "token_family.refresh_refused" + mark)], effect)

    # Passkeys (user traffic with a session's bearer token, and the operator's delete)

    def _bearer_refusal(self, state, session):
        if not state.realm["native"]:
            return {"status": 400, "json": {"title": "NativeGrants.Disabled"}}
        if not state.alive(session) or not state.clients[state.sessions[session]["client"]]["enabled"]:
            return {"status": 401}  # (issue 65: a disabled client's access tokens are inactive too)
        return None

    def p_pk_enroll(self, state, cmd, phase, obs):
        refusal = self._bearer_refusal(state, cmd["session"])
        if phase == "begin":
            if refusal:
                return Pred(refusal)
            return Pred({"status": 200, "has": ["ceremonyId", "options"]}, [("passkey-ceremony-" + (obs.ceremony or "?"), "passkey_ceremony.begun")],
                        follow="finish")

        def effect(st, obs):
            st.passkeys[cmd["passkey"]] = {"user": cmd["user"], "id": obs.json["Id"], "name": cmd["name"], "deleted": False}

        return Pred({"status": 200, "json": {"DisplayName": cmd["name"]}, "has": ["Id"]},
                    [("passkey-ceremony-" + (obs.ceremony or "?"), "passkey_ceremony.consumed"), ("passkey-" + ((obs.json or {}).get("Id") or "?"), "passkey.enrolled")],
                    effect)

    def p_pk_rename(self, state, cmd, phase, obs):
        refusal = self._bearer_refusal(state, cmd["session"])
        if refusal:
            return Pred(refusal)
        p = state.passkeys[cmd["passkey"]]
        if p["deleted"]:
            return Pred({"status": 404, "json": {"title": "Passkey.NotFound"}})

        def effect(st, obs):
            st.passkeys[cmd["passkey"]]["name"] = cmd["name"]

        return Pred({"status": 200, "json": {"Id": p["id"], "DisplayName": cmd["name"]}},
                    [("passkey-" + p["id"], "passkey.renamed")] if cmd["name"] != p["name"] else [], effect)

    def p_pk_delete(self, state, cmd, phase, obs):
        p = state.passkeys[cmd["passkey"]]
        if cmd["kind"] == "pk_delete":
            refusal = self._bearer_refusal(state, cmd["session"])
            if refusal:
                return Pred(refusal)
        if p["deleted"]:
            return Pred({"status": 404, "json": {"title": "Passkey.NotFound"}})

        def effect(st, obs):
            st.passkeys[cmd["passkey"]]["deleted"] = True

        return Pred({"status": 204}, [("passkey-" + p["id"], "passkey.deleted")], effect)

    p_pk_admin_delete = p_pk_delete


def first_phase(cmd):
    return {"signin": "request", "signup": "request", "pk_enroll": "begin"}.get(cmd["kind"], "do")


# Commands whose steps race inside the command (Runner.run_race_*): erase-versus-refresh and
# disable-versus-sign-in (issue 67, item 2).
RACES = ("race_erase", "race_disable")


# MARK: Running commands against the instances


class Obs:
    """One step's answer and what the harness learned from it (the presented token, new ids)."""

    def __init__(self, answer=None):
        self.answer = answer
        self.presented = None
        self.fid = None
        self.ceremony = None
        self.user_id = None
        self.code = None

    @property
    def json(self):
        return self.answer.json if isinstance(self.answer, Answer) else None

    @property
    def rid(self):
        return self.answer.rid if isinstance(self.answer, Answer) else None

    def brief(self):
        return self.answer.brief() if isinstance(self.answer, Answer) else self.answer


class Env:
    """The instances, the database, the mail, the console: everything a step needs to run."""

    def __init__(self, args, realm, http, psql, mailbox, console, cli):
        self.args, self.realm, self.http, self.psql, self.mailbox, self.console, self.cli = args, realm, http, psql, mailbox, console, cli
        self.host = f"{realm}.model.test"
        self.token_url = f"https://{self.host}/connect/token"
        self.dpop_keys = {}  # session key -> DpopKey
        self.pending_code = {}  # user email -> code received and not yet redeemed or burned

    def family_of_refresh(self, token):
        rows = self.psql.query(f"SELECT family_id FROM refresh_tokens WHERE token_hash = '{token_hash(token)}'")
        return rows[0][0] if rows else None

    def family_of_access(self, token):
        rows = self.psql.query(f"SELECT family_id FROM access_tokens WHERE token_hash = '{token_hash(token)}'")
        return rows[0][0] if rows else None

    def token(self, inst, form, dpop_key=None):
        headers = {}
        if dpop_key:
            headers["DPoP"] = dpop_key.proof("POST", self.token_url)
        answer = self.http.request(inst, "POST", "/connect/token", form=form, headers=headers)
        if dpop_key and answer.status == 400 and (answer.json or {}).get("error") == "use_dpop_nonce":
            headers["DPoP"] = dpop_key.proof("POST", self.token_url, nonce=answer.headers.get("dpop-nonce"))
            answer = self.http.request(inst, "POST", "/connect/token", form=form, headers=headers)
        return answer

    def bearer(self, state, session):
        return {"Authorization": "Bearer " + state.sessions[session]["access"]}

    def prepare(self, state, cmd, phase):
        """What a step needs from the model before it runs (read in the main thread)."""
        prepared = {}
        if cmd["kind"] == "refresh":
            prepared["token"] = state.sessions[cmd["session"]]["refresh"]
            prepared["client"] = state.sessions[cmd["session"]]["client"]
        elif cmd["kind"] == "cc_grant":
            c = state.clients[cmd["client"]]
            prepared["secret"] = c["secret"] if cmd["secret"] == "current" or not c["old"] else c["old"][-1]
        elif cmd["kind"] in ("signin", "signup"):
            email = state.users[cmd["user"]]["email"] if cmd["kind"] == "signin" else cmd["email"]
            prepared["email"] = email
            prepared["index"] = (state.users[cmd["user"]]["mails"] if cmd["kind"] == "signin" else state.signups.get(email, 0)) - 1
        elif cmd["kind"] in ("pk_enroll", "pk_rename", "pk_delete"):
            prepared["headers"] = self.bearer(state, cmd["session"])
        if cmd.get("user") in state.users:
            prepared["user_id"] = state.users[cmd["user"]]["id"]
        if cmd.get("passkey") in state.passkeys:
            prepared["passkey_id"] = state.passkeys[cmd["passkey"]]["id"]
        return prepared

    def execute(self, cmd, phase, prepared):
        kind, inst, realm = cmd["kind"], cmd.get("inst"), self.realm
        uid = prepared.get("user_id")
        admin = self.http.admin
        if kind in ("user_disable", "user_enable", "user_logout"):
            action = {"user_disable": "disable", "user_enable": "enable", "user_logout": "logout-everywhere"}[kind]
            return Obs(admin(inst, "POST", f"/realms/{realm}/users/{uid}/{action}"))
        if kind == "user_erase":
            return Obs(admin(inst, "DELETE", f"/realms/{realm}/users/{uid}?erase=true"))
        if kind in ("role_grant", "role_revoke"):
            return Obs(self.cli.run("user", "grant-role" if kind == "role_grant" else "revoke-role", realm, uid, cmd["role"]))
        if kind in ("client_disable", "client_enable"):
            verb = kind.split("_")[1]
            if inst == "cli":
                return Obs(self.cli.run("client", verb, realm, cmd["client"]))
            return Obs(self.console.post(inst, f"/console/realms/{realm}/clients/{cmd['client']}/{verb}"))
        if kind == "client_rotate":
            return Obs(admin(inst, "POST", f"/realms/{realm}/clients/{cmd['client']}/secret"))
        if kind == "cc_grant":
            obs = Obs(self.token(inst, {"grant_type": "client_credentials", "client_id": cmd["client"], "client_secret": prepared["secret"]}))
            obs.presented = prepared["secret"]
            if obs.answer.status == 200:
                obs.fid = self.family_of_access(obs.json["access_token"])
            return obs
        if kind.startswith("realm_"):
            body = {"realm_native": lambda: {"NativeGrants": {"Enabled": cmd["on"]}},
                    "realm_posture": lambda: {"RegistrationPosture": cmd["posture"]},
                    "realm_limit": lambda: {"RateLimits": {"otp-request.ip": {"Limit": cmd["limit"], "WindowSeconds": 60, "Burst": 100000}},
                                            "DisplayName": cmd["display"]},
                    "realm_lifetime": lambda: {"NativeGrants": {"AccessTokenLifetimeMinutes": cmd["minutes"]}, "DisplayName": cmd["display"]}}[kind]()
            return Obs(admin(inst, "PATCH", f"/realms/{realm}", body))
        if kind in ("signin", "signup"):
            email = prepared["email"]
            if phase == "request":
                return Obs(self.http.request(inst, "POST", "/api/account/native/otp/request", json_body={"Email": email}))
            if phase == "redeem":
                got = self.mailbox.wait(email, prepared["index"])
                if got is None:
                    obs = Obs({"mail": f"no code mailed to {email} within {HANG_GUARD:.0f} s"})
                    return obs
                code, mail_kind = got
                want = "registration" if kind == "signup" else "login"
                if mail_kind != want:
                    return Obs({"mail": f"a {mail_kind} code mailed to {email}, expected a {want} code"})
                self.pending_code[email] = code
                key = None
                if cmd.get("dpop"):
                    key = self.dpop_keys.setdefault(cmd["session"], DpopKey())
                obs = Obs(self.token(cmd["inst2"], {"grant_type": "urn:cocoar:otp", "client_id": cmd["client"], "username": email,
                                                     "otp_code": code, "scope": "offline_access"}, key))
                obs.code = code
                if obs.answer.status == 200:
                    self.pending_code.pop(email, None)
                    obs.fid = self.family_of_refresh(obs.json.get("refresh_token", ""))
                    if kind == "signup":
                        users = admin(cmd["inst2"], "GET", f"/realms/{realm}/users").json or []
                        obs.user_id = next((x["Id"] for x in users if x.get("Email", "").lower() == email.lower()), None)
                return obs
            # burn: a wrong code (never the live one)
            live = self.pending_code.get(email, "000000")
            wrong = "%06d" % ((int(live) + 1 + random.Random(phase + email).randrange(999998)) % 1000000)
            answer = self.token(cmd.get("burn_inst", 1), {"grant_type": "urn:cocoar:otp", "client_id": "app-a", "username": email,
                                                          "otp_code": wrong, "scope": "offline_access"})
            if phase == "burn2":
                self.pending_code.pop(email, None)
            return Obs(answer)
        if kind == "refresh":
            key = self.dpop_keys.get(cmd["session"])
            proof = cmd.get("proof", "key")
            if proof == "none":
                key = None
            elif proof == "other":
                key = DpopKey()
            obs = Obs(self.token(inst, {"grant_type": "refresh_token", "client_id": prepared["client"], "refresh_token": prepared["token"]}, key))
            obs.presented = prepared["token"]
            return obs
        if kind == "pk_enroll":
            if phase == "begin":
                obs = Obs(self.http.request(inst, "POST", "/connect/passkey/enroll/begin", headers=prepared["headers"]))
                obs.ceremony = (obs.json or {}).get("ceremonyId")
                if obs.ceremony:
                    self.ceremony_options = obs.json["options"]
                return obs
            body = {"ceremonyId": cmd["_ceremony"], "attestation": passkey_attestation(self.ceremony_options), "DisplayName": cmd["name"]}
            obs = Obs(self.http.request(cmd["inst2"], "POST", "/connect/passkey/enroll", json_body=body, headers=prepared["headers"]))
            obs.ceremony = cmd["_ceremony"]
            return obs
        if kind == "pk_rename":
            return Obs(self.http.request(inst, "PATCH", f"/connect/passkey/{prepared['passkey_id']}", json_body={"DisplayName": cmd["name"]},
                                         headers=prepared["headers"]))
        if kind == "pk_delete":
            return Obs(self.http.request(inst, "DELETE", f"/connect/passkey/{prepared['passkey_id']}", headers=prepared["headers"]))
        if kind == "pk_admin_delete":
            return Obs(admin(inst, "DELETE", f"/realms/{realm}/users/{uid}/passkeys/{prepared['passkey_id']}"))
        raise ValueError(kind)


def compare_events(expected, observed, rids=None):
    """Problems between the expected events [(stream, type, rid)] and the log's rows
    [(position, stream_id, type, correlation)]: per stream, the same types in the same order;
    wildcard streams (email challenges, whose ids are keyed hashes) match any stream of their kind.
    With correlation ids in the log, an event carrying one of this window's request ids must be
    the one the model attributes to that request."""
    rids = rids or set()
    want = {}
    for stream, etype, rid in expected:
        want.setdefault(stream, []).append((etype, rid))
    got = {}
    for _, stream, etype, corr in observed:
        got.setdefault(stream, []).append((etype, corr))
    problems = []

    def variants(w):
        """The expected list with each optional event ("type?") kept or dropped."""
        optional = [i for i, (e, _) in enumerate(w) if e.endswith("?")]
        for keep in itertools.product([True, False], repeat=len(optional)):
            dropped = {i for i, k in zip(optional, keep) if not k}
            yield [(e.rstrip("?"), r) for i, (e, r) in enumerate(w) if i not in dropped]

    def same(w, g):
        for v in variants(w):
            if [e for e, _ in v] == [e for e, _ in g] and all(not (c in rids) or c == r for (_, r), (_, c) in zip(v, g)):
                return True
        return False

    for stream, w in want.items():
        if stream.startswith("email-challenge-*"):
            continue
        g = got.pop(stream, [])
        if not same(w, g):
            problems.append(f"{stream}: expected {[e for e, _ in w]}, the log has {[e for e, _ in g]}")
    for stream, w in want.items():
        if not stream.startswith("email-challenge-*"):
            continue
        found = next((s for s, g in got.items() if s.startswith("email-challenge-") and same(w, g)), None)
        if found is None:
            problems.append(f"an email challenge ({stream[17:]}): expected {[e for e, _ in w]}, the log has "
                            f"{ {s: [e for e, _ in g] for s, g in got.items() if s.startswith('email-challenge-')} or 'nothing'}")
        else:
            got.pop(found)
    for stream, g in got.items():
        problems.append(f"{stream}: unexpected {[e for e, _ in g]}")
    return problems


class Runner:
    def __init__(self, env, model, state, seed, log):
        self.env, self.model, self.state, self.seed = env, model, state, seed
        self.log = log  # every command run, in the order the model applied them
        self.checks = 0
        self.concurrent_rounds = 0
        self.outcomes = {}  # "kind/phase status" -> count, for the summary
        # Requests a race sends beyond its one command (each answer checked), counted as commands.
        self.extra_commands = 0
        self.race_stats = {k: 0 for k in ("erase races", "racing refreshes", "families a racing refresh ended", "families a racing logout ended",
                                          "disable races", "racing sign-ins issued", "racing sign-ins refused",
                                          "racing sign-ins sent after the disable answered")}
        self.rng = random.Random(seed + 3)  # where a race's follow-up commands go
        # Four workers for the concurrent rounds, kept for the run (and their keep-alive connections).
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="round")

    def note(self, cmd, phase, obs):
        a = obs.answer
        status = a.status if isinstance(a, Answer) else ("exit 0" if isinstance(a, dict) and a.get("exit") == 0 else "exit 1")
        if isinstance(a, Answer) and a.status >= 400 and isinstance(a.json, dict):
            status = f"{a.status} {a.json.get('error') or a.json.get('title') or ''}".strip()
            if a.json.get("error") == "invalid_grant":
                status += {CLIENT_DISABLED: " (client disabled)", CANNOT_SIGN_IN: " (cannot sign in)"}.get(a.json.get("error_description"), "")
        key = f"{cmd['kind']}{'/' + phase if phase not in ('do', 'request') else ''} {status}"
        self.outcomes[key] = self.outcomes.get(key, 0) + 1

    # The log

    def max_position(self):
        # The realm's own: with cells (issue 71) a database also holds realms moved in from
        # another cell, whose positions come from that cell's range, above or below this one's.
        return int(self.env.psql.query(f"SELECT coalesce(max(position), 0) FROM events WHERE realm = '{self.env.realm}'")[0][0])

    def events_since(self, position):
        return [(int(p), s, t, c) for p, s, t, c in self.env.psql.query(
            f"SELECT position, stream_id, type, coalesce(metadata->>'correlationID', '') FROM events "
            f"WHERE realm = '{self.env.realm}' AND position > {position} ORDER BY position")]

    def diverge(self, cmd, message, expected=None, actual=None, phase=None):
        inst = cmd.get("inst2") if phase in ("redeem", "finish") else cmd.get("burn_inst") if (phase or "").startswith("burn") else cmd.get("inst")
        raise Divergence(f"command #{cmd['i']} {cmd['kind']}{' (' + phase + ')' if phase and phase != 'do' else ''} on instance {inst}: {message}",
                         expected, actual)

    # One command at a time

    def run_sequential(self, cmd, logged=True):
        if cmd["kind"] in RACES:
            return getattr(self, "run_" + cmd["kind"])(cmd)
        start = self.max_position()
        expected, rids, answers = [], set(), []
        phase = first_phase(cmd)
        while phase:
            prepared = self.env.prepare(self.state, cmd, phase)
            obs = self.env.execute(cmd, phase, prepared)
            answers.append(obs.brief())
            if obs.rid:
                rids.add(obs.rid)
            if isinstance(obs.answer, dict) and "mail" in obs.answer:
                self.diverge(cmd, obs.answer["mail"], phase=phase)
            if phase == "begin" and obs.ceremony:
                cmd["_ceremony"] = obs.ceremony
            pred = self.model.predict(self.state, cmd, phase, obs)
            self.checks += 1
            problem = match(pred.expect, obs.answer)
            if problem:
                self.diverge(cmd, f"the answer differs ({problem})", pred.expect, obs.brief(), phase)
            pred.effect(self.state, obs)
            self.note(cmd, phase, obs)
            expected += [(s, t, obs.rid) for s, t in pred.events]
            phase = pred.follow
            if phase == "redeem":
                self.check_code_issued(cmd, start, expected, rids, answers)
        cmd.pop("_ceremony", None)
        if logged:
            self.log.append(cmd)
        observed = self.events_since(start)
        self.checks += 1
        problems = compare_events(expected, observed, rids)
        if problems:
            self.diverge(cmd, f"answered {json.dumps(answers)[:400]}, but the log differs from the model: " + "; ".join(problems),
                         [(s, t) for s, t, _ in expected], [(s, t) for _, s, t, _ in observed])
        return observed

    def check_code_issued(self, cmd, start, expected, rids, answers):
        """Before waiting for a code's mail: the log must have it (else the wait would only say
        that no mail came)."""
        observed = self.events_since(start)
        problems = compare_events(expected, observed, rids)
        self.checks += 1
        if problems:
            self.diverge(cmd, f"answered {json.dumps(answers)[:300]}, but the log differs from the model: " + "; ".join(problems),
                         [(s, t) for s, t, _ in expected], [(s, t) for _, s, t, _ in observed], phase="request")

    # Several commands at once

    def run_concurrent(self, cmds):
        start = self.max_position()
        prepared = [self.env.prepare(self.state, c, first_phase(c)) for c in cmds]
        barrier = threading.Barrier(len(cmds))  # released together: the commands race

        def work(i):
            barrier.wait(timeout=HANG_GUARD)
            return self.env.execute(cmds[i], first_phase(cmds[i]), prepared[i])

        results = [f.result() for f in [self.pool.submit(work, i) for i in range(len(cmds))]]
        observed = self.events_since(start)
        rids = {r.rid for r in results if r.rid}
        candidates = []
        for order in itertools.permutations(range(len(cmds))):
            st = copy.deepcopy(self.state)
            expected, follows, ok = [], {}, True
            for i in order:
                pred = self.model.predict(st, cmds[i], first_phase(cmds[i]), results[i])
                if match(pred.expect, results[i].answer):
                    ok = False
                    break
                pred.effect(st, results[i])
                expected += [(s, t, results[i].rid) for s, t in pred.events]
                follows[i] = pred.follow
            if ok and not compare_events(expected, observed, rids):
                candidates.append((order, st, follows))
        self.checks += 1
        if not candidates:
            self.diverge_round(cmds, results, observed)
        distinct = {}
        for candidate in candidates:
            distinct.setdefault(candidate[1].signature(), candidate)
        touched = self.touched(cmds, self.state)
        if len(distinct) == 1:
            chosen = candidates[0]
        else:  # orders that the log and the answers cannot tell apart but leave different states: the reads decide
            chosen = self.resolve(list(distinct.values()), touched)
            if chosen is None:
                order, st, _ = candidates[0]
                problems = self.verify(touched, st, poll=False)
                self.diverge(cmds[order[0]], f"round of {len(cmds)}: no order of the round agrees with what the instances answer: "
                             + "; ".join(problems[:6]))
        order, st, follows = chosen
        self.state = st
        for i in order:
            self.log.append(cmds[i])
            self.note(cmds[i], first_phase(cmds[i]), results[i])
        # The rest of a multi-step command runs after the round, one step at a time.
        for i in order:
            if follows.get(i):
                self.run_follow(cmds[i], follows[i])
        return touched

    def run_follow(self, cmd, phase):
        start = self.max_position()
        expected, rids = [], set()
        while phase:
            obs = self.env.execute(cmd, phase, self.env.prepare(self.state, cmd, phase))
            if obs.rid:
                rids.add(obs.rid)
            if isinstance(obs.answer, dict) and "mail" in obs.answer:
                self.diverge(cmd, obs.answer["mail"], phase=phase)
            pred = self.model.predict(self.state, cmd, phase, obs)
            self.checks += 1
            problem = match(pred.expect, obs.answer)
            if problem:
                self.diverge(cmd, f"the answer differs ({problem})", pred.expect, obs.brief(), phase)
            pred.effect(self.state, obs)
            self.note(cmd, phase, obs)
            expected += [(s, t, obs.rid) for s, t in pred.events]
            phase = pred.follow
        problems = compare_events(expected, self.events_since(start), rids)
        self.checks += 1
        if problems:
            self.diverge(cmd, "after the round: the log differs from the model: " + "; ".join(problems))

    # Races (issue 67, item 2): commands whose steps race one another inside one command, checked
    # in every interleaving the server may choose, counts included.

    def revocations_since(self, position):
        """The log since position with each revocation's reason: [(position, stream, type, correlation, reason)]."""
        return [(int(p), s, t, c, r) for p, s, t, c, r in self.env.psql.query(
            f"SELECT position, stream_id, type, coalesce(metadata->>'correlationID', ''), coalesce(payload->>'reason', '') FROM events "
            f"WHERE realm = '{self.env.realm}' AND position > {position} ORDER BY position")]

    def race_check(self, cmd, expect, obs, what):
        """One answer of a race against the model's expectation (a check)."""
        self.checks += 1
        problem = match(expect, obs.answer)
        if problem:
            self.diverge(cmd, f"{what}: the answer differs ({problem})", expect, obs.brief())

    def race_after(self, cmd, n, kind, **fields):
        """A command the race runs after its end (not logged: a replay of the race runs it again)."""
        sub = dict({"i": f"{cmd['i']}.{n}", "kind": kind}, **fields)
        self.run_sequential(sub, logged=False)
        self.extra_commands += 1

    def run_race_erase(self, cmd):
        """An erasure (admin API) on one instance while some of the user's sessions refresh in a
        loop on the others (each presenting the token the last one got, until one is refused),
        and maybe one other session is logged out (RFC 7009). Every refresh answers as if before
        or after the erasure; one sent after the erasure answered must be refused; the erasure's
        FamiliesRevoked is the user's families live before, less the one the logout ended, in
        whichever order the log shows; the log has exactly the events one of those orders writes."""
        env, st, user = self.env, self.state, cmd["user"]
        u = st.users[user]
        before = [k for k, s in sorted(st.sessions.items()) if s["user"] == user and not s["revoked"]]
        passkeys = [k for k, p in st.passkeys.items() if p["user"] == user and not p["deleted"]]
        chains = {r["session"]: {"inst": r["inst"], "token": st.sessions[r["session"]]["refresh"], "client": st.sessions[r["session"]]["client"],
                                 "dpop": st.sessions[r["session"]]["dpop"]} for r in cmd["refreshes"]}
        logout = cmd.get("logout")
        logout_session = logout["session"] if logout else None
        start = self.max_position()
        erased = threading.Event()
        barrier = threading.Barrier(1 + len(chains) + (1 if logout else 0))

        def erase():
            barrier.wait(timeout=HANG_GUARD)
            obs = Obs(env.http.admin(cmd["inst"], "DELETE", f"/realms/{env.realm}/users/{u['id']}?erase=true"))
            erased.set()
            return obs

        def refresh_loop(k):
            c = chains[k]
            sub = {"i": cmd["i"], "kind": "refresh", "session": k, "inst": c["inst"], "proof": "key"}
            token, answers = c["token"], []
            barrier.wait(timeout=HANG_GUARD)
            began = time.monotonic()
            while time.monotonic() - began < HANG_GUARD:  # a hang guard: the erasure ends the loop
                after = erased.is_set()
                obs = env.execute(sub, "do", {"token": token, "client": c["client"]})
                answers.append((obs, after))
                if obs.answer.status != 200 or after:
                    break
                token = obs.json.get("refresh_token")
            return answers

        def log_out():
            barrier.wait(timeout=HANG_GUARD)
            s = st.sessions[logout_session]
            return Obs(env.http.request(logout["inst"], "POST", "/connect/revoke", form={"client_id": s["client"], "token": s["refresh"]}))

        futures = {"erase": self.pool.submit(erase)}
        for k in chains:
            futures[k] = self.pool.submit(refresh_loop, k)
        if logout:
            futures["logout"] = self.pool.submit(log_out)
        results = {k: f.result() for k, f in futures.items()}
        observed = self.revocations_since(start)
        erase_obs = results["erase"]
        rids = {erase_obs.rid}
        streams = {}
        for _, stream, etype, corr, reason in observed:
            streams.setdefault(stream, []).append((etype, corr, reason))

        def same_rid(corr, rid):
            return not corr or corr == rid

        problems = []
        # The refreshes: 200s, then one refusal; the family's stream has their rotations, then
        # either the refusal's own revocation (it found the user erased: reason stamp) or the
        # erasure's (reason erased) and then the refusal's record.
        bad = {"status": 400, "json": {"error": "invalid_grant", "error_description": REFRESH_INVALID}}
        ended_by_refresh, refusals = set(), {}
        for k, answers in ((k, results[k]) for k in chains):
            for n, (obs, after) in enumerate(answers):
                rids.add(obs.rid)
                self.note({"kind": "race_erase"}, "refresh", obs)
                self.extra_commands += 1
                last = n == len(answers) - 1
                if obs.answer.status == 200 and after:
                    self.checks += 1
                    self.diverge(cmd, f"session {k}: a refresh sent after the erasure answered was accepted", bad, obs.brief())
                self.race_check(cmd, self.model._token_expect(st, chains[k]["dpop"]) if not last else bad, obs, f"session {k}'s refresh {n + 1}")
            stream = self.model.family_stream(st.sessions[k]["fid"])
            got = streams.pop(stream, [])
            rotations = [(e, c) for e, c, _ in got[:len(answers) - 1]]
            tail = got[len(answers) - 1:]
            refusal_rid = answers[-1][0].rid
            self.checks += 1
            ok = all(e == "token_family.refreshed" and same_rid(c, a.rid) for (e, c), (a, _) in zip(rotations, answers)) and len(rotations) == len(answers) - 1
            if ok and len(tail) == 1 and tail[0][0] == "token_family.revoked" and tail[0][2] == "stamp" and same_rid(tail[0][1], refusal_rid):
                ended_by_refresh.add(k)
            elif ok and [e for e, _, _ in tail] == ["token_family.revoked", "token_family.refresh_refused"] and tail[0][2] == "erased" \
                    and same_rid(tail[0][1], erase_obs.rid) and same_rid(tail[1][1], refusal_rid):
                refusals[k] = time.monotonic()
            else:
                problems.append(f"{stream} (session {k}, {len(answers)} refreshes): the log has {got}")
        logged_out = False
        if logout:
            rids.add(results["logout"].rid)
            self.race_check(cmd, {"status": 200}, results["logout"], f"the logout of session {logout_session}")
            self.note({"kind": "race_erase"}, "logout", results["logout"])
            self.extra_commands += 1
            stream = self.model.family_stream(st.sessions[logout_session]["fid"])
            got = streams.pop(stream, [])
            self.checks += 1
            if len(got) == 1 and got[0][0] == "token_family.revoked" and got[0][2] == "logout" and same_rid(got[0][1], results["logout"].rid):
                logged_out = True
            elif not (len(got) == 1 and got[0][0] == "token_family.revoked" and got[0][2] == "erased" and same_rid(got[0][1], erase_obs.rid)):
                problems.append(f"{stream} (session {logout_session}, logged out): the log has {got}")
        for k in before:
            if k in chains or k == logout_session:
                continue
            stream = self.model.family_stream(st.sessions[k]["fid"])
            got = streams.pop(stream, [])
            self.checks += 1
            if not (len(got) == 1 and got[0][0] == "token_family.revoked" and got[0][2] == "erased" and same_rid(got[0][1], erase_obs.rid)):
                problems.append(f"{stream} (session {k}): expected the erasure's revocation, the log has {got}")
        want = {self.model.user_stream(st, user): ["user.erased", "user.security_stamp_rotated"]}
        want.update({"passkey-" + st.passkeys[k]["id"]: ["passkey.deleted"] for k in passkeys})
        for stream, types in want.items():
            got = streams.pop(stream, [])
            self.checks += 1
            if [e for e, _, _ in got] != types or not all(same_rid(c, erase_obs.rid) for _, c, _ in got):
                problems.append(f"{stream}: expected {types} by the erasure, the log has {got}")
        for stream, got in streams.items():
            problems.append(f"{stream}: unexpected {got}")
        if problems:
            self.diverge(cmd, "the log differs from every order of the race: " + "; ".join(problems[:6]))
        # The erasure's answer: counts as well as status, whichever order the log shows.
        families = len(before) - (1 if logged_out else 0)
        self.race_check(cmd, {"status": 200, "json": {"Id": u["id"], "Status": "erased", "ErasedNow": True, "FamiliesRevoked": families,
                                                      "PasskeysDeleted": len(passkeys)}}, erase_obs, "the erasure")
        self.note(cmd, "do", erase_obs)
        stats = self.race_stats
        stats["erase races"] += 1
        stats["racing refreshes"] += sum(len(results[k]) for k in chains)
        stats["families a racing refresh ended"] += len(ended_by_refresh)
        stats["families a racing logout ended"] += 1 if logged_out else 0
        # The model: the user erased, every family ended; the sessions hold their last tokens.
        uu = st.users[user]
        uu["status"], uu["gen"] = "erased", uu["gen"] + 1
        for k in before:
            st.sessions[k]["revoked"] = True
        for k in chains:
            for obs, _ in results[k]:
                if obs.answer.status == 200:
                    st.sessions[k]["refresh"], st.sessions[k]["access"] = obs.json["refresh_token"], obs.json["access_token"]
            if k in refusals:
                st.sessions[k]["refused_certain"], st.sessions[k]["refused_maybe"] = refusals[k], []
        for k in passkeys:
            st.passkeys[k]["deleted"] = True
        self.log.append(cmd)
        # And after it, every one of the user's sessions is refused (the model says how).
        for n, k in enumerate(before):
            self.race_after(cmd, n + 1, "refresh", session=k, inst=self.rng.choice([1, 2, 3]), proof="key")
        return observed

    def run_race_disable(self, cmd):
        """Sign-ins by a client (codes requested one at a time) whose redemptions race the client's
        disable on other instances. Each redemption answers as if before the disable (tokens) or
        after (refused); one sent after the disable was acknowledged must be refused; afterwards
        no token the race issued is active (userinfo refuses the access token, the model expects
        the refresh to be refused) and the refused sign-ins' codes are burned."""
        env, st, client = self.env, self.state, cmd["client"]
        start = self.max_position()
        expected, rids = [], set()
        prepared = []
        for sub in cmd["signins"]:
            obs = env.execute(sub, "request", env.prepare(st, sub, "request"))
            rids.add(obs.rid)
            pred = self.model.predict(st, sub, "request", obs)
            self.race_check(sub, pred.expect, obs, "the code request")
            if pred.follow != "redeem":
                self.diverge(sub, "the race needs a code mailed", {"follow": "redeem"}, {"follow": pred.follow})
            pred.effect(st, obs)
            self.note(sub, "request", obs)
            self.extra_commands += 1
            expected += [(s, t, obs.rid) for s, t in pred.events]
            p = env.prepare(st, sub, "redeem")
            if env.mailbox.wait(p["email"], p["index"]) is None:  # mailed before the race starts
                self.diverge(sub, f"no code mailed to {p['email']} within {HANG_GUARD:.0f} s", phase="redeem")
            prepared.append(p)
        toggle = {"i": cmd["i"], "kind": "client_disable", "client": client, "inst": cmd["inst"]}
        acknowledged = threading.Event()
        # At once, or (chained) one after another in one worker: the later ones meet the disable
        # in flight or acknowledged.
        workers = [[i] for i in range(len(cmd["signins"]))] if not cmd.get("chained") else [list(range(len(cmd["signins"])))]
        barrier = threading.Barrier(1 + len(workers))

        def disable():
            barrier.wait(timeout=HANG_GUARD)
            obs = env.execute(toggle, "do", {})
            acknowledged.set()
            return obs

        def redeem(indices):
            barrier.wait(timeout=HANG_GUARD)
            out = []
            for i in indices:
                after = acknowledged.is_set()
                out.append((env.execute(cmd["signins"][i], "redeem", prepared[i]), after))
            return out

        toggled = self.pool.submit(disable)
        redeemed = [self.pool.submit(redeem, w) for w in workers]
        toggle_obs = toggled.result()
        results = [None] * len(cmd["signins"])
        for w, f in zip(workers, redeemed):
            for i, result in zip(w, f.result()):
                results[i] = result
        issued, refused = [], []
        for sub, (obs, after) in zip(cmd["signins"], results):
            rids.add(obs.rid)
            if isinstance(obs.answer, dict):
                self.diverge(sub, obs.answer.get("mail", str(obs.answer)), phase="redeem")
            self.extra_commands += 1
            if obs.answer.status == 200:
                self.checks += 1
                if after:
                    self.diverge(sub, "a sign-in sent after the client's disable was acknowledged got tokens",
                                 {"error_description": CLIENT_DISABLED}, obs.brief(), phase="redeem")
                issued.append((sub, obs))
            else:
                refused.append((sub, obs))
        # One order the answers allow: the issued sign-ins, the disable, the refused ones.
        follows = []
        for sub, obs in issued:
            pred = self.model.predict(st, sub, "redeem", obs)
            self.race_check(sub, pred.expect, obs, "the sign-in (before the disable)")
            pred.effect(st, obs)
            self.note(sub, "redeem", obs)
            expected += [(s, t, obs.rid) for s, t in pred.events]
        rids.add(toggle_obs.rid)
        pred = self.model.predict(st, toggle, "do", toggle_obs)
        self.race_check(cmd, pred.expect, toggle_obs, "the disable")
        pred.effect(st, toggle_obs)
        self.note(toggle, "do", toggle_obs)
        expected += [(s, t, toggle_obs.rid) for s, t in pred.events]
        for sub, obs in refused:
            pred = self.model.predict(st, sub, "redeem", obs)
            self.race_check(sub, pred.expect, obs, "the sign-in (after the disable)")
            pred.effect(st, obs)
            self.note(sub, "redeem", obs)
            expected += [(s, t, obs.rid) for s, t in pred.events]
            follows.append((sub, pred.follow))
        observed = self.events_since(start)
        self.checks += 1
        problems = compare_events(expected, observed, {r for r in rids if r})
        if problems:
            self.diverge(cmd, "the log differs from the race's order (issued, disable, refused): " + "; ".join(problems[:6]),
                         [(s, t) for s, t, _ in expected], [(s, t) for _, s, t, _ in observed])
        self.log.append(cmd)
        stats = self.race_stats
        stats["disable races"] += 1
        stats["racing sign-ins issued"] += len(issued)
        stats["racing sign-ins refused"] += len(refused)
        stats["racing sign-ins sent after the disable answered"] += sum(1 for _, after in results if after)
        # The disable is acknowledged: no token the race issued is active anywhere.
        for sub, obs in issued:
            for inst in (1, 2, 3):
                answer = env.http.request(inst, "GET", "/connect/userinfo", headers={"Authorization": "Bearer " + obs.json["access_token"]})
                self.checks += 1
                if answer.status != 401:
                    self.diverge(sub, f"instance {inst}: the access token a racing sign-in got is still active after the disable",
                                 {"status": 401}, answer.brief())
        for sub, phase in follows:
            if phase:
                self.run_follow(sub, phase)
        for n, (sub, _) in enumerate(issued):
            self.race_after(cmd, n + 1, "refresh", session=sub["session"], inst=self.rng.choice([1, 2, 3]), proof="key")
        return observed

    def diverge_round(self, cmds, results, observed):
        lines = [f"round of {len(cmds)} concurrent commands: no order of them agrees with the answers and the log"]
        for c, r in zip(cmds, results):
            lines.append(f"  #{c['i']} {c['kind']} {json.dumps({k: v for k, v in c.items() if k not in ('i', 'kind')})} -> {json.dumps(r.brief())[:300]}")
        lines.append("  the log: " + json.dumps([(s, t, c) for _, s, t, c in observed]))
        st = self.state
        for c, r in zip(cmds, results):  # what each command expects on the state before the round, for the reader
            pred = self.model.predict(st, c, first_phase(c), r)
            lines.append(f"  #{c['i']} alone on the state before the round: expected {json.dumps(pred.expect)}, events {pred.events}")
        self.log.extend(cmds)
        raise Divergence("\n".join(lines))

    def resolve(self, candidates, touched):
        deadline = time.monotonic() + HANG_GUARD
        while True:
            for candidate in candidates:
                if not self.verify(touched, candidate[1], poll=False):
                    return candidate
            if time.monotonic() > deadline:
                return None
            time.sleep(0.05)

    # What every instance answers about the entities a round touched

    def touched(self, cmds, state):
        users, clients, realm = set(), set(), False
        for c in cmds:
            if c.get("user"):
                users.add(c["user"])
            if c.get("new_user"):
                users.add(c["new_user"])
            for sub in c.get("signins", []):
                users.add(sub["user"])
            if c.get("session") and c["session"] in state.sessions:
                users.add(state.sessions[c["session"]]["user"])
            if c.get("client"):
                clients.add(c["client"])
            if c["kind"].startswith("realm_"):
                realm = True
        return {"users": users, "clients": clients, "realm": realm}

    def verify(self, touched, state, poll=True, insts=(1, 2, 3), console=False):
        """Problems between what each instance answers and the state. Reads of the database
        (admin API, console) are synchronous: compared at once. What the token endpoint and
        app-info answer comes from each instance's settings cache (dropped by NOTIFY): polled.

        The console's user page reads the user through the instance's aggregate actor, which
        catches its cache up: asked after every command it would hide a stale cache from the next
        command (issue 40's defect needs A's cache to stay stale while B writes). So after each
        round the roles and sessions come from the database, and each instance's console view is
        compared only now and then (`console`) and at the end."""
        problems, probes = [], []
        env, realm = self.env, self.env.realm
        users = [k for k in touched["users"] if k in state.users]
        if users:
            for inst in insts:
                listed = {x["Id"]: x for x in (env.http.admin(inst, "GET", f"/realms/{realm}/users").json or [])}
                for k in users:
                    u = state.users[k]
                    row = listed.get(u["id"])
                    self.checks += 1
                    want = (u["status"], "" if u["status"] == "erased" else u["email"])
                    have = (row or {}).get("Status"), (row or {}).get("Email")
                    if have != want:
                        problems.append(f"instance {inst}: user {k} is {have} in GET users, the model says {want}")
                    problems += self.verify_user_detail(inst, k, state, console)
                    problems += self.verify_passkeys(inst, k, state)
        for k in touched["clients"]:
            c = state.clients[k]
            for inst in insts:
                listed = {x["Id"]: x for x in (env.http.admin(inst, "GET", f"/realms/{realm}/clients").json or [])}
                self.checks += 1
                if listed.get(k, {}).get("Enabled") != c["enabled"]:
                    problems.append(f"instance {inst}: client {k} Enabled={listed.get(k, {}).get('Enabled')} in GET clients, the model says {c['enabled']}")
                probes.append(lambda i=inst, k=k: self.client_probe(i, k, state))
        if touched["realm"]:
            r = state.realm
            for inst in insts:
                view = env.http.admin(inst, "GET", f"/realms/{realm}").json or {}
                self.checks += 1
                have = (view.get("NativeGrants", {}).get("Enabled"), view.get("RegistrationPosture"),
                        view.get("NativeGrants", {}).get("AccessTokenLifetimeMinutes"),
                        view.get("RateLimits", {}).get("otp-request.ip", {}).get("Limit"), view.get("DisplayName"))
                want = (r["native"], r["posture"], r["minutes"], r["otp_ip_limit"], r["display"])
                if have != want:
                    problems.append(f"instance {inst}: GET realm has (native, posture, minutes, otp-request.ip, name) {have}, the model {want}")
                probes.append(lambda i=inst: self.realm_probe(i, state))
        # A read of the database that differs is a divergence now; the caches get time only when
        # everything else agrees.
        return problems + self.probe_all(probes, poll and not problems)

    def verify_user_detail(self, inst, k, state, console):
        u = state.users[k]
        sessions = {s["fid"]: ("live" if state.alive(sk) else "ended") for sk, s in state.sessions.items() if s["user"] == k and s["fid"]}
        roles = ", ".join(sorted(u["roles"])) if u["roles"] else "-"
        if console and self.env.console:
            view = self.env.console.user(inst, self.env.realm, u["id"])
        elif inst != 1:
            return []  # the database's answer is the same for every instance: asked once
        else:  # the same facts from the database
            rows = self.env.psql.query(f"SELECT status, array_to_string(roles, ', ') FROM users WHERE user_id = '{u['id']}'")
            fams = self.env.psql.query(
                f"SELECT f.family_id, f.revoked_reason IS NULL AND f.security_stamp IS NOT DISTINCT FROM u.security_stamp "
                f"FROM token_families f LEFT JOIN users u ON u.user_id = f.user_id WHERE f.user_id = '{u['id']}'")
            view = {"Status": rows[0][0] if rows else None, "Roles": (rows[0][1] or "-") if rows else None,
                    "sessions": {f: ("live" if live == "t" else "ended") for f, live in fams}}
        self.checks += 1
        problems = []
        where = f"instance {inst}'s console" if console and self.env.console else "the database"
        if (view.get("Status"), view.get("Roles")) != (u["status"], roles):
            problems.append(f"{where}: user {k} has status {view.get('Status')!r}, roles {view.get('Roles')!r}; the model says "
                            f"{u['status']!r}, {roles!r}")
        if view.get("sessions") != sessions:
            problems.append(f"{where}: user {k}'s sessions are {view.get('sessions')}, the model says {sessions}")
        return problems

    def verify_passkeys(self, inst, k, state):
        u = state.users[k]
        want = {p["id"]: p["name"] for p in state.passkeys.values() if p["user"] == k and not p["deleted"]}
        answer = self.env.http.admin(inst, "GET", f"/realms/{self.env.realm}/users/{u['id']}/passkeys")
        have = {x["Id"]: x["DisplayName"] for x in answer.json or []} if answer.status == 200 else {"status": answer.status}
        self.checks += 1
        if have != want:
            return [f"instance {inst}: user {k}'s passkeys are {have}, the model says {want}"]
        return []

    def probe_all(self, probes, poll):
        """Asks every probe; with poll, asks the ones that disagree again until they agree or the
        hang guard passes (one deadline for all of them)."""
        deadline = time.monotonic() + HANG_GUARD
        pending = list(probes)
        while True:
            failing = []
            for check in pending:
                self.checks += 1
                problem = check()
                if problem:
                    failing.append((check, problem))
            if not failing or not poll:
                return [problem for _, problem in failing]
            if time.monotonic() > deadline:
                return [problem + f" (still after {HANG_GUARD:.0f} s)" for _, problem in failing]
            pending = [check for check, _ in failing]
            time.sleep(0.05)

    def client_probe(self, inst, k, state):
        """What the token endpoint makes of the client: its cache's enabled flag and secret.
        Nothing is written: a made-up refresh token, an introspection of a made-up token."""
        c = state.clients[k]
        if c["type"] == "public":
            a = self.env.http.request(inst, "POST", "/connect/token", form={"grant_type": "refresh_token", "client_id": k, "refresh_token": "made-up"})
            want = CLIENT_DISABLED if not c["enabled"] else REFRESH_INVALID
            if (a.json or {}).get("error_description") != want:
                return f"instance {inst}: client {k}'s made-up refresh answered {a.brief()}, the model expects {want!r}"
            return None
        a = self.env.http.request(inst, "POST", "/connect/introspect", form={"client_id": k, "client_secret": c["secret"], "token": "made-up"})
        want = (200, None) if c["enabled"] else (400, CLIENT_DISABLED)
        if (a.status, (a.json or {}).get("error_description")) != want:
            return f"instance {inst}: client {k} introspecting with its current secret answered {a.brief()}, the model expects {want}"
        if c["old"]:
            a = self.env.http.request(inst, "POST", "/connect/introspect", form={"client_id": k, "client_secret": c["old"][-1], "token": "made-up"})
            if a.status != 401:
                return f"instance {inst}: client {k}'s previous secret still authenticates: {a.brief()}"
        return None

    def realm_probe(self, inst, state):
        a = self.env.http.request(inst, "GET", "/api/app-info")
        r = state.realm
        have = ((a.json or {}).get("NativeGrantsEnabled"), (a.json or {}).get("RegistrationPosture"), (a.json or {}).get("DisplayName"))
        want = (r["native"], r["posture"], r["display"])
        if have != want:
            return f"instance {inst}: app-info answers (native, posture, name) {have}, the model {want}"
        return None

    def heal(self, cmds):
        """--heal-caches: read what the round touches through every instance's aggregate actor
        (the console's pages catch the actor up), so that no instance decides on a stale cache.
        This hides issue 40's defect: to see what else a binary that has it gets wrong."""
        touched = self.touched(cmds, self.state)
        for inst in PORTS:
            for k in touched["users"]:
                if k in self.state.users and self.env.console:
                    self.env.console.get(inst, f"/console/realms/{self.env.realm}/users/{self.state.users[k]['id']}")
            for k in touched["clients"]:
                if self.env.console:
                    self.env.console.get(inst, f"/console/realms/{self.env.realm}/clients/{k}")
            # A code stream's actor catches up when a grant looks for the live code; with none
            # live (the model makes sure) a wrong code writes nothing.
            for c in cmds:
                if c["kind"] in ("signin", "signup") and self.state.realm["native"]:
                    email = self.state.users[c["user"]]["email"] if c["kind"] == "signin" else c["email"]
                    self.env.token(inst, {"grant_type": "urn:cocoar:otp", "client_id": "app-a", "username": email, "otp_code": "000000",
                                          "scope": "offline_access"})

    def check(self, touched, insts=(1, 2, 3), console=False):
        problems = self.verify(touched, self.state, poll=True, insts=insts, console=console)
        if problems:
            raise Divergence("what the instances answer differs from the model: " + "; ".join(problems[:8]))


# MARK: The generator


class Generator:
    """Seeded: the same seed gives the same commands for the same answers (the model's state steers
    which targets are valid, and the state follows the answers the model predicted)."""

    def __init__(self, seed, runner, users, console, realm_races=False):
        self.rng = random.Random(seed)
        self.realm_races = realm_races
        self.runner = runner
        self.users = users
        self.console = console
        self.next_index = 0
        self.next_session = 0
        self.next_passkey = 0
        self.next_user = users
        self.next_display = 0
        self.queue = []
        # Every run races at least once each way (issue 67), right after the warm-up.
        self.races_due = ["race_disable", "race_erase"]

    def index(self):
        self.next_index += 1
        return self.next_index

    def new_session(self):
        self.next_session += 1
        return f"s{self.next_session}"

    def inst(self):
        return self.rng.choice([1, 2, 3])

    def two_insts(self):
        a, b = self.rng.sample([1, 2, 3], 2)
        return a, b

    def cmd(self, kind, **fields):
        return dict({"i": self.index(), "kind": kind}, **fields)

    @property
    def state(self):
        return self.runner.state

    def live_users(self):
        return sorted(k for k, u in self.state.users.items() if u["status"] != "erased")

    def signin(self, user, client=None, dpop=None):
        a, b = self.two_insts()
        return self.cmd("signin", user=user, client=client or self.rng.choice(["app-a", "app-a", "app-b", "app-c"]), inst=a, inst2=b,
                        dpop=self.rng.random() < 0.3 if dpop is None else dpop, session=self.new_session(), burn_inst=self.inst())

    def toggler(self):
        """Operators on two instances: console for clients when the cluster serves it, else the CLI."""
        return self.inst() if self.console else "cli"

    def warmup(self):
        """Every run starts with the cross-instance toggles of issue 40 (A disable, B enable, A
        disable) on a user with a session and on a client, so the known defect shows at once."""
        rounds = []
        u0, u1, u2 = "u0", "u1", "u2"
        # The issue's sequence: a user signed in through C (which created it: its cache is the
        # only one), disabled on A, enabled on B, signed in again, disabled on A again; then its
        # new session must be refused. (Setup creates user k through instance 1 + k % 3.)
        c = 1 + 2 % 3
        a, b = self.rng.sample([i for i in (1, 2, 3) if i != c], 2)
        rounds.append([self.cmd("signin", user=u2, client="app-a", inst=c, inst2=c, dpop=False, session=self.new_session(), burn_inst=c)])
        rounds.append([self.cmd("user_disable", user=u2, inst=a)])
        rounds.append([self.cmd("user_enable", user=u2, inst=b)])
        second = self.new_session()
        rounds.append([self.cmd("signin", user=u2, client="app-a", inst=c, inst2=c, dpop=False, session=second, burn_inst=c)])
        rounds.append([self.cmd("user_disable", user=u2, inst=a)])
        rounds.append([self.cmd("refresh", session=second, inst=c, proof="key")])
        # The same on a user whose caches come from sign-ins on two instances, and on a client
        # (through the console, when the cluster serves it).
        first = self.new_session()
        rounds.append([self.cmd("signin", user=u0, client="app-b", inst=a, inst2=b, dpop=False, session=first, burn_inst=c)])
        rounds.append([self.signin(u1, "app-a", dpop=True)])
        a, b = self.two_insts()
        for kind, inst in (("user_disable", a), ("user_enable", b), ("user_disable", a), ("user_enable", b)):
            rounds.append([self.cmd(kind, user=u0, inst=inst)])
        rounds.append([self.cmd("signin", user=u0, client="app-b", inst=b, inst2=a, dpop=False, session=self.new_session(), burn_inst=a)])
        if self.console:
            a, b = self.two_insts()
            for kind, inst in (("client_disable", a), ("client_enable", b), ("client_disable", a), ("client_enable", b)):
                rounds.append([self.cmd(kind, client="app-b", inst=inst)])
        rounds.append([self.cmd("refresh", session=first, inst=self.inst(), proof="key")])
        return rounds

    def sessions_of(self, user=None, alive=None, revoked=False, bearer=None):
        out = []
        for k, s in sorted(self.state.sessions.items(), key=lambda kv: int(kv[0][1:])):
            if user and s["user"] != user:
                continue
            if not revoked and s["revoked"]:
                continue
            if alive is not None and self.state.alive(k) != alive:
                continue
            if bearer and s["dpop"]:
                continue
            out.append(k)
        return out

    def user_op(self, user=None, inst=None):
        user = user or self.rng.choice(self.live_users())
        u = self.state.users[user]
        kind = self.rng.choices(["user_disable", "user_enable", "user_logout"], [4, 4, 1])[0]
        if u["status"] == "disabled" and self.rng.random() < 0.6:
            kind = "user_enable"
        return self.cmd(kind, user=user, inst=inst or self.inst())

    def refresh(self, session, inst=None):
        s = self.state.sessions[session]
        proof = "key"
        if s["dpop"] and not s["revoked"] and self.rng.random() < 0.15:
            proof = self.rng.choice(["none", "other"])
        return self.cmd("refresh", session=session, inst=inst or self.inst(), proof=proof)

    def sequential(self):
        st, rng = self.state, self.rng
        if self.queue:
            return [self.queue.pop(0)]
        users = self.live_users()
        choices = {
            "user_op": 16, "user_erase": 0.6, "role": 1.5,
            "client_toggle": 4, "client_rotate": 1.5, "cc_grant": 3,
            "realm_native": 1.5, "realm_posture": 1.5, "realm_limit": 0.7, "realm_lifetime": 0.7,
            "signin": 9, "refresh": 22, "signup": 1.2, "pk_enroll": 2.5, "pk_rename": 2.5, "pk_delete": 1.2, "pk_admin_delete": 0.6,
            "race_erase": 2, "race_disable": 2,
        }
        if not st.realm["native"]:
            choices["realm_native"] = 12
        if len(users) < self.users * 0.7:
            choices["user_erase"] = choices["race_erase"] = 0
        what = rng.choices(list(choices), list(choices.values()))[0]
        if what == "race_erase":
            return self.race_erase()
        if what == "race_disable":
            return self.race_disable()
        if what == "user_op":
            c = self.user_op()
            self.follow_up(c["user"])
            return [c]
        if what == "user_erase":
            user = rng.choice(users[2:])
            c = self.cmd("user_erase", user=user, inst=self.inst())
            self.follow_up(user, erased=True)
            return [c]
        if what == "role":
            user = rng.choice(list(st.users))
            return [self.cmd(rng.choice(["role_grant", "role_revoke"]), user=user, role=rng.choice(ROLES), inst="cli")]
        if what == "client_toggle":
            client = rng.choice(["app-b", "app-c", "svc-1", "svc-2"])
            kind = "client_enable" if not st.clients[client]["enabled"] and rng.random() < 0.7 else rng.choice(["client_disable", "client_enable"])
            return [self.cmd(kind, client=client, inst=self.toggler())]
        if what == "client_rotate":
            return [self.cmd("client_rotate", client=rng.choice(["svc-1", "svc-2"]), inst=self.inst())]
        if what == "cc_grant":
            return [self.cmd("cc_grant", client=rng.choice(["svc-1", "svc-2"]), inst=self.inst(), secret=rng.choice(["current", "current", "old"]))]
        if what == "realm_native":
            return [self.cmd("realm_native", on=(not st.realm["native"]) if rng.random() < 0.8 else st.realm["native"], inst=self.inst())]
        if what == "realm_posture":
            return [self.cmd("realm_posture", posture=rng.choice(POSTURES), inst=self.inst())]
        if what == "realm_limit":
            self.next_display += 1
            return [self.cmd("realm_limit", limit=rng.choice([500000, 600000, 700000]), display=f"Model {self.next_display}", inst=self.inst())]
        if what == "realm_lifetime":
            self.next_display += 1
            return [self.cmd("realm_lifetime", minutes=rng.choice([10, 15, 20]), display=f"Model {self.next_display}", inst=self.inst())]
        if what == "signin":
            return [self.signin(rng.choice(users))]
        if what == "refresh":
            sessions = self.sessions_of()
            if not sessions:
                return [self.signin(rng.choice(users))]
            alive = [k for k in sessions if st.alive(k)]
            pool = alive if alive and rng.random() < 0.75 else sessions
            return [self.refresh(rng.choice(pool))]
        if what == "signup":
            self.next_user += 1
            a, b = self.two_insts()
            return [self.cmd("signup", email=f"s{self.next_user}.{self.runner.env.realm}@example.com", new_user=f"u{self.next_user}",
                             client="app-a", inst=a, inst2=b, session=self.new_session())]
        bearer = [k for k in self.sessions_of(bearer=True)]
        if what == "pk_enroll":
            alive = [k for k in bearer if st.alive(k)]
            pool = alive if alive and rng.random() < 0.85 else bearer
            if not pool:
                return [self.signin(rng.choice(users), dpop=False)]
            session = rng.choice(pool)
            self.next_passkey += 1
            a, b = self.two_insts()
            return [self.cmd("pk_enroll", user=st.sessions[session]["user"], session=session, passkey=f"p{self.next_passkey}",
                             name=rng.choice(PASSKEY_NAMES), inst=a, inst2=b)]
        passkeys = sorted(k for k, p in st.passkeys.items() if not p["deleted"] or rng.random() < 0.1)
        if not passkeys:
            return [self.cmd("refresh", session=rng.choice(self.sessions_of()), inst=self.inst())] if self.sessions_of() else [self.signin(rng.choice(users))]
        passkey = rng.choice(passkeys)
        user = st.passkeys[passkey]["user"]
        if what == "pk_admin_delete":
            return [self.cmd("pk_admin_delete", user=user, passkey=passkey, inst=self.inst())]
        own = [k for k in bearer if st.sessions[k]["user"] == user]
        if not own:
            return [self.signin(user, dpop=False)] if st.users[user]["status"] != "erased" else [self.cmd("pk_admin_delete", user=user, passkey=passkey, inst=self.inst())]
        session = rng.choice([k for k in own if st.alive(k)] or own)
        if what == "pk_rename":
            return [self.cmd("pk_rename", user=user, session=session, passkey=passkey, name=rng.choice(PASSKEY_NAMES), inst=self.inst())]
        return [self.cmd("pk_delete", user=user, session=session, passkey=passkey, inst=self.inst())]

    def race_erase(self):
        """Erase-versus-refresh (issue 67): a user with a live session is erased on one instance
        while up to three of its live sessions refresh on the others, and maybe one other session
        is logged out there (four requests at most: the runner's workers). Without such a user:
        a sign-in that makes one."""
        st, rng = self.state, self.rng
        usable = [k for k in self.sessions_of() if st.clients[st.sessions[k]["client"]]["enabled"]]
        users = self.live_users()[2:]
        eligible = [u for u in users if any(st.sessions[k]["user"] == u and st.alive(k) for k in usable)]
        if not eligible:
            if not st.realm["native"]:
                return [self.cmd("realm_native", on=True, inst=self.inst())]
            active = [u for u in users if st.users[u]["status"] == "active"]
            enabled = [c for c in ("app-a", "app-b", "app-c") if st.clients[c]["enabled"]]  # app-a is never disabled
            if active and enabled:
                return [self.signin(rng.choice(active), client=rng.choice(enabled))]
            disabled = [u for u in users if st.users[u]["status"] == "disabled"]
            return [self.cmd("user_enable", user=rng.choice(disabled), inst=self.inst())] if disabled else [self.user_op()]
        user = rng.choice(eligible)
        inst = self.inst()
        others = [i for i in (1, 2, 3) if i != inst]
        alive = [k for k in usable if st.sessions[k]["user"] == user and st.alive(k)]
        logout = rng.random() < 0.6
        racing = rng.sample(alive, min(len(alive), rng.choice([1, 2, 2, 3]), 2 if logout else 3))
        rest = [k for k in usable if st.sessions[k]["user"] == user and k not in racing]
        if not rest and st.realm["native"] and rng.random() < 0.5:
            # Another session first, so that a logout may race next time.
            return [self.signin(user, client=st.sessions[alive[0]]["client"])]
        return [self.cmd("race_erase", user=user, inst=inst, refreshes=[{"session": k, "inst": rng.choice(others)} for k in racing],
                         logout={"session": rng.choice(rest), "inst": rng.choice(others)} if logout and rest else None)]

    def race_disable(self):
        """Disable-versus-sign-in (issue 67): sign-ins of one to three active users by a client
        (codes requested first) whose redemptions race the client's disable on other instances."""
        st, rng = self.state, self.rng
        if not st.realm["native"]:
            return [self.cmd("realm_native", on=True, inst=self.inst())]
        clients = [c for c in ("app-b", "app-c") if st.clients[c]["enabled"]]
        if not clients:
            return [self.cmd("client_enable", client=rng.choice(["app-b", "app-c"]), inst=self.toggler())]
        active = [u for u in self.live_users() if st.users[u]["status"] == "active"]
        if not active:
            return [self.user_op()]
        client, inst = rng.choice(clients), self.toggler()
        signins = []
        for user in rng.sample(active, min(len(active), rng.choice([1, 2, 3, 3]))):
            c = self.signin(user, client=client, dpop=False)
            if inst != "cli":
                c["inst2"] = rng.choice([i for i in (1, 2, 3) if i != inst])
            signins.append(c)
        return [self.cmd("race_disable", client=client, inst=inst, signins=signins, chained=rng.random() < 0.5)]

    def follow_up(self, user, erased=False):
        """After an operator's command on a user: the user's traffic, which must follow the model.
        (Not a sign-in after an erasure: the address is free then, and a code request for it is
        a sign-up, which the model does not follow for an erased user's address.)"""
        sessions = self.sessions_of(user=user)
        if sessions and self.rng.random() < 0.6:
            self.queue.append(self.refresh(self.rng.choice(sessions)))
        elif not erased and self.state.users[user]["status"] != "erased" and self.rng.random() < 0.25:
            self.queue.append(self.signin(user))

    def concurrent(self):
        st, rng = self.state, self.rng
        n = rng.choice([2, 2, 3, 3, 4])
        template = rng.choices(["user", "client", "realm", "session", "mixed"], [5, 3, 1.2, 1, 3])[0]
        if template == "user":
            user = rng.choice(self.live_users())
            cmds = [self.user_op(user) for _ in range(n)]
            sessions = self.sessions_of(user=user)
            if sessions and rng.random() < 0.5:
                cmds[-1] = self.refresh(rng.choice(sessions))
            if st.realm["native"] and rng.random() < 0.3:
                cmds[0] = self.signin(user)
            return cmds
        if template == "client" and self.console:
            client = rng.choice(["app-b", "app-c", "svc-1", "svc-2"])
            cmds = [self.cmd(rng.choice(["client_disable", "client_enable"]), client=client, inst=self.inst()) for _ in range(n)]
            if client.startswith("svc") and rng.random() < 0.5:
                cmds[-1] = self.cmd("client_rotate", client=client, inst=self.inst())
            if client.startswith("svc") and rng.random() < 0.5:
                cmds[0] = self.cmd("cc_grant", client=client, inst=self.inst(), secret="current")
            elif client.startswith("app"):
                sessions = [k for k in self.sessions_of() if st.sessions[k]["client"] == client]
                if sessions and rng.random() < 0.6:
                    cmds[0] = self.refresh(rng.choice(sessions))
            return cmds
        if template == "realm":
            # Two PATCHes of different fields at once must both land (a PATCH once wrote back the
            # whole settings it had read, and lost the other's field: fixed, see
            # ConcurrentSettingsUpdateTests; --no-realm-races leaves such rounds out).
            # Same-field races are blind writes and must be linearizable.
            if self.realm_races and rng.random() < 0.4:
                return [self.cmd("realm_native", on=not st.realm["native"], inst=self.inst()),
                        self.cmd("realm_posture", posture=rng.choice([p for p in POSTURES if p != st.realm["posture"]]), inst=self.inst())]
            if rng.random() < 0.6:
                return [self.cmd("realm_native", on=rng.random() < 0.5, inst=self.inst()) for _ in range(min(n, 3))]
            return [self.cmd("realm_posture", posture=rng.choice(POSTURES), inst=self.inst()) for _ in range(min(n, 3))]
        if template == "session":
            sessions = self.sessions_of(alive=True)
            if sessions:
                session = rng.choice(sessions)
                a, b = self.two_insts()
                return [self.cmd("refresh", session=session, inst=a, proof="key"), self.cmd("refresh", session=session, inst=b, proof="key")]
        cmds, used = [], set()
        for _ in range(n):
            pick = rng.choice(["user", "user", "refresh", "client"] if self.console else ["user", "user", "refresh"])
            if pick == "user":
                user = rng.choice(self.live_users())
                if user in used:
                    continue
                used.add(user)
                cmds.append(self.user_op(user))
            elif pick == "refresh":
                sessions = [k for k in self.sessions_of() if k not in used]
                if sessions:
                    k = rng.choice(sessions)
                    used.add(k)
                    cmds.append(self.refresh(k))
            else:
                client = rng.choice(["app-b", "app-c", "svc-1", "svc-2"])
                if client not in used:
                    used.add(client)
                    cmds.append(self.cmd(rng.choice(["client_disable", "client_enable"]), client=client, inst=self.inst()))
        return cmds if len(cmds) >= 2 else [self.user_op(), self.refresh(self.sessions_of()[0])] if self.sessions_of() else [self.user_op()]

    def next_round(self):
        """About one round in five is concurrent (a one-command "round" runs as a sequential one)."""
        if self.races_due and not self.queue:
            cmds = getattr(self, self.races_due[0])()  # or what makes one possible (a sign-in, a client enabled)
            if cmds[0]["kind"] == self.races_due[0]:
                self.races_due.pop(0)
            return cmds
        if not self.queue and self.rng.random() < 0.22:
            return self.concurrent()
        return self.sequential()


# MARK: Setup, the run, the report


def setup(args, env_vars):
    realm = "mt" + uuid.uuid4().hex[:10]
    http = Http(f"{realm}.model.test", env_vars["MODGUD_ADMIN_TOKEN"], realm)
    psql = Psql(env_vars["MODGUD_DATABASE_URL"])
    if args.mail.startswith("smtp:"):
        mailbox = SmtpMailbox(int(args.mail[5:]))
    else:
        mailbox = LogMailbox(env_vars["MODGUD_CLUSTER_DIR"])
    cli = Cli(env_vars["MODGUD_BIN"])
    env = Env(args, realm, http, psql, mailbox, None, cli)
    try:
        state, correlated = populate(args, env, realm, http, psql, mailbox, cli)
    except BaseException:
        psql.close()
        mailbox.close()
        raise
    return env, state, correlated


def populate(args, env, realm, http, psql, mailbox, cli):
    """The realm, its clients and users, and the operator console's session."""
    host = env.host
    lifted = {p: {"Limit": 1000000, "WindowSeconds": 60, "Burst": 100000} for p in LIMIT_POLICIES}
    created = http.admin(1, "POST", "/realms", {"Id": realm, "Hosts": [host], "DisplayName": "Model 0", "PrimaryDomain": host,
                                                 "NativeGrants": {"Enabled": True}, "RegistrationPosture": "JitOnOtp", "RateLimits": lifted})
    if created.status != 201:
        raise SystemExit(f"model-test: could not create the realm: {created.brief()}")
    state = State()
    state.realm = {"native": True, "posture": "JitOnOtp", "minutes": 15, "otp_ip_limit": 1000000, "display": "Model 0"}
    for cid in ("app-a", "app-b", "app-c"):
        a = http.admin(2, "POST", f"/realms/{realm}/clients", {"Id": cid, "Type": "public", "Grants": ["urn:cocoar:otp", "refresh_token"],
                                                              "Scopes": ["offline_access"]})
        assert a.status == 201, a.brief()
        state.clients[cid] = {"type": "public", "enabled": True, "secret": None, "old": []}
    for cid in ("svc-1", "svc-2"):
        a = http.admin(3, "POST", f"/realms/{realm}/clients", {"Id": cid, "Type": "confidential", "Grants": ["client_credentials"], "Scopes": ["api.read"]})
        assert a.status == 201, a.brief()
        state.clients[cid] = {"type": "confidential", "enabled": True, "secret": a.json["Secret"], "old": []}
    correlated = False
    for k in range(args.users):
        email = f"u{k}.{realm}@example.com"
        a = http.admin(1 + k % 3, "POST", f"/realms/{realm}/users", {"Email": email})
        assert a.status == 201, a.brief()
        state.users[f"u{k}"] = {"id": a.json["Id"], "email": email, "status": "active", "roles": [], "gen": 0, "mails": 0}
        if k == 0:
            rows = psql.query(f"SELECT metadata->>'correlationID' FROM events WHERE stream_id = 'user-{a.json['Id']}'")
            correlated = bool(rows) and rows[0][0] == a.rid
    # The operator console, when the instances serve it on their public port: client disable and
    # enable on each instance, and each instance's view of a user.
    if http.request(1, "GET", "/console/sign-in").status == 200:
        operator = f"op-{realm}@example.com"
        out = cli.run("console", "add-operator", operator)
        if out["exit"] != 0:
            raise SystemExit(f"model-test: console add-operator failed: {out}")
        before = mailbox.count(operator)
        http.request(1, "POST", "/console/sign-in", form={"email": operator})
        got = mailbox.wait(operator, before)
        if got is None:
            raise SystemExit("model-test: the operator's console code never arrived")
        signed = http.request(2, "POST", "/console/sign-in/code", form={"email": operator, "code": got[0]})
        cookie = (signed.headers.get("set-cookie") or "").split(";")[0]
        page = http.request(3, "GET", "/console", headers={"Cookie": cookie}).text()
        csrf = re.search(r'name="_csrf" value="([^"]+)"', page)
        if signed.status != 303 or not csrf:
            raise SystemExit(f"model-test: console sign-in failed: {signed.brief()}")
        env.console = Console(http, cookie, html.unescape(csrf.group(1)))
    return state, correlated


def changes(cmd):
    """The entities whose state a command can change."""
    kind = cmd["kind"]
    if kind.startswith("realm_"):
        return {"realm"}
    if kind == "race_erase":
        return {cmd["user"]} | {r["session"] for r in cmd["refreshes"]} | ({cmd["logout"]["session"]} if cmd.get("logout") else set())
    if kind == "race_disable":
        return {cmd["client"]} | {c["user"] for c in cmd["signins"]} | {c["session"] for c in cmd["signins"]}
    if kind in ("signin",):
        return {cmd["user"], cmd["session"]}
    if kind == "signup":
        return {cmd["new_user"], cmd["session"]}
    if kind == "refresh":
        return {cmd["session"]}
    if kind.startswith("pk_"):
        return {cmd["passkey"]} | ({cmd["user"]} if kind == "pk_enroll" else set())
    if kind.startswith("client_") or kind == "cc_grant":
        return {cmd["client"]}
    return {cmd["user"]}


def depends(cmd, log):
    """The entities whose state decides a command's answer (a session brings its user and client)."""
    out = set(changes(cmd)) | {cmd[f] for f in ("user", "client", "session", "passkey") if cmd.get(f)}
    if cmd["kind"] in ("signin", "signup", "refresh", "pk_enroll", "pk_rename", "pk_delete") + RACES:
        out.add("realm")
    for c in log:  # the creator of a session names its user and client
        if c.get("session") in out and c["kind"] in ("signin", "signup"):
            out |= {c.get("user") or c.get("new_user"), c["client"]}
        for sub in c.get("signins", []):  # a race's sign-ins
            if sub["session"] in out:
                out |= {sub["user"], sub["client"]}
    return out


def prefix_for(log, failing_round):
    """The commands that lead to the divergence: the failing round, and every command that
    changed an entity the failing round depends on (transitively: a session's refreshes need the
    sign-in that made it, its user's and its client's history), in log order."""
    needed = set()
    for c in failing_round:
        needed |= depends(c, log)
    chosen = {c["i"] for c in failing_round}
    grown = True
    while grown:
        grown = False
        for c in log:
            if c["i"] not in chosen and changes(c) & needed:
                chosen.add(c["i"])
                more = depends(c, log) - needed
                if more:
                    needed |= more
                    grown = True
    return [c for c in log if c["i"] in chosen]


def report(args, runner, seed, divergence, failing_round, out_dir):
    if args.replay:
        print(f"model-test: DIVERGENCE replaying {args.replay}")
    else:
        print(f"model-test: DIVERGENCE with seed {seed} (--seed {seed} generates the same commands while the answers are the same)")
    print("model-test: " + divergence.message)
    if divergence.expected is not None:
        print("model-test:   expected: " + json.dumps(divergence.expected, default=str)[:2000])
        print("model-test:   actual:   " + json.dumps(divergence.actual, default=str)[:2000])
    if failing_round and divergence.expected is not None:
        # For the reader: how the instances see the entities now, against the model's state
        # after the failing command (reads only; the run is over).
        try:
            seen = runner.verify(runner.touched(failing_round, runner.state), runner.state, poll=False)
            for line in seen[:6]:
                print("model-test:   and now " + line)
        except Exception as error:  # diagnostics must not hide the divergence
            print(f"model-test:   (could not read the instances: {error})")
    log = runner.log + [c for c in failing_round if c not in runner.log]
    prefix = prefix_for(log, failing_round)
    os.makedirs(out_dir, exist_ok=True)
    name = "replay" if args.replay else str(seed)
    path = os.path.join(out_dir, f"model-test-{name}-prefix.json")
    with open(path, "w") as f:
        json.dump(prefix, f, indent=1)
    with open(os.path.join(out_dir, f"model-test-{name}-log.json"), "w") as f:
        json.dump(log, f, indent=1)
    print(f"model-test: shortest failing prefix ({len(prefix)} of {len(log)} commands; replay: Tests/Support/model_test.py --replay {path}):")
    print(json.dumps(prefix))


def run(args, env_vars):
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 10**9)
    label = f"replay of {os.path.basename(args.replay)}" if args.replay else f"seed {seed}"
    print(f"model-test: replaying {args.replay}" if args.replay else f"model-test: seed {seed}", flush=True)
    started = time.monotonic()
    env, state, correlated = setup(args, env_vars)
    model = Model(env.realm)
    runner = Runner(env, model, state, seed, [])
    print(f"model-test: realm {env.realm}, {len(state.users)} users, clients {', '.join(state.clients)}; request ids recorded as correlation ids: "
          f"{'yes' if correlated else 'no'}; operator console: {'yes' if env.console else 'no (client toggles by the CLI)'}; setup "
          f"{time.monotonic() - started:.1f} s", flush=True)
    gen = Generator(seed, runner, args.users, env.console is not None, args.realm_races)
    if args.replay:
        with open(args.replay) as f:
            rounds = [[c] for c in json.load(f)]  # one at a time, in the order the log committed them
        gen.next_index = max([c[0]["i"] for c in rounds] + [0])  # the final checks' commands number on from there
    else:
        rounds = gen.warmup()
    warm_done, console_rng = False, random.Random(seed + 2)
    commands = 0
    failing_round = []
    try:
        while True:
            if rounds:
                cmds = rounds.pop(0)
            elif args.replay or commands >= args.commands or past_budget(args, started, commands, runner.checks):
                break
            else:
                cmds = gen.next_round()
            failing_round = cmds
            if args.heal_caches:
                runner.heal(cmds)
            if len(cmds) == 1:
                runner.run_sequential(cmds[0])
                touched = runner.touched(cmds, runner.state)
            else:
                runner.concurrent_rounds += 1
                touched = runner.run_concurrent(cmds)
            runner.check(touched, console=warm_done and console_rng.random() < 0.1)
            commands += len(cmds) + runner.extra_commands
            runner.extra_commands = 0
            warm_done = warm_done or not rounds
        # The end: every entity on every instance, every session that is not revoked refreshed
        # once (the behaviour), and every code the model expects mailed, none more.
        failing_round = []
        if args.move_to:
            move_realm(args, env, env_vars)
        everything = {"users": set(runner.state.users), "clients": set(runner.state.clients), "realm": True}
        runner.check(everything, console=True)
        rng = random.Random(seed + 1)
        for k in sorted(runner.state.sessions, key=lambda s: int(s[1:])):
            if not runner.state.sessions[k]["revoked"]:
                c = {"i": gen.index(), "kind": "refresh", "session": k, "inst": rng.choice([1, 2, 3]), "proof": "key"}
                failing_round = [c]
                runner.run_sequential(c)
                commands += 1
        failing_round = []
        runner.check(everything, console=True)
        deadline = time.monotonic() + HANG_GUARD
        while int(env.psql.query(f"SELECT count(*) FROM mail_outbox WHERE realm_id = '{env.realm}'")[0][0]) > 0:
            if time.monotonic() > deadline:
                raise Divergence(f"mail still queued after {HANG_GUARD:.0f} s")
            time.sleep(0.05)
        for u in runner.state.users.values():
            runner.checks += 1
            if env.mailbox.count(u["email"]) != u["mails"]:
                raise Divergence(f"{u['email']} received {env.mailbox.count(u['email'])} codes, the model expects {u['mails']}")
        emails = {u["email"] for u in runner.state.users.values()}
        for email, n in runner.state.signups.items():
            if email in emails:
                continue
            runner.checks += 1
            if env.mailbox.count(email) != n:
                raise Divergence(f"{email} received {env.mailbox.count(email)} codes, the model expects {n}")
        elapsed = time.monotonic() - started
        kinds = {}
        for c in runner.log:
            kinds[c["kind"]] = kinds.get(c["kind"], 0) + 1
        print("model-test: commands by kind: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
        print("model-test: answers: " + ", ".join(f"{k}: {n}" for k, n in sorted(runner.outcomes.items())))
        print("model-test: races: " + ", ".join(f"{k} {n}" for k, n in runner.race_stats.items()))
        print(f"model-test: {label}, {commands} commands ({runner.concurrent_rounds} concurrent rounds), {runner.checks} checks, "
              f"0 divergences ({elapsed:.0f} s)" + (f"; the final checks in cell {args.move_to} after the move, {MOVE.retried} 503s retried" if args.move_to else ""))
        # Issue 67: a run that did next to nothing (a slow setup ate the budget, a generator that
        # stalls) proves nothing, so it fails. A replay is as long as its prefix.
        if not args.replay:
            min_commands, min_checks = minimums(args)
            print(f"model-test: {commands} commands (minimum {min_commands}), {runner.checks} checks (minimum {min_checks})")
            if commands < min_commands or runner.checks < min_checks:
                print(f"model-test: FAIL: too little was tested with {label}: {commands} commands of at least {min_commands}, "
                      f"{runner.checks} checks of at least {min_checks} (MODGUD_MODEL_TEST_MIN_COMMANDS, MODGUD_MODEL_TEST_MIN_CHECKS)")
                return 3
        return 0
    except Divergence as divergence:
        report(args, runner, seed, divergence, failing_round, args.out)
        print(f"model-test: {label}, {commands + len(failing_round)} commands ({runner.concurrent_rounds} concurrent rounds), {runner.checks} checks, 1 divergence "
              f"({time.monotonic() - started:.0f} s)")
        return 1
    except Exception:
        # Not a divergence the model found, but the run cannot go on (a request that timed out
        # after the hang guard, a dropped connection, a bug of this test): fail loudly.
        import traceback
        traceback.print_exc()
        print(f"model-test: ERROR with {label} at round {json.dumps(failing_round)[:600]}")
        return 2
    finally:
        runner.pool.shutdown(wait=False)
        env.psql.close()
        env.mailbox.close()


def move_realm(args, env, env_vars):
    """--move-to: the realm moves to another cell (`modgud realm move`, issue 71) after the
    commands and before the final checks, which then read the target cell's database: every
    entity on every instance, every live session refreshed, every mail, as the model says."""
    for argv in (["cell", "place", env.realm, "--cell", args.move_from], ["realm", "move", env.realm, "--to", args.move_to]):
        done = subprocess.run([env_vars["MODGUD_BIN"], *argv], capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"modgud {' '.join(argv)}: {done.stdout} {done.stderr}")
    print(f"model-test: {done.stdout.strip().splitlines()[-1]}", flush=True)
    env.psql.close()
    env.psql = Psql(args.move_database_url)
    MOVE.on = True


def past_budget(args, started, commands, checks):
    """Whether the run is done sending commands: past --seconds once it reached its minimums,
    past --max-seconds (a hang guard) in any case. A busy machine makes commands slower, not
    fewer, so a loaded run goes on until it tested enough instead of failing on the clock."""
    elapsed = time.monotonic() - started
    if elapsed > args.max_seconds:
        return True
    min_commands, min_checks = minimums(args)
    return elapsed > args.seconds and commands >= min_commands and checks >= min_checks


def minimums(args):
    """The fewest commands and checks a run must reach (issue 67): --min-commands and
    --min-checks, lowered in proportion when --commands asks for fewer commands than that."""
    min_commands, min_checks = args.min_commands, args.min_checks
    if args.commands < min_commands:
        min_checks = min_checks * args.commands // max(min_commands, 1)
        min_commands = args.commands
    return min_commands, min_checks


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int)
    parser.add_argument("--commands", type=int, default=2000, help="at most this many commands (default 2000)")
    parser.add_argument("--seconds", type=float, default=float(os.environ.get("MODGUD_MODEL_TEST_SECONDS", "100")),
                        help="and at most this long, setup included (default 100, or MODGUD_MODEL_TEST_SECONDS)")
    parser.add_argument("--max-seconds", type=float,
                        help="a run below its minimums at --seconds goes on until it reaches them, up to this long "
                             "(default 4 x --seconds); then it fails (exit 3)")
    parser.add_argument("--min-commands", type=int, default=int(os.environ.get("MODGUD_MODEL_TEST_MIN_COMMANDS", "200")),
                        help="fail a run (exit 3) with fewer commands (default 200, or MODGUD_MODEL_TEST_MIN_COMMANDS; 0: none)")
    parser.add_argument("--min-checks", type=int, default=int(os.environ.get("MODGUD_MODEL_TEST_MIN_CHECKS", "1500")),
                        help="and with fewer checks (default 1500, or MODGUD_MODEL_TEST_MIN_CHECKS; 0: none)")
    parser.add_argument("--users", type=int, default=16)
    parser.add_argument("--mail", default="logs", help="smtp:PORT (a sink in this process) or logs (console transport)")
    parser.add_argument("--heal-caches", action="store_true",
                        help="diagnosis: before each round, read what it touches through every instance (the console), which hides "
                             "a stale aggregate cache (issue 40), to see what else diverges")
    parser.add_argument("--no-realm-races", dest="realm_races", action="store_false",
                        help="leave out the concurrent rounds that PATCH different realm fields at once")
    parser.add_argument("--disruption", action="store_true",
                        help="instances are restarted (SIGTERM, drained) meanwhile: wait for a refused instance, and send a request "
                             "again on a fresh connection when a kept-alive one was closed before an answer")
    parser.add_argument("--move-to", help="cells (issue 71): move the realm to this cell before the final checks")
    parser.add_argument("--move-from", default="a", help="the cell the realm is created in (the directory's home cell)")
    parser.add_argument("--move-database-url", help="with --move-to: the target cell's database, which the final checks read")
    parser.add_argument("--replay", help="a JSON list of commands (a printed prefix): run them one at a time")
    parser.add_argument("--out", default=os.environ.get("MODGUD_CLUSTER_DIR", "/tmp"), help="where the command log and prefix go")
    args = parser.parse_args()
    DISRUPTION.on = args.disruption
    if args.max_seconds is None:
        args.max_seconds = 4 * args.seconds
    env_vars = {k: os.environ.get(k, "") for k in ("MODGUD_ADMIN_TOKEN", "MODGUD_DATABASE_URL", "MODGUD_BIN", "MODGUD_CLUSTER_DIR")}
    for k, v in env_vars.items():
        if not v:
            raise SystemExit(f"model-test: {k} is not set (run it through ops/model-test)")
    sys.exit(run(args, env_vars))


if __name__ == "__main__":
    main()
