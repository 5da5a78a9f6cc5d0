"""Comments point at what the repository holds (issue 24, "the small ones"): a note that names
a section of one of our docs, or a function of one of our modules, names one that exists.

The review found comments pointing at a `registry()` function, at CLIENTS.md sections and at
an issue that the tree did not hold; moving the box's methods into plain functions left more
(`Box.consume`, `moves._finish_move`). Only what a person reads is checked here: comments and
docstrings of the package, and docs/. Code that names a function is checked by mypy.
"""

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "git_korus_mail"
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]

# "docs/HOOKS.md, "The fast path"" and the like: a doc, then the quoted title of a part of it
SECTION_REF = re.compile(r'\b([A-Z]+\.md)(?:\'s)?,?\s+(?:section\s+)?"([^"\n]+)"')
# a module of ours, then a name in it: `moves.consume`, `drain_context.session_dir_name`
MODULES = ("answers", "claims", "drops", "events", "fastpath", "files", "forwarding", "fsafe", "journal",
           "launch", "layout", "life", "markers", "message", "moves", "presence", "publish", "records",
           "retention", "watch", "wtident", "drain", "drain_context", "drain_consume", "drain_show",
           "drain_fast", "limits", "limitconf", "verdict", "roster", "roster_hooks", "answer", "notices", "wake")
NAME_REF = re.compile(r"\b(%s)\.([A-Za-z_]\w*)" % "|".join(MODULES))
NOT_NAMES = {"py", "md", "json", "jsonl", "lock", "sh"}  # file names: journal.jsonl, moves.py


def prose_of(path):
    """(line, text) of every comment and docstring of a module: what a person reads."""
    source = path.read_text(encoding="utf-8")
    out = [(tok.start[0], tok.string) for tok in tokenize.generate_tokens(io.StringIO(source).readline)
           if tok.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                out.append((body[0].lineno, body[0].value.value))
    return out


def joined(lines):
    """Comment lines joined into sentences, so a reference wrapped over two lines is read whole."""
    return re.sub(r"\s*\n\s*#?\s*", " ", "\n".join(text.lstrip("# ") for _, text in lines))


def places(doc):
    """What a reference may name in a doc: its headings, its bold labels, and its bullets' names."""
    text = (ROOT / "docs" / doc if doc != "README.md" else ROOT / doc).read_text(encoding="utf-8")
    found = [h.lstrip("#").strip() for h in re.findall(r"^#+ .*$", text, re.M)]
    found += re.findall(r"\*\*([^*\n]{1,100})\*\*", text)  # on one line: a label, never a span
    found += re.findall(r"^\s*- `([^`]+)`", text, re.M)
    return [p.lower() for p in found]


def section_exists(doc, title):
    known = places(doc)

    def named(words):
        return any(words.lower().strip() in p for p in known)
    # "Codex CLI: the sandbox" names the part "The sandbox" of the section "Codex CLI"
    return named(title) or (": " in title and all(named(part) for part in title.split(": ")))


def defined_names():
    names = {}
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found = names.setdefault(path.stem, set())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found.add(node.name)
            elif isinstance(node, ast.Assign):
                found.update(t.id for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                found.add(node.target.id)
            elif isinstance(node, ast.ImportFrom):
                found.update(a.asname or a.name for a in node.names)
    return names


def readings():
    """{where: text} of everything a person reads: the package's prose, and the docs."""
    out = {str(path.relative_to(ROOT)): joined(prose_of(path)) for path in sorted(PACKAGE.rglob("*.py"))}
    out.update((str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")) for path in DOCS)
    return out


READINGS = readings()


def test_prose_of_reads_comments_and_docstrings_only(tmp_path):
    mod = tmp_path / "m.py"
    mod.write_text('"""Module (moves.consume)."""\n\nx = "moves.nothing"  # see moves.gone\n')
    assert [t for _, t in prose_of(mod)] == ["# see moves.gone", "Module (moves.consume)."]


@pytest.mark.parametrize("where", sorted(READINGS))
def test_every_section_a_note_names_exists(where):
    missing = sorted({f"{doc}, \"{title}\"" for doc, title in SECTION_REF.findall(READINGS[where])
                      if (ROOT / "docs" / doc).is_file() or doc == "README.md"
                      if not section_exists(doc, title)})
    assert not missing, (where, missing)


def test_every_function_a_note_names_exists():
    names = defined_names()
    missing = sorted({f"{where}: {mod}.{name}" for where, text in READINGS.items() for mod, name in NAME_REF.findall(text)
                      if name not in NOT_NAMES and name not in names.get(mod, set())})
    assert not missing, missing
