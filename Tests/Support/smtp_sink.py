#!/usr/bin/env python3
"""A real SMTP server for Modgud's tests (aiosmtpd).

Every accepted message is parsed with Python's own email package (an independent MIME
reader) and written to --dir as <n>.json: envelope sender and recipients, the decoded
subject, the text and HTML parts, whether the session was under TLS and who authenticated.

Prints one JSON line {"port": ..., "ca": ...} once it accepts connections, then serves
until its standard input closes (the test process ended or stopped it).
"""
import argparse
import asyncio
import email
import email.policy
import json
import os
import ssl
import subprocess
import sys
import threading

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult


class Sink:
    def __init__(self, directory):
        self.directory = directory
        self.count = 0
        self.lock = threading.Lock()

    async def handle_DATA(self, server, session, envelope):
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        text = message.get_body(("plain",))
        html = message.get_body(("html",))
        record = {
            "mail_from": envelope.mail_from,
            "rcpt_tos": envelope.rcpt_tos,
            "from": str(message["from"]),
            "to": str(message["to"]),
            "subject": str(message["subject"]),
            "message_id": str(message["message-id"]),
            "content_type": message.get_content_type(),
            "text": text.get_content() if text is not None else None,
            "html": html.get_content() if html is not None else None,
            "tls": session.ssl is not None,
            "authenticated_as": session.auth_data.login.decode() if session.authenticated else None,
        }
        with self.lock:
            self.count += 1
            name = os.path.join(self.directory, "%06d.json" % self.count)
        with open(name + ".tmp", "w") as out:
            json.dump(record, out)
        os.rename(name + ".tmp", name)
        return "250 Message accepted"


def make_certificate(directory):
    key = os.path.join(directory, "key.pem")
    cert = os.path.join(directory, "cert.pem")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
        check=True, capture_output=True)
    return key, cert


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--starttls", action="store_true")
    parser.add_argument("--auth", help="user:password required before MAIL")
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)

    options = {}
    ca = None
    if args.starttls:
        key, cert = make_certificate(args.dir)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        options.update(tls_context=context, require_starttls=True)
        ca = cert
    if args.auth:
        user, password = args.auth.split(":", 1)

        def authenticator(server, session, envelope, mechanism, auth_data):
            ok = auth_data.login == user.encode() and auth_data.password == password.encode()
            # handled=False: the server itself answers 535 on failure.
            return AuthResult(success=ok, handled=False, auth_data=auth_data if ok else None)

        options.update(authenticator=authenticator, auth_required=True, auth_require_tls=args.starttls)

    controller = Controller(Sink(args.dir), hostname="127.0.0.1", port=args.port, **options)
    controller.start()
    print(json.dumps({"port": args.port, "ca": ca}), flush=True)
    try:
        sys.stdin.read()  # until the parent closes our stdin or dies
    finally:
        controller.stop()


if __name__ == "__main__":
    main()
