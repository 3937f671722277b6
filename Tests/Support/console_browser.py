#!/usr/bin/env python3
"""The operator console in a real headless browser (issue 31): Debian's chromium through
chromedriver, driven by selenium, against `modgud dev` (ops/console-browser-test starts it and
the fixtures). Scenarios, in one browser session:

- a non-operator (a user of the operator realm without the role) is refused after the code;
- an operator signs in with an email code (read from the dev server's console mail sink);
- creates a client and sees its app-association preview;
- finds a user by email, sees their passkey and session, revokes the session, and the user's
  refresh token is then refused by /connect/token;
- erases the user, and the user page shows the tombstone;
- rebuilds a projection and sees it finish;
- adds a passkey to their account (Chrome's virtual authenticator answers the dialog), signs
  out, and signs in again with it;
- a form posted from another origin (same site, another port) and from another site is refused
  and changes nothing;
- no page breaks the Content-Security-Policy, and every page works with JavaScript off;
- issue 67: a console page asked for under a foreign Host (a name chromium's resolver rules map
  to the server's loopback address, as DNS rebinding would) is refused by default (421), while
  the same name reaches the server's health endpoint. With --any-host (the server runs with
  MODGUD_CONSOLE_HOSTNAMES=*) only that check runs, and the console answers under that name.

With --screenshots DIR, each page is saved there as PNG (docs/operations/console/). Exits
non-zero naming the failed check.
"""
import argparse
import http.server
import json
import os
import re
import socketserver
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.common.virtual_authenticator import VirtualAuthenticatorOptions
from selenium.webdriver.support.ui import Select, WebDriverWait


def fail(check, detail):
    print(f"console-browser: FAILED {check}: {detail}", file=sys.stderr)
    sys.exit(1)


def check(condition, name, detail=""):
    if not condition:
        fail(name, detail)
    print("ok:", name)


class Mailbox:
    """The codes `modgud dev` prints (its console mail sink), read from its log."""

    def __init__(self, log):
        self.log = log
        self.seen = 0

    def code(self, address, timeout=60):
        deadline = time.monotonic() + timeout
        pattern = re.compile(r"── mail to " + re.escape(address) + r" ─.*?Your verification code is (\d{6})", re.S)
        while time.monotonic() < deadline:
            with open(self.log, encoding="utf-8", errors="replace") as handle:
                text = handle.read()
            for match in pattern.finditer(text, self.seen):
                self.seen = match.end()
                return match.group(1)
            time.sleep(0.1)  # polling a file another process writes, bounded by the deadline
        fail("mail", f"no code for {address} within {timeout} s")


class Console:
    def __init__(self, driver, base, shots):
        self.driver, self.base, self.shots = driver, base, shots
        # Every wait looks its element up afresh and ignores a lookup that raced a navigation:
        # after a form's redirect, an element found in the old document raises "stale" or
        # chromium's "Node … does not belong to the document" when read (CI saw the latter
        # once, after the sign-in code's redirect). A real failure still ends in a timeout.
        self.wait = WebDriverWait(driver, 30, ignored_exceptions=(StaleElementReferenceException, WebDriverException))

    def open(self, path):
        self.driver.get(self.base + path)

    def text(self):
        return self.driver.find_element(By.TAG_NAME, "body").text

    def wait_for_text(self, text):
        """Waits for `text` in the body, looking the body up afresh each time: a form's redirect
        replaces the document between a lookup and its read."""
        WebDriverWait(self.driver, 30, ignored_exceptions=(StaleElementReferenceException, WebDriverException)).until(
            lambda d: text in d.find_element(By.TAG_NAME, "body").text)

    def h1(self):
        return self.driver.find_element(By.TAG_NAME, "h1").text

    def shot(self, name):
        self.csp_clean(name)
        if self.shots:
            # The whole page: the window as tall as the document.
            height, chrome = self.driver.execute_script(
                "return [document.documentElement.scrollHeight, window.outerHeight - window.innerHeight]")
            self.driver.set_window_size(1280, min(height, 4000) + chrome)
            self.driver.save_screenshot(os.path.join(self.shots, name + ".png"))
            self.driver.set_window_size(1280, 1000)


    def csp_clean(self, page):
        problems = [e["message"] for e in self.driver.get_log("browser") if "Content Security Policy" in e["message"] or e["level"] == "SEVERE"]
        if problems:
            fail(f"no console errors or CSP violations on {page}", problems)

    def submit(self, form_action_fragment=None, button_text=None):
        """Clicks the submit button of the form whose action contains the fragment."""
        forms = self.driver.find_elements(By.TAG_NAME, "form")
        for form in forms:
            action = form.get_attribute("action") or ""
            if form_action_fragment and form_action_fragment not in action:
                continue
            for button in form.find_elements(By.CSS_SELECTOR, "button[type=submit]"):
                if button_text is None or button_text in button.text:
                    button.click()
                    return
        fail("form", f"no form with action containing {form_action_fragment!r} and button {button_text!r} on {self.driver.current_url}")

    def sign_in(self, mailbox, email, shot=None):
        self.open("/console/sign-in")
        self.driver.find_element(By.ID, "email").send_keys(email)
        self.submit("/console/sign-in")
        self.wait.until(EC.presence_of_element_located((By.ID, "code")))
        self.driver.find_element(By.ID, "code").send_keys(mailbox.code(email))
        if shot:
            self.shot(shot)
        self.submit("/console/sign-in/code")


def token_request(base, fields):
    """A token-endpoint request as the app sends it (its user agent): (status, JSON body)."""
    request = urllib.request.Request(base + "/connect/token", data=urllib.parse.urlencode(fields).encode(), headers={
        "Content-Type": "application/x-www-form-urlencoded", "User-Agent": APP_USER_AGENT})
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def refresh(base, client, token):
    return token_request(base, {"grant_type": "refresh_token", "client_id": client, "refresh_token": token})


def wrong_code(base, client, email, guess):
    """An email-code grant with a wrong guess."""
    return token_request(base, {"grant_type": "urn:cocoar:otp", "client_id": client, "username": email, "otp_code": guess, "scope": "openid"})


# What a native iOS app's HTTP stack sends; the console shows it as "Acme on an Apple system".
APP_USER_AGENT = "Acme/41 CFNetwork/1568.200.51 Darwin/24.1.0"


def attacker_site(port, target):
    """A page on another origin whose form posts to `target` by itself."""
    page = f"""<!doctype html><html><body><form id="f" method="post" action="{target}">
<input type="hidden" name="confirm" value="erase"></form>
<script>document.getElementById('f').submit()</script></body></html>""".encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args):
            pass

    server = socketserver.TCPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def foreign_url(args, path):
    """`path` on the server under the foreign host name (resolved to the server by chromium's rules)."""
    return f"http://{args.foreign_host}:{urllib.parse.urlparse(args.base).port}{path}"


def host_check(console, args, refused):
    """Issue 67: the console under a Host that is no realm's and not the console's own."""
    driver = console.driver
    driver.get(foreign_url(args, "/health/live"))
    check(console.text().strip() == "ok", f"{args.foreign_host} reaches the server (its health endpoint answers)", console.text()[:300])
    driver.get(foreign_url(args, "/console/sign-in"))
    text = console.text()
    if refused:
        check("This console answers only to its configured host names." in text and not driver.find_elements(By.ID, "email"),
              f"the console refuses the foreign Host {args.foreign_host} by default", text[:300])
    else:
        check(driver.find_elements(By.ID, "email") and "answers only to" not in text,
              f"with MODGUD_CONSOLE_HOSTNAMES=* the console answers under {args.foreign_host}", text[:300])
    driver.get_log("browser")  # the refusal's 421 is expected


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True, help="http://localhost:PORT")
    parser.add_argument("--log", required=True, help="the dev server's log (its mail sink)")
    parser.add_argument("--operator", required=True)
    parser.add_argument("--non-operator", required=True)
    parser.add_argument("--user", required=True, help="a dev-realm user with a passkey and a session")
    parser.add_argument("--refresh-token", required=True, help="that user's refresh token (demo-app)")
    parser.add_argument("--attacker-port", type=int, required=True)
    parser.add_argument("--screenshots", help="folder for page screenshots")
    parser.add_argument("--foreign-host", default="rebound.attacker.example", help="a name that is no realm's host (issue 67)")
    parser.add_argument("--any-host", action="store_true", help="the server runs with MODGUD_CONSOLE_HOSTNAMES=*: only the host check")
    args = parser.parse_args()
    if args.screenshots:
        os.makedirs(args.screenshots, exist_ok=True)

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--no-first-run", "--window-size=1280,1000",
                 "--hide-scrollbars", "--force-device-scale-factor=1", f"--host-resolver-rules=MAP {args.foreign_host} 127.0.0.1"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    mailbox = Mailbox(args.log)
    console = Console(driver, args.base, args.screenshots)
    try:
        if args.any_host:
            host_check(console, args, refused=False)
        else:
            run(console, mailbox, args)
    finally:
        driver.quit()
    print("console-browser: every scenario passed")


def run(console, mailbox, args):
    driver = console.driver
    host_check(console, args, refused=True)
    # Nothing without a session: the console sends the browser to sign in.
    console.open("/console/realms")
    check(driver.current_url.endswith("/console/sign-in"), "unauthenticated pages redirect to sign-in", driver.current_url)
    console.shot("sign-in")

    # A user of the operator realm without the operator role: the code works, the console does not.
    console.sign_in(mailbox, args.non_operator)
    console.wait.until(EC.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Not an operator"))
    check(driver.get_cookie("modgud_console") is None, "a non-operator gets no session cookie")
    driver.get_log("browser")  # the refusal's 403 is expected
    console.shot("not-an-operator")
    console.open("/console")
    check(driver.current_url.endswith("/console/sign-in"), "a non-operator stays signed out", driver.current_url)

    # The operator signs in with an email code.
    console.sign_in(mailbox, args.operator, shot="sign-in-code")
    console.wait.until(EC.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Health"))
    cookie = driver.get_cookie("modgud_console")
    check(cookie and cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/console", "session cookie is HttpOnly, SameSite=Strict", cookie)
    check(args.operator in console.text() and "Ready" in console.text(), "health page shows the operator and readiness", console.text()[:300])
    console.shot("health")
    # Issue 43: a doc path on a page is a link to the handbook this binary ships.
    driver.find_element(By.LINK_TEXT, "docs/operations/metrics.md").click()
    console.wait.until(EC.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Metrics"))
    check("modgud_http_requests_total" in console.text() and "docs/operations/metrics.md" in console.text(),
          "the metrics page of the handbook opens from the health page", console.text()[:300])
    console.shot("handbook")

    console.open("/console/realms")
    check("dev" in console.text() and "operators" in console.text(), "realms listed", console.text()[:300])
    console.shot("realms")
    console.open("/console/realms/dev")
    check("otp-request.mailbox" in console.text() and "ES256" in console.text(), "realm page shows rate limits and signing keys")
    console.shot("realm")

    # Issue 43: creates a realm, then sets a registration field and a rate-limit override.
    console.open("/console/realms/new")
    driver.find_element(By.ID, "id").send_keys("shop")
    driver.find_element(By.ID, "display_name").send_keys("Shop")
    driver.find_element(By.ID, "hosts").send_keys("shop.example.com")
    console.shot("realm-new")
    console.submit("/console/realms/new", "Create the realm")
    console.wait.until(EC.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Realm shop"))
    old = driver.find_element(By.ID, "field-firstname")
    Select(old).select_by_value("Required")
    console.submit("/registration-fields", "Save fields")
    console.wait.until(EC.staleness_of(old))
    chosen = Select(driver.find_element(By.ID, "field-firstname")).first_selected_option.text
    check(chosen == "Required", "the registration field is saved", chosen)
    old = driver.find_element(By.ID, "policy")
    Select(old).select_by_value("otp-request.mailbox")
    for field, value in (("limit", "3"), ("window", "600"), ("burst", "2")):
        driver.find_element(By.ID, field).send_keys(value)
    console.submit("/rate-limits", "Save the override")
    console.wait.until(EC.staleness_of(old))
    row = driver.find_element(By.XPATH, "//tr[td[1]/code[text()='otp-request.mailbox']]").text
    check("realm override" in row and "10 min" in row and "default: 5 per 1 h" in row, "the override shows with its default", row)

    # Creates a client and sees the app-association preview.
    console.open("/console/realms/dev/clients/new")
    console.shot("client-new")
    driver.find_element(By.ID, "id").send_keys("ios-app")
    driver.find_element(By.ID, "display").send_keys("Acme for iOS")
    driver.find_element(By.ID, "apple").send_keys("ABCDE12345.com.acme.app")
    fingerprint = ":".join(["AB"] * 32)
    driver.find_element(By.ID, "android").send_keys("com.acme.app " + fingerprint)
    console.submit("/clients/new")
    console.wait.until(EC.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Client ios-app"))
    previews = [p.text for p in driver.find_elements(By.CSS_SELECTOR, "pre.json")]
    check(any('"ABCDE12345.com.acme.app"' in p for p in previews), "AASA preview names the new app", previews)
    check(any('"com.acme.app"' in p and fingerprint in p for p in previews), "assetlinks preview names the new app", previews)
    console.shot("client")
    console.open("/console/realms/dev/clients")
    check("ios-app" in console.text(), "the client is listed")
    console.shot("clients")

    # Issue 43: deleting a client asks for its id, and the confirmation names it.
    console.open("/console/realms/dev/clients/ios-app")
    driver.find_element(By.LINK_TEXT, "Delete…").click()
    console.wait.until(EC.presence_of_element_located((By.ID, "confirm")))
    confirmation = driver.find_element(By.CSS_SELECTOR, "form.danger-zone").text
    check("ios-app" in confirmation and "Acme for iOS" in confirmation and args.operator not in confirmation,
          "the delete confirmation names the client", confirmation[:300])
    console.shot("client-delete")
    driver.find_element(By.ID, "confirm").send_keys("ios-app")
    console.submit("/delete", "Delete this client")
    console.wait.until(lambda d: d.current_url.endswith("/console/realms/dev/clients"))
    check("ios-app" not in console.text(), "the deleted client is no longer listed", console.text()[:300])

    # Issue 43: the list sorts by last sign-in (an asynchronous read model: reloaded until the
    # daemon has it), and the start of an address finds the user.
    def user_row_signed_in(d):
        d.get(args.base + "/console/realms/dev/users?sort=last-sign-in")
        rows = [r.text for r in d.find_elements(By.CSS_SELECTOR, "table.grid tbody tr")]
        return rows and args.user in rows[0] and "never" not in rows[0]
    console.wait.until(user_row_signed_in)
    check(driver.find_element(By.CSS_SELECTOR, "#sort option[selected]").get_attribute("value") == "last-sign-in",
          "the list says how it is sorted")
    console.shot("users")
    search = driver.find_element(By.NAME, "q")
    search.send_keys(args.user[:3].upper())
    console.submit("/users", "Find")
    console.wait_for_text("users looked through for addresses starting with")
    found = [r.text for r in driver.find_elements(By.CSS_SELECTOR, "table.grid tbody tr")]
    check(any(args.user in row for row in found), "the start of an address finds the user", found)
    console.shot("users-search")

    # Finds a user by email: passkey with its provider, and the live session.
    console.open("/console/realms/dev/users")
    search = driver.find_element(By.NAME, "q")
    search.send_keys(args.user)
    console.submit("/users", "Find")
    console.wait.until(EC.text_to_be_present_in_element((By.TAG_NAME, "h1"), args.user))
    text = console.text()
    check("Google Password Manager" in text, "the passkey shows its provider", text[:600])
    check(driver.find_elements(By.CSS_SELECTOR, "td.provider img"), "the provider's icon is shown")
    check("live" in text and "demo-app" in text, "the live session is shown", text[:600])
    console.shot("user")
    status, _ = refresh(args.base, "demo-app", args.refresh_token)
    check(status == 200, "the user's refresh works before the revocation", status)
    console.submit("/sessions/", "Revoke")
    console.wait_for_text("ended: revoked by an operator")
    # Issue 43: the session shows the device of its latest use (the refresh above), in full on hover.
    device = driver.find_element(By.CSS_SELECTOR, "td.device")
    check("Acme on an Apple system" in device.text and device.get_attribute("title") == APP_USER_AGENT,
          "the session names its device and keeps the full user agent", (device.text, device.get_attribute("title")))
    status, body = refresh(args.base, "demo-app", args.refresh_token)
    check(status == 400 and body.get("error") == "invalid_grant", "after the revocation the refresh is refused", (status, body))
    user_url = driver.current_url

    # Issue 43: the operator runs the account: names, and a role granted then revoked.
    for field, value in (("first_name", "Ada"), ("last_name", "Lovelace")):
        box = driver.find_element(By.ID, field)
        box.clear()
        box.send_keys(value)
    console.submit("/profile", "Save names")
    console.wait_for_text("Ada Lovelace")
    driver.find_element(By.ID, "role").send_keys("support")
    console.submit("/roles/grant", "Grant")
    console.wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "form.role code"))
    roles = [c.text for c in driver.find_elements(By.CSS_SELECTOR, "form.role code")]
    check(roles == ["support"], "the granted role is listed", roles)
    console.shot("user-roles")
    console.submit("/roles/revoke", "Revoke")
    console.wait_for_text("No roles.")

    # Issue 43: the realm's sign-in failures: the refused refresh after the revocation, and a
    # wrong code.
    request = urllib.request.Request(args.base + "/api/account/native/otp/request", data=json.dumps({"Email": args.user}).encode(),
                                     headers={"Content-Type": "application/json", "User-Agent": APP_USER_AGENT})
    with urllib.request.urlopen(request) as response:
        check(response.status == 200, "a code is asked for the user", response.status)
    sent = mailbox.code(args.user)
    status, _ = wrong_code(args.base, "demo-app", args.user, "111111" if sent == "000000" else "000000")
    check(status == 400, "a wrong code is refused", status)
    console.open("/console/realms/dev/failures?window=hour")
    check("wrong code or link" in console.text() and "Acme on an Apple system" in console.text(),
          "the realm's failures list the wrong code with its device", console.text()[:600])
    check("refresh of an ended session" in console.text() and "revoked (admin)" in console.text(),
          "and the refused refresh of the revoked session, with why", console.text()[:800])
    console.shot("failures")
    console.open("/console/realms/dev/failures?window=hour&address=127.0.0.")
    check("wrong code or link" in console.text(), "the failures filter by the start of an address", console.text()[:300])
    console.open("/console/realms/dev/failures?window=hour&address=10.")
    check("No sign-in failures" in console.text(), "and another address range shows none", console.text()[:300])
    console.open(urllib.parse.urlparse(user_url).path + "/audit")
    check("token_family.revoked" in console.text() and f"operator {args.operator}" in console.text(),
          "the revocation is in the history with the operator, by address, as actor", console.text()[:600])
    actor_ids = [td.get_attribute("title") for td in driver.find_elements(By.CSS_SELECTOR, "td[title^='operator:operators/']")]
    check(actor_ids, "the operator's actor id stays on the page (the cell's title)")
    check("user.roles_changed" in console.text() and "user.profile_changed" in console.text(), "the role and name changes are in the history")
    console.shot("audit")

    # The cross-origin attempts: the operator's browser visits pages of others that post to the console.
    target = urllib.parse.urlparse(user_url).path + "/erase"
    server = attacker_site(args.attacker_port, args.base + target)
    try:
        for origin in (f"http://localhost:{args.attacker_port}/", f"http://127.0.0.1:{args.attacker_port}/"):
            driver.get(origin)
            console.wait.until(lambda d: d.current_url.startswith(args.base))
            check("Refused" in console.text(), f"a form posted from {origin} is refused", console.text()[:300])
            console.open(urllib.parse.urlparse(user_url).path)
            check("[erased]" not in console.text(), f"the post from {origin} changed nothing")
            driver.get_log("browser")  # the refused page's 403 is expected
    finally:
        server.shutdown()

    # Erases the user after a confirmation that names what will happen; the page shows the tombstone.
    console.open(urllib.parse.urlparse(user_url).path + "/erase")
    text = console.text()
    check("cannot be undone" in text and "passkey(s) are deleted" in text, "the erase page names what will happen", text[:500])
    # Issue 43: the confirmation names the person it acts on, never the signed-in operator.
    confirmation = driver.find_element(By.CSS_SELECTOR, "form.danger-zone").text
    user_id = urllib.parse.urlparse(user_url).path.rstrip("/").split("/")[-1]
    check(args.user in confirmation and user_id in confirmation and args.operator not in confirmation,
          "the erase confirmation names the user (address and id), not the operator", confirmation[:300])
    check(driver.find_element(By.CSS_SELECTOR, "strong.subject").text == args.user, "the subject's address is the one in bold")
    check("(Ada Lovelace)" in confirmation, "the erase confirmation gives the user's name", confirmation[:300])
    console.shot("user-erase")
    driver.find_element(By.ID, "confirm").send_keys("erase")
    console.submit("/erase", "Erase this user")
    console.wait.until(EC.text_to_be_present_in_element((By.TAG_NAME, "h1"), "[erased]"))
    check("This user was erased" in console.text() and args.user not in console.text(), "the user page shows the tombstone and no address")
    console.shot("user-erased")

    # Rebuilds a projection and sees it finish.
    console.open("/console/projections")
    row = lambda: driver.find_element(By.XPATH, "//tr[td[1][text()='log_statistics']]")
    row().find_element(By.CSS_SELECTOR, "button").click()
    console.wait.until(lambda d: d.current_url.endswith("/console/projections"))
    # htmx replaces the table every second while the rebuild runs: a row found may be gone a
    # moment later, so the wait looks again instead of failing on the stale element.
    WebDriverWait(driver, 30, ignored_exceptions=(StaleElementReferenceException,)).until(
        lambda d: row().find_elements(By.CSS_SELECTOR, "button"))
    check("log_statistics" in console.text(), "the rebuilt projection is listed again with its button")
    console.open("/console/me")
    driver.find_element(By.LINK_TEXT, "Your history").click()
    console.wait.until(EC.text_to_be_present_in_element((By.TAG_NAME, "h1"), "History"))
    check("operator.action_recorded" in console.text() and "projection.rebuild log_statistics" in console.text(),
          "the rebuild is an event in the operator's own history", console.text()[:600])
    console.shot("projections")

    console.open("/console/mail")
    check("waiting to send" in console.text(), "mail page")
    console.shot("mail")
    console.open("/console/signals")
    check("Shared Signals" in console.h1(), "signals page")
    console.shot("signals")

    # Every read page works without JavaScript (htmx only refines).
    driver.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": True})
    for path, marker in (("/console", "Readiness checks"), ("/console/realms/dev", "Rate limits"), ("/console/projections", "log_statistics"),
                         (urllib.parse.urlparse(user_url).path, "erased")):
        console.open(path)
        check(marker in console.text(), f"{path} reads without JavaScript")
    driver.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": False})

    # The operator adds a passkey (the virtual authenticator answers the browser's dialog).
    options = VirtualAuthenticatorOptions()
    options.protocol = VirtualAuthenticatorOptions.Protocol.CTAP2
    options.transport = VirtualAuthenticatorOptions.Transport.INTERNAL
    options.has_resident_key = True
    options.has_user_verification = True
    options.is_user_verified = True
    driver.add_virtual_authenticator(options)
    console.open("/console/me")
    driver.find_element(By.ID, "passkey-name").send_keys("Operator laptop")
    driver.find_element(By.CSS_SELECTOR, "button[data-passkey=enroll]").click()
    console.wait_for_text("Operator laptop")
    check("localhost" in console.text(), "the operator's passkey is listed under the console's RP-ID")
    console.shot("me")

    # Signing out ends the session.
    console.open("/console")
    console.submit("/console/sign-out")
    console.wait.until(lambda d: d.current_url.endswith("/console/sign-in"))
    console.open("/console")
    check(driver.current_url.endswith("/console/sign-in"), "after sign-out the console asks to sign in again")

    # And the passkey signs the operator in again, no code.
    driver.find_element(By.CSS_SELECTOR, "button[data-passkey=sign-in]").click()
    console.wait.until(EC.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Health"))
    check(args.operator in console.text(), "the operator signed in with the passkey")
    console.csp_clean("health after passkey sign-in")


if __name__ == "__main__":
    main()
