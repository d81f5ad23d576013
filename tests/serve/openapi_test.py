#!/usr/bin/env python3
"""The server's OpenAPI document (GET /openapi.json) checked against the running command, as
schemathesis checks an API: requests generated from the document's own request schemas (valid
ones, and each field with values of the wrong type, out of range, missing, or unknown) must get a
status the document lists for the operation, never a 5xx, and a body of the content type and
schema the document gives for that status. Every documented GET answers; an undocumented path is a
JSON 404. The document's version is the program's (`transformer --version`), and the start line
counts workers and threads in good English. POST /v1/generate is checked on a second server, of a
tiny decoder-only model the test makes (`transformer init`), and each server refuses the other's
endpoint naming the architecture. Then SIGTERM ends the command with status 0.

Needs only Debian's python3 and python3-jsonschema.
  tests/serve/openapi_test.py --binary build/transformer --model tests/fixtures/tiny_model/model.safetensors
"""
import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serving import Serving  # noqa: E402

try:
    import jsonschema
except ImportError:
    print("skipped: python3-jsonschema is not installed (scripts/install-deps.sh installs it)")
    sys.exit(77)

failures = []


def fail(message):
    failures.append(message)
    print("FAIL:", message)


def request(port, method, path, body=None):
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                 headers={"Content-Type": "application/json"} if data is not None else {})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read()


class Spec:
    def __init__(self, doc):
        self.doc = doc
        registry = {"": doc}
        self.resolver = jsonschema.RefResolver("", doc, store=registry)

    def resolve(self, node):
        while isinstance(node, dict) and "$ref" in node:
            node = self.resolver.resolve(node["$ref"])[1]
        return node

    def validator(self, schema):
        return jsonschema.Draft202012Validator(schema, resolver=self.resolver)

    def check_response(self, op_name, operation, status, content_type, body):
        responses = operation["responses"]
        if str(status) not in responses:
            fail(f"{op_name}: status {status} is not documented ({sorted(responses)}): {body[:200]!r}")
            return
        if status >= 500:
            fail(f"{op_name}: a server error {status}: {body[:200]!r}")
        response = self.resolve(responses[str(status)])
        media = response.get("content", {})
        kind = content_type.split(";")[0].strip()
        if kind not in media:
            fail(f"{op_name}: status {status} came as {kind!r}, documented {sorted(media)}")
            return
        if kind == "application/json":
            try:
                value = json.loads(body)
            except ValueError:
                fail(f"{op_name}: status {status}: the body is not JSON: {body[:200]!r}")
                return
            errors = list(self.validator(media[kind]["schema"]).iter_errors(value))
            if errors:
                fail(f"{op_name}: status {status}: the body breaks its schema: {errors[0].message}")


def values(schema, spec, depth=0):
    """Valid and invalid values for a schema node: (value, valid?)."""
    schema = spec.resolve(schema)
    wrong = [None, 3.5, "x", [], {}, True]
    if "oneOf" in schema:
        out = []
        for option in schema["oneOf"]:
            out += values(option, spec, depth)
        return out
    kind = schema.get("type")
    if kind == "integer":
        lo = schema.get("minimum", 0)
        return [(lo, True), (lo + 1, True), (4, True), (lo - 1, False), (2**64 - 1, False), (1e30, False)] + \
               [(w, False) for w in wrong if not isinstance(w, bool)]
    if kind == "number":
        lo, hi = schema.get("minimum", -1e9), schema.get("maximum", 1e9)
        return [(lo, True), (hi, True), ((lo + hi) / 2 if hi < 1e9 else lo + 1, True), (lo - 1, False),
                (hi + 1, False), ("1", False), (None, False)]
    if kind == "boolean":
        return [(True, True), (False, True), ("true", False), (1, False), (None, False)]
    if kind == "string":
        good = ["one", "three hundred forty-two", "zwei\u00e9"]
        return [(g, True) for g in good] + [("", False), ("   ", False), (7, False), (None, False),
                                            ("a" * 100000, False)]
    if kind == "array":
        items = spec.resolve(schema["items"])
        good = [v for v, ok in values(items, spec, depth + 1) if ok][:3]
        return [([good[0]], True), (good, True), (good * 3, True), ([], False), ([good[0], 5], False),
                ([good[0]] * 50, False)]
    return [(w, False) for w in wrong]


def generated_bodies(schema, spec, rng, count, model="tiny"):
    """Objects built from the request schema: each property from its value list, some left out,
    sometimes an unknown field, sometimes a required one missing."""
    schema = spec.resolve(schema)
    props = schema["properties"]
    choices = {name: values(sub, spec) for name, sub in props.items()}
    for name in ("model",):
        if name in choices:
            choices[name] = [(model, True), ("no-such-model", False), (3, False)]
    for name in ("source_lang", "target_lang"):  # the tiny model has no language codes: only "" is valid
        if name in choices:
            choices[name] = [("", True), ("de", False), (3, False)]
    bodies = []
    for _ in range(count):
        body = {}
        for name, options in choices.items():
            required = name in schema.get("required", [])
            if required or rng.random() < 0.5:
                body[name] = rng.choice(options)[0]
        if rng.random() < 0.1:
            body["unknown_field"] = 1
        if rng.random() < 0.1 and schema.get("required"):
            body.pop(rng.choice(schema["required"]), None)
        bodies.append(body)
    # Each property alone with each of its values, the others valid.
    base = {name: next(v for v, ok in choices[name] if ok) for name in schema.get("required", [])}
    for name, options in choices.items():
        for value, _ in options:
            bodies.append(dict(base, **{name: value}))
    return bodies


# Generation: a tiny decoder-only model of the translation model's vocabulary, served on its own
# (POST /v1/generate needs one; the translation model's server refuses it, naming the architecture).
def start_lm_server(binary, model, extra, folder):
    info = subprocess.run([binary, "info", model], capture_output=True, text=True, check=True).stdout
    vocab_size = next(line.split()[1] for line in info.splitlines() if line.split()[:1] == ["vocab_size"])
    lm = os.path.join(folder, "lm.safetensors")
    subprocess.run([binary, "init", "--preset", "tiny", "--vocab-size", vocab_size, "--architecture", "decoder-only",
                    "--encoder-layers", "0", "--d-model", "16", "--heads", "2", "--d-ff", "32", "--positions",
                    "learned", "--max-positions", "128", "-o", lm], capture_output=True, check=True)
    vocab = os.path.join(os.path.dirname(os.path.abspath(model)), "vocab.model")
    return Serving(binary, "lm=" + lm, [*extra, "--vocab", vocab])


def check_architecture_refusals(port, lm_port):
    for where, path, body, words in [
            (lm_port, "/v1/translate", {"text": "one"}, "'lm' is a decoder-only model"),
            (port, "/v1/generate", {"prompts": "one"}, "'tiny' is an encoder-decoder model")]:
        status, kind, answer = request(where, "POST", path, body)
        if status != 400 or words not in json.loads(answer).get("error", ""):
            fail(f"POST {path} on a model of another architecture: expected a 400 saying {words!r}, got "
                 f"{status} {answer[:200]!r}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--requests", type=int, default=150, help="generated bodies per operation")
    args = parser.parse_args()

    extra = ["--max-sentences", "8", "--max-text-length", "1000", "--max-body-bytes", "60000",
             "--workers", "2", "--threads", "1"]
    server = Serving(args.binary, "tiny=" + args.model, extra)
    port = server.port
    folder = tempfile.mkdtemp()
    lm_server = None
    try:
        lm_server = start_lm_server(args.binary, args.model, extra, folder)
        served_by = {"/v1/generate": (lm_server.port, "lm")}  # generation: the language model's server
        check_architecture_refusals(port, lm_server.port)
        start = [line for line in server.lines if line.startswith("serving ")]
        if not start or not re.search(r"\(2 workers of 1 thread;", start[0]):
            fail(f"the start line does not say '2 workers of 1 thread': {start}")
        status, kind, body = request(port, "GET", "/openapi.json")
        assert status == 200 and kind.startswith("application/json"), (status, kind)
        doc = json.loads(body)
        version = subprocess.run([args.binary, "--version"], capture_output=True, text=True, check=True).stdout
        if doc["info"]["version"] != version.split()[-1]:
            fail(f"the document's version {doc['info']['version']!r} is not the program's ({version.strip()!r})")
        spec = Spec(doc)
        for name, schema in doc["components"]["schemas"].items():
            jsonschema.Draft202012Validator.check_schema(schema)
        rng = random.Random(1)
        sent = 0
        for path, methods in doc["paths"].items():
            for method, operation in methods.items():
                op_name = f"{method.upper()} {path}"
                op_port, op_model = served_by.get(path, (port, "tiny"))
                if "requestBody" in operation:
                    schema = operation["requestBody"]["content"]["application/json"]["schema"]
                    bodies = generated_bodies(schema, spec, rng, args.requests, op_model)
                    bodies += [b"{not json", b"[]", b"null", b"\"text\"", b"{\"text\": \"\xff\"}"]
                    statuses = {}
                    for body in bodies:
                        status, kind, answer = request(op_port, method.upper(), path, body)
                        statuses[status] = statuses.get(status, 0) + 1
                        spec.check_response(op_name, operation, status, kind, answer)
                        sent += 1
                    print(f"{op_name}: {len(bodies)} requests, statuses {dict(sorted(statuses.items()))}")
                    if statuses.get(200, 0) == 0 or not any(400 <= s < 500 for s in statuses):
                        fail(f"{op_name}: the generated requests did not reach both 200 and a 4xx: {statuses}")
                    # The wrong method: documented as not there (405 with Allow).
                    status, kind, answer = request(port, "GET", path)
                    if status != 405 or not kind.startswith("application/json"):
                        fail(f"GET {path}: expected a JSON 405, got {status} {kind}")
                else:
                    status, kind, answer = request(port, method.upper(), path)
                    spec.check_response(op_name, operation, status, kind, answer)
                    print(f"{op_name}: {status} {kind}")
                    sent += 1
        # Methods a path does not take: 405, naming the one it does in Allow.
        for path, methods in doc["paths"].items():
            for method in ["PUT", "DELETE", "PATCH"] + (["POST"] if "post" not in methods else ["GET"]):
                if method.lower() in methods:
                    continue
                status, kind, answer = request(port, method, path, b"{}" if method != "GET" else None)
                if status != 405 or not kind.startswith("application/json"):
                    fail(f"{method} {path}: expected a JSON 405, got {status} {kind}")
        status, kind, answer = request(port, "GET", "/v1/nothing")
        if status != 404 or "error" not in json.loads(answer):
            fail(f"GET /v1/nothing: expected a JSON 404, got {status} {answer[:100]!r}")
        # Every route the server answers is documented (the page's, the API's, the operational ones).
        for path in ["/", "/health", "/metrics", "/openapi.json", "/v1/models", "/v1/translate", "/v1/score",
                     "/v1/generate"]:
            if path not in doc["paths"]:
                fail(f"{path} is served but not documented")
        print(f"{sent} requests checked against the document")
    finally:
        stopped = server.stop()
        if stopped:
            fail("SIGTERM: " + stopped)
        stopped = lm_server.stop() if lm_server else None
        if stopped:
            fail("SIGTERM (the language model's server): " + stopped)
        shutil.rmtree(folder, ignore_errors=True)
    if failures:
        sys.exit(f"{len(failures)} failures")
    print("ok")


if __name__ == "__main__":
    main()
