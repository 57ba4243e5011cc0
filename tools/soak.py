#!/usr/bin/env python3
"""A bounded loopback soak of `taco_llm serve` (standard library only).

Starts the server itself (the built-in demo model unless --model, --device cpu, an API key, a small KV cache so that
long prompts preempt one another, --port 0), then for --minutes N sends, from --threads worker threads, a weighted
mix of request classes, each with the outcome it must get:

  valid (must get 200 and a complete body; streams end with [DONE] and one finish_reason per choice):
    completion, completion_stream, chat, chat_stream  (some with n > 1, logprobs, stop strings, a prompt list)
    kv_pressure     a burst of --burst long token-id prompts at once (more KV than the cache holds: preemption)
    keepalive       three requests on one connection
    pipelined       HEAD /version, a completion and GET /health written at once on one connection
    chunked         a body sent with Transfer-Encoding: chunked
    expect_continue Expect: 100-continue, the body sent only after the server's 100
    slow_valid      a valid request written a few bytes at a time over a few seconds
  aborted (the client leaves; the server must clean up, checked at the end):
    abort_stream    a stream read for a few events, then the socket closed (sometimes reset)
    disconnect      a request sent and the socket closed before reading anything
    slow_abandon    a header written slowly, never finished, then closed
  malformed (must get exactly this status):
    bad_json 400, wrong_type 400, unknown_model 404, deep_json 400, huge_prompt 400 (a 200k-id prompt),
    too_long 400 (prompt + max_tokens over the context), n_too_big 400, body_too_big 413 (declared length),
    bad_auth 401, no_auth 401, wrong_content_type 415, garbage 400 (raw bytes), header_too_big 431,
    bad_transfer_coding 501, no_host 400, wrong_method 405, no_route 404

Every request is checked as it completes. A monitor thread checks every second that the server process is alive
and samples /metrics (peak running/waiting requests and KV usage). At the end the script waits for the server to be
idle and checks: vllm:num_requests_running, vllm:num_requests_waiting and vllm:kv_cache_usage_perc back to 0; at
least one preemption happened (unless --allow-no-preemption); vllm:request_success_total (summed over its
finished_reason labels) grew by at least the number of valid choices the client saw complete (prompts x n: the server
counts each of a request's n samples, as vLLM V1 counts each of its child requests) and by no more than that plus the
choices of the requests it left; the server's open
file descriptors (/proc/PID/fd) back to their baseline + --fd-margin; its VmRSS (/proc/PID/status) within
--rss-margin-mb of its baseline (the baseline is taken after a warm-up, at idle: what grows after that is the
allocator's cache of freed memory and thread arenas, bounded, or a leak, unbounded); no "threw" warning in the
server's log; and a clean exit on SIGTERM. It prints a table per class (count, failures, p50/p99 latency) and exits
1 on any failure.

  tools/soak.py --taco build/cuda/taco_llm --minutes 3
"""
import argparse
import collections
import http.client
import json
import os
import random
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

KEY = "soak-key"
VOCAB_LO, VOCAB_HI = 100, 6000  # token ids that exist in the demo model's vocabulary (6144)

# ---------------------------------------------------------------------------------------------------------------
# Results


class Results:
    def __init__(self):
        self.lock = threading.Lock()
        self.count = collections.Counter()
        self.failed = collections.Counter()
        self.latency = collections.defaultdict(list)
        self.failures = []  # (class, message)
        # Choices (prompts x n) of valid requests that completed: the server counted each as a success.
        self.valid_ok_prompts = 0
        self.aborted_prompts = 0  # choices of requests the client left: the server may or may not count them

    def record(self, cls, ok, latency, message="", valid_prompts=0, aborted_prompts=0):
        with self.lock:
            self.count[cls] += 1
            if ok:
                self.latency[cls].append(latency)
                self.valid_ok_prompts += valid_prompts
            else:
                self.failed[cls] += 1
                if len(self.failures) < 200:
                    self.failures.append((cls, message[:400]))
            self.aborted_prompts += aborted_prompts

    def fail(self, cls, message):
        self.record(cls, False, 0.0, message)


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100.0 * (len(values) - 1))))]


class Check(Exception):
    """A request whose outcome is not the one its class must get."""


def expect(cond, message):
    if not cond:
        raise Check(message)


# ---------------------------------------------------------------------------------------------------------------
# The server


class Server:
    def __init__(self, args):
        self.args = args
        self.log = tempfile.NamedTemporaryFile(prefix="soak_server_", suffix=".log", delete=False)
        cmd = [args.taco, "serve"] + ([args.model] if args.model else []) + [
            "--device", args.device, "--host", "127.0.0.1", "--port", "0", "--api-key", KEY,
            "--disable-log-requests", "--max-num-seqs", str(args.max_num_seqs),
            "--served-model-name", "demo"]  # the name every request body uses, whatever the model
        if args.kv_cache_gb:
            cmd += ["--kv-cache-gb", str(args.kv_cache_gb)]
        else:
            cmd += ["--num-gpu-blocks-override", str(args.kv_blocks)]
        cmd += args.server_arg
        self.cmd = cmd
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log, text=True)
        deadline = time.time() + 120
        self.host = self.port = None
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            m = re.search(r"taco-llm serving .* on http://([^:/\s]+):(\d+)", line)
            if m:
                self.host, self.port = m.group(1), int(m.group(2))
                break
        if self.port is None:
            self.proc.kill()
            raise SystemExit(f"the server did not start: {' '.join(cmd)}\n{self.log_text()[-3000:]}")
        # Keep reading stdout so that a full pipe never blocks the server.
        threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True).start()

    def alive(self):
        return self.proc.poll() is None

    def fds(self):
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def rss_kb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return -1

    def log_text(self):
        with open(self.log.name, errors="replace") as f:
            return f.read()

    def metrics(self):
        status, _, body = request(self, "GET", "/metrics", None, auth=False, timeout=30)
        if status != 200:
            raise Check(f"/metrics gave {status}")
        out = {}
        for line in body.decode().splitlines():
            if line.startswith("#") or not line.strip():
                continue
            name = line.split("{", 1)[0].split(" ", 1)[0]
            # A counter with labels (request_success_total's finished_reason) is the sum of its lines.
            out[name] = out.get(name, 0.0) + float(line.rsplit(" ", 1)[1])
        return out


# ---------------------------------------------------------------------------------------------------------------
# Clients


def request(server, method, path, body, auth=True, content_type="application/json", timeout=None, conn=None):
    """One request over http.client; returns (status, headers, body bytes)."""
    own = conn is None
    if own:
        conn = http.client.HTTPConnection(server.host, server.port, timeout=timeout or server.args.timeout)
    headers = {}
    if auth:
        headers["Authorization"] = "Bearer " + KEY
    if content_type:
        headers["Content-Type"] = content_type
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    try:
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        raw = resp.read()
        return resp.status, dict(resp.getheaders()), raw
    finally:
        if own:
            conn.close()


def connect(server, timeout=None):
    sock = socket.create_connection((server.host, server.port), timeout=timeout or server.args.timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def read_head(sock, buf=b""):
    """Reads a response's status line and header fields: (status, {lower name: value}, bytes after the header)."""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise Check(f"connection closed before a complete response header ({len(buf)} bytes: {buf[:80]!r})")
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers, rest


def read_response(sock, buf=b"", head=False):
    """A whole response on a raw socket (Content-Length or chunked): (status, headers, body, bytes left over).
    head: the response to a HEAD request, which has no body whatever its Content-Length says."""
    status, headers, buf = read_head(sock, buf)
    if status == 100 or head:
        return status, headers, b"", buf

    def fill(n):
        nonlocal buf
        while len(buf) < n:
            chunk = sock.recv(65536)
            if not chunk:
                raise Check("connection closed in the middle of a response body")
            buf += chunk

    if "content-length" in headers:
        n = int(headers["content-length"])
        fill(n)
        return status, headers, buf[:n], buf[n:]
    body = b""
    if headers.get("transfer-encoding", "").lower() == "chunked":
        while True:
            while b"\r\n" not in buf:
                fill(len(buf) + 1)
            line, buf = buf.split(b"\r\n", 1)
            size = int(line.split(b";")[0], 16)
            fill(size + 2)
            body += buf[:size]
            buf = buf[size + 2:]
            if size == 0:
                return status, headers, body, buf
    while True:  # neither: the body runs to the close
        chunk = sock.recv(65536)
        if not chunk:
            return status, headers, buf, b""
        buf += chunk


def raw_request(method, path, body, extra_headers=(), auth=True, host=True, content_type="application/json"):
    lines = [f"{method} {path} HTTP/1.1"]
    if host:
        lines.append("Host: 127.0.0.1")
    if auth:
        lines.append("Authorization: Bearer " + KEY)
    if content_type:
        lines.append("Content-Type: " + content_type)
    lines += list(extra_headers)
    if body is not None and not any(h.lower().startswith(("content-length", "transfer-encoding"))
                                    for h in extra_headers):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b"")


# ---------------------------------------------------------------------------------------------------------------
# Valid requests and their checks

WORDS = ("love war peace the of a and to time life death heart mind king queen god man woman day night truth "
         "friend money law power fear hope").split()


def random_text(rng, n_words):
    return " ".join(rng.choice(WORDS) for _ in range(n_words))


def sampling(rng, body, max_tokens_hi=48):
    body["max_tokens"] = rng.randint(1, max_tokens_hi)
    body["temperature"] = rng.choice([0, 0.7, 1.0])
    if rng.random() < 0.3:
        body["n"] = rng.randint(2, 3)
        body["seed"] = rng.randint(0, 1000)
        body["temperature"] = rng.choice([0.7, 1.0])  # n > 1 needs sampling (greedy_n below: 400)
    if rng.random() < 0.3:
        body["stop"] = rng.sample([" the", " and", ".", "e", "\n"], rng.randint(1, 2))
    return body


def n_choices(body, prompts=1):
    return body.get("n", 1) * prompts


def check_usage(usage, body, prompts):
    expect(isinstance(usage, dict), f"no usage: {usage!r}")
    total = body["max_tokens"] * n_choices(body, prompts)
    expect(0 <= usage["completion_tokens"] <= total, f"completion_tokens {usage['completion_tokens']} > {total}")
    expect(usage["prompt_tokens"] > 0, "prompt_tokens 0")
    expect(usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"], "total_tokens mismatch")


def check_text(text, body, finish):
    expect(isinstance(text, str), f"text is {type(text).__name__}")
    expect(finish in ("stop", "length"), f"finish_reason {finish!r}")
    for stop in body.get("stop", []):
        expect(stop not in text, f"stop string {stop!r} in the output {text!r}")


def check_whole(endpoint, body, reply, prompts):
    choices = reply.get("choices")
    expect(isinstance(choices, list) and len(choices) == n_choices(body, prompts),
           f"{len(choices or [])} choices, expected {n_choices(body, prompts)}")
    expect(sorted(c["index"] for c in choices) == list(range(len(choices))), "choice indices")
    for c in choices:
        if endpoint == "chat":
            expect(c["message"]["role"] == "assistant", "role")
            check_text(c["message"]["content"], body, c["finish_reason"])
            if body.get("logprobs"):
                expect(isinstance(c["logprobs"]["content"], list), "no logprobs content")
        else:
            check_text(c["text"], body, c["finish_reason"])
            if body.get("logprobs") is not None:
                lp = c["logprobs"]
                expect(len(lp["tokens"]) == len(lp["token_logprobs"]), "logprobs lengths")
    check_usage(reply.get("usage"), body, prompts)


def check_stream(endpoint, body, raw, prompts):
    events = [e for e in raw.decode().split("\n\n") if e.strip()]
    expect(events and events[-1].strip() == "data: [DONE]", f"the stream does not end with [DONE]: {raw[-200:]!r}")
    texts = collections.defaultdict(str)
    finishes = collections.defaultdict(list)
    usage = None
    for e in events[:-1]:
        expect(e.startswith("data: "), f"an event without 'data: ': {e[:80]!r}")
        chunk = json.loads(e[len("data: "):])
        if chunk.get("usage") is not None and not chunk["choices"]:
            usage = chunk["usage"]
            continue
        for c in chunk["choices"]:
            texts[c["index"]] += (c["delta"].get("content") or "") if endpoint == "chat" else c["text"]
            if c.get("finish_reason") is not None:
                finishes[c["index"]].append(c["finish_reason"])
    n = n_choices(body, prompts)
    expect(sorted(finishes) == list(range(n)), f"finish_reason for choices {sorted(finishes)}, expected {n}")
    for i in range(n):
        expect(len(finishes[i]) == 1, f"choice {i} has {len(finishes[i])} finish_reasons")
        check_text(texts[i], body, finishes[i][0])
    check_usage(usage, body, prompts)


def valid_request(server, rng, endpoint, stream):
    prompts = 1
    if endpoint == "chat":
        body = {"model": "demo", "messages": [{"role": "user", "content": random_text(rng, rng.randint(1, 30))}]}
        if rng.random() < 0.3:
            body["logprobs"] = True
            body["top_logprobs"] = rng.randint(0, 3)
        path = "/v1/chat/completions"
    else:
        body = {"model": "demo", "prompt": random_text(rng, rng.randint(1, 40))}
        if rng.random() < 0.15 and not stream:
            prompts = 2
            body["prompt"] = [body["prompt"], random_text(rng, 5)]
        if rng.random() < 0.3:
            body["logprobs"] = rng.randint(0, 3)
        path = "/v1/completions"
    sampling(rng, body)
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    status, _, raw = request(server, "POST", path, body)
    expect(status == 200, f"status {status}: {raw[:300]!r} for {json.dumps(body)[:300]}")
    if stream:
        check_stream(endpoint, body, raw, prompts)
    else:
        check_whole(endpoint, body, json.loads(raw), prompts)
    return n_choices(body, prompts)


def long_prompt(rng, args):
    length = rng.randint(args.long_prompt // 2, args.long_prompt)
    return [rng.randint(VOCAB_LO, VOCAB_HI) for _ in range(length)]


def kv_pressure(server, rng, results):
    """--burst long prompts at once, each generating to its max_tokens (ignore_eos): together more KV than the cache."""
    args = server.args
    threads = []

    def one(seed):
        r = random.Random(seed)
        body = {"model": "demo", "prompt": long_prompt(r, args), "max_tokens": r.randint(16, args.long_max_tokens),
                "temperature": 0.8, "ignore_eos": True}
        stream = r.random() < 0.5
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        start = time.time()
        try:
            status, _, raw = request(server, "POST", "/v1/completions", body)
            expect(status == 200, f"status {status}: {raw[:300]!r}")
            if stream:
                check_stream("completion", body, raw, 1)
            else:
                reply = json.loads(raw)
                check_whole("completion", body, reply, 1)
                expect(reply["usage"]["completion_tokens"] == body["max_tokens"], "ignore_eos: fewer tokens")
            results.record("kv_pressure", True, time.time() - start, valid_prompts=1)
        except Exception as e:  # noqa: BLE001 (every way a valid request can fail is a failure)
            results.record("kv_pressure", False, 0, f"{type(e).__name__}: {e}")

    for _ in range(args.burst):
        threads.append(threading.Thread(target=one, args=(rng.random(),)))
        threads[-1].start()
    for t in threads:
        t.join()


def keepalive(server, rng):
    conn = http.client.HTTPConnection(server.host, server.port, timeout=server.args.timeout)
    choices = 0
    try:
        for i in range(3):
            body = sampling(rng, {"model": "demo", "prompt": random_text(rng, 8)})
            status, _, raw = request(server, "POST", "/v1/completions", body, conn=conn)
            expect(status == 200, f"request {i} on the connection: status {status}: {raw[:200]!r}")
            check_whole("completion", body, json.loads(raw), 1)
            choices += n_choices(body)
    finally:
        conn.close()
    return choices


def chunked(server, rng):
    body = sampling(rng, {"model": "demo", "prompt": random_text(rng, 12)})
    data = json.dumps(body).encode()
    parts, i = [], 0
    while i < len(data):
        n = rng.randint(1, 40)
        parts.append(b"%x\r\n%s\r\n" % (len(data[i:i + n]), data[i:i + n]))
        i += n
    payload = raw_request("POST", "/v1/completions", None, ["Transfer-Encoding: chunked"]) + b"".join(parts) + \
        b"0\r\n\r\n"
    with connect(server) as sock:
        sock.sendall(payload)
        status, _, reply, _ = read_response(sock)
    expect(status == 200, f"status {status}: {reply[:200]!r}")
    check_whole("completion", body, json.loads(reply), 1)
    return n_choices(body)


def expect_continue(server, rng):
    body = sampling(rng, {"model": "demo", "prompt": random_text(rng, 12)})
    data = json.dumps(body).encode()
    head = raw_request("POST", "/v1/completions", None, ["Expect: 100-continue", f"Content-Length: {len(data)}"])
    with connect(server) as sock:
        sock.sendall(head)
        status, _, _, rest = read_response(sock)
        expect(status == 100, f"expected 100 Continue, got {status}")
        sock.sendall(data)
        status, _, reply, _ = read_response(sock, rest)
    expect(status == 200, f"status {status}: {reply[:200]!r}")
    check_whole("completion", body, json.loads(reply), 1)
    return n_choices(body)


def pipelined(server, rng):
    """HEAD /version, a completion and GET /health written at once on one connection: three responses in order
    (a HEAD response with a body would be misread as the start of the next one)."""
    body = sampling(rng, {"model": "demo", "prompt": random_text(rng, 8)})
    payload = (raw_request("HEAD", "/version", None) + raw_request("POST", "/v1/completions", json.dumps(body).encode())
               + raw_request("GET", "/health", None))
    with connect(server) as sock:
        sock.sendall(payload)
        status, headers, _, rest = read_response(sock, head=True)
        expect(status == 200 and int(headers.get("content-length", 0)) > 0, f"HEAD /version: {status} {headers}")
        status, _, reply, rest = read_response(sock, rest)
        expect(status == 200, f"the pipelined completion: status {status}: {reply[:200]!r}")
        check_whole("completion", body, json.loads(reply), 1)
        status, _, health, rest = read_response(sock, rest)
        expect(status == 200 and health == b"" and rest == b"", f"GET /health after them: {status} {health[:80]!r}")
    return n_choices(body)


def slow_valid(server, rng):
    body = sampling(rng, {"model": "demo", "prompt": random_text(rng, 6)})
    payload = raw_request("POST", "/v1/completions", json.dumps(body).encode())
    with connect(server) as sock:
        pace = rng.uniform(2.0, 5.0) / len(payload)  # the whole request over 2-5 s
        i = 0
        while i < len(payload):
            n = rng.randint(1, 8)
            sock.sendall(payload[i:i + n])
            i += n
            time.sleep(pace * n)
        status, _, reply, _ = read_response(sock)
    expect(status == 200, f"status {status}: {reply[:200]!r}")
    check_whole("completion", body, json.loads(reply), 1)
    return n_choices(body)


# ---------------------------------------------------------------------------------------------------------------
# Clients that leave


def close_abruptly(sock, rng):
    if rng.random() < 0.5:  # RST instead of FIN
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def abort_stream(server, rng):
    endpoint = rng.choice(["/v1/completions", "/v1/chat/completions"])
    body = {"model": "demo", "max_tokens": 400, "stream": True, "ignore_eos": True, "n": rng.choice([1, 1, 2])}
    if endpoint == "/v1/completions":
        body["prompt"] = random_text(rng, 20)
    else:
        body["messages"] = [{"role": "user", "content": random_text(rng, 20)}]
    sock = connect(server)
    try:
        sock.sendall(raw_request("POST", endpoint, json.dumps(body).encode()))
        status, _, buf = read_head(sock)
        expect(status == 200, f"status {status}")
        want = rng.randint(1, 6)  # events to read before leaving
        while buf.count(b"data: ") < want:
            chunk = sock.recv(65536)
            expect(chunk, "the stream ended before the client left")
            buf += chunk
    finally:
        close_abruptly(sock, rng)
    return body["n"]


def disconnect(server, rng):
    body = {"model": "demo", "prompt": random_text(rng, 10), "max_tokens": rng.randint(50, 300),
            "ignore_eos": True, "stream": rng.random() < 0.5}
    sock = connect(server)
    sock.sendall(raw_request("POST", "/v1/completions", json.dumps(body).encode()))
    if rng.random() < 0.5:
        time.sleep(rng.uniform(0, 0.3))  # sometimes after the engine started on it
    close_abruptly(sock, rng)
    return 1


def slow_abandon(server, rng):
    payload = raw_request("POST", "/v1/completions", b'{"prompt": "x"}')
    cut = rng.randint(1, payload.index(b"\r\n\r\n"))
    sock = connect(server)
    try:
        for i in range(cut):
            sock.sendall(payload[i:i + 1])
            time.sleep(rng.uniform(0.01, 0.1))
    finally:
        close_abruptly(sock, rng)


# ---------------------------------------------------------------------------------------------------------------
# Malformed requests: (class, expected status, a function that returns the request's bytes)


def deep(n):
    return "[" * n + "]" * n


MALFORMED = [
    ("bad_json", 400, lambda r: raw_request("POST", "/v1/completions", b'{"model": "demo", "prompt": "a", ')),
    ("wrong_type", 400, lambda r: raw_request("POST", r.choice(["/v1/completions", "/v1/chat/completions"]),
                                              json.dumps(r.choice([
                                                  {"prompt": 5}, {"prompt": "a", "max_tokens": "ten"},
                                                  {"prompt": "a", "n": -1}, {"prompt": "a", "temperature": "hot"},
                                                  {"messages": "hi"}, {"messages": [{"role": 3}]},
                                                  {"prompt": "a", "stream": "yes"}, {"prompt": "a", "stop": 7},
                                                  {"prompt": "a", "logprobs": "many"}, [1, 2, 3]])).encode())),
    ("unknown_model", 404, lambda r: raw_request("POST", "/v1/completions",
                                                 b'{"model": "no-such-model", "prompt": "a"}')),
    ("deep_json", 400, lambda r: raw_request("POST", "/v1/completions",
                                             ('{"prompt": %s}' % deep(r.choice([200, 5000, 100000]))).encode())),
    ("huge_prompt", 400, lambda r: raw_request("POST", "/v1/completions", json.dumps(
        {"prompt": [r.randint(VOCAB_LO, VOCAB_HI)] * 200000, "max_tokens": 4}).encode())),
    ("too_long", 400, lambda r: raw_request("POST", "/v1/completions", json.dumps(
        {"prompt": [r.randint(VOCAB_LO, VOCAB_HI) for _ in range(900)], "max_tokens": 500}).encode())),
    ("greedy_n", 400, lambda r: raw_request("POST", "/v1/completions",
                                            json.dumps({"prompt": "a", "n": 2, "temperature": 0}).encode())),
    ("n_too_big", 400, lambda r: raw_request("POST", "/v1/completions",
                                             json.dumps({"prompt": "a", "n": r.choice([257, 10**6, 10**9])}).encode())),
    ("body_too_big", 413, lambda r: raw_request("POST", "/v1/completions", None,
                                                [f"Content-Length: {40 << 20}"]) + b'{"prompt": "'),
    ("bad_auth", 401, lambda r: raw_request("POST", "/v1/completions", b'{"prompt": "a"}',
                                            ["Authorization: Bearer wrong-key"], auth=False)),
    ("no_auth", 401, lambda r: raw_request("POST", "/v1/chat/completions", b'{"messages": []}', auth=False)),
    ("wrong_content_type", 415, lambda r: raw_request("POST", "/v1/completions", b'{"prompt": "a"}',
                                                      content_type=r.choice(["text/plain", None,
                                                                             "application/x-www-form-urlencoded"]))),
    ("garbage", 400, lambda r: bytes([r.choice(b"\x00\x01\x7f\x80\xfe\xff")]) +
     bytes(r.randrange(256) for _ in range(r.randint(10, 3000))) + b"\r\n\r\n"),
    ("header_too_big", 431, lambda r: raw_request("POST", "/v1/completions", b'{"prompt": "a"}',
                                                  ["X-Pad: " + "a" * r.randint(70000, 200000)])),
    ("bad_transfer_coding", 501, lambda r: raw_request("POST", "/v1/completions", None,
                                                       ["Transfer-Encoding: gzip"]) + b'{"prompt": "a"}'),
    ("no_host", 400, lambda r: raw_request("POST", "/v1/completions", b'{"prompt": "a"}', host=False)),
    ("wrong_method", 405, lambda r: raw_request("GET", "/v1/completions", None)),
    ("no_route", 404, lambda r: raw_request("GET", "/v1/no-such-route", None)),
]
MALFORMED_BY_NAME = {name: (status, make) for name, status, make in MALFORMED}


def malformed(server, rng, cls):
    status_wanted, make = MALFORMED_BY_NAME[cls]
    payload = make(rng)
    with connect(server) as sock:
        try:
            sock.sendall(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # a server that answered and closed while a large request was still being written
        status, headers, body, _ = read_response(sock)
    expect(status == status_wanted, f"status {status}, expected {status_wanted}: {body[:200]!r}")
    error = json.loads(body)["error"]
    expect(error["code"] == status_wanted and error["message"], f"error body {body[:200]!r}")


# ---------------------------------------------------------------------------------------------------------------
# The mix

VALID = {"completion": 10, "completion_stream": 10, "chat": 8, "chat_stream": 8, "kv_pressure": 2, "keepalive": 2,
         "chunked": 1, "expect_continue": 1, "pipelined": 1, "slow_valid": 1}
ABORTED = {"abort_stream": 6, "disconnect": 5, "slow_abandon": 1}
MALFORMED_WEIGHTS = {name: (0.4 if name in ("huge_prompt", "body_too_big", "header_too_big") else 1)
                     for name, _, _ in MALFORMED}
WEIGHTS = {**VALID, **ABORTED, **MALFORMED_WEIGHTS}


def run_one(server, rng, results, cls):
    start = time.time()
    try:
        if cls == "kv_pressure":
            return kv_pressure(server, rng, results)  # records each request of the burst itself
        if cls in ("completion", "completion_stream", "chat", "chat_stream"):
            prompts = valid_request(server, rng, cls.split("_")[0], cls.endswith("_stream"))
        elif cls in ("keepalive", "chunked", "expect_continue", "pipelined", "slow_valid"):
            prompts = globals()[cls](server, rng)
        elif cls in ABORTED:
            left = globals()[cls](server, rng)
            # The choices of the request left (the server counts each); slow_abandon's never reached a handler.
            return results.record(cls, True, time.time() - start, aborted_prompts=left or 0)
        else:
            malformed(server, rng, cls)
            return results.record(cls, True, time.time() - start)
        results.record(cls, True, time.time() - start, valid_prompts=prompts)
    except Exception as e:  # noqa: BLE001 (every way a request can go wrong is a failure of its class)
        results.record(cls, False, 0, f"{type(e).__name__}: {e}")


def worker(server, seed, deadline, results):
    rng = random.Random(seed)
    names, weights = list(WEIGHTS), list(WEIGHTS.values())
    while time.time() < deadline and server.alive():
        run_one(server, rng, results, rng.choices(names, weights)[0])


class Monitor(threading.Thread):
    """Every second: is the server alive; the peaks of its gauges, fds and RSS."""

    def __init__(self, server):
        super().__init__(daemon=True)
        self.server, self.stop, self.died = server, threading.Event(), None
        self.peak = collections.Counter()

    def run(self):
        while not self.stop.wait(1.0):
            if not self.server.alive():
                self.died = self.died or f"the server exited with {self.server.proc.returncode}"
                return
            try:
                m = self.server.metrics()
                for name in ("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"):
                    self.peak[name] = max(self.peak[name], m.get(name, 0))
                self.peak["fds"] = max(self.peak["fds"], self.server.fds())
                self.peak["rss_kb"] = max(self.peak["rss_kb"], self.server.rss_kb())
            except Exception:  # noqa: BLE001 (a busy moment; liveness is what this thread checks)
                pass


def wait_idle(server, timeout):
    """Polls /metrics until nothing runs, waits or holds KV; returns the last sample."""
    deadline = time.time() + timeout
    while True:
        m = server.metrics()
        idle = (m.get("vllm:num_requests_running", 1) == 0 and m.get("vllm:num_requests_waiting", 1) == 0
                and m.get("vllm:kv_cache_usage_perc", 1) == 0)
        if idle or time.time() > deadline:
            return m
        time.sleep(0.5)


def settle(read, target, timeout):
    """Polls read() until it is <= target (connections closing, drains ending); returns the last value."""
    deadline = time.time() + timeout
    value = read()
    while value > target and time.time() < deadline:
        time.sleep(0.5)
        value = read()
    return value


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--taco", default="build/cuda/taco_llm" if os.path.exists("build/cuda/taco_llm")
                   else "build/cpu/taco_llm", help="the taco_llm binary")
    p.add_argument("--minutes", type=float, default=3.0)
    p.add_argument("--threads", type=int, default=12, help="worker threads")
    p.add_argument("--model", default="", help="model folder (default: the built-in demo model); the long prompts "
                   "use token ids 100-6000 and --long-prompt + --long-max-tokens tokens of context")
    p.add_argument("--device", default="cpu")
    p.add_argument("--kv-blocks", type=int, default=96,
                   help="--num-gpu-blocks-override: 96 blocks of 16 tokens hold 1.5 requests of the demo's 1024")
    p.add_argument("--kv-cache-gb", type=float, default=0, help="instead of --kv-blocks")
    p.add_argument("--max-num-seqs", type=int, default=64)
    p.add_argument("--burst", type=int, default=6, help="long prompts sent at once by a kv_pressure request")
    p.add_argument("--long-prompt", type=int, default=800, help="the longest kv_pressure prompt, in tokens")
    p.add_argument("--long-max-tokens", type=int, default=200, help="the most tokens a kv_pressure prompt asks for")
    p.add_argument("--timeout", type=float, default=180, help="seconds a client waits on one request")
    p.add_argument("--fd-margin", type=int, default=2, help="open fds allowed above the baseline at the end")
    p.add_argument("--rss-margin-mb", type=float, default=48,
                   help="RSS growth allowed over the post-warm-up baseline, MiB (the allocator keeps freed memory; "
                   "3 minutes of the default mix grow it by about 7)")
    p.add_argument("--allow-no-preemption", action="store_true", help="do not fail when no preemption happened")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--server-arg", action="append", default=[], help="an extra `taco_llm serve` argument")
    args = p.parse_args()

    server = Server(args)
    print(f"soak: {' '.join(server.cmd)}\nsoak: pid {server.proc.pid} on {server.host}:{server.port}, "
          f"{args.minutes} min, {args.threads} threads, log {server.log.name}", flush=True)
    results, checks = Results(), []
    fds_start, rss_start = server.fds(), server.rss_kb()
    # Warm-up: one request of each valid kind (thread pools, lazily built tables), then the baseline at idle.
    warm = Results()
    rng = random.Random(args.seed)
    for cls in VALID:
        run_one(server, rng, warm, cls)
    for cls, message in warm.failures:
        checks.append(f"warm-up {cls}: {message}")
    wait_idle(server, 60)
    time.sleep(1)
    fds_base, rss_base = server.fds(), server.rss_kb()
    m0 = server.metrics()

    monitor = Monitor(server)
    monitor.start()
    deadline = time.time() + args.minutes * 60
    threads = [threading.Thread(target=worker, args=(server, args.seed * 1000 + i, deadline, results))
               for i in range(args.threads)]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.time() - t0
    monitor.stop.set()
    monitor.join()

    if monitor.died or not server.alive():
        checks.append(monitor.died or f"the server exited with {server.proc.returncode}")
        m1, fds_end, rss_end = {}, -1, -1
    else:
        m1 = wait_idle(server, 60)
        for name in ("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"):
            if m1.get(name) != 0:
                checks.append(f"{name} is {m1.get(name)} at idle, expected 0")
        fds_end = settle(server.fds, fds_base, 20)
        if fds_end > fds_base + args.fd_margin:
            checks.append(f"open fds {fds_end} at idle, baseline {fds_base} (+{args.fd_margin} allowed)")
        rss_end = server.rss_kb()
        if rss_end - rss_base > args.rss_margin_mb * 1024:
            checks.append(f"RSS grew {(rss_end - rss_base) / 1024:.1f} MiB, more than --rss-margin-mb "
                          f"{args.rss_margin_mb}")
        success = m1["vllm:request_success_total"] - m0["vllm:request_success_total"]
        if not results.valid_ok_prompts <= success <= results.valid_ok_prompts + results.aborted_prompts:
            checks.append(f"vllm:request_success_total grew by {success:.0f}; the client saw "
                          f"{results.valid_ok_prompts} valid choices complete (and left {results.aborted_prompts})")
        preemptions = m1["vllm:num_preemptions_total"] - m0["vllm:num_preemptions_total"]
        if preemptions == 0 and not args.allow_no_preemption:
            checks.append("no preemption happened: the KV cache was never under pressure (--kv-blocks)")

    # A clean exit on SIGTERM (in-flight requests: none; --shutdown-timeout's default is 5 s).
    exit_code = None
    if server.alive():
        server.proc.send_signal(signal.SIGTERM)
        try:
            exit_code = server.proc.wait(30)
        except subprocess.TimeoutExpired:
            server.proc.kill()
            checks.append("the server did not exit within 30 s of SIGTERM")
    if exit_code not in (None, 0):
        checks.append(f"the server exited with {exit_code} on SIGTERM")
    log = server.log_text()
    threw = [line for line in log.splitlines() if "threw" in line or "terminate called" in line]
    if threw:
        checks.append(f"{len(threw)} exceptions in the server's log, e.g. {threw[0]}")
    warnings = collections.Counter(re.sub(r"\d+", "N", line) for line in log.splitlines() if "warn" in line)

    # The table.
    print(f"\n{'class':<22}{'count':>8}{'failed':>8}{'p50 ms':>10}{'p99 ms':>10}")
    groups = (("valid", VALID), ("aborted", ABORTED), ("malformed", MALFORMED_WEIGHTS))
    for group, names in groups:
        total = sum(results.count[n] for n in names)
        print(f"-- {group} ({total})")
        for name in names:
            lat = results.latency[name]
            print(f"{name:<22}{results.count[name]:>8}{results.failed[name]:>8}"
                  f"{percentile(lat, 50) * 1000:>10.1f}{percentile(lat, 99) * 1000:>10.1f}")
    total = sum(results.count.values())
    failed = sum(results.failed.values())
    print(f"{'total':<22}{total:>8}{failed:>8}   ({total / elapsed:.1f} requests/s over {elapsed:.0f} s)")
    if m1:
        print(f"\nengine: {m1['vllm:num_preemptions_total'] - m0['vllm:num_preemptions_total']:.0f} preemptions, "
              f"{m1['vllm:request_success_total'] - m0['vllm:request_success_total']:.0f} successes "
              f"(client: {results.valid_ok_prompts} valid choices done, {results.aborted_prompts} left), "
              f"{m1['vllm:generation_tokens_total'] - m0['vllm:generation_tokens_total']:.0f} tokens generated")
        print(f"peaks: running {monitor.peak['vllm:num_requests_running']:.0f}, waiting "
              f"{monitor.peak['vllm:num_requests_waiting']:.0f}, KV usage "
              f"{monitor.peak['vllm:kv_cache_usage_perc']:.2f}; at idle: running "
              f"{m1['vllm:num_requests_running']:.0f}, waiting {m1['vllm:num_requests_waiting']:.0f}, KV usage "
              f"{m1['vllm:kv_cache_usage_perc']:.2f}")
    print(f"fds: start {fds_start}, baseline {fds_base}, peak {monitor.peak['fds']}, end {fds_end}")
    print(f"RSS MiB: start {rss_start / 1024:.1f}, baseline {rss_base / 1024:.1f}, peak "
          f"{monitor.peak['rss_kb'] / 1024:.1f}, end {rss_end / 1024:.1f}")
    print(f"server exit on SIGTERM: {exit_code}; warnings in its log: {sum(warnings.values())}")
    for line, n in warnings.most_common(5):
        print(f"  {n} x {line[:160]}")
    if results.failures:
        print(f"\nfailed requests ({failed}; the first {min(20, len(results.failures))}):")
        for cls, message in results.failures[:20]:
            print(f"  {cls}: {message}")
    for check in checks:
        print(f"FAIL: {check}")
    ok = not checks and failed == 0
    print("\nsoak: " + ("PASS" if ok else "FAIL"))
    if ok:
        os.unlink(server.log.name)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
