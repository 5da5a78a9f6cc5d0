"""The house drawn from the imports: no upward arrow, no circle between packages or inside one,
no big module without its reason.

Layers, top to bottom (README's layout map says the same; the rails: docs/TESTING.md, "Guard rails"):
    cli > commands > clients > wiring > core > relay > store > leaf utilities
A module may import its own layer or any layer below it, never one above. Every import
counts, also one inside a function (the hot path defers many), found by parsing each
file with ast, not by importing it.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "git_korus_mail"
LAYERS = ("leaf", "store", "relay", "core", "wiring", "clients", "commands", "cli")   # bottom to top
# The packages, each a layer of its own; a module's package is its first name. The relay (the
# multi-machine carrier, docs/RELAY.md, "Layers") is over the store and under the core: the core
# queues mail across machines through relay/address.py, and the relay's process is handed what
# only the core knows (core/relayhost.py), so the relay imports nothing of the core.
PACKAGES = ("store", "relay", "core", "clients", "commands")
RANK = {name: i for i, name in enumerate(LAYERS)}

# Tiny utilities every layer may use; they import nothing of ours but each other.
LEAF = {"errors", "fastjson", "stamps", "crash", "ui", "shipped", "shell", "__init__"}
# Modules still at the package's top level, each with the layer it belongs to. A module that
# moves into its package (core/, store/, clients/, commands/) leaves this table.
TOP_LEVEL = {
    "cli": "cli", "__main__": "cli",
    # install wiring every client shares (files, record, stub, post-checkout, exclude): it uses
    # the core (core/advice.py) and the store's one writer of new files, and is used by the
    # clients' install modules and by commands; the core, which knows no client, never uses it
    "wiring": "wiring",
}
# Upward imports that exist today, each with its reason; the goal is none. An entry that is no
# longer needed fails the test, so the list only shrinks.
KNOWN_UPWARD = {}
# Circles of imports inside one package that exist today, each by name with its modules and
# reason; the goal is none. A circle that is not within one entry's modules fails (a new circle,
# or one that grew), and so does an entry none of whose modules is in a circle any more: the list
# only shrinks. Empty since issue 24 broke the drain's (core/drain_context.py) and the box's
# (store operations as module functions) circles.
KNOWN_CIRCLES: "dict[str, tuple[set[str], str]]" = {}
# The size rule (docs/TESTING.md, "Guard rails"): a soft cap. A module over MAX_LINES needs its
# reason here, one line a reviewer can judge; a module that reads best as one piece keeps its
# size. Never compress code or carve a module to fit: add a reason instead. An entry whose
# module fell under the cap fails, so the table says what is true.
MAX_LINES = 400
TOO_BIG = {
    "relay.link": "the relay's one process: its loops share one connection, one stop and one state; what "
                  "each decides lives in decisions, returns and retention",
    "store.moves": "consume, expire, cancel and repair under one claim protocol: read as one, as Maildir.add",
    "cli": "one usage block per command, wrapped at 100 columns as git's: text, not logic",
    "core.send": "every destination resolved before the first is queued, beside delivery: one decision",
    "commands.doctor": "one check per wired thing; it splits by client with the client Protocol",
}


def modules():
    """{dotted name under git_korus_mail: path} for every module of the package."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        found[".".join(rel.parts)] = path
    return found


def layer_of(name):
    """The layer of a module named relative to the package ("store.files", "cli", ...)."""
    head = name.partition(".")[0]
    if head in PACKAGES:
        return head
    if head in LEAF:
        return "leaf"
    if head in TOP_LEVEL:
        return TOP_LEVEL[head]
    raise AssertionError(f"git_korus_mail.{name}: no layer; put it in a package or in TOP_LEVEL/LEAF")


def imports_of(path, name):
    """Every module of ours that `path` imports, anywhere in the file, as names relative to the package."""
    return {t for t in _imported(path, name) if _is_module("git_korus_mail." + t)}


def _imported(path, name):
    """What `path` imports from our package, relative to it, whether or not such a module exists."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package_parts = name.split(".")[:-1]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:   # relative: resolve against this module's package
                base = package_parts[:len(package_parts) - node.level + 1]
                mod = ".".join(["git_korus_mail", *base] + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            # `from git_korus_mail.store import claims` names the submodule claims when there is one
            targets = [f"{mod}.{a.name}" if _is_module(f"{mod}.{a.name}") else mod for a in node.names]
        else:
            continue
        for t in targets:
            if t == "git_korus_mail" or not t.startswith("git_korus_mail."):
                continue
            found.add(t[len("git_korus_mail."):])
    return found


def _is_module(dotted):
    rel = Path(*dotted.split(".")[1:]) if dotted.startswith("git_korus_mail.") else None
    return rel is not None and ((PACKAGE / rel).with_suffix(".py").is_file() or (PACKAGE / rel / "__init__.py").is_file())


def graph():
    mods = modules()
    return {name: imports_of(path, name) for name, path in mods.items()}


def upward_imports(edges, allowed=()):
    bad = []
    for src, targets in edges.items():
        for dst in sorted(targets):
            if RANK[layer_of(dst)] > RANK[layer_of(src)] and (src, dst) not in allowed:
                bad.append(f"{src} ({layer_of(src)}) imports {dst} ({layer_of(dst)})")
    return bad


def package_of(name):
    head = name.partition(".")[0]
    return head if head in PACKAGES else layer_of(name)


def package_cycles(edges, allowed=()):
    """Cycles in the graph of packages (a module's package; top-level modules by their layer)."""
    pg = {}
    for src, targets in edges.items():
        for dst in targets:
            if (src, dst) in allowed:
                continue
            a, b = package_of(src), package_of(dst)
            if a != b:
                pg.setdefault(a, set()).add(b)
    cycles, state = [], {}

    def visit(node, stack):
        state[node] = "open"
        for nxt in sorted(pg.get(node, ())):
            if state.get(nxt) == "open":
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = "done"

    for node in sorted(pg):
        if node not in state:
            visit(node, [node])
    return cycles


def circles(edges):
    """Every circle of imports between modules of one package: the strongly connected parts of
    the graph of edges that stay inside a package (Tarjan's algorithm), each a sorted list."""
    inner = {src: sorted(d for d in targets if package_of(d) == package_of(src) and d != src)
             for src, targets in edges.items()}
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in inner.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for v in sorted(inner):
        if v not in index:
            visit(v)
    return sorted(found)


def unexplained_circles(found, known):
    """(circles no entry of `known` holds, names of entries whose modules are in no circle)."""
    new = [" <-> ".join(c) for c in found if not any(set(c) <= mods for mods, _why in known.values())]
    stale = sorted(name for name, (mods, _why) in known.items() if not any(mods & set(c) for c in found))
    return new, stale


def test_every_module_has_a_layer():
    for name in modules():
        layer_of(name)


def test_every_import_of_ours_names_a_module_that_exists():
    # an import left on a module's old path, under `if TYPE_CHECKING:` or in a function
    # that no test runs, fails nowhere else
    stale = sorted(f"{name} imports git_korus_mail.{t}" for name, path in modules().items()
                   for t in _imported(path, name) if not _is_module("git_korus_mail." + t))
    assert not stale, "\n".join(stale)


def test_no_upward_import():
    edges = graph()
    bad = upward_imports(edges, KNOWN_UPWARD)
    assert not bad, "upward imports (layers: " + " > ".join(reversed(LAYERS)) + "):\n" + "\n".join(bad)
    stale = sorted(pair for pair in KNOWN_UPWARD if pair[1] not in edges.get(pair[0], ()))
    assert not stale, f"no longer imported, drop them from KNOWN_UPWARD: {stale}"


def test_no_import_cycle_between_packages():
    cycles = package_cycles(graph(), KNOWN_UPWARD)
    assert not cycles, "\n".join(cycles)


def test_no_import_circle_inside_a_package():
    new, stale = unexplained_circles(circles(graph()), KNOWN_CIRCLES)
    assert not new, "import circles inside a package (a module that both uses and is used by another):\n" \
        + "\n".join(new)
    assert not stale, f"these circles are gone, drop them from KNOWN_CIRCLES: {stale}"


def test_no_module_over_the_line_limit():
    over = {}
    for name, path in modules().items():
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > MAX_LINES:
            over[name] = n
    unexplained = {k: v for k, v in over.items() if k not in TOO_BIG}
    assert not unexplained, (f"modules over {MAX_LINES} lines: {unexplained}; give each a reason in TOO_BIG, or split "
                             "it where it has two jobs; never compress code to fit (docs/TESTING.md, \"Guard rails\")")
    stale = sorted(set(TOO_BIG) - set(over))
    assert not stale, f"no longer over {MAX_LINES} lines, drop them from TOO_BIG: {stale}"


# -- the checker itself, on made-up sources: it must see what it is meant to see ----------
@pytest.fixture
def fake(tmp_path):
    def make(name, source):
        path = tmp_path / (name.replace(".", "_") + ".py")
        path.write_text(source)
        return path
    return make


def test_a_function_level_upward_import_is_seen(fake):
    path = fake("store.files", "def f():\n    from git_korus_mail.commands import send\n")
    edges = {"store.files": imports_of(path, "store.files")}
    assert edges["store.files"] == {"commands.send"}
    assert upward_imports(edges) == ["store.files (store) imports commands.send (commands)"]


def test_a_circle_inside_a_package_is_seen():
    edges = {"core.a": {"core.b", "store.x"}, "core.b": {"core.c"}, "core.c": {"core.a"}, "store.x": set(),
             "core.d": {"core.a"}}
    assert circles(edges) == [["core.a", "core.b", "core.c"]]
    known = {"old": ({"core.a", "core.b"}, "why")}
    assert unexplained_circles(circles(edges), known) == (["core.a <-> core.b <-> core.c"], [])
    known = {"old": ({"core.a", "core.b", "core.c"}, "why"), "gone": ({"core.z"}, "why")}
    assert unexplained_circles(circles(edges), known) == ([], ["gone"])


def test_core_importing_wiring_is_upward():
    # wiring has its own rank: the core knows no client and none of install's machinery
    assert upward_imports({"core.send": {"wiring.record"}}) == ["core.send (core) imports wiring.record (wiring)"]
    assert upward_imports({"wiring.stub": {"clients.claude.stub"}}) == [
        "wiring.stub (wiring) imports clients.claude.stub (clients)"]
    assert upward_imports({"clients.claude.stub": {"wiring.stub"}, "commands.install": {"wiring.stub"}}) == []


def test_the_relay_is_under_the_core_and_over_the_store():
    # relay -> core ran back up until core/relayhost.py handed the relay its facts (issue 27)
    assert upward_imports({"relay.link": {"core.retention"}}) == ["relay.link (relay) imports core.retention (core)"]
    assert upward_imports({"relay.local": {"commands.remote"}}) == [
        "relay.local (relay) imports commands.remote (commands)"]
    assert upward_imports({"core.answer": {"relay.address"}, "relay.local": {"store.relayfiles"},
                           "core.relayhost": {"relay.link", "relay.directory"}}) == []
    assert package_cycles({"relay.directory": {"core.keys"}, "core.reply": {"relay.address"}}) == [
        "core -> relay -> core"]


def test_a_cycle_between_packages_is_seen():
    edges = {"store.files": {"commands.send"}, "commands.send": {"store.files"}}
    assert package_cycles(edges) == ["commands -> store -> commands"]
