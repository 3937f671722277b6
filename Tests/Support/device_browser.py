#!/usr/bin/env python3
"""The device-approval page (RFC 8628's verification_uri, issue 69) in a real headless browser:
Debian's chromium through chromedriver, driven by selenium, against `modgud dev`
(ops/browser-test starts it and makes the fixtures: a device client and a signed-in user).

The person's passkey: a software ES256 key enrolled through the API with the user's access
token (POST /connect/passkey/enroll/begin, /connect/passkey/enroll), then handed, as a resident
credential for RP-ID localhost, to Chrome's virtual authenticator (CTAP2, internal, user
verification), which answers the page's navigator.credentials.get.

Scenarios, with the device played by plain HTTP requests (Host localhost:PORT) that poll the
token endpoint no sooner than the interval it was given:

1. A device asks for a code ("Living room TV") and polls once (authorization_pending). The
   browser opens verification_uri_complete: the code is prefilled, the page loads nothing but
   itself and its script. Continue shows "Did you start this?" with the client's display name,
   the device's name, its rough network (127.0.0.0/24) and the scopes; Approve (the virtual
   authenticator answers) says "Approved…". The device's next poll gets tokens whose ID token
   is the user's (its sub is the one /connect/userinfo gives for the user's own access token),
   and the one after that is refused (a code is redeemed once).
2. A second code typed by hand (lowercase, without the dash) on /device, then Deny: the page
   says "Denied…" and the device's poll is access_denied.
3. An unknown code typed: the page shows the 404 problem's detail and no confirmation.

No request of the page leaves its origin, and no Content-Security-Policy violation is logged.
Exits non-zero naming the failed check.
"""
import argparse
import base64
import hashlib
import json
import os
import re
import sys
import time
import urllib.parse

import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.virtual_authenticator import Credential, VirtualAuthenticatorOptions
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
USER_CODE = re.compile(r"^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$")


def fail(check, detail):
    print(f"device-browser: FAILED {check}: {detail}", file=sys.stderr)
    sys.exit(1)


def check(condition, name, detail=""):
    if not condition:
        fail(name, detail)
    print("ok:", name)


def b64u(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64u(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def jwt_claims(token):
    return json.loads(unb64u(token.split(".")[1]))


def cbor(value):
    """The CBOR an attestation needs: unsigned and negative ints, bytes, text, maps."""
    def head(major, n):
        if n < 24:
            return bytes([major << 5 | n])
        for size, code in ((1, 24), (2, 25), (4, 26), (8, 27)):
            if n < 1 << (8 * size):
                return bytes([major << 5 | code]) + n.to_bytes(size, "big")
        raise ValueError(n)

    if isinstance(value, int):
        return head(0, value) if value >= 0 else head(1, -1 - value)
    if isinstance(value, bytes):
        return head(2, len(value)) + value
    if isinstance(value, str):
        return head(3, len(value.encode())) + value.encode()
    if isinstance(value, dict):
        return head(5, len(value)) + b"".join(cbor(k) + cbor(v) for k, v in value.items())
    raise TypeError(type(value))


class Server:
    """Plain HTTP to the server as the realm's host names it (Host localhost:PORT), over IPv4
    (so the device's rough network is 127.0.0.0/24)."""

    def __init__(self, base):
        self.base = base.rstrip("/")
        parts = urllib.parse.urlsplit(self.base)
        self.host = parts.netloc
        self.address = f"http://127.0.0.1:{parts.port}"
        self.http = requests.Session()

    def post(self, path, form=None, json_body=None, bearer=None):
        headers = {"Host": self.host}
        if bearer:
            headers["Authorization"] = "Bearer " + bearer
        return self.http.post(self.address + path, data=form, json=json_body, headers=headers, timeout=30)

    def get(self, path, bearer=None):
        headers = {"Host": self.host}
        if bearer:
            headers["Authorization"] = "Bearer " + bearer
        return self.http.get(self.address + path, headers=headers, timeout=30)


class Device:
    """A device of the device grant: asks for codes, and polls each no sooner than its interval
    after the previous poll's answer (RFC 8628 section 3.5; the server answers slow_down
    otherwise)."""

    def __init__(self, server, client_id):
        self.server, self.client_id = server, client_id

    def authorize(self, scope, device_name):
        response = self.server.post("/connect/device_authorization",
                                    form={"client_id": self.client_id, "scope": scope, "device_name": device_name})
        check(response.status_code == 200, f"the device authorization for {device_name!r} is issued", (response.status_code, response.text[:300]))
        code = response.json()
        code["last_poll"] = None
        return code

    def poll(self, code):
        if code["last_poll"] is not None:
            # The protocol's own pause (section 3.5), not a synchronisation.
            time.sleep(max(0.0, code["last_poll"] + code["interval"] - time.monotonic()))
        response = self.server.post("/connect/token", form={
            "grant_type": DEVICE_GRANT, "device_code": code["device_code"], "client_id": self.client_id})
        # Measured once the answer is in: the server stamped the poll before that.
        code["last_poll"] = time.monotonic()
        try:
            body = response.json()
        except ValueError:
            body = {"raw": response.text[:300]}
        return response.status_code, body


class Person:
    """The user: signed in on the app client (a refresh token from the fixtures) and holding a
    software passkey enrolled through the API, handed to the browser's virtual authenticator."""

    def __init__(self, server, app_client, refresh_token):
        self.server, self.app_client = server, app_client
        response = server.post("/connect/token", form={"grant_type": "refresh_token", "client_id": app_client, "refresh_token": refresh_token})
        check(response.status_code == 200, "the user's refresh gives an access token", (response.status_code, response.text[:300]))
        tokens = response.json()
        self.access_token = tokens["access_token"]
        info = server.get("/connect/userinfo", bearer=self.access_token)
        check(info.status_code == 200 and info.json().get("sub"), "userinfo names the user", (info.status_code, info.text[:300]))
        self.sub = info.json()["sub"]
        if tokens.get("id_token"):
            check(jwt_claims(tokens["id_token"])["sub"] == self.sub, "the refreshed ID token and userinfo agree on the user",
                  (jwt_claims(tokens["id_token"])["sub"], self.sub))
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.credential_id = os.urandom(32)
        self.user_handle = None

    def enroll(self, origin):
        begun = self.server.post("/connect/passkey/enroll/begin", bearer=self.access_token)
        check(begun.status_code == 200, "passkey enrollment begins", (begun.status_code, begun.text[:300]))
        begun = begun.json()
        options = begun["options"]
        rp_id = options["rp"]["id"]
        check(rp_id == "localhost", "the passkey's RP-ID is the realm's primary domain (localhost)", rp_id)
        self.user_handle = unb64u(options["user"]["id"])
        numbers = self.key.public_key().public_numbers()
        cose = cbor({1: 2, 3: -7, -1: 1, -2: numbers.x.to_bytes(32, "big"), -3: numbers.y.to_bytes(32, "big")})
        auth_data = (hashlib.sha256(rp_id.encode()).digest() + bytes([0x01 | 0x04 | 0x40]) + (0).to_bytes(4, "big") + bytes(16)
                     + len(self.credential_id).to_bytes(2, "big") + self.credential_id + cose)
        client_data = json.dumps({"type": "webauthn.create", "challenge": options["challenge"], "origin": origin, "crossOrigin": False},
                                 separators=(",", ":")).encode()
        attestation = {"id": b64u(self.credential_id), "rawId": b64u(self.credential_id), "type": "public-key",
                       "response": {"clientDataJSON": b64u(client_data),
                                    "attestationObject": b64u(cbor({"fmt": "none", "attStmt": {}, "authData": auth_data})),
                                    "transports": ["internal"]},
                       "clientExtensionResults": {}}
        enrolled = self.server.post("/connect/passkey/enroll", json_body={
            "ceremonyId": begun["ceremonyId"], "attestation": attestation, "DisplayName": "Device-approval test key"}, bearer=self.access_token)
        check(enrolled.status_code == 200, "the passkey is enrolled", (enrolled.status_code, enrolled.text[:300]))

    def hand_to(self, driver):
        options = VirtualAuthenticatorOptions()
        options.protocol = VirtualAuthenticatorOptions.Protocol.CTAP2
        options.transport = VirtualAuthenticatorOptions.Transport.INTERNAL
        options.has_resident_key = True
        options.has_user_verification = True
        options.is_user_verified = True
        driver.add_virtual_authenticator(options)
        private_key = self.key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        driver.add_credential(Credential.create_resident_credential(self.credential_id, "localhost", self.user_handle, private_key, 0))
        check(len(driver.get_credentials()) == 1, "the virtual authenticator holds the user's passkey")


def network(driver):
    """Chrome's DevTools network events since the last call."""
    events = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"].startswith("Network."):
            events.append(message)
    return events


def requested(events):
    return [e["params"]["request"]["url"] for e in events if e["method"] == "Network.requestWillBeSent"]


def same_origin(urls, base, what):
    others = [u for u in urls if not (u == base or u.startswith(base + "/"))]
    check(not others, f"{what}: no request leaves the page's origin", others)


def csp_clean(driver, what):
    violations = [e["message"] for e in driver.get_log("browser") if "Content Security Policy" in e["message"]]
    check(not violations, f"no Content-Security-Policy violation ({what})", violations)


def shown(driver, element_id):
    return driver.find_element(By.ID, element_id).text


def result_text(wait):
    """Waits for p#result to say something, and returns it."""
    return wait.until(lambda d: d.find_element(By.ID, "result").text.strip() or False)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True, help="http://localhost:PORT (the dev realm's host)")
    parser.add_argument("--device-client", required=True, help="a public client with the device_code grant")
    parser.add_argument("--device-client-name", required=True, help="its display name, which the page shows")
    parser.add_argument("--app-client", default="demo-app", help="the client the user's session is with")
    parser.add_argument("--refresh-token", required=True, help="the user's refresh token on --app-client")
    args = parser.parse_args()
    base = args.base.rstrip("/")
    server = Server(base)

    discovery = server.get("/.well-known/openid-configuration").json()
    check(discovery.get("device_authorization_endpoint") == base + "/connect/device_authorization",
          "discovery names the device authorization endpoint", discovery.get("device_authorization_endpoint"))

    person = Person(server, args.app_client, args.refresh_token)
    person.enroll(origin=base)
    device = Device(server, args.device_client)

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--no-first-run"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        person.hand_to(driver)
        wait = WebDriverWait(driver, 30)
        network(driver)

        # 1. verification_uri_complete, Continue, Approve with the passkey; the device signs in.
        tv = device.authorize("openid email", "Living room TV")
        check(USER_CODE.match(tv.get("user_code", "")), "the user code is XXXX-XXXX of the code's alphabet", tv.get("user_code"))
        check(tv.get("verification_uri") == base + "/device", "verification_uri is the realm's /device page", tv.get("verification_uri"))
        check(tv.get("verification_uri_complete") == base + "/device?user_code=" + tv["user_code"],
              "verification_uri_complete carries the user code", tv.get("verification_uri_complete"))
        check(tv.get("expires_in") == 600 and tv.get("interval") == 5, "the code lives 600 s and the interval is 5 s",
              (tv.get("expires_in"), tv.get("interval")))
        status, body = device.poll(tv)
        check(status == 400 and body.get("error") == "authorization_pending", "before approval the device's poll is authorization_pending",
              (status, body))

        url = tv["verification_uri_complete"]
        driver.get(url)
        check(driver.find_element(By.ID, "user-code").get_attribute("value") == tv["user_code"], "the page prefills the user code",
              driver.find_element(By.ID, "user-code").get_attribute("value"))
        check("Connect a device to Modgud dev" in driver.find_element(By.TAG_NAME, "h1").text, "the page names the realm",
              driver.find_element(By.TAG_NAME, "h1").text)
        events = network(driver)
        loaded = requested(events)
        extra = [u for u in loaded if u not in (url, base + "/device/approve.js") and not u.endswith("/favicon.ico")]
        check(url in loaded and base + "/device/approve.js" in loaded and not extra, "the page loads nothing but itself and its script", loaded)
        page = next((e["params"]["response"] for e in events if e["method"] == "Network.responseReceived" and e["params"]["response"]["url"] == url),
                    None)
        check(page is not None, "the page's response was seen")
        headers = {k.lower(): v for k, v in page["headers"].items()}
        check(headers.get("referrer-policy") == "no-referrer" and "frame-ancestors 'none'" in headers.get("content-security-policy", ""),
              "the page sends no referrer and may not be framed", (headers.get("referrer-policy"), headers.get("content-security-policy")))
        check(not driver.find_element(By.ID, "confirm").is_displayed(), "the confirmation is hidden before Continue")

        driver.find_element(By.ID, "continue").click()
        wait.until(EC.visibility_of_element_located((By.ID, "confirm")))
        heading = driver.find_element(By.CSS_SELECTOR, "#confirm h2").text
        check(heading == "Did you start this?", "the confirmation asks \"Did you start this?\"", heading)
        check(not driver.find_element(By.ID, "enter").is_displayed(), "the code field is put away")
        check(shown(driver, "client") == args.device_client_name, "the page names the app that asks (its display name)", shown(driver, "client"))
        check(shown(driver, "device") == "Living room TV", "the page shows the device's own description", shown(driver, "device"))
        check(shown(driver, "network") == "127.0.0.0/24", "the page shows the device's rough network", shown(driver, "network"))
        check(shown(driver, "scope") == "openid email", "the page shows what the device may do", shown(driver, "scope"))
        check(shown(driver, "result") == "", "nothing is said before a decision", shown(driver, "result"))

        driver.find_element(By.ID, "approve").click()
        said = result_text(wait)
        check(said == "Approved. Your device is signing in now.", "the page says the device is approved", said)
        check(not driver.find_element(By.ID, "confirm").is_displayed(), "the confirmation is put away after approval")
        credential = driver.get_credentials()[0]
        check(credential.sign_count >= 1, "the virtual authenticator signed (its counter moved)", credential.sign_count)
        same_origin(requested(network(driver)), base, "continue and approve")

        status, body = device.poll(tv)
        check(status == 200 and body.get("access_token") and body.get("id_token"), "after approval the device's poll gets tokens with an ID token",
              (status, {k: (v[:20] + "…" if isinstance(v, str) and len(v) > 40 else v) for k, v in body.items()}))
        claims = jwt_claims(body["id_token"])
        check(claims.get("sub") == person.sub, "the device's ID token is the approving user's", (claims.get("sub"), person.sub))
        check(claims.get("aud") in (args.device_client, [args.device_client]), "the device's ID token is for the device client", claims.get("aud"))
        check(claims.get("iss") == base, "the device's ID token names the realm's issuer", claims.get("iss"))
        status, body = device.poll(tv)
        check(status == 400 and body.get("error") == "invalid_grant", "the approved code is redeemed once", (status, body))

        # 2. A code typed by hand (lowercase, no dash) on /device, then Deny.
        speaker = device.authorize("openid", "Kitchen speaker")
        driver.get(base + "/device")
        box = driver.find_element(By.ID, "user-code")
        check(box.get_attribute("value") == "", "without a code in the link the field is empty", box.get_attribute("value"))
        box.send_keys(speaker["user_code"].replace("-", "").lower())
        driver.find_element(By.ID, "continue").click()
        wait.until(EC.visibility_of_element_located((By.ID, "confirm")))
        check(shown(driver, "device") == "Kitchen speaker" and shown(driver, "client") == args.device_client_name,
              "the typed code finds its device", (shown(driver, "device"), shown(driver, "client")))
        driver.find_element(By.ID, "deny").click()
        said = result_text(wait)
        check(said == "Denied. The device was not signed in.", "the page says the device was denied", said)
        check(not driver.find_element(By.ID, "confirm").is_displayed(), "the confirmation is put away after the denial")
        status, body = device.poll(speaker)
        check(status == 400 and body.get("error") == "access_denied", "after the denial the device's poll is access_denied", (status, body))
        same_origin(requested(network(driver)), base, "the typed code and deny")

        # 3. An unknown code: the 404 problem's detail, and no confirmation.
        unknown = next(c for c in ("BCDF-GHJK", "KJHG-FDCB") if c not in (tv["user_code"], speaker["user_code"]))
        driver.get(base + "/device")
        driver.find_element(By.ID, "user-code").send_keys(unknown)
        driver.find_element(By.ID, "continue").click()
        said = result_text(wait)
        problem = server.post("/connect/device/verify", json_body={"user_code": unknown})
        check(problem.status_code == 404 and problem.json().get("detail"), "an unknown code is a 404 problem", (problem.status_code, problem.text[:300]))
        check(said == problem.json()["detail"], "the page shows the problem's detail", (said, problem.json()["detail"]))
        check(not driver.find_element(By.ID, "confirm").is_displayed(), "an unknown code shows no confirmation")
        check(driver.find_element(By.ID, "enter").is_displayed(), "the code field stays for another try")
        same_origin(requested(network(driver)), base, "the unknown code")
        csp_clean(driver, "all three scenarios")
        print("device-browser: the page approves with a passkey, denies, and refuses an unknown code; the device's polls agree")
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
