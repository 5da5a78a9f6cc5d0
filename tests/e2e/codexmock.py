"""A scripted mock of the OpenAI Responses API for the Codex e2e tests (stdlib only).

The real `codex` CLI is pointed at it through a model provider whose base_url is this
server (docs/CLIENTS.md, "Codex CLI"). It serves `POST /v1/responses` with server-sent
events and answers from a per-test script, one turn per agent request:

- `text("...")` / a plain str: one assistant message;
- `shell("cmd")`: one `exec_command` function call (Codex runs it and sends its output
  in the next request);
- `patch("*** Begin Patch ...")`: one call of Codex's own editing tool, `apply_patch` (a
  freeform tool: offered only to a model Codex knows, e.g. `model = "gpt-5.5"`);
- a callable `f(request) -> turn`.

A request with no tools is a side request (the terminal UI's thread title): answered with
a short text, the script untouched. Once the script is exhausted every request gets `done`.
Every request is logged, and every connection's peer address is kept, so a test can assert
that the mock was the only peer Codex talked to (all on 127.0.0.1).
"""

from __future__ import annotations

import json
import threading
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

EXHAUSTED_TEXT = "done"
SIDE_TEXT = "a title"


@dataclass
class Turn:
    kind: str  # "text", "shell" or "patch"
    text: str = ""
    cmd: str = ""


def text(s: str) -> Turn:
    return Turn("text", text=s)


def shell(cmd: str) -> Turn:
    return Turn("shell", cmd=cmd)


def patch(text: str) -> Turn:
    return Turn("patch", text=text)


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
    def items(self) -> list:
        return list((self.body or {}).get("input") or []) if isinstance(self.body, dict) else []

    def texts(self, role: str | None = None) -> list[str]:
        """The text of each input message of `role` (hook context arrives as "developer")."""
        return ["\n".join(strings_in(i.get("content"))) for i in self.items
                if isinstance(i, dict) and i.get("type", "message") == "message"
                and (role is None or i.get("role") == role)]


def _sse(kind: str, data: dict) -> bytes:
    data = dict(data, type=kind)
    return f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode()


def frames(turn: Turn) -> bytes:
    """The SSE frames of one response, in the order Codex 0.171.0 accepts."""
    rid = "resp_" + uuid.uuid4().hex[:12]
    out = [_sse("response.created", {"response": {"id": rid}})]
    if turn.kind == "shell":
        call = {"type": "function_call", "id": "fc_" + uuid.uuid4().hex[:12],
                "call_id": "call_" + uuid.uuid4().hex[:12], "name": "exec_command",
                "arguments": json.dumps({"cmd": turn.cmd})}
        out.append(_sse("response.output_item.added", {"output_index": 0, "item": dict(call, arguments="")}))
        out.append(_sse("response.output_item.done", {"output_index": 0, "item": call}))
    elif turn.kind == "patch":
        call = {"type": "custom_tool_call", "id": "ctc_" + uuid.uuid4().hex[:12], "status": "completed",
                "call_id": "call_" + uuid.uuid4().hex[:12], "name": "apply_patch", "input": turn.text}
        out.append(_sse("response.output_item.added", {"output_index": 0, "item": dict(call, input="")}))
        out.append(_sse("response.output_item.done", {"output_index": 0, "item": call}))
    else:
        mid = "msg_" + uuid.uuid4().hex[:12]
        out.append(_sse("response.output_item.added", {"output_index": 0, "item": {
            "type": "message", "role": "assistant", "id": mid, "status": "in_progress", "content": []}}))
        out.append(_sse("response.output_text.delta", {"item_id": mid, "output_index": 0,
                                                       "content_index": 0, "delta": turn.text}))
        out.append(_sse("response.output_item.done", {"output_index": 0, "item": {
            "type": "message", "role": "assistant", "id": mid, "status": "completed",
            "content": [{"type": "output_text", "text": turn.text, "annotations": []}]}}))
    out.append(_sse("response.completed", {"response": {"id": rid, "usage": {
        "input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 1,
        "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 11}}}))
    return b"".join(out)


class ResponsesMock:
    """A started server on 127.0.0.1 (an ephemeral port): `base_url` for Codex's config."""

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
                self._reply(404, b'{"error":"not found"}', "application/json")

            def do_POST(self) -> None:
                n = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(n) if n else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                if self.path.split("?")[0] != "/v1/responses":
                    mock._log(self, body, "other")
                    self._reply(404, b'{"error":"not found"}', "application/json")
                    return
                side = not (isinstance(body, dict) and body.get("tools"))
                mock._log(self, body, "side" if side else "agent")
                turn = text(SIDE_TEXT) if side else mock._next(mock.requests[-1])
                self._reply(200, frames(turn), "text/event-stream")

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
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

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
        return "\n".join(f"#{r.seq} {r.kind} {r.path} {len(r.items)} items" for r in self.requests)


def main() -> None:
    """By hand, or as a process of its own (the terminal-UI test runs it inside a network
    namespace with Codex): `python3 codexmock.py [--port N] [--script JSON] [--log FILE]`.
    The script is a JSON list of turns: a string is a text turn, {"shell": cmd} a shell call.
    Each request is appended to the log as a JSON line."""
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--script", default="[]")
    parser.add_argument("--log")
    args = parser.parse_args()
    mock = ResponsesMock(port=args.port, log_path=args.log)
    mock.set_script([shell(t["shell"]) if isinstance(t, dict) else t for t in json.loads(args.script)])
    print(mock.base_url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        mock.stop()


if __name__ == "__main__":
    main()
