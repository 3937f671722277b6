#!/usr/bin/env python3
"""Opens a magic link in a real headless browser (Debian's chromium through chromedriver,
driven by selenium) against a running Modgud (issue 25): the /magic-login page renders with
the realm's name, loads nothing but itself, and following its web-fallback link sends no
Referer (the token in the URL never leaks). Issue 65, item 6: its buttons open the app, never
this same host: Chrome's intent URL with the Android app's package (an Android User-Agent),
the app's custom URL scheme (an iPhone User-Agent), both elsewhere. Exits non-zero naming the
failed check.
"""
import argparse
import json
import sys
import urllib.parse
import uuid

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By


def fail(check, detail):
    print(f"browser: FAILED {check}: {detail}", file=sys.stderr)
    sys.exit(1)


def network(driver):
    """Chrome's DevTools network events since the last call."""
    events = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"].startswith("Network."):
            events.append(message)
    return events


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True, help="http://localhost:PORT")
    parser.add_argument("--realm-name", required=True)
    parser.add_argument("--fallback", required=True, help="the realm's web fallback URL")
    parser.add_argument("--android-package", required=True, help="the magic-link client's Android app")
    parser.add_argument("--url-scheme", required=True, help="the magic-link client's iOS URL scheme")
    args = parser.parse_args()

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--no-first-run"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        token = "tok_" + uuid.uuid4().hex
        url = f"{args.base}/magic-login?userId={uuid.uuid4()}&token={token}"
        driver.get(url)
        if args.realm_name not in driver.title:
            fail("title", driver.title)
        heading = driver.find_element(By.TAG_NAME, "h1").text
        if args.realm_name not in heading:
            fail("heading", heading)
        print("loaded:", driver.title)

        events = network(driver)
        requested = [e["params"]["request"]["url"] for e in events if e["method"] == "Network.requestWillBeSent"]
        others = [u for u in requested if u != url and not u.endswith("/favicon.ico")]
        if others:
            fail("nothing else loaded", others)
        responses = [e["params"]["response"] for e in events if e["method"] == "Network.responseReceived"]
        page = next((r for r in responses if r["url"] == url), None)
        if page is None:
            fail("response", "the page's response was not seen")
        headers = {k.lower(): v for k, v in page["headers"].items()}
        if headers.get("referrer-policy") != "no-referrer":
            fail("Referrer-Policy", headers.get("referrer-policy"))
        if "frame-ancestors 'none'" not in headers.get("content-security-policy", ""):
            fail("frame-ancestors", headers.get("content-security-policy"))
        print("requests for the page:", requested, "| Referrer-Policy:", headers["referrer-policy"])

        check_buttons(driver, url, args)

        driver.find_element(By.LINK_TEXT, "Sign in on the web").click()
        followed = [e for e in network(driver) if e["method"] == "Network.requestWillBeSent"]
        navigation = next((e for e in followed if e["params"]["request"]["url"].startswith(args.fallback)), None)
        if navigation is None:
            fail("fallback", [e["params"]["request"]["url"] for e in followed])
        sent = {k.lower(): v for k, v in navigation["params"]["request"]["headers"].items()}
        if "referer" in sent:
            fail("no Referer", sent["referer"])
        print("followed the web fallback:", navigation["params"]["request"]["url"], "| Referer sent:", sent.get("referer"))
        print("browser: the page renders, loads nothing else, leaks no Referer, and its buttons open the app")
    finally:
        driver.quit()


ANDROID = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36"
IPHONE = ("Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
          "Version/18.0 Mobile/15E148 Safari/604.1")


def buttons(driver):
    """The page's buttons as the browser parsed them: text -> the href attribute."""
    return {a.text: a.get_dom_attribute("href") for a in driver.find_elements(By.CSS_SELECTOR, "a.button")}


def check_buttons(driver, url, args):
    """Issue 65, item 6: the buttons' exact targets, per User-Agent (set through DevTools)."""
    scheme, rest = url.split("://", 1)
    intent = (f"intent://{rest}#Intent;scheme={scheme};package={args.android_package};"
              f"S.browser_fallback_url={urllib.parse.quote(url, safe='')};end")
    custom = f"{args.url_scheme}://magic-login?{urllib.parse.urlsplit(url).query}"
    original = driver.execute_script("return navigator.userAgent")
    both = buttons(driver)
    if both != {"Open in the iPhone app": custom, "Open in the Android app": intent}:
        fail("buttons on a desktop browser", both)
    if any(href.startswith(("/", url.split("/magic-login")[0])) for href in both.values()):
        fail("no same-host button", both)
    print("desktop buttons:", both)
    for phone, agent, expected in (("Android", ANDROID, intent), ("iPhone", IPHONE, custom)):
        driver.execute_cdp_cmd("Network.setUserAgentOverride", {"userAgent": agent})
        driver.get(url)
        seen = buttons(driver)
        if seen != {"Open in the app": expected}:
            fail("the button on an " + phone, seen)
        print(f"button on an {phone}:", seen["Open in the app"])
    driver.execute_cdp_cmd("Network.setUserAgentOverride", {"userAgent": original})
    driver.get(url)


if __name__ == "__main__":
    main()
