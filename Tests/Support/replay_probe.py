#!/usr/bin/env python3
"""Single-use things stay spent across a database crash or failover (issue 40, item 3).

  prepare --lb URL --logs DIR --tokens FILE --out FILE
      spends, through the balancer, one of each:
        - a DPoP proof (made with PyJWT) at the token endpoint: its jti is claimed even though
          the grant it carries is refused;
        - a refresh token (the first line of FILE, from `modgud bench sessions`): rotated twice
          (presenting it again is reuse and revokes its family: the JSON names its hash);
        - an email sign-in code (read from the instances' logs, MODGUD_MAIL_TRANSPORT=console):
          redeemed once;
      and writes what it spent to --out.
      With --bound FILE (a line of `modgud bench sessions --dpop`: a token and its DPoP key), last
      of all a bound refresh with a proof by that key, answered 200; the caller crashes the
      database at once (issue 67). That proof's claim commits with synchronous_commit off, in
      the grant's checks transaction; the rotation's synchronous commit, before the 200, is
      what makes it durable (docs/decisions.md, "Security state across a crash and a
      failover"). The claims above are made durable by the later requests' commits and by the
      WAL writer long before a crash; this one is the only claim a crash can follow within the
      WAL writer's delay. (A process crash loses only WAL not yet written out of PostgreSQL's
      buffers, so even a grant answering before its flush would be caught only now and then.)
  check --lb URL --in FILE
      presents each again and fails unless each is refused for the right reason: the proofs as
      replays (invalid_dpop_proof, not a stale iat), the refresh token and the code as
      invalid_grant. Prints one line per check.

Requests carry Host: localhost (the cluster's realm). A 503 or a dropped connection is retried
(the instances follow the new primary); any other answer is the verdict.
"""
import argparse, base64, glob, hashlib, json, os, re, subprocess, sys, time, urllib.error, urllib.parse, urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))


def call(lb, path, form=None, body=None, headers=None):
    data = urllib.parse.urlencode(form).encode() if form is not None else (json.dumps(body).encode() if body is not None else None)
    h = {"Host": "localhost"}
    h["Content-Type"] = "application/x-www-form-urlencoded" if form is not None else "application/json"
    h.update(headers or {})
    for _ in range(600):  # a hang guard while the database changes hands, not a timing
        request = urllib.request.Request(lb + path, data=data, headers=h, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            if error.code != 503:
                return error.code, json.loads(error.read() or b"{}")
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"replay-probe: {path}: no answer but 503s")


def proof(htu, key_pem=None):
    spec = {"alg": "ES256", "htm": "POST", "htu": htu, "iat": int(time.time()), "jti": f"replay-{os.urandom(8).hex()}"}
    if key_pem:
        spec["key_pem"] = key_pem
    made = subprocess.run(
        [sys.executable, os.path.join(HERE, "make_dpop_proofs.py")], input=json.dumps([spec]), capture_output=True, text=True, check=True)
    return json.loads(made.stdout)[0]["proof"]


def session_key_pem(raw):
    """The PEM of a `bench sessions --dpop` key (its P-256 scalar, base64url)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    scalar = int.from_bytes(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)), "big")
    key = ec.derive_private_key(scalar, ec.SECP256R1())
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()


def code_from_logs(folder, address, since):
    pattern = re.compile(r"── mail to " + re.escape(address) + r" ─.*?Your verification code is (\d+)", re.S)
    for _ in range(600):  # hang guard: the dispatcher sends within a poll interval
        for name in glob.glob(os.path.join(folder, "instance*.log")):
            with open(name, errors="replace") as f:
                f.seek(since.get(name, 0))
                found = pattern.search(f.read())
            if found:
                return found.group(1)
        time.sleep(0.1)
    raise SystemExit(f"replay-probe: no code mailed to {address}")


def prepare(a):
    with urllib.request.urlopen(urllib.request.Request(a.lb + "/.well-known/openid-configuration", headers={"Host": "localhost"}), timeout=30) as r:
        token_endpoint = json.load(r)["token_endpoint"]
    spent = {}
    # The DPoP proof: checked and claimed before the made-up refresh token is refused.
    spent["proof"] = proof(token_endpoint)
    status, answer = call(a.lb, "/connect/token", form={"grant_type": "refresh_token", "client_id": "app", "refresh_token": "made-up"},
                          headers={"DPoP": spent["proof"]})
    if answer.get("error") != "invalid_grant":
        raise SystemExit(f"replay-probe: the proof was not accepted the first time: {status} {answer}")
    # The refresh token: rotated twice, so that it is spent even where the realm grants a reuse
    # grace (only the token the latest rotation spent may be presented once more).
    with open(a.tokens) as f:
        first = f.readline().split()[0]
    token = first
    for _ in range(2):
        status, answer = call(a.lb, "/connect/token", form={"grant_type": "refresh_token", "client_id": "app", "refresh_token": token})
        if status != 200:
            raise SystemExit(f"replay-probe: the refresh failed: {status} {answer}")
        token = answer["refresh_token"]
    spent["refresh_token"] = first
    # Its hash (OpaqueToken.hash): the caller can tell the reuse this probe causes on purpose.
    spent["refresh_token_hash"] = base64.urlsafe_b64encode(hashlib.sha256(first.encode()).digest()).rstrip(b"=").decode()
    # The code: requested, read from the logs, redeemed.
    address = f"replay{os.urandom(4).hex()}@example.com"
    since = {name: os.path.getsize(name) for name in glob.glob(os.path.join(a.logs, "instance*.log"))}
    call(a.lb, "/api/account/native/otp/request", body={"Email": address})
    code = code_from_logs(a.logs, address, since)
    form = {"grant_type": "urn:cocoar:otp", "client_id": "app", "username": address, "otp_code": code, "scope": "openid"}
    status, answer = call(a.lb, "/connect/token", form=form)
    if status != 200:
        raise SystemExit(f"replay-probe: the code was not accepted: {status} {answer}")
    spent["code"] = form
    if a.bound:
        # Last: nothing commits after this grant before the caller's crash (issue 67).
        with open(a.bound) as f:
            token, raw = f.readline().split()[:2]
        bound_proof = proof(token_endpoint, session_key_pem(raw))
        status, answer = call(a.lb, "/connect/token", form={"grant_type": "refresh_token", "client_id": "app", "refresh_token": token},
                              headers={"DPoP": bound_proof})
        if status != 200 or answer.get("token_type") != "DPoP":
            raise SystemExit(f"replay-probe: the bound refresh failed: {status} {answer}")
        spent["bound_proof"], spent["bound_refresh_token"] = bound_proof, token
    with open(a.out, "w") as f:
        json.dump(spent, f)
    print("replay-probe: spent a DPoP proof, a refresh token and a sign-in code" + (", then a bound refresh's proof" if a.bound else ""))


def check(a):
    with open(a.__dict__["in"]) as f:
        spent = json.load(f)
    failures = []
    status, answer = call(a.lb, "/connect/token", form={"grant_type": "refresh_token", "client_id": "app", "refresh_token": "made-up"},
                          headers={"DPoP": spent["proof"]})
    print(f"replay-probe: the DPoP proof again: {status} {answer.get('error')}")
    if answer.get("error") != "invalid_dpop_proof":
        failures.append(f"the spent DPoP proof was not refused as a replay ({status} {answer})")
    status, answer = call(a.lb, "/connect/token", form={"grant_type": "refresh_token", "client_id": "app", "refresh_token": spent["refresh_token"]})
    print(f"replay-probe: the spent refresh token again: {status} {answer.get('error')}")
    if status != 400 or answer.get("error") != "invalid_grant":
        failures.append(f"the spent refresh token was not refused ({status} {answer})")
    status, answer = call(a.lb, "/connect/token", form=spent["code"])
    print(f"replay-probe: the spent code again: {status} {answer.get('error')}")
    if status != 400 or answer.get("error") != "invalid_grant":
        failures.append(f"the spent code was not refused ({status} {answer})")
    if "bound_proof" in spent:
        # Remembered, the proof is refused before the grant reads anything; forgotten, the
        # rotated token would be refused (and its family revoked) as reuse: invalid_grant.
        status, answer = call(a.lb, "/connect/token", form={"grant_type": "refresh_token", "client_id": "app",
                                                            "refresh_token": spent["bound_refresh_token"]}, headers={"DPoP": spent["bound_proof"]})
        print(f"replay-probe: the bound refresh's proof again: {status} {answer.get('error')}")
        if answer.get("error") != "invalid_dpop_proof":
            failures.append(f"the proof of a bound refresh answered 200 just before the crash was not refused as a replay ({status} {answer})")
    if failures:
        raise SystemExit("replay-probe: " + "; ".join(failures))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["prepare", "check"])
    parser.add_argument("--lb", required=True)
    parser.add_argument("--logs")
    parser.add_argument("--tokens")
    parser.add_argument("--bound", help="prepare: a `bench sessions --dpop` line's file; its bound refresh is the last request")
    parser.add_argument("--out")
    parser.add_argument("--in")
    a = parser.parse_args()
    prepare(a) if a.command == "prepare" else check(a)


if __name__ == "__main__":
    main()
