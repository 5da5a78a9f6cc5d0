"""The typed vocabulary (store/shapes.py, core/vocab.py, clients/interface.py) costs nothing at
run time and says what the code does.

- It is read by mypy only: every import of it sits under `if TYPE_CHECKING:`, found by parsing
  each module with ast; and a real hook event, run as a client runs it, loads neither the
  vocabulary nor `typing` (the hook hot path; docs/HOOKS.md).
- Each Literal holds exactly the values the code uses at run time, so a state added in the
  code and not in the type (or the reverse) fails here, not in a reader's head.
"""

import ast
import json
from pathlib import Path
from typing import get_args

import pytest

from drainmodules import drain_modules
from helpers import hook

PACKAGE = Path(__file__).resolve().parent.parent / "git_korus_mail"
VOCABULARY = ("git_korus_mail.store.shapes", "git_korus_mail.core.vocab", "git_korus_mail.clients.interface")
# Names only mypy may import: the vocabulary, and typing_extensions (mypy's own dependency, for
# what Python 3.9's typing lacks; never a dependency of ours).
TYPE_ONLY = VOCABULARY + ("typing_extensions",)


def _is_type_checking(test):
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"


def runtime_imports(tree):
    """(line, module) of each import that runs at run time: every import but those inside an
    `if TYPE_CHECKING:` body (its else branch runs)."""
    found = []

    def walk(node, guarded):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                walk(child, True)
            for child in node.orelse:
                walk(child, guarded)
            return
        if not guarded:
            if isinstance(node, ast.Import):
                found.extend((node.lineno, alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                found.append((node.lineno, node.module))
                found.extend((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)
        for child in ast.iter_child_nodes(node):
            walk(child, guarded)

    walk(tree, False)
    return found


def test_runtime_imports_sees_through_type_checking_blocks_only():
    """The parser this file's checks stand on: a guarded import is skipped, an unguarded one (or
    one in the guard's else branch, or in a function) is found."""
    tree = ast.parse("TYPE_CHECKING = False\n"
                     "if TYPE_CHECKING:\n    from git_korus_mail.core.vocab import Phase\n"
                     "else:\n    import a\n"
                     "def f():\n    from git_korus_mail.store import shapes\n")
    assert runtime_imports(tree) == [(5, "a"), (7, "git_korus_mail.store"), (7, "git_korus_mail.store.shapes")]


def test_the_vocabulary_is_imported_only_where_mypy_reads_it():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        name = ".".join(rel.parts)
        if name in VOCABULARY:
            continue  # each may import the others and typing: nothing imports it at run time
        for line, module in runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if any(module == t or module.startswith(t + ".") for t in TYPE_ONLY):
                offenders.append(f"{rel}.py:{line} imports {module} at run time")
    assert not offenders, offenders


@pytest.mark.parametrize("event", ["SessionStart", "PostToolUse", "Stop"])
def test_a_hook_event_loads_no_vocabulary_and_no_typing(clone, event):
    """What a drain with an empty box adds to sys.modules: never the vocabulary, nor `typing`
    (which the hints would drag in were they evaluated: a few milliseconds per hook event)."""
    hook("SessionStart", clone.web, "warm")
    _, added = drain_modules(clone.web, event, "warm")
    assert "git_korus_mail.core.drain" in added  # the measurement itself works
    loaded = sorted(added & set(TYPE_ONLY + ("typing",)))
    assert not loaded, loaded


# -- each Literal holds what the code uses ------------------------------------------------------
def _returned_strings(path, function):
    """Every string literal a function returns (as itself or as a tuple's first item) in a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == function:
            for ret in ast.walk(node):
                if isinstance(ret, ast.Return) and ret.value is not None:
                    value = ret.value.elts[0] if isinstance(ret.value, ast.Tuple) else ret.value
                    for leaf in ast.walk(value):
                        if isinstance(leaf, ast.Constant) and isinstance(leaf.value, str):
                            out.add(leaf.value)
    return out


def test_phase_is_the_drains_phases_and_what_every_client_maps_to():
    from git_korus_mail.clients import hook_protocols
    from git_korus_mail.core import drain_context
    from git_korus_mail.core.vocab import Phase
    assert set(get_args(Phase)) == set(drain_context.PHASES)
    for client in hook_protocols():
        used = {phase for phase, _opening, _frequent in client.PHASE_OF.values()}
        assert used <= set(get_args(Phase)), (client.NAME, used)


def test_consume_and_claim_results_are_what_the_box_returns():
    from git_korus_mail.store.shapes import ClaimResult, ConsumeResult
    moves = PACKAGE / "store" / "moves.py"
    claimed = _returned_strings(moves, "claim")
    assert set(get_args(ClaimResult)) == claimed
    # consume returns its own words, or its claim's when that is not won
    assert set(get_args(ConsumeResult)) == _returned_strings(moves, "consume") | (claimed - {"won"})


def test_fate_is_what_box_fate_answers():
    from git_korus_mail.store import layout
    from git_korus_mail.store.shapes import Fate, Unconsumed
    said = _returned_strings(PACKAGE / "store" / "records.py", "fate") | set(layout.UNCONSUMED)
    assert set(get_args(Fate)) == said
    assert set(get_args(Unconsumed)) == set(layout.UNCONSUMED)


def test_liveness_is_what_claims_judge_answers():
    from git_korus_mail.store.shapes import Liveness
    said = _returned_strings(PACKAGE / "store" / "claims.py", "judge")
    assert set(get_args(Liveness)) <= said  # judge's tuples also carry the words of what is known
    assert {"alive", "dead", "unknown"} == set(get_args(Liveness))


def test_session_state_and_answer_status_are_the_stores():
    from git_korus_mail.store import message, presence
    from git_korus_mail.store.shapes import AnswerStatus, SessionState
    assert set(get_args(AnswerStatus)) == set(message.STATUSES)
    states = _returned_strings(PACKAGE / "core" / "drain_context.py", "state_after")
    assert set(get_args(SessionState)) == states
    assert set(presence.LIVE) <= states


def test_verdict_holds_every_verdict_send_gives():
    from git_korus_mail.core import verdict
    from git_korus_mail.core.vocab import Verdict
    source = (PACKAGE / "core" / "verdict.py").read_text(encoding="utf-8")
    written = {node.values[i].value for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Dict)
               for i, key in enumerate(node.keys)
               if isinstance(key, ast.Constant) and key.value == "verdict" and isinstance(node.values[i], ast.Constant)}
    assert set(get_args(Verdict)) == written | set(verdict.NOT_SHOWN)


def test_message_shape_names_every_field_build_writes():
    from git_korus_mail.store import message
    from git_korus_mail.store.shapes import Message
    msg = message.build("hi", "/w", "k-1", {"path": "/v"}, in_reply_to=message.new_id(), thread=message.new_id(),
                        status="done", wake=False)
    assert set(msg) == set(Message.__annotations__)
    assert set(Message.__annotations__) - Message.__optional_keys__ == {
        "v", "id", "sent_at", "expires_at", "kind", "from", "to", "session", "body"}


@pytest.mark.parametrize("event", ["SessionStart", "Stop"])
def test_a_hook_event_with_mail_loads_no_vocabulary_and_no_typing(clone, event):
    """The typed records are built on the paths that show and consume mail (a display marker's
    launch record, the receipt, presence): with mail to show, then to consume, still neither."""
    from helpers import run_cli
    run_cli("send", "--to", "../web", "typed on the way", cwd=clone.main, check=True)
    if event == "Stop":
        hook("SessionStart", clone.web, "s1")  # shown: the Stop consumes it
    _, added = drain_modules(clone.web, event, "s1")
    assert ("git_korus_mail.store.moves" if event == "Stop" else "git_korus_mail.store.markers") in added
    loaded = sorted(added & set(TYPE_ONLY + ("typing",)))
    assert not loaded, loaded


def test_receipt_and_presence_shapes_name_every_key_their_writers_write(clone):
    from git_korus_mail.core import keys
    from git_korus_mail.store.shapes import MarkedLaunch, Presence, Receipt
    from helpers import run_cli
    msg_id = run_cli("send", "--to", "../web", "for the shapes", cwd=clone.main, check=True).stdout.split()[1]
    hook("SessionStart", clone.web, "s1")
    hook("Stop", clone.web, "s1")
    box = clone.mail_root / "box" / keys.key_for(str(clone.web)).name
    receipt = json.loads((box / "receipts" / (msg_id + ".json")).read_text())
    assert set(receipt) == set(Receipt.__annotations__)
    assert set(receipt["launch"]) == set(MarkedLaunch.__annotations__) - {"session"}
    [marked] = [json.loads(p.read_text()) for p in (box / "shown").glob("s1@*/.launch")]
    assert set(marked) == set(MarkedLaunch.__annotations__)
    presence = json.loads((box / "sessions" / "s1.json").read_text())
    assert Presence.__required_keys__ <= set(presence) <= set(Presence.__annotations__)
