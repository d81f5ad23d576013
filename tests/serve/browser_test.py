#!/usr/bin/python3
"""Headless-browser test of the web page that `transformer serve` shows at `/`.

Starts `transformer serve` on a free port, opens the page in headless Chromium (Selenium) and checks:
  * typing a sentence into #source (the debounced `input` handler) fills #translation with the text a
    direct POST /v1/translate gives, and #status shows no error;
  * #hypotheses lists the n-best (4, beam 4) with the API's texts and scores;
  * the SVG #heatmap has one rect.cell per (source token, target token), its labels are those tokens and
    lie inside the SVG (nothing clipped);
  * #layer and #head offer "mean" plus one option per layer / head, labelled from 0;
  * clicking the second hypothesis marks it `chosen` and redraws the heatmap with its target tokens;
  * the page loads nothing from another origin, and the console shows no errors.
Exits 77 (ctest's skip) when selenium, chromium or chromedriver is missing, non-zero on any failure.

  tests/serve/browser_test.py --binary build/transformer --model tests/fixtures/tiny_model/model.safetensors \
      [--screenshot page.png]
"""
import argparse, json, os, re, sys, tempfile, time, urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from headless import browser_tools, in_browser  # noqa: E402
from serving import Serving  # noqa: E402

SENTENCE = "three hundred forty-two"


def post(url, body):
    request = urllib.request.Request(url + "/v1/translate", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)["translations"][0]


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def run_checks(driver, url):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
    css = lambda selector: driver.find_elements(By.CSS_SELECTOR, selector)

    expected = post(url, {"text": [SENTENCE], "beam": 4})["text"]
    api = post(url, {"text": [SENTENCE], "beam": 4, "n_best": 4, "scores": True, "attention": True})
    src, hyps = api["source_tokens"], api["hypotheses"]
    layers, heads = len(hyps[0]["attention"]), len(hyps[0]["attention"][0])

    driver.get(url + "/")
    WebDriverWait(driver, 30).until(lambda d: css("#model option"), "the model list never loaded")
    driver.find_element(By.ID, "source").send_keys(SENTENCE)
    translation = driver.find_element(By.ID, "translation")
    try:
        WebDriverWait(driver, 30).until(lambda d: translation.text == expected and css("#heatmap rect.cell"))
    except Exception:
        raise AssertionError(f"#translation shows {translation.text!r}, not the API's {expected!r}, after 30 s "
                             f"(#status: {driver.find_element(By.ID, 'status').text!r})")
    status = driver.find_element(By.ID, "status")
    check("error" not in status.get_attribute("class") and status.text.startswith("translated"),
          f"#status shows {status.text!r} (class {status.get_attribute('class')!r})")

    items = css("#hypotheses li")
    check(len(items) == len(hyps) == 4, f"#hypotheses has {len(items)} entries, the API {len(hyps)} (wanted 4)")
    for i, (item, h) in enumerate(zip(items, hyps)):
        score = item.find_element(By.CSS_SELECTOR, ".score").text
        check(re.fullmatch(r"-?\d+\.\d{4}", score), f"hypothesis {i + 1} has no score: {item.text!r}")
        check(item.text.startswith(h["text"]) and abs(float(score) - h["score"]) < 1e-3,
              f"hypothesis {i + 1} shows {item.text!r}, the API gives {h['text']!r} {h['score']:.4f}")

    def check_heatmap(k):
        tgt = hyps[k]["target_tokens"]
        cells = len(css("#heatmap rect.cell"))
        check(cells == len(src) * len(tgt), f"hypothesis {k + 1}: #heatmap has {cells} cells, not "
              f"{len(src)} source x {len(tgt)} target tokens = {len(src) * len(tgt)}")
        labels = [t.get_attribute("textContent") for t in css("#heatmap text")]
        check(labels == src + tgt, f"hypothesis {k + 1}: heatmap labels {labels}, not {src + tgt}")
        clipped = driver.execute_script("""
          const box = document.getElementById('heatmap').getBoundingClientRect();
          return [...document.querySelectorAll('#heatmap text')].filter((t) => { const b = t.getBoundingClientRect();
            return b.left < box.left - 0.5 || b.top < box.top - 0.5 || b.right > box.right + 0.5 ||
                   b.bottom > box.bottom + 0.5; }).map((t) => t.textContent);""")
        check(not clipped, f"hypothesis {k + 1}: heatmap labels outside the SVG (clipped): {clipped}")

    check_heatmap(0)
    for select, count in (("layer", layers), ("head", heads)):
        values = [o.get_attribute("value") for o in css(f"#{select} option")]
        check(values == ["mean"] + [str(i) for i in range(count)],
              f"#{select} offers {values}, wanted 'mean' and {count} {select}s")
        # Labelled from 0, as `transformer attention --layer N` and its titles number them.
        labels = [o.text for o in css(f"#{select} option")]
        check(labels == values, f"#{select} labels {labels}, wanted {values}")

    items[1].click()
    WebDriverWait(driver, 5).until(lambda d: "chosen" in css("#hypotheses li")[1].get_attribute("class"),
                                   "clicking the second hypothesis did not choose it")
    chosen = [i for i, li in enumerate(css("#hypotheses li")) if "chosen" in li.get_attribute("class")]
    check(chosen == [1], f"after the click the chosen hypotheses are {chosen}, not [1]")
    check_heatmap(1)

    origin = driver.execute_script("return location.origin")
    foreign = [n for n in driver.execute_script(
        "return performance.getEntriesByType('resource').map((e) => e.name)") if not n.startswith(origin + "/")]
    check(not foreign, f"the page loads resources from elsewhere: {foreign}")
    errors = [e["message"] for e in driver.get_log("browser")
              if e["level"] == "SEVERE" and "favicon.ico" not in e["message"]]
    check(not errors, f"the console shows errors: {errors}")
    return expected, len(hyps), len(src), [len(h["target_tokens"]) for h in hyps[:2]], layers, heads


def main():
    global SENTENCE
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", required=True, help="the transformer binary")
    parser.add_argument("--model", required=True, help="the model to serve")
    parser.add_argument("--screenshot", help="write a PNG of the page here after the checks")
    parser.add_argument("--name", help="the model's name on the page (default: the file's stem)")
    parser.add_argument("--sentence", default=SENTENCE, help="what to type (default: %(default)r)")
    args = parser.parse_args()
    SENTENCE = args.sentence
    tools = browser_tools()

    started = time.monotonic()
    server = Serving(args.binary, f"{args.name}={args.model}" if args.name else args.model)
    with tempfile.TemporaryDirectory(prefix="browser_test.") as profile:
        found = in_browser(tools, server, run_checks, profile, args.screenshot)
    text, n, s, t, layers, heads = found
    print(f"ok: {SENTENCE!r} -> {text!r}; {n} hypotheses; heatmap {s}x{t[0]}, then {s}x{t[1]} for the second; "
          f"{layers} layer(s) x {heads} heads; {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
