"""The web page's tests' browser: headless Chromium through Selenium (Debian's python3-selenium,
chromium, chromium-driver), a page opened against a running `transformer serve`, and a PNG of it."""
import base64
import shutil
import sys


def find(*names):
    return next((p for p in map(shutil.which, names) if p), None)


def browser_tools():
    """(webdriver, Service, chromium, chromedriver); exits 77 (ctest's skip) naming what is missing."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as e:
        print(f"SKIP: selenium is not installed ({e}; Debian: apt install python3-selenium)")
        sys.exit(77)
    chromium = find("chromium", "chromium-browser", "google-chrome")
    chromedriver = find("chromedriver")
    if not chromium or not chromedriver:
        print("SKIP: " + ("chromium" if not chromium else "chromedriver") + " is not installed "
              "(Debian: apt install chromium chromium-driver)")
        sys.exit(77)
    return webdriver, Service, chromium, chromedriver


def screenshot(driver, path):
    """Writes a PNG of the whole page (not just the viewport)."""
    width, height = driver.execute_script(
        "const e = document.documentElement; return [Math.max(e.scrollWidth, innerWidth), e.scrollHeight]")
    png = driver.execute_cdp_cmd("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                                 "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}})
    with open(path, "wb") as f:
        f.write(base64.b64decode(png["data"]))


def in_browser(tools, server, run_checks, profile, screenshot_path=None):
    """Opens a headless browser (its profile in the folder `profile`), returns run_checks(driver,
    server.url), and stops the server; on any failure (an AssertionError from the checks, a Selenium
    or URL error, the server's exit) prints it with the server's stderr and exits 1."""
    webdriver, Service, chromium, chromedriver = tools
    driver, failure, found = None, None, None
    try:
        options = webdriver.ChromeOptions()
        options.binary_location = chromium
        for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1200,900",
                     "--user-data-dir=" + profile, "--no-first-run", "--disable-extensions"):
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        driver = webdriver.Chrome(service=Service(chromedriver), options=options)
        driver.set_page_load_timeout(30)
        found = run_checks(driver, server.url)
    except Exception as e:  # AssertionError from the checks, or a Selenium/URL/subprocess error
        failure = f"{type(e).__name__}: {e}" if not isinstance(e, AssertionError) else str(e)
    finally:
        if driver is not None:
            try:
                if screenshot_path:
                    screenshot(driver, screenshot_path)
            except Exception as e:
                failure = failure or f"could not write the screenshot {screenshot_path}: {e}"
            driver.quit()
        stopped = server.stop()
    failure = failure or stopped
    if failure:
        print("FAIL: " + failure + "\nserver stderr:\n  " + "\n  ".join(server.lines), file=sys.stderr)
        sys.exit(1)
    return found
