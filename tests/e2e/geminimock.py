"""A scripted mock of the Gemini API for the Gemini CLI e2e tests (stdlib only).

The real `gemini` CLI is pointed at it with GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:<port>
(docs/CLIENTS.md, "Gemini CLI: offline"). It serves
`POST /v1beta/models/<model>:streamGenerateContent?alt=sse` with server-sent events, and
answers from a per-test script, one turn per agent request:

- `text("...")` / a plain str: one model text part;
- `shell("cmd")`: one `run_shell_command` function call (Gemini runs it and sends a
  functionResponse in the next request);
- `call(name, args)`: any other tool call (`list_directory`, ...);
- a callable `f(request) -> turn`.

A request that offers no tools is a side request (Gemini's own helpers: a next-speaker check,
a title, a JSON classifier): answered with SIDE_TEXT (or `{}` for a JSON one), the script
untouched. `:countTokens` answers a count, model lists are empty. Once the script is
exhausted every request gets `done`. Every request is logged with its peer address, so a
test can assert that the mock was the only peer Gemini talked to (all on 127.0.0.1).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

EXHAUSTED_TEXT = "done"
SIDE_TEXT = "a title"


@dataclass
class Turn:
    kind: str  # "text" or "call"
    text: str = ""
    name: str = ""
    args: dict = field(default_factory=dict)


def text(s: str) -> Turn:
    return Turn("text", text=s)


def call(name: str, args: dict) -> Turn:
    return Turn("call", name=name, args=dict(args))


def shell(cmd: str) -> Turn:
    return call("run_shell_command", {"command": cmd, "description": "run a command"})


def as_turn(item: Any) -> Turn:
    if isinstance(item, Turn):
        return item
    if isinstance(item, str):
        return text(item)
    raise TypeError(f"not a script turn: {item!r}")


def strings_in(obj: Any) -> list[str]:
    out: list[str] = []
    stack = [obj]
    while stack:
        o = stack.pop()
        if isinstance(o, str):
            out.append(o)
        elif isinstance(o, dict):
            stack.extend(reversed(list(o.values())))
        elif isinstance(o, list):
            stack.extend(reversed(o))
    return out


@dataclass
class Request:
    seq: int
    path: str
    headers: dict
    body: Any
    kind: str  # "agent" | "side" | "other"
    peer: str

    def decoded_text(self) -> str:
        return "\n".join(strings_in(self.body))

    def contains(self, needle: str) -> bool:
        return needle in self.decoded_text()

    @property
    def contents(self) -> list:
        return list((self.body or {}).get("contents") or []) if isinstance(self.body, dict) else []

    def texts(self, role: str | None = None) -> list[str]:
        """The text of each content of `role` ("user", "model"; hook context arrives as "user")."""
        return ["\n".join(strings_in(c.get("parts"))) for c in self.contents
                if isinstance(c, dict) and (role is None or c.get("role") == role)]

    def function_responses(self) -> list[str]:
        """The text of every functionResponse part (AfterTool's context is appended there)."""
        out = []
        for c in self.contents:
            for p in (c.get("parts") or []) if isinstance(c, dict) else ():
                if isinstance(p, dict) and "functionResponse" in p:
                    out.append("\n".join(strings_in(p["functionResponse"])))
        return out


def chunk(turn: Turn) -> dict:
    """One GenerateContentResponse holding the whole turn."""
    if turn.kind == "call":
        part = {"functionCall": {"name": turn.name, "args": turn.args}}
    else:
        part = {"text": turn.text}
    return {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 1, "totalTokenCount": 11},
            "modelVersion": "gemini-2.5-flash"}


class GeminiMock:
    """A started server on 127.0.0.1 (an ephemeral port): `base_url` for GOOGLE_GEMINI_BASE_URL."""

    def __init__(self, port: int = 0, log_path: str | None = None) -> None:
        self.log_path = log_path
        self.script: list[Any] = []
        self.requests: list[Request] = []
        self.peers: set[str] = set()
        self._lock = threading.Lock()
        mock = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                mock._log(self, None, "other")
                self._reply(200, b'{"models": []}', "application/json")

            def do_POST(self) -> None:
                n = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(n) if n else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                path = self.path.split("?")[0]
                if path.endswith(":countTokens"):
                    mock._log(self, body, "other")
                    self._reply(200, json.dumps({"totalTokens": len(raw) // 4}).encode(), "application/json")
                    return
                if not (path.endswith(":streamGenerateContent") or path.endswith(":generateContent")):
                    mock._log(self, body, "other")
                    self._reply(404, b'{"error": {"code": 404, "message": "not found"}}', "application/json")
                    return
                tools = isinstance(body, dict) and body.get("tools")
                mock._log(self, body, "agent" if tools else "side")
                if tools:
                    turn = mock._next(mock.requests[-1])
                else:
                    config = (body or {}).get("generationConfig") or {} if isinstance(body, dict) else {}
                    json_out = config.get("responseMimeType") == "application/json"
                    turn = text("{}" if json_out else SIDE_TEXT)
                data = chunk(turn)
                if path.endswith(":streamGenerateContent"):
                    self._reply(200, b"data: " + json.dumps(data).encode() + b"\r\n\r\n", "text/event-stream")
                else:
                    self._reply(200, json.dumps(data).encode(), "application/json")

            def _reply(self, code: int, data: bytes, ctype: str) -> None:
                self.send_response(code)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def _log(self, handler: BaseHTTPRequestHandler, body: Any, kind: str) -> None:
        with self._lock:
            peer = handler.client_address[0]
            self.peers.add(peer)
            self.requests.append(Request(len(self.requests) + 1, handler.path,
                                         {k.lower(): v for k, v in handler.headers.items()},
                                         body, kind, peer))
            if self.log_path:
                with open(self.log_path, "a", encoding="utf-8") as f:
                    f.write(json.dumps({"kind": kind, "path": handler.path, "peer": peer, "body": body}) + "\n")

    def _next(self, request: Request) -> Turn:
        with self._lock:
            item = self.script.pop(0) if self.script else EXHAUSTED_TEXT
        if callable(item) and not isinstance(item, Turn):
            item = item(request)
        return as_turn(item)

    def set_script(self, items: list[Any]) -> None:
        with self._lock:
            self.script = list(items)

    def agent_requests(self) -> list[Request]:
        return [r for r in self.requests if r.kind == "agent"]

    def find(self, needle: str) -> list[Request]:
        return [r for r in self.agent_requests() if r.contains(needle)]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def summary(self) -> str:
        return "\n".join(f"#{r.seq} {r.kind} {r.path} {len(r.contents)} contents" for r in self.requests)


def main() -> None:
    """By hand, or as a process of its own (inside a network namespace with Gemini):
    `python3 geminimock.py [--port N] [--script JSON] [--log FILE]`. The script is a JSON list
    of turns: a string is a text turn, {"shell": cmd} a shell call."""
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--script", default="[]")
    parser.add_argument("--log")
    args = parser.parse_args()
    mock = GeminiMock(port=args.port, log_path=args.log)
    mock.set_script([shell(t["shell"]) if isinstance(t, dict) else t for t in json.loads(args.script)])
    print(mock.base_url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        mock.stop()


if __name__ == "__main__":
    main()
