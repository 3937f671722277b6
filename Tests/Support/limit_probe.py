#!/usr/bin/env python3
"""A mailbox's hourly cap survives a crash of the instances and a failover of the database (issue 67).

  fill --lb URL --email ADDRESS
      asks for sign-in codes for ADDRESS through the balancer until the per-mailbox cap
      (`otp-request.mailbox`, five an hour by default) answers 429, and fails unless it does
      within twenty requests. Prints how many were admitted.
  check --lb URL --email ADDRESS
      asks once more, after the instances were killed and restarted and the standby promoted,
      and fails unless the answer is still 429: the cap was not started full again.

Requests carry Host: localhost (the cluster's realm). A 503 or a dropped connection is retried
(the instances follow the new primary); any other answer is the verdict.
"""
import argparse, json, sys, time, urllib.error, urllib.request


def request_code(lb, email):
    data = json.dumps({"Email": email}).encode()
    headers = {"Host": "localhost", "Content-Type": "application/json"}
    for _ in range(600):  # a hang guard while the database changes hands, not a timing
        request = urllib.request.Request(lb + "/api/account/native/otp/request", data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status
        except urllib.error.HTTPError as error:
            if error.code != 503:
                return error.code
        except OSError:
            pass
        time.sleep(0.1)
    sys.exit("limit-probe: no answer but 503 or a dropped connection for a minute")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("action", choices=["fill", "check"])
    parser.add_argument("--lb", required=True)
    parser.add_argument("--email", required=True)
    args = parser.parse_args()
    if args.action == "fill":
        admitted = 0
        for _ in range(20):
            status = request_code(args.lb, args.email)
            if status == 429:
                print(f"limit-probe: the mailbox's cap answered 429 after {admitted} codes")
                return
            if status != 200:
                sys.exit(f"limit-probe: a code request answered {status}")
            admitted += 1
        sys.exit("limit-probe: twenty code requests for one mailbox and no 429")
    status = request_code(args.lb, args.email)
    if status != 429:
        sys.exit(f"limit-probe: FAIL: after the crash and the failover the capped mailbox got {status}, not 429: the cap started full again")
    print("limit-probe: the mailbox's cap still answered 429 after the instances' crash and the failover")


if __name__ == "__main__":
    main()
