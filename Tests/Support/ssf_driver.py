#!/usr/bin/env python3
"""Drives and checks the Shared Signals scenario of ops/cluster-test (issue 30).

  users   --lb URL --count N                      create N users (admin API); prints their ids as JSON
  act     --lb URL --users F --action A --seconds S --rate R --out F
                                                  perform A (toggle: disable/enable by turns, or
                                                  logout-everywhere once per user) and log each
                                                  action's user and the time it was answered
  verify  --received DIR --expected N             every expected SET arrived (distinct jti), copies
                                                  of one jti identical, first arrivals in log order
  latency --received DIR --actions F              from an action's answer to its SET's arrival

The admin token comes from MODGUD_ADMIN_TOKEN; requests go to the balancer with Host: localhost.
"""
import argparse, glob, json, os, sys, time, urllib.error, urllib.request


def admin(lb, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(lb + "/admin/api/realms/dev" + path, data=data, method=method, headers={
        "Host": "localhost", "Content-Type": "application/json", "Authorization": "Bearer " + os.environ["MODGUD_ADMIN_TOKEN"]})
    for attempt in range(50):  # an instance being killed: the balancer retries elsewhere, and so do we
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            if error.code < 500:
                raise
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"{method} {path}: no answer")


def received(folder):
    sets = []
    for name in sorted(glob.glob(os.path.join(folder, "set-*.json"))):
        with open(name) as f:
            sets.append(json.load(f))
    return sets


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("command")
    for name in ["--lb", "--users", "--action", "--out", "--received", "--actions"]:
        parser.add_argument(name)
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--rate", type=float, default=10)
    parser.add_argument("--expected", type=int)
    a = parser.parse_args()
    if a.command == "users":
        tag = str(int(time.time() * 1000))
        ids = [admin(a.lb, "POST", "/users", {"Email": f"ssf{tag}.{i}@example.com"})["Id"] for i in range(a.count)]
        print(json.dumps(ids))
    elif a.command == "act":
        users = json.load(open(a.users))
        state = {u: "enabled" for u in users}
        end, i = time.time() + a.seconds, 0
        with open(a.out, "w") as out:
            while time.time() < end and (a.action != "logout-everywhere" or i < len(users)):
                user = users[i % len(users)]
                action = a.action
                if action == "toggle":
                    action = "disable" if state[user] == "enabled" else "enable"
                    state[user] = "disabled" if action == "disable" else "enabled"
                admin(a.lb, "POST", f"/users/{user}/{action}")
                out.write(json.dumps({"user": user, "action": action, "done": time.time()}) + "\n")
                out.flush()
                i += 1
                time.sleep(1 / a.rate)
        print(i)
    elif a.command == "verify":
        sets = received(a.received)
        first, seen = [], {}
        for s in sets:
            if s["jti"] in seen:
                if seen[s["jti"]] != s["claims"]:
                    raise SystemExit(f"two different SETs share jti {s['jti']}")
                continue
            seen[s["jti"]] = s["claims"]
            first.append(int(s["claims"]["txn"]))
        if len(seen) != a.expected:
            raise SystemExit(f"{len(seen)} distinct SETs arrived, {a.expected} expected")
        if first != sorted(first):
            raise SystemExit("first arrivals out of log order")
        print(json.dumps({"distinct": len(seen), "copies": len(sets) - len(seen)}))
    elif a.command == "latency":
        arrivals = {}
        for s in received(a.received):
            sub = s["claims"].get("sub_id", {}).get("sub")
            if s["event"] == "session-revoked" and sub and sub not in arrivals:
                arrivals[sub] = s["received_at"]
        lags = sorted(arrivals[x["user"]] - x["done"] for x in map(json.loads, open(a.actions)) if x["user"] in arrivals)
        if not lags:
            raise SystemExit("no SET matched an action")
        pick = lambda q: lags[min(len(lags) - 1, int(q * len(lags)))]
        print(json.dumps({"sets": len(lags), "p50_ms": round(pick(0.5) * 1000, 1), "p99_ms": round(pick(0.99) * 1000, 1),
                          "max_ms": round(lags[-1] * 1000, 1)}))


if __name__ == "__main__":
    main()
