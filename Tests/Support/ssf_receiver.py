#!/usr/bin/env python3
"""A Shared Signals receiver written from the specifications, not from Modgud's code.

OpenID SSF 1.0 (metadata, stream management, verification), RFC 8417 (SETs), RFC 8935
(push), RFC 8936 (poll), CAEP 1.0 and RISC event schemas, RFC 9493 subject identifiers.
It discovers the transmitter, gets a client_credentials token, creates its stream, asks for
a verification event, and then receives: every SET is checked (signature against the
transmitter's JWKS, typ, iss, aud, no sub and no exp, one event of a known type with its
schema) and written to --out as set-<n>.json; a refused SET is error-<n>.json and answered
400. Push: while the file <out>/down exists it answers 503 (a receiver that is down); while
<out>/slow exists it waits the seconds the file holds before answering. It
prints one JSON line when ready and runs until its standard input closes.
"""
import argparse, base64, json, os, sys, threading, time, urllib.error, urllib.parse, urllib.request, uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt

CAEP = "https://schemas.openid.net/secevent/caep/event-type/"
RISC = "https://schemas.openid.net/secevent/risc/event-type/"
SSF = "https://schemas.openid.net/secevent/ssf/event-type/"
KNOWN = {CAEP + "session-revoked", CAEP + "credential-change", CAEP + "token-claims-change",
         RISC + "account-disabled", RISC + "account-enabled", RISC + "account-purged", SSF + "verification", SSF + "stream-updated"}
CREDENTIAL_TYPES = {"password", "pin", "x509", "fido2-platform", "fido2-roaming", "fido-u2f",
                    "verifiable-credential", "phone-voice", "phone-sms", "app"}


CONNECT = None  # (issuer prefix, URL to connect to instead): a balancer with a Host header


def http(method, url, body=None, token=None, basic=None, form=None):
    headers = {"Accept": "application/json"}
    if CONNECT and url.startswith(CONNECT[0]):
        headers["Host"] = urllib.parse.urlsplit(CONNECT[0]).netloc
        url = CONNECT[1] + url[len(CONNECT[0]):]
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    if form is not None:
        data = "&".join(f"{k}={urllib.request.quote(v)}" for k, v in form.items()).encode()
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    if token:
        headers["Authorization"] = "Bearer " + token
    if basic:
        headers["Authorization"] = "Basic " + base64.b64encode(basic.encode()).decode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            text = response.read().decode()
            return response.status, (json.loads(text) if text else None)
    except urllib.error.HTTPError as error:
        text = error.read().decode()
        return error.code, (json.loads(text) if text.startswith("{") else text)


class Receiver:
    def __init__(self, args):
        self.args = args
        self.count = 0
        self.lock = threading.Lock()
        self.state = base64.urlsafe_b64encode(os.urandom(12)).decode()
        self.stream_id = None
        self.jwks = None

    def fail(self, message):
        print(json.dumps({"error": message}), flush=True)
        sys.exit(1)

    def setup(self):
        a = self.args
        # SSF 1.0 section 7.2: the metadata, as the CAEP Interoperability Profile requires it.
        status, meta = http("GET", a.issuer.rstrip("/") + "/.well-known/ssf-configuration")
        if status != 200:
            self.fail(f"metadata: {status}")
        for member in ["jwks_uri", "configuration_endpoint", "status_endpoint", "verification_endpoint", "delivery_methods_supported"]:
            if member not in meta:
                self.fail(f"metadata lacks {member}")
        if meta.get("spec_version") != "1_0" or meta.get("issuer") != a.issuer:
            self.fail("metadata spec_version/issuer")
        if {"spec_urn": "urn:ietf:rfc:6749"} not in meta.get("authorization_schemes", []):
            self.fail("metadata authorization_schemes")
        self.meta = meta
        status, jwks = http("GET", meta["jwks_uri"])
        self.jwks = jwt.PyJWKSet.from_dict(jwks)
        status, oidc = http("GET", a.issuer.rstrip("/") + "/.well-known/openid-configuration")
        status, token = http("POST", oidc["token_endpoint"], basic=f"{a.client_id}:{a.secret}",
                             form={"grant_type": "client_credentials", "scope": "ssf.manage"})
        if status != 200:
            self.fail(f"token: {status} {token}")
        self.token = token["access_token"]
        body = {"description": "test receiver"}
        if a.mode == "push":
            body["delivery"] = {"method": "urn:ietf:rfc:8935", "endpoint_url": f"http://127.0.0.1:{a.port}/events",
                                "authorization_header": "Bearer receiver-secret"}
        if a.format:
            body["format"] = a.format
        status, stream = http("POST", meta["configuration_endpoint"], body=body, token=self.token)
        if status != 201:
            self.fail(f"create stream: {status} {stream}")
        if stream.get("iss") != a.issuer or stream.get("aud") != a.client_id or "authorization_header" in stream.get("delivery", {}):
            self.fail(f"create stream answer: {stream}")
        self.stream_id = stream["stream_id"]
        self.poll_url = stream["delivery"].get("endpoint_url")
        status, _ = http("POST", meta["verification_endpoint"], body={"stream_id": self.stream_id, "state": self.state}, token=self.token)
        if status != 204:
            self.fail(f"verification: {status}")

    def check_subject(self, subject, where="sub_id"):
        if not isinstance(subject, dict) or not isinstance(subject.get("format"), str):
            raise ValueError(f"{where} is not a subject identifier")
        fmt = subject["format"]
        if fmt == "iss_sub":
            if subject.get("iss") != self.args.issuer or not isinstance(subject.get("sub"), str):
                raise ValueError(f"{where}: iss_sub")
        elif fmt == "email":
            if "@" not in subject.get("email", ""):
                raise ValueError(f"{where}: email")
        elif fmt == "opaque":
            if not isinstance(subject.get("id"), str):
                raise ValueError(f"{where}: opaque")
        elif fmt == "complex":
            members = [k for k in subject if k != "format"]
            if not members:
                raise ValueError(f"{where}: empty complex subject")
            for member in members:
                self.check_subject(subject[member], f"{where}.{member}")
        else:
            raise ValueError(f"{where}: unknown format {fmt}")

    def verify(self, token):
        header = jwt.get_unverified_header(token)
        if header.get("typ") != "secevent+jwt":
            raise ValueError("typ is not secevent+jwt")
        key = next((k for k in self.jwks.keys if k.key_id == header.get("kid")), None)
        if key is None:
            status, jwks = http("GET", self.meta["jwks_uri"])
            self.jwks = jwt.PyJWKSet.from_dict(jwks)
            key = next((k for k in self.jwks.keys if k.key_id == header.get("kid")), None)
        if key is None:
            raise ValueError("unknown kid")
        claims = jwt.decode(token, key.key, algorithms=["ES256", "RS256"], audience=self.args.client_id, issuer=self.args.issuer,
                            options={"require": ["iss", "aud", "iat", "jti"]})
        if "sub" in claims or "exp" in claims:
            raise ValueError("sub or exp in a SET")
        events = claims.get("events")
        if not isinstance(events, dict) or len(events) != 1:
            raise ValueError("events must hold one event")
        uri, event = next(iter(events.items()))
        if uri not in KNOWN or not isinstance(event, dict):
            raise ValueError(f"unknown event {uri}")
        self.check_subject(claims.get("sub_id"))
        name = uri.rsplit("/", 1)[1]
        if uri.startswith(CAEP):
            if not isinstance(event.get("event_timestamp"), int):
                raise ValueError("event_timestamp")
            if event.get("initiating_entity") not in (None, "admin", "user", "policy", "system"):
                raise ValueError("initiating_entity")
        if name in ("session-revoked", "credential-change"):
            reason = event.get("reason_admin")
            if not isinstance(reason, dict) or not reason or not all(isinstance(v, str) and v for v in reason.values()):
                raise ValueError("reason_admin must be a non-empty localized text")
        if name == "credential-change":
            if event.get("credential_type") not in CREDENTIAL_TYPES or event.get("change_type") not in ("create", "revoke", "update", "delete"):
                raise ValueError("credential-change fields")
            if "fido2_aaguid" in event:
                uuid.UUID(event["fido2_aaguid"])
        if name == "token-claims-change" and not isinstance(event.get("claims"), dict):
            raise ValueError("token-claims-change claims")
        if name == "stream-updated":
            if claims["sub_id"] != {"format": "opaque", "id": self.stream_id} or event.get("status") not in ("enabled", "paused", "disabled"):
                raise ValueError("stream-updated subject or status")
        if name == "verification":
            if claims["sub_id"] != {"format": "opaque", "id": self.stream_id} or event.get("state") != self.state:
                raise ValueError("verification subject or state")
        return name, claims

    def record(self, token):
        with self.lock:
            self.count += 1
            n = self.count
        try:
            name, claims = self.verify(token)
        except Exception as error:  # a refused SET: recorded and answered 400
            with open(os.path.join(self.args.out, f"error-{n:05d}.json"), "w") as f:
                json.dump({"error": str(error), "token": token}, f)
            return str(error)
        with open(os.path.join(self.args.out, f"set-{n:05d}.json.tmp"), "w") as f:
            json.dump({"event": name, "jti": claims["jti"], "claims": claims, "received_at": time.time()}, f)
        os.rename(os.path.join(self.args.out, f"set-{n:05d}.json.tmp"), os.path.join(self.args.out, f"set-{n:05d}.json"))
        return None

    def serve(self):
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                if os.path.exists(os.path.join(receiver.args.out, "down")):
                    self.send_response(503)
                    self.end_headers()
                    return
                slow = os.path.join(receiver.args.out, "slow")
                if os.path.exists(slow):  # a receiver that takes its time: leases are held
                    time.sleep(float(open(slow).read() or "0.05"))
                length = int(self.headers.get("Content-Length", "0"))
                token = self.rfile.read(length).decode()
                ok = (self.path == "/events" and self.headers.get("Authorization") == "Bearer receiver-secret"
                      and self.headers.get("Content-Type", "").startswith("application/secevent+jwt"))
                error = receiver.record(token) if ok else "wrong path, credential or media type"
                if error is None:
                    self.send_response(202)
                    self.end_headers()
                else:
                    body = json.dumps({"err": "invalid_request", "description": error}).encode()
                    self.send_response(400)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)

        server = ThreadingHTTPServer(("127.0.0.1", self.args.port), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()

    def poll(self):
        ack, errors = [], {}
        while True:
            if os.path.exists(os.path.join(self.args.out, "down")):
                time.sleep(0.2)
                continue
            status, answer = http("POST", self.poll_url, token=self.token,
                                  body={"ack": ack, "setErrs": errors, "maxEvents": 10, "returnImmediately": False})
            if status != 200 or not isinstance(answer.get("sets"), dict):
                print(json.dumps({"poll_error": status}), file=sys.stderr, flush=True)
                time.sleep(0.5)
                continue
            ack, errors = [], {}
            for jti, token in answer["sets"].items():
                error = self.record(token)
                if error is None:
                    ack.append(jti)
                else:
                    errors[jti] = {"err": "invalid_request", "description": error}


def main():
    parser = argparse.ArgumentParser()
    for name in ["--issuer", "--client-id", "--secret", "--out", "--mode"]:
        parser.add_argument(name, required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--format")
    parser.add_argument("--connect", help="send requests for the issuer's URLs here (with the issuer's Host)")
    args = parser.parse_args()
    global CONNECT
    if args.connect:
        CONNECT = (args.issuer.rstrip("/"), args.connect.rstrip("/"))
    receiver = Receiver(args)
    if args.mode == "push":
        receiver.serve()
    receiver.setup()
    if args.mode == "poll":
        threading.Thread(target=receiver.poll, daemon=True).start()
    print(json.dumps({"stream_id": receiver.stream_id}), flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main()
