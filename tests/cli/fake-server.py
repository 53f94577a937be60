#!/usr/bin/env python3
"""A stand-in for vLLM and SGLang in tests: no model, no GPU, standard library only.

usage: fake-server.py PORTFILE LOGFILE [SCRIPT]

Listens on 127.0.0.1 on a port the OS picks and writes that port to PORTFILE
(by rename, so a reader never sees half a number). Every request is appended
to LOGFILE as one JSON line {"method", "path", "body", "t"}, t its time in
seconds.

It answers, in the shapes the real servers use (tests/data/collect/SOURCES):
  GET  /v1/models            vLLM's model list; "root" is the script's model_path
  GET  /get_model_info       SGLang's; "model_path" likewise
  POST /v1/completions       vLLM: n choices, token_ids and prompt_token_ids when
                             the request asks return_token_ids, else token
                             strings (as "token_id:N" when the script says
                             tokens_as_ids)
  POST /generate             SGLang: a list of n objects (one object for n = 1)
  POST anything else         {"success": true}: the weight-sync endpoints, which
                             tests check in the log

Samples are a function of the prompt alone, so every run gives the same bytes.
A text prompt's token ids are its bytes. Response ids are the prompt's hash and
the attempt number. With "vocab": N in the script, every id (prompt and
response) is taken modulo N, for a model whose tokenizer has N ids.

SCRIPT, a JSON file read again at every request so a test may change it:
  {"model_path": "/m/step_3", "tokens_as_ids": false, "vocab": 13, "bos": 1,
   "plans": {"KEY": ["500", "ok"], ...}, "slow_s": 3, "release": "/t/go"}
"bos": B puts B before every prompt's ids, as a server that adds a BOS token
does: the answer's prompt ids then differ from a request's.
KEY is the prompt text, or its token ids joined by commas, or for a GET its
path ("/v1/models": 500, 503, 404, 429:S, 503:S, drop and ok). The n-th
request for a prompt follows the plan's n-th action, the last one repeating:
  ok        answer well
  500, 400  that HTTP status
  429:S     HTTP 429 with Retry-After: S
  slow      answer well after slow_s seconds (past the client's --timeout),
            or with "release": PATH once PATH exists (a test's signal, at most
            after 120 s), so a test holding a request in flight needs no timing
  drop      close the connection without answering
  truncate  a 200 whose JSON body is cut in half
  choices   one sample too few
  notokens  vLLM: no token ids in the answer
  long      every sample one token longer than max_tokens (max_new_tokens) allows
  zeropad   vLLM: the first response token id written with a leading zero (05),
            which JSON forbids
"""
import hashlib
import http.server
import json
import os
import sys
import threading
import time

def hold(sc):
    """A slow answer's wait: until the release file exists, or slow_s seconds."""
    release = sc.get("release")
    if not release:
        time.sleep(sc.get("slow_s", 3))
        return
    end = time.time() + 120
    while not os.path.exists(release) and time.time() < end:
        time.sleep(0.05)


PORTFILE, LOGFILE = sys.argv[1], sys.argv[2]
SCRIPT = sys.argv[3] if len(sys.argv) > 3 else None
lock = threading.Lock()
attempts = {}


def script():
    if not SCRIPT or not os.path.exists(SCRIPT):
        return {}
    with open(SCRIPT) as f:
        return json.load(f)


def prompt_ids(req, sglang):
    p = req.get("input_ids" if sglang else "prompt")
    if sglang and p is None:
        p = req.get("text")
    if sglang and isinstance(req.get("sampling_params"), list):
        assert all(x == p[0] for x in p), "a batch of copies of one prompt"
        p = p[0]
    if isinstance(p, str):
        return list(p.encode()), p
    return list(p), ",".join(str(x) for x in p)


def sample(ids, j, max_tokens, vocab=None, over=False):
    """Sample j of a prompt: 1 to 3 tokens (max_tokens + 1 when over), binary-exact logprobs."""
    length = max_tokens + 1 if over else min(1 + (sum(ids) + j) % 3, max_tokens)
    toks = [10 + (sum(ids) * 7 + j * 13 + k) % 90 for k in range(length)]
    if vocab:
        toks = [t % vocab for t in toks]
    lps = [-0.125 * (1 + (j + k) % 8) for k in range(length)]
    finish = "stop" if length < max_tokens else "length"
    return toks, lps, finish


def vllm(req, ids, rid, n, sc, action):
    choices = []
    for j in range(n):
        draw = req["seed"] + j if "seed" in req else j   # vLLM's n children: seed + j
        toks, lps, finish = sample(ids, draw, req.get("max_tokens", 16), sc.get("vocab"), action == "long")
        strs = ["token_id:%d" % t if sc.get("tokens_as_ids") else chr(t) for t in toks]
        c = {"index": j, "text": "".join(chr(t) for t in toks),
             "logprobs": {"text_offset": list(range(len(toks))), "token_logprobs": lps,
                          "tokens": strs, "top_logprobs": [{s: lp} for s, lp in zip(strs, lps)]},
             "finish_reason": finish, "stop_reason": None}
        if req.get("return_token_ids") and action != "notokens":
            c["token_ids"] = toks
            c["prompt_logprobs"] = None
            c["prompt_token_ids"] = ids
        choices.append(c)
    done = sum(len(c["logprobs"]["tokens"]) for c in choices)
    return {"id": "cmpl-" + rid, "object": "text_completion", "created": 1735689700,
            "model": req.get("model", "fake-model"), "choices": choices,
            "usage": {"prompt_tokens": len(ids), "total_tokens": len(ids) + done, "completion_tokens": done}}


def sglang(req, ids, rid, n, sc, action):
    sps = req.get("sampling_params", {})
    out = []
    for j in range(n):
        # a batch has one sampling_params per sample; a request's n samples
        # share its sampling_seed, and draw alike, as under SGLang's
        # --enable-deterministic-inference
        sp = sps[j] if isinstance(sps, list) else sps
        draw = sp["sampling_seed"] if "sampling_seed" in sp else j
        toks, lps, finish = sample(ids, draw, sp.get("max_new_tokens", 16), sc.get("vocab"), action == "long")
        meta = {"id": "%s-%d" % (rid, j),
                "finish_reason": {"type": "stop", "matched": 2} if finish == "stop"
                else {"type": "length", "length": len(toks)},
                "prompt_tokens": len(ids), "weight_version": "default", "completion_tokens": len(toks),
                "cached_tokens": 0, "output_token_logprobs": [[lp, t, None] for t, lp in zip(toks, lps)],
                "e2e_latency": 0.01}
        if req.get("logprob_start_len", -1) == 0:
            meta["input_token_logprobs"] = [[None if k == 0 else -0.5, t, None] for k, t in enumerate(ids)]
        out.append({"text": "".join(chr(t) for t in toks), "output_ids": toks, "meta_info": meta})
    return out if n != 1 else out[0]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, code, obj=None, raw=None, headers=()):
        body = raw if raw is not None else json.dumps(obj).encode()
        self.send_response(code)
        for h in headers:
            self.send_header(*h)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def record(self, body):
        with lock, open(LOGFILE, "a") as f:
            f.write(json.dumps({"method": self.command, "path": self.path, "body": body,
                                "t": round(time.time(), 3)}) + "\n")

    def do_GET(self):
        self.record(None)
        sc = script()
        path = sc.get("model_path", "/models/fake")
        # a plan keyed by the path ("/v1/models"): a server being restarted
        with lock:
            k = attempts[self.path] = attempts.get(self.path, 0) + 1
        plan = sc.get("plans", {}).get(self.path, ["ok"])
        if self.scripted_failure(plan[min(k, len(plan)) - 1], ("500", "503", "404")):
            return
        if self.path == "/v1/models":
            self.send(200, {"object": "list", "data": [
                {"id": "fake-model", "object": "model", "created": 0, "owned_by": "vllm",
                 "root": path, "parent": None, "max_model_len": 4096}]})
        elif self.path == "/get_model_info":
            self.send(200, {"model_path": path, "tokenizer_path": path, "is_generation": True})
        else:
            self.send(404, {"detail": "Not Found"})

    def scripted_failure(self, action, codes):
        """Answer a planned failure: an HTTP status of codes, a 429 or 503
        asking to wait ("429:S"), or a dropped connection. True if it did."""
        if action in codes:
            self.send(int(action), {"object": "error", "message": "scripted failure", "code": int(action)})
        elif action[:4] in ("429:", "503:"):
            self.send(int(action[:3]), {"object": "error", "message": "scripted failure", "code": int(action[:3])},
                      headers=[("Retry-After", action[4:])])
        elif action == "drop":
            self.close_connection = True
            self.connection.shutdown(2)
        else:
            return False
        return True

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            req = json.loads(raw)
        except ValueError:
            req = raw.decode(errors="replace")
        self.record(req)
        if self.path not in ("/v1/completions", "/generate"):
            self.send(200, {"success": True, "message": "ok"})
            return
        sc = script()
        is_sglang = self.path == "/generate"
        ids, key = prompt_ids(req, is_sglang)
        if sc.get("vocab"):
            ids = [i % sc["vocab"] for i in ids]
        if "bos" in sc:
            ids = [sc["bos"]] + ids
        with lock:
            k = attempts[key] = attempts.get(key, 0) + 1
        plan = sc.get("plans", {}).get(key, ["ok"])
        action = plan[min(k, len(plan)) - 1]
        sps = req.get("sampling_params", {})
        n = len(sps) if is_sglang and isinstance(sps, list) else (sps if is_sglang else req).get("n", 1)
        rid = "%s-%d" % (hashlib.sha1(key.encode()).hexdigest()[:12], k)
        if self.scripted_failure(action, ("500", "400")):
            return
        if action == "slow":
            hold(sc)
        m = n - 1 if action == "choices" else n
        obj = sglang(req, ids, rid, m, sc, action) if is_sglang else vllm(req, ids, rid, m, sc, action)
        if is_sglang and action == "choices" and m == 1:
            obj = [obj]
        body = json.dumps(obj).encode()
        if action == "truncate":
            body = body[: len(body) // 2]
        if action == "zeropad":
            body = body.replace(b'"token_ids": [', b'"token_ids": [0', 1)
        try:
            self.send(200, raw=body)
        except OSError:
            pass


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
srv.daemon_threads = True
with open(PORTFILE + ".tmp", "w") as f:
    f.write("%d\n" % srv.server_address[1])
os.rename(PORTFILE + ".tmp", PORTFILE)
srv.serve_forever()
