"""An app's own API receiving Modgud's Shared Signals by push and dropping what it cached
(docs/guides/shared-signals.md). The guide shows the part between the two markers;
SharedSignalsGuideTests runs the whole script against a live server.

Usage: ssf_app_receiver.py ISSUER CLIENT_ID CLIENT_SECRET PORT. It creates its stream once,
then serves POST /ssf/events; each line on standard input is an access token to introspect
and cache (the app at work), and it prints what it dropped. It stops when standard input closes.
"""
import base64, json, sys, threading, urllib.parse, urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt

ISSUER, CLIENT_ID, SECRET, PORT = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])


def call(method, path, body=None, form=None, token=None):
    headers, data = {}, None
    if body is not None:
        headers["Content-Type"], data = "application/json", json.dumps(body).encode()
    if form is not None:
        headers["Content-Type"], data = "application/x-www-form-urlencoded", urllib.parse.urlencode(form).encode()
    basic = base64.b64encode(f"{CLIENT_ID}:{SECRET}".encode()).decode()
    headers["Authorization"] = f"Bearer {token}" if token else f"Basic {basic}"
    request = urllib.request.Request(ISSUER + path, data=data, method=method, headers=headers)
    with urllib.request.urlopen(request) as response:
        text = response.read()
        return json.loads(text) if text else None


# --- guide: receive ---
jwks = jwt.PyJWKClient(ISSUER + "/.well-known/jwks.json")
cache = {}  # access token -> its introspection: the app's cached sessions
lock = threading.Lock()


def receive(set_token):
    """Checks one SET (RFC 8417, OpenID SSF 1.0 section 4) and drops what it revokes."""
    if jwt.get_unverified_header(set_token).get("typ") != "secevent+jwt":
        raise ValueError("not a SET")
    key = jwks.get_signing_key_from_jwt(set_token).key
    claims = jwt.decode(set_token, key, algorithms=["ES256", "RS256"], audience=CLIENT_ID, issuer=ISSUER)
    (event_type, event), = claims["events"].items()
    subject = claims["sub_id"]
    user = subject.get("user", subject)  # a complex subject names the user and the session
    name = event_type.rsplit("/", 1)[1]
    if name in ("session-revoked", "account-disabled", "account-purged", "credential-change"):
        session = subject.get("session", {}).get("id") if name == "session-revoked" else None
        with lock:
            for token, info in list(cache.items()):
                same_user = info.get("sub") == user.get("sub") or (user.get("format") == "email" and info.get("email") == user.get("email"))
                matches = info.get("sid") == session if session else same_user
                if matches:
                    del cache[token]
                    print(json.dumps({"dropped": info.get("sid"), "because": name}), flush=True)
# --- end guide ---


class Events(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):  # RFC 8935 section 2: 202 once accepted, 400 with `err` otherwise
        token = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
        try:
            receive(token)
            self.send_response(202)
            self.end_headers()
        except Exception as error:
            body = json.dumps({"err": "invalid_request", "description": str(error)}).encode()
            self.send_response(400)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", PORT), Events)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    access = call("POST", "/connect/token", form={"grant_type": "client_credentials", "scope": "ssf.manage"})["access_token"]
    stream = call("POST", "/ssf/stream", token=access, body={
        "delivery": {"method": "urn:ietf:rfc:8935", "endpoint_url": f"http://127.0.0.1:{PORT}/ssf/events"},
        "events_requested": ["https://schemas.openid.net/secevent/caep/event-type/session-revoked"]})
    print(json.dumps({"stream_id": stream["stream_id"]}), flush=True)
    for line in sys.stdin:
        info = call("POST", "/connect/introspect", form={"token": line.strip()})
        with lock:
            cache[line.strip()] = info
        print(json.dumps({"cached": info.get("sid")}), flush=True)


if __name__ == "__main__":
    main()
