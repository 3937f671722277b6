#!/usr/bin/env python3
"""Opens a magic link in a real headless browser (Debian's chromium through chromedriver,
driven by selenium) against a running Modgud (issue 25): the /magic-login page renders with
the realm's name, loads nothing but itself, and following its web-fallback link sends no
Referer (the token in the URL never leaks). Exits non-zero naming the failed check.
"""
import argparse
import json
import sys
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

        retry = driver.find_element(By.LINK_TEXT, "Open in the app").get_attribute("href")
        if retry != url:
            fail("retry link", retry)

        driver.find_element(By.LINK_TEXT, "Sign in on the web").click()
        followed = [e for e in network(driver) if e["method"] == "Network.requestWillBeSent"]
        navigation = next((e for e in followed if e["params"]["request"]["url"].startswith(args.fallback)), None)
        if navigation is None:
            fail("fallback", [e["params"]["request"]["url"] for e in followed])
        sent = {k.lower(): v for k, v in navigation["params"]["request"]["headers"].items()}
        if "referer" in sent:
            fail("no Referer", sent["referer"])
        print("followed the web fallback:", navigation["params"]["request"]["url"], "| Referer sent:", sent.get("referer"))
        print("browser: the page renders, loads nothing else, and leaks no Referer")
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
