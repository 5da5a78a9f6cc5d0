"""A scripted mock of the Anthropic Messages API for the e2e tests (stdlib only).

The real ``claude`` CLI is pointed at it with ``ANTHROPIC_BASE_URL``. It serves
``POST /v1/messages`` (Claude Code adds ``?beta=true``) and answers from a
per-test *script*: a list of turns, consumed one per agent request. A turn is

- ``text("...")`` / a plain ``str``: one text block, ``stop_reason: end_turn``;
- ``bash("cmd")``: one ``tool_use`` block for the Bash tool, ``stop_reason:
  tool_use`` (Claude Code runs it and sends the result in the next request);
- ``tool_use(name, input)``: any other tool;
- a callable ``f(request) -> turn``: computed from the logged request.

A turn may carry ``delay`` (seconds to wait before answering). A request that
carries no ``tools`` is a *side request* (titles, summaries, ...): it is
answered with a short text and does not consume the script. Once the script is
exhausted every agent request gets the text ``done``.

Every request is logged (``MockAPI.requests``; optionally appended to a JSONL
file) so tests can assert what reached the model. Other paths get a small JSON
404, and are logged too.

Run it by hand with ``python3 tests/e2e/mockapi.py [--port N] [--log F]``.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable
from urllib.parse import urlsplit

DEFAULT_MODEL = "claude-opus-5-5"
EXHAUSTED_TEXT = "done"
SIDE_TEXT = "ok"


# --------------------------------------------------------------------------
# Script turns


@dataclass
class Turn:
    """One scripted model reply."""

    kind: str  # "text" or "tool_use"
    text: str = ""
    name: str = ""
    input: dict = field(default_factory=dict)
    delay: float = 0.0

    def blocks(self) -> list[dict]:
        if self.kind == "text":
            return [{"type": "text", "text": self.text}]
        block: list[dict] = []
        if self.text:
            block.append({"type": "text", "text": self.text})
        block.append(
            {
                "type": "tool_use",
                "id": "toolu_" + uuid.uuid4().hex[:24],
                "name": self.name,
                "input": self.input,
            }
        )
        return block

    @property
    def stop_reason(self) -> str:
        return "tool_use" if self.kind == "tool_use" else "end_turn"


def text(s: str, delay: float = 0.0) -> Turn:
    return Turn("text", text=s, delay=delay)


def tool_use(name: str, input: dict, delay: float = 0.0, preamble: str = "") -> Turn:
    return Turn("tool_use", name=name, input=dict(input), delay=delay, text=preamble)


def error(status: int = 400, type: str = "invalid_request_error", message: str = "mock error") -> Turn:
    """An API error instead of a reply: HTTP `status` with the API's error body (a 400 is not
    retried by the client; a 5xx is, with backoff)."""
    return Turn("error", text=message, name=type, input={"status": status})


def bash(command: str, description: str = "run a command", delay: float = 0.0) -> Turn:
    return tool_use("Bash", {"command": command, "description": description}, delay=delay)


ScriptItem = Any  # Turn | str | dict | Callable[[Request], Turn | str | dict]


def as_turn(item: ScriptItem) -> Turn:
    if isinstance(item, Turn):
        return item
    if isinstance(item, str):
        return text(item)
    if isinstance(item, dict):  # {"text": ...} | {"bash": ...} | {"tool": name, "input": {...}}
        delay = float(item.get("delay", 0.0))
        if "bash" in item:
            return bash(item["bash"], item.get("description", "run a command"), delay)
        if "tool" in item:
            return tool_use(item["tool"], item.get("input", {}), delay)
        if "text" in item:
            return text(item["text"], delay)
    raise TypeError(f"not a script turn: {item!r}")


# --------------------------------------------------------------------------
# Request log


@dataclass
class Request:
    """One logged HTTP request."""

    seq: int
    time: float
    method: str
    path: str  # with the query string
    headers: dict
    raw: str  # the body as text (may be "")
    body: Any  # parsed JSON, or None
    kind: str  # "agent" | "side" | "other"
    reply: str = ""  # short description of the answer

    @property
    def route(self) -> str:
        return urlsplit(self.path).path

    @property
    def session_id(self) -> str | None:
        return self.headers.get("x-claude-code-session-id")

    @property
    def messages(self) -> list:
        return list((self.body or {}).get("messages") or []) if isinstance(self.body, dict) else []

    def decoded_text(self) -> str:
        """Every string in the parsed body (keys too), decoded and joined by
        newlines, so JSON escapes (\\n, \\", \\uXXXX) cannot hide text."""
        return "\n".join(strings_in(self.body)) if self.body is not None else self.raw

    def contains(self, needle: str, decoded: bool = True) -> bool:
        """``needle`` in the raw body as sent, or (``decoded``) in its strings."""
        return needle in self.raw or (decoded and needle in self.decoded_text())

    def texts(self, role: str | None = None) -> list[str]:
        """The text of each message (all blocks joined), optionally of one
        role ("user", "assistant", or "system": most hook text arrives in
        ``role: "system"`` messages)."""
        out = []
        for m in self.messages:
            if isinstance(m, dict) and (role is None or m.get("role") == role):
                out.append("\n".join(strings_in(m.get("content"), keys=False, skip=_NOT_TEXT)))
        return out

    def to_json(self) -> dict:
        return {
            "seq": self.seq,
            "time": self.time,
            "method": self.method,
            "path": self.path,
            "headers": self.headers,
            "kind": self.kind,
            "reply": self.reply,
            "body": self.body if self.body is not None else self.raw,
        }


_NOT_TEXT = ("type", "id", "tool_use_id", "cache_control", "name", "signature")


def strings_in(obj: Any, keys: bool = True, skip: tuple = ()) -> list[str]:
    """All strings in a JSON value, depth first: dict keys too (``keys``),
    except the values of the keys in ``skip``."""
    out: list[str] = []
    stack = [obj]
    while stack:
        o = stack.pop()
        if isinstance(o, str):
            out.append(o)
        elif isinstance(o, dict):
            for k, v in reversed(list(o.items())):
                if k not in skip:
                    stack.append(v)
                if keys:
                    stack.append(k)
        elif isinstance(o, list):
            stack.extend(reversed(o))
    return out


# --------------------------------------------------------------------------
# SSE rendering


def _sse(event: str, data: dict) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _usage(output_tokens: int = 1) -> dict:
    return {
        "input_tokens": 10,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def render_sse(turn: Turn, model: str) -> bytes:
    msg_id = "msg_" + uuid.uuid4().hex[:24]
    out = [
        _sse(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": _usage(1),
                },
            },
        )
    ]
    for i, block in enumerate(turn.blocks()):
        if block["type"] == "text":
            out.append(_sse("content_block_start", {"type": "content_block_start", "index": i,
                                                    "content_block": {"type": "text", "text": ""}}))
            out.append(_sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                    "delta": {"type": "text_delta", "text": block["text"]}}))
        else:
            out.append(_sse("content_block_start", {"type": "content_block_start", "index": i,
                                                    "content_block": {"type": "tool_use", "id": block["id"],
                                                                      "name": block["name"], "input": {}}}))
            out.append(_sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                    "delta": {"type": "input_json_delta",
                                                              "partial_json": json.dumps(block["input"])}}))
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    out.append(_sse("message_delta", {"type": "message_delta",
                                      "delta": {"stop_reason": turn.stop_reason, "stop_sequence": None},
                                      "usage": {"output_tokens": 5}}))
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return b"".join(out)


def render_json(turn: Turn, model: str) -> bytes:
    return json.dumps({
        "id": "msg_" + uuid.uuid4().hex[:24],
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": turn.blocks(),
        "stop_reason": turn.stop_reason,
        "stop_sequence": None,
        "usage": _usage(5),
    }).encode()


# --------------------------------------------------------------------------
# Server


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "_Server"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

    def _send(self, status: int, ctype: str, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("request-id", "req_" + uuid.uuid4().hex[:16])
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def _handle(self) -> None:
        raw = self._read_body() if self.command not in ("GET", "HEAD") else b""
        self.server.api._dispatch(self, raw)

    do_POST = do_GET = do_PUT = do_DELETE = do_PATCH = do_HEAD = _handle


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    api: "MockAPI"


class MockAPI:
    """Threaded mock Messages API on 127.0.0.1 (port 0 = a free port)."""

    def __init__(self, script: Iterable[ScriptItem] = (), *, log_path: str | None = None,
                 port: int = 0, side_text: str = SIDE_TEXT, exhausted_text: str = EXHAUSTED_TEXT):
        self._lock = threading.Condition()
        self._script: list[ScriptItem] = list(script)
        self.requests: list[Request] = []
        self.log_path = log_path
        self.side_text = side_text
        self.exhausted_text = exhausted_text
        self._port = port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle
    def start(self) -> "MockAPI":
        srv = _Server(("127.0.0.1", self._port), _Handler)
        srv.api = self
        self._server = srv
        self._thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, name="mockapi", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "MockAPI":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "mock API not started"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # ---- script
    def set_script(self, script: Iterable[ScriptItem]) -> None:
        with self._lock:
            self._script = list(script)

    def add(self, *turns: ScriptItem) -> None:
        with self._lock:
            self._script.extend(turns)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    # ---- log access
    def agent_requests(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.kind == "agent"]

    def bodies(self, kind: str | None = None) -> list[str]:
        """Raw request bodies (as sent, JSON-escaped), optionally of one kind."""
        with self._lock:
            return [r.raw for r in self.requests if kind is None or r.kind == kind]

    def find(self, needle: str, kind: str | None = "agent", decoded: bool = True) -> list[Request]:
        """Logged requests (of ``kind``; None = all) whose body contains ``needle``."""
        with self._lock:
            reqs = list(self.requests)
        return [r for r in reqs if (kind is None or r.kind == kind) and r.contains(needle, decoded)]

    def saw(self, needle: str, kind: str | None = "agent", decoded: bool = True) -> bool:
        return bool(self.find(needle, kind, decoded))

    def summary(self) -> str:
        """One line per logged request, for assertion messages."""
        with self._lock:
            reqs = list(self.requests)
        return "\n".join(f"#{r.seq} {r.method} {r.path} [{r.kind}] -> {r.reply} "
                         f"({len(r.raw)} bytes, {len(r.messages)} msgs)" for r in reqs) or "(no requests)"

    def wait_for(self, pred: Callable[[list[Request]], bool], timeout: float = 30.0) -> bool:
        """Wait until ``pred(requests)`` is true; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while not pred(list(self.requests)):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(left)
            return True

    def wait_for_requests(self, n: int, kind: str = "agent", timeout: float = 30.0) -> bool:
        return self.wait_for(lambda rs: sum(r.kind == kind for r in rs) >= n, timeout)

    def clear_log(self) -> None:
        with self._lock:
            self.requests.clear()

    # ---- dispatch
    def _log(self, req: Request) -> None:
        with self._lock:
            self.requests.append(req)
            self._lock.notify_all()
        if self.log_path:
            with open(self.log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(req.to_json()) + "\n")

    def _dispatch(self, h: _Handler, raw: bytes) -> None:
        raw_text = raw.decode("utf-8", "replace")
        try:
            body = json.loads(raw_text) if raw_text else None
        except ValueError:
            body = None
        route = urlsplit(h.path).path
        headers = {k.lower(): v for k, v in h.headers.items()}
        with self._lock:
            seq = len(self.requests)
        is_messages = h.command == "POST" and route == "/v1/messages" and isinstance(body, dict)
        if not is_messages:
            req = Request(seq, time.time(), h.command, h.path, headers, raw_text, body, "other", "404")
            self._log(req)
            h._send(404, "application/json", json.dumps(
                {"type": "error", "error": {"type": "not_found_error", "message": f"mock: no route {route}"}}
            ).encode())
            return

        kind = "agent" if body.get("tools") else "side"
        req = Request(seq, time.time(), h.command, h.path, headers, raw_text, body, kind)
        turn: Turn
        if kind == "side":
            turn = text(self.side_text)
        else:
            with self._lock:
                item = self._script.pop(0) if self._script else None
            if item is None:
                turn = text(self.exhausted_text)
            else:
                if callable(item) and not isinstance(item, (Turn, str, dict)):
                    item = item(req)
                turn = as_turn(item)
        req.reply = (f"tool_use {turn.name} {json.dumps(turn.input)}" if turn.kind == "tool_use"
                     else f"text {turn.text!r}")
        self._log(req)
        if turn.delay:
            time.sleep(turn.delay)
        model = body.get("model") or DEFAULT_MODEL
        try:
            if turn.kind == "error":
                h._send(int(turn.input["status"]), "application/json", json.dumps(
                    {"type": "error", "error": {"type": turn.name, "message": turn.text}}).encode())
            elif body.get("stream"):
                h._send(200, "text/event-stream", render_sse(turn, model))
            else:
                h._send(200, "application/json", render_json(turn, model))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away (e.g. killed): fine


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--log", default=None, help="append each request as JSON to this file")
    ap.add_argument("--script", default=None, help="JSON file: a list of turns ({text|bash|tool,input})")
    args = ap.parse_args(argv)
    script = json.load(open(args.script)) if args.script else []
    api = MockAPI(script, log_path=args.log, port=args.port).start()
    print(api.base_url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        api.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
