"""`read <id>`: one message whole, without consuming it.

The terminal is hostile ground as much as the model's context: every header field and
every body line goes through the drain's escaping (core/render.py), so an ESC sequence, an
OSC 52 clipboard write, a bidi override or a zero-width character arrives as visible text.
`--raw` is the one way out unchanged: the body's bytes, for a pipe or a file. On a terminal it
is refused before anything is read: a peer's body there could retitle the window, colour or
clear the screen, or set the clipboard (OSC 52), which is what the escaping exists to stop.
"""

import json
import sys
import time
from dataclasses import dataclass

from git_korus_mail.commands.mailtext import age, arrival_line, body_lines, relayed, sender, sent_said, stamp
from git_korus_mail.commands.inbox import state_line
from git_korus_mail.commands.text import safe, wrap
from git_korus_mail.core import mailview, render
from git_korus_mail.errors import MailError, UsageError

TYPE_CHECKING = False  # mypy reads the block below
if TYPE_CHECKING:
    from typing import IO, Any, Dict, List, TextIO

    from git_korus_mail.core.clone import Clone

    Detail = Dict[str, Any]  # mailview.detail's dict: one message, every field as --json prints it

NOT_CONSUMED = "read does not consume: the message stays as it was"
RAW_ON_TERMINAL = ("--raw not on a terminal (a body's escapes would act on it); redirect or pipe it: "
                   "git korus-mail read {id} --raw > body.txt")


@dataclass(frozen=True)
class ReadArgs:
    id: str              # a message id, or a prefix of one only one message has
    json: bool = False   # machine-readable, every detail
    raw: bool = False    # the body's bytes unchanged (for a pipe)


def run(clone: "Clone", args: ReadArgs, out: "TextIO") -> int:
    if args.json and args.raw:
        raise UsageError("--json and --raw exclude each other")
    if args.raw and _is_terminal(out):
        raise MailError(RAW_ON_TERMINAL.format(id=safe(args.id)))
    found = mailview.find(clone, args.id)
    e = mailview.detail(found)
    if args.raw:
        sys.stderr.write(f"git korus-mail: {NOT_CONSUMED}\n")
        out.flush()
        out.buffer.write(raw_bytes(e))
        out.buffer.flush()
        return 0
    if args.json:
        e = dict(e, read_consumes=False)
        if isinstance(e.get("raw"), bytes):
            e["raw"] = e["raw"].decode("utf-8", "replace")
        out.write(json.dumps(e, indent=2) + "\n")
        return 0
    for line in lines(e, clone.own_key.path):
        # every line but the body's own under 100 columns (issue 25); a body line is the
        # sender's text, shown whole and escaped, as the model is shown it
        for part in [line] if line.startswith(render.BODY_PREFIX) else wrap(line):
            out.write(part + "\n")
    return 0


def _is_terminal(out: "IO[str]") -> bool:
    try:
        return out.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream: no terminal to protect
        return False


def raw_bytes(e: "Detail") -> bytes:
    """The body as it was sent (a quarantined file: its bytes as they are on disk)."""
    if e["state"] == "quarantined":
        raw: bytes = e.get("raw") or b""
        return raw
    # a lone surrogate (a hostile file's \\ud800) cannot be UTF-8: written as it is, never refused
    body: str = e.get("body", "")
    return body.encode("utf-8", "surrogatepass")


def lines(e: "Detail", here: str) -> "List[str]":
    now = time.time()
    where = ("this worktree's box" if e["own_box"] else
             f"the box of {safe(e.get('box_path') or '?')}, not this worktree's")
    head = f"message  {safe(e['id'] or '(no id)')}"
    out = [f"{head}  in {where}"] if e["own_box"] else [head, f"         in {where}"]
    out += [f"         {NOT_CONSUMED} (as of {stamp(e['as_of'])})",
            f"state    {safe(e['state'])}: {state_line(e)}"]
    if "from" in e:
        to = e.get("to") or {}
        out += [f"from     {sender(e['from'], here)}",
                f"         path {safe(e['from'].get('path') or '?')}",
                f"to       {safe(to.get('path') or '?')}",
                f"         key {safe(to.get('key') or '?')}",
                f"kind     {safe(e['kind'])}"]
        if relayed(e):
            # the sent time (and the id) are the sending machine's clock; the arrival is this
            # one's, which limits and expiry judge it by (docs/STORE.md, "Arrivals")
            # the relay set its expiry from that arrival (relay/link.py), so it is this clock's too
            out += [f"sent     {safe(e['sent_at'])} ({sent_said(e['sent_at'], now)}), by the sender's clock",
                    f"arrived  {arrival_line(e, now, here=False)}",
                    f"expires  {safe(e['expires_at'])}, by this machine's clock (its time to live from"
                    f" its arrival)"]
        else:
            out += [f"sent     {safe(e['sent_at'])} ({age(e['sent_at'], now)} ago)",
                    f"expires  {safe(e['expires_at'])}"]
        if e.get("session_filter"):
            out.append(f"only for session {safe(e['session_filter'])}")
        for k in mailview.OPTIONAL_FIELDS:
            if k in e:
                out.append(f"{k:<8} {safe(e[k])}")
    for s in e.get("shown") or []:
        obs = s.get("observed") or {}
        extra = "".join(f", {k} {safe(obs[k])}" for k in ("chars", "truncated", "body_chars") if k in obs)
        out.append(f"shown    to session {safe(s.get('session') or '?')} (launch {safe(s.get('launch') or '?')})")
        out.append(f"         at {safe(s.get('at') or '?')} in {safe(s.get('event') or '?')}{extra}")
    if "receipt" in e:
        r = e["receipt"]
        obs = r.get("observed") if isinstance(r.get("observed"), dict) else {}
        out.append(f"receipt  consumed by session {safe(r.get('session') or '?')} (launch "
                   f"{safe((e.get('consumed') or {}).get('launch') or '?')}) at {safe(r.get('consumed_at') or '?')}")
        out.append("         observed " + (", ".join(f"{safe(k)} {safe(v)}" for k, v in sorted(obs.items())) or "-"))
    if e["state"] == "quarantined":
        out.append(f"box      key {safe(e['box'])}")
        out.append(f"file     {safe(e.get('file'))} in quarantine/, once {safe(e.get('name') or '?')}")
        raw = e.get("raw")
        if raw is None:
            out.append("         its bytes cannot be read (gone, too large, or not a regular file of ours)")
            return out
        out.append(f"content  {len(raw)} bytes, not a valid message: shown as text, every control, bidi"
                   f" and invisible character as an escape")
        out += body_lines(raw.decode("utf-8", "replace"))
        return out
    if "body" in e:
        body = e["body"]
        out.append(f"body     {len(body)} characters; controls, bidi and invisibles escaped"
                   f" (--raw: the bytes as sent)")
        out += body_lines(body)
    return out
