#!/usr/bin/python3
"""Headless-browser test of the web page's generate and embed boxes (`transformer serve`, `/`).

Makes a tiny decoder-only and a tiny encoder-only model (`transformer init`, random weights, the
translation model's vocabulary), serves them with the translation model, opens the page in headless
Chromium (Selenium) and checks:
  * the first model (decoder-only) shows the generate box and hides the translation's boxes;
  * typing a prompt and pressing Generate shows exactly the continuation a direct POST /v1/generate
    gives (greedy, the same max new tokens), and #status counts as many tokens as the API streams;
  * the continuation arrives piece by piece: the output goes through at least two different
    non-empty states before the last, each a prefix of the answer;
  * sampling (top-k, top-p, temperature, seed) shows what the API gives for the same fields;
  * Stop ends a stream early: the output stays a strict prefix of the whole continuation, #status
    says "stopped", the buttons are back as before;
  * a max new tokens beyond the server's limit shows the API's own error in #status;
  * the encoder-only model shows the embed box (the vector's dimension and first values, as
    POST /v1/embed gives them); the encoder-decoder model the translation box again;
  * nothing loads from another origin, and the console shows no errors but the refused request's.
Exits 77 (ctest's skip) when selenium, chromium or chromedriver is missing, non-zero on any failure.

  tests/serve/browser_generate_test.py --binary build/transformer --model tests/fixtures/tiny_model/model.safetensors
"""
import argparse, json, os, shutil, subprocess, sys, tempfile, time, urllib.error, urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser_test import check  # noqa: E402
from headless import browser_tools, in_browser  # noqa: E402
from serving import Serving  # noqa: E402

PROMPT = "three hundred"
MAX_NEW = 24       # the greedy continuation compared with the API's
STOP_MAX_NEW = 96  # long enough that Stop comes before the end (the model has 128 positions)


def post(url, path, body):
    """The JSON answer and status of POST path (an HTTP error's JSON body too)."""
    request = urllib.request.Request(url + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def generated(url, body):
    status, answer = post(url, "/v1/generate", body)
    check(status == 200, f"POST /v1/generate {body} answered {status}: {answer}")
    return json.loads(answer)["generations"][0]["text"]


def streamed_tokens(url, body):
    """The number of token events of the streamed answer to body."""
    status, answer = post(url, "/v1/generate", dict(body, stream=True))
    check(status == 200, f"POST /v1/generate {body} (streamed) answered {status}: {answer}")
    events = [json.loads(line[5:]) for line in answer.splitlines() if line.startswith("data:")]
    return sum(1 for e in events if "id" in e)


def make_models(binary, model, folder):
    """Tiny random decoder-only and encoder-only models with the translation model's vocabulary
    (beside them, where a server of several models looks for each one's)."""
    info = subprocess.run([binary, "info", model], capture_output=True, text=True, check=True).stdout
    vocab_size = next(line.split()[1] for line in info.splitlines() if line.split()[:1] == ["vocab_size"])
    shutil.copy(os.path.join(os.path.dirname(os.path.abspath(model)), "vocab.model"), folder)
    paths = []
    # The language model is large enough (7M parameters, a few ms a token on one thread) that its
    # tokens come one by one, as a real model's do, rather than all in the first read.
    for name, shape in (("lm", ["--architecture", "decoder-only", "--encoder-layers", "0", "--decoder-layers", "4",
                                "--d-model", "384", "--heads", "4", "--d-ff", "1536"]),
                        ("enc", ["--architecture", "encoder-only", "--decoder-layers", "0", "--d-model", "16",
                                 "--heads", "2", "--d-ff", "32"])):
        path = os.path.join(folder, name + ".safetensors")
        subprocess.run([binary, "init", "--preset", "tiny", "--vocab-size", vocab_size, *shape, "--positions", "learned",
                        "--max-positions", "128", "--seed", "2", "-o", path], capture_output=True, check=True)
        paths.append(f"{name}={path}")
    return paths


class Page:
    """The page in the driver: its elements by id, waits that poll every 50 ms, and its fields."""

    def __init__(self, driver):
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import Select, WebDriverWait
        self.driver, self.by, self.select_of, self.waiter = driver, By, Select, WebDriverWait

    def element(self, id):
        return self.driver.find_element(self.by.ID, id)

    def wait(self, seconds):
        return self.waiter(self.driver, seconds, poll_frequency=0.05)  # Selenium polls every 0.5 s

    def set_value(self, id, value):
        self.element(id).clear()
        self.element(id).send_keys(str(value))

    def select(self, id, value):
        self.select_of(self.element(id)).select_by_value(value)

    def wait_status(self, prefix, what):
        status = self.element("status")
        try:
            self.wait(30).until(lambda d: status.text.startswith(prefix))
        except Exception:
            raise AssertionError(f"{what}: #status shows {status.text!r} after 30 s, not {prefix!r}… "
                                 f"(#generation: {self.element('generation').text!r})")

    def record(self):
        """Records every state of #generation from now on (window.states), as the page shows them."""
        self.driver.execute_script("""
          window.states = [];
          const output = document.getElementById('generation');
          new MutationObserver(() => window.states.push(output.textContent))
              .observe(output, {childList: true, characterData: true, subtree: true});""")

    def generate_controls_idle(self):
        return self.element("generate").is_enabled() and not self.element("stop").is_enabled()


def api_answers(url):
    """What the API itself answers to the requests the page will make."""
    greedy = {"model": "lm", "prompts": [PROMPT], "max_new_tokens": MAX_NEW}
    answers = {"expected": generated(url, greedy), "tokens": streamed_tokens(url, greedy),
               "sampled": generated(url, dict(greedy, sampling_topk=5, sampling_topp=0.9,
                                                 sampling_temperature=1.5, seed=7)),
               "whole": generated(url, dict(greedy, max_new_tokens=STOP_MAX_NEW)), "too_many": 100000}
    code, refusal = post(url, "/v1/generate", dict(greedy, max_new_tokens=answers["too_many"]))
    check(code == 400, f"max_new_tokens {answers['too_many']}: the API answered {code}, not 400: {refusal}")
    answers["refusal"] = json.loads(refusal)["error"]
    code, embedded = post(url, "/v1/embed", {"model": "enc", "texts": [PROMPT]})
    check(code == 200, f"POST /v1/embed answered {code}: {embedded}")
    answers["vector"] = json.loads(embedded)["embeddings"][0]
    return answers


def check_loaded(page):
    """A decoder-only model, the first served: the generate box alone."""
    page.wait(30).until(lambda d: page.element("model").get_attribute("value") == "lm", "the model list never loaded")
    page.wait(5).until(lambda d: page.element("generate-box").is_displayed(),
                       "a decoder-only model does not show the generate box")
    for hidden in ("translate-box", "translate-details", "translate-controls", "embed-box", "sampling-controls"):
        check(not page.element(hidden).is_displayed(), f"a decoder-only model shows #{hidden}")
    heading = page.element("heading").text
    check(heading == "transformer · generate", f"the heading is {heading!r}")
    check(not page.element("stop").is_enabled(), "Stop is enabled before anything is generated")


def check_greedy(page, answers):
    """Greedy: the same text as the API's, arriving in pieces. Returns the pieces seen."""
    status, output, expected = page.element("status"), page.element("generation"), answers["expected"]
    page.element("prompt").send_keys(PROMPT)
    page.set_value("max-new-tokens", MAX_NEW)
    page.record()
    page.element("generate").click()
    page.wait_status("generated", "greedy generation")
    check(output.text == expected, f"#generation shows {output.text!r}, the API {expected!r}")
    check(status.text.startswith(f"generated {answers['tokens']} tokens"),
          f"#status says {status.text!r}: the API streams {answers['tokens']} tokens")
    check("error" not in status.get_attribute("class"), f"#status is an error: {status.text!r}")
    states = [s for s in page.driver.execute_script("return window.states") if s]
    growing = [s for i, s in enumerate(states) if s != expected and (i == 0 or s != states[i - 1])]
    check(len(growing) >= 2, f"the continuation did not arrive in pieces: the states shown were {states}")
    check(all(expected.startswith(s) for s in growing),
          f"#generation showed states that are no prefix of {expected!r}: {growing}")
    check(page.generate_controls_idle(), "after the generation Generate is not enabled, or Stop still is")
    return growing


def check_sampling(page, answers):
    """Sampling: the API's fields as typed."""
    page.select("search", "sampling")
    check(page.element("sampling-controls").is_displayed(), "choosing sampling shows no sampling fields")
    for id, value in (("topk", 5), ("topp", 0.9), ("temperature", 1.5), ("seed", 7)):
        page.set_value(id, value)
    page.element("generate").click()
    page.wait_status("generated", "sampling")
    shown = page.element("generation").text
    check(shown == answers["sampled"], f"sampling: #generation shows {shown!r}, the API {answers['sampled']!r}")
    page.select("search", "greedy")


def check_stop(page, answers):
    """Stop, pressed as soon as the first piece of a long continuation is shown (by the page itself,
    so that it comes before the end however slowly the test polls). Returns the text kept."""
    status, output, whole = page.element("status"), page.element("generation"), answers["whole"]
    page.set_value("max-new-tokens", STOP_MAX_NEW)
    page.driver.execute_script("""
      const output = document.getElementById('generation');
      const observer = new MutationObserver(() => {
        if (output.textContent) { observer.disconnect(); document.getElementById('stop').click(); }
      });
      observer.observe(output, {childList: true, characterData: true, subtree: true});""")
    page.element("generate").click()
    page.wait_status("stopped after", "Stop")
    shown = output.text
    time.sleep(0.3)
    check(output.text == shown, f"after Stop the output still grew: {shown!r}, then {output.text!r}")
    check(whole.startswith(shown) and len(shown) < len(whole),
          f"after Stop #generation shows {shown!r}, not a strict prefix of the whole {whole!r}")
    check("error" not in status.get_attribute("class"), f"Stop shows an error: {status.text!r}")
    check(page.generate_controls_idle(), "after Stop Generate is not enabled, or Stop still is")
    return shown


def check_refusal(page, answers):
    """A value the API refuses: its error, as it words it."""
    status, output = page.element("status"), page.element("generation")
    page.set_value("max-new-tokens", answers["too_many"])
    page.element("generate").click()
    page.wait(30).until(lambda d: "error" in status.get_attribute("class"),
                        f"max new tokens {answers['too_many']}: #status shows no error: {status.text!r}")
    check(status.text == answers["refusal"],
          f"#status shows {status.text!r}, the API's error is {answers['refusal']!r}")
    check(output.text == "", f"a refused request leaves {output.text!r} in #generation")


def check_other_models(page, answers):
    """The encoder-only model: the embed box; the encoder-decoder model: the translation again."""
    status, vector = page.element("status"), answers["vector"]
    page.select("model", "enc")
    check(page.element("embed-box").is_displayed() and not page.element("generate-box").is_displayed(),
          "an encoder-only model does not show the embed box (or still the generate box)")
    check(status.text == "", f"changing the model leaves #status {status.text!r}")
    page.element("embed-text").send_keys(PROMPT)
    embedding = page.element("embedding")
    first = ", ".join(f"{v:.4f}" for v in vector[:8])
    try:
        page.wait(30).until(lambda d: embedding.text.startswith(f"dimension {len(vector)}"))
    except Exception:
        raise AssertionError(f"#embedding shows {embedding.text!r}, not the dimension {len(vector)} "
                             f"(#status: {status.text!r})")
    check(f"[{first}" in embedding.text, f"#embedding shows {embedding.text!r}, the API's first values are {first}")
    page.select("model", "tiny")
    check(page.element("translate-box").is_displayed() and not page.element("embed-box").is_displayed(),
          "an encoder-decoder model does not show the translation box (or still the embed box)")


def check_self_contained(driver):
    """Nothing loaded from another origin; no console error but Chromium's own line for the refused request."""
    origin = driver.execute_script("return location.origin")
    foreign = [n for n in driver.execute_script(
        "return performance.getEntriesByType('resource').map((e) => e.name)") if not n.startswith(origin + "/")]
    check(not foreign, f"the page loads resources from elsewhere: {foreign}")
    errors = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE" and
              "favicon.ico" not in e["message"] and not ("/v1/generate" in e["message"] and " 400 " in e["message"])]
    check(not errors, f"the console shows errors: {errors}")


def run_checks(driver, url):
    answers = api_answers(url)
    driver.get(url + "/")
    page = Page(driver)
    check_loaded(page)
    growing = check_greedy(page, answers)
    check_sampling(page, answers)
    shown = check_stop(page, answers)
    check_refusal(page, answers)
    check_other_models(page, answers)
    check_self_contained(driver)
    return answers["expected"], answers["tokens"], len(growing), shown, len(answers["vector"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", required=True, help="the transformer binary")
    parser.add_argument("--model", required=True, help="the translation model (its vocab.model beside it)")
    parser.add_argument("--screenshot", help="write a PNG of the page here after the checks")
    args = parser.parse_args()
    tools = browser_tools()

    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="browser_generate_test.") as folder:
        lm, enc = make_models(args.binary, args.model, folder)
        server = Serving(args.binary, lm, ["-m", enc, "-m", "tiny=" + args.model, "--workers", "1"])
        found = in_browser(tools, server, run_checks, os.path.join(folder, "profile"), args.screenshot)
    text, tokens, pieces, shown, dimension = found
    print(f"ok: {PROMPT!r} -> {text!r} ({tokens} tokens, shown in {pieces}+ pieces); stopped at {shown!r}; "
          f"embedding of dimension {dimension}; {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
