"""`install` and `uninstall`: wire every worktree's Claude Code hooks to the drain, and unwire.

What install writes, each recorded in `<mail>/hooks/installed.json` so uninstall
puts back exactly what was there:
- the stub `<mail>/hooks/claude-hook` (from hooks/claude-hook.sh), which runs the
  absolute path of the git-korus-mail that installed it;
- our entries in each worktree's `.claude/settings.local.json` (scope local), or in
  `$CLAUDE_CONFIG_DIR/settings.json` with a repo anchor (scope user);
- `.claude/settings.local.json` in `<common>/info/exclude` (never a tracked .gitignore);
- a git post-checkout hook that wires a worktree made by `git worktree add`; a
  post-checkout hook already there is kept as post-checkout.legacy and runs first.

Settings files are edited by read, merge, compare, replace: a current file is never
rewritten (bytes and mtime stay), an invalid one is never touched. Install ends by
verifying what it wrote, running the stub once (seed step 8: prove, do not infer).
"""

import json
import os
import re
import shutil
import subprocess
import sys
from contextlib import contextmanager

from git_korus_mail.clients.claude import protocol as claude_protocol
from git_korus_mail.clients.claude import settings as claude
from git_korus_mail.shell import sh_quote
from git_korus_mail.errors import MailError

STUB_NAME = "claude-hook"
HOOKS_SUBDIR = "hooks"
RECORD_NAME = "installed.json"
LOCK_NAME = ".install.lock"
LOCAL_SETTINGS = os.path.join(".claude", "settings.local.json")
EXCLUDE_LINE = ".claude/settings.local.json"
EXCLUDE_COVERING = {EXCLUDE_LINE, "/" + EXCLUDE_LINE, ".claude", ".claude/", "/.claude", "/.claude/"}
POST_CHECKOUT = "post-checkout"
LEGACY_SUFFIX = ".legacy"
POST_CHECKOUT_MARK = "# git-korus-mail post-checkout hook"
# Set by our post-checkout hook: wire only the worktree `git worktree add` just made.
POST_CHECKOUT_ENV = "KORUS_MAIL_POST_CHECKOUT"
VERIFY_TIMEOUT = 30
LOCK_TIMEOUT = 30

POST_CHECKOUT_TEMPLATE = """\
#!/bin/sh
{mark} template-version=1
# Written by `git korus-mail install`; `git korus-mail uninstall` removes it and puts
# back the hook it replaced (kept beside it as post-checkout.legacy, which runs first).
# `git worktree add` runs post-checkout in the new worktree with the null object id
# as $1: that is when the new worktree's .claude/settings.local.json gets wired.

helper={helper}
advice={advice}
status=0
legacy="$(dirname "$0")/post-checkout.legacy"
if [ -f "$legacy" ] && [ -x "$legacy" ]; then
    "$legacy" "$@"
    status=$?
fi

case "${{1-}}" in
    ""|*[!0]*) ;;  # an ordinary checkout: nothing new to wire
    *)
        [ -f "$helper" ] && [ -x "$helper" ] || helper=$(command -v git-korus-mail 2>/dev/null) || helper=
        if [ -n "$helper" ]; then
            ( unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_PREFIX GIT_COMMON_DIR
              {env}=1 exec "$helper" install ) </dev/null ||
                echo "git korus-mail: could not wire $PWD; run: git korus-mail install" >&2
        else
            echo "git korus-mail: git-korus-mail not found; $PWD is not wired to the mail drain;" \\
                 "$advice" >&2
        fi
        ;;
esac
exit $status
"""


# -- the executable that hooks will run ---------------------------------------------
def find_helper():
    """Absolute path of the git-korus-mail running now, to bake into the stub.

    The baked path, not PATH, is what the stub runs: Claude Code inside an editor
    often has a PATH without pipx's bin dir. Symlinks are kept (pipx's
    ~/.local/bin link follows upgrades; its target need not)."""
    candidates = []
    argv0 = sys.argv[0] if sys.argv else ""
    if os.path.basename(argv0).startswith("git-korus-mail"):
        candidates.append(argv0 if os.sep in argv0 else shutil.which(argv0))
    # `python -m git_korus_mail`: the console script sits beside the interpreter
    candidates.append(os.path.join(os.path.dirname(sys.executable), "git-korus-mail"))
    candidates.append(shutil.which("git-korus-mail"))
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.abspath(c)
    from git_korus_mail import advice
    raise MailError("cannot find the git-korus-mail executable to wire the hooks to; "
                    f"{advice.advice()}, then run install again")


def _template_path():
    from git_korus_mail.shipped import shipped_file
    path = shipped_file("hooks", "claude-hook.sh")
    if path is not None:
        return path
    raise MailError("the hook template claude-hook.sh is missing from this installation; reinstall it")


def _json_inside(text):
    """The inside of a JSON string literal for `text`, ASCII only (the stub adds the quotes)."""
    return json.dumps(text, ensure_ascii=True)[1:-1]


def render_stub(helper, repo=None):
    """The stub's text for `helper`, with the reinstall advice for this machine (advice.py)
    baked in: when the stub needs it, the package may not run at all. Every value is quoted
    here, in Python, so the stub stays valid shell and its fault valid JSON whatever it holds."""
    from git_korus_mail import advice
    with open(_template_path(), encoding="utf-8") as f:
        text = f.read()
    values = {"@HELPER@": sh_quote(helper),
              "@HELPER_JSON@": sh_quote(_json_inside(helper)),
              "@ADVICE_JSON@": sh_quote(_json_inside(advice.advice(helper, repo)))}
    return re.sub("@HELPER_JSON@|@ADVICE_JSON@|@HELPER@", lambda m: values[m.group(0)], text)


def render_post_checkout(helper, repo=None):
    from git_korus_mail import advice
    return POST_CHECKOUT_TEMPLATE.format(mark=POST_CHECKOUT_MARK, helper=sh_quote(helper),
                                         advice=sh_quote(advice.advice(helper, repo)),
                                         env=POST_CHECKOUT_ENV)


# -- small file helpers -------------------------------------------------------------
def _read_bytes(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


_ANY = object()


def _write_atomic(path, data, mode, expect=_ANY):
    """Replace `path` by a sibling temp file and rename. A symlinked file (dotfiles
    repos) is written through, not replaced by a plain file. With `expect` (bytes, or
    None for "absent"), give up and return False when the file changed since it was
    read: Claude Code, or another clone's install, may write the same file."""
    target = os.path.realpath(path)
    d = os.path.dirname(target)
    tmp = os.path.join(d, f".{os.path.basename(target)}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        if expect is not _ANY and _read_bytes(target) != expect:
            os.unlink(tmp)
            return False
        os.rename(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return True


def _mode_of(path, default):
    try:
        return os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        return default


def _default_file_mode():
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


# -- settings files -------------------------------------------------------------------
def read_settings(path):
    """(raw bytes or None when absent, parsed dict or None). MailError when the file is not
    a settings document we can merge into; the file is never touched then."""
    raw = _read_bytes(path)
    if raw is None:
        return None, None
    try:
        text = raw.decode("utf-8")
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise MailError(f"{path} is not valid JSON ({exc}); left it untouched: fix it and run install again") from None
    try:
        claude.validate_settings(data)
    except claude.BadSettings as exc:
        raise MailError(f"{path}: {exc}; left it untouched: fix it and run install again") from None
    return raw, data


def dump_like(data, raw):
    """Serialise `data` in the style of the file it came from: its indent (2 for a new or
    trivial file), its line ends, its final newline, raw non-ASCII or escaped."""
    text = raw.decode("utf-8") if raw else ""
    indent = 2
    if text.strip() and "\n" not in text.strip():
        indent = None if text.strip() not in ("{}",) else 2
    else:
        m = re.search(r"^([ \t]+)\S", text, re.M)
        if m:
            ws = m.group(1)
            indent = ws if "\t" in ws else len(ws)
    ascii_only = not text or text.isascii()
    out = json.dumps(data, indent=indent, ensure_ascii=ascii_only)
    if not text or text.endswith("\n"):
        out += "\n"
    if "\r\n" in text:
        out = out.replace("\n", "\r\n")
    return out.encode("utf-8")


# -- the record of what install did -------------------------------------------------------
class Record:
    """`<mail>/hooks/installed.json`: per scope, which files we created or modified (with the
    original text, so uninstall can restore bytes), dirs we made, the exclude line, the
    post-checkout hook."""

    def __init__(self, path, data):
        self.path = path
        self.data = data

    @classmethod
    def load(cls, hooks_dir):
        path = os.path.join(hooks_dir, RECORD_NAME)
        raw = _read_bytes(path)
        data = {}
        if raw:
            try:
                data = json.loads(raw)
            except ValueError:
                data = {}  # a damaged record: uninstall falls back to finding our entries
        if not isinstance(data, dict):
            data = {}
        data.setdefault("scopes", {})
        return cls(path, data)

    def scope(self, name, create=False):
        scopes = self.data["scopes"]
        if create:
            scopes.setdefault(name, {"files": {}})
        return scopes.get(name)

    def drop_scope(self, name):
        self.data["scopes"].pop(name, None)

    def save(self):
        if not self.data["scopes"]:
            if os.path.exists(self.path):
                os.unlink(self.path)
            return
        data = (json.dumps(self.data, indent=2, sort_keys=True) + "\n").encode()
        if _read_bytes(self.path) != data:  # a repeated install leaves every byte and mtime alone
            _write_atomic(self.path, data, 0o600)


# -- where things go -------------------------------------------------------------------------
def _hooks_dir(root):
    return root.ensure_dir_path(HOOKS_SUBDIR)


def stub_path(root):
    return os.path.join(root.path, HOOKS_SUBDIR, STUB_NAME)


def user_settings_path():
    base = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
    return os.path.join(base, "settings.json")


def repo_anchor(clone):
    """The path user-scope entries pass as --repo: the main worktree, else the common dir."""
    for wt in clone.worktrees:
        if wt.is_main:
            return wt.path
    return clone.common_dir


def local_targets(clone, only_own=False):
    """[(settings path, worktree)] for the worktrees install wires, and the prunable ones skipped."""
    wts = clone.worktrees
    if only_own:
        own = clone.own_worktree()
        wts = [own] if own is not None else []
    targets, skipped = [], []
    for wt in wts:
        if wt.prunable or not os.path.isdir(wt.path):
            skipped.append(wt)
        else:
            targets.append((os.path.join(wt.path, LOCAL_SETTINGS), wt))
    return targets, skipped


def _git(args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)


def git_hooks_dir(clone):
    """(hooks dir as git resolves it, core.hooksPath value or None). A relative hooksPath
    is relative to the worktree a hook runs in (githooks(5)); we resolve it from the
    main worktree. `--type=path` expands ~ as git does."""
    cwd = repo_anchor(clone)
    res = _git(["config", "--type=path", "--get", "core.hooksPath"], cwd)
    hooks_path = res.stdout.strip() if res.returncode == 0 else ""
    if not hooks_path:
        return os.path.join(clone.common_dir, "hooks"), None
    return os.path.normpath(os.path.join(cwd, hooks_path)), hooks_path


@contextmanager
def _locked(hooks_dir):
    """One install/uninstall at a time per clone (a post-checkout may race a manual install)."""
    import portalocker
    path = os.path.join(hooks_dir, LOCK_NAME)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600))
    try:
        flags = portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING  # retried until timeout
        with portalocker.Lock(path, mode="a", timeout=LOCK_TIMEOUT, flags=flags):
            yield
    except portalocker.exceptions.LockException:
        raise MailError(f"another install or uninstall holds {path}; try again") from None


# -- install ------------------------------------------------------------------------------
SCOPES = ("local", "user")


def write_stub(root, helper, force=False, repo=None):
    """Write the stub when absent, different (template, helper or advice changed) or forced."""
    path = stub_path(root)
    data = render_stub(helper, repo).encode("utf-8", "surrogateescape")
    if not force and _read_bytes(path) == data and os.access(path, os.X_OK):
        return path, "current"
    _write_atomic(path, data, 0o700)
    return path, "written"


def wire_file(path, stub, repo, force, files):
    """Merge our entries into one settings file; `files` is the scope's record of files."""
    for _attempt in range(3):
        raw, data = read_settings(path)
        base = data if data is not None else {}
        new = claude.merge_settings(base, stub, repo, force=force)
        if new == base and not force:
            return "current"
        created_dir = False
        if raw is None and not os.path.isdir(os.path.dirname(path)):
            os.mkdir(os.path.dirname(path))
            created_dir = True
        if path not in files:
            had_ours = any(s == stub for _e, s in claude.callers(base))
            files[path] = {"created": raw is None, "created_dir": created_dir,
                           "original": None if (raw is None or had_ours) else raw.decode("utf-8")}
        out = dump_like(new, raw)
        if raw is not None and out == raw and not force:
            return "current"
        mode = _mode_of(path, _default_file_mode())
        if _write_atomic(path, out, mode, expect=raw):
            return "created" if raw is None else "updated"
    raise MailError(f"{path} kept changing while install merged into it; run install again")


def add_exclude(clone, scope_rec):
    path = os.path.join(clone.common_dir, "info", "exclude")
    raw = _read_bytes(path) or b""
    lines = {ln.strip() for ln in raw.decode("utf-8", "replace").splitlines()}
    if lines & EXCLUDE_COVERING:
        return path, "present"
    added = ("\n" if raw and not raw.endswith(b"\n") else "") + EXCLUDE_LINE + "\n"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    created = not os.path.exists(path)
    _write_atomic(path, raw + added.encode(), _mode_of(path, _default_file_mode()))
    scope_rec["exclude"] = {"path": path, "appended": added, "created": created}
    return path, "added"


def is_ours_post_checkout(path):
    data = _read_bytes(path)
    return data is not None and POST_CHECKOUT_MARK.encode() in data[:512]


def install_post_checkout(clone, helper, force, scope_rec):
    """Install our post-checkout hook; returns (lines to print, problem or None)."""
    hooks_dir, hooks_path = git_hooks_dir(clone)
    hook = os.path.join(hooks_dir, POST_CHECKOUT)
    legacy = hook + LEGACY_SUFFIX
    lines = []
    if hooks_path:
        lines.append(f"core.hooksPath is set ({hooks_path}): post-checkout goes to {hooks_dir}")
        if not os.path.isabs(hooks_path):
            lines.append("  it is relative: `git worktree add` runs the new worktree's own copy, so new "
                         "worktrees are wired only once that hook is committed there; otherwise run "
                         "`git korus-mail install` after `git worktree add`")
    rec = scope_rec.get("post_checkout") or {}
    data = render_post_checkout(helper, repo_anchor(clone)).encode("utf-8", "surrogateescape")
    try:
        created_dir = False
        if not os.path.isdir(hooks_dir):
            os.makedirs(hooks_dir)
            created_dir = True
        moved = False
        if os.path.lexists(hook) and not is_ours_post_checkout(hook):
            if os.path.lexists(legacy):
                return lines, (f"{hook} is not ours and {legacy} exists too; left both alone, so new "
                               f"worktrees are not wired automatically: merge them by hand, then run install again")
            os.rename(hook, legacy)
            moved = True
            lines.append(f"kept your {POST_CHECKOUT} hook as {os.path.basename(legacy)}; it still runs first")
        if force or _read_bytes(hook) != data:
            try:
                _write_atomic(hook, data, 0o755)
            except OSError:
                if moved:
                    os.rename(legacy, hook)  # never leave the user's hook disabled
                raise
            lines.append(f"post-checkout hook  {hook}  written")
        else:
            lines.append(f"post-checkout hook  {hook}  current")
    except OSError as exc:
        return lines, (f"cannot write {hook} ({exc.strerror}); new worktrees will not be wired "
                       f"automatically: run `git korus-mail install` after each `git worktree add`, "
                       f"or add that line to your post-checkout hook")
    scope_rec["post_checkout"] = {
        "path": hook,
        "legacy": bool(rec.get("legacy")) or moved,
        "created_dir": bool(rec.get("created_dir")) or created_dir,
    }
    return lines, None


def run_install(clone, out, scope="local", force=False):
    """Wire `scope` (one of SCOPES; commands/install.py checks the arguments)."""
    only_own = os.environ.get(POST_CHECKOUT_ENV) == "1" and scope == "local"
    if only_own:
        # from our post-checkout hook, inside `git worktree add`: one line, not the full report
        import io
        report, out = out, io.StringIO()
    helper = find_helper()
    root = clone.mail_root(create=True)
    hooks_dir = _hooks_dir(root)
    with _locked(hooks_dir):
        record = Record.load(hooks_dir)
        if only_own and record.scope("local") is None:
            return 0  # uninstalled since: a stray post-checkout wires nothing
        stub, state = write_stub(root, helper, force, repo=repo_anchor(clone))
        out.write(f"stub  {stub}  {state}  (runs {helper})\n")
        scope_rec = record.scope(scope, create=True)
        record.data["helper"] = helper
        if scope == "local":
            targets, skipped = local_targets(clone, only_own)
            for wt in skipped:
                out.write(f"skipped  {wt.path}  (prunable worktree: `git worktree prune` removes it)\n")
            wired = [(path, None, wt.path) for path, wt in targets]
        else:
            anchor = repo_anchor(clone)
            wired = [(user_settings_path(), anchor, anchor)]
        not_wired = []
        try:
            for path, repo, cwd in wired:
                try:
                    state = wire_file(path, stub, repo, force, scope_rec["files"])
                except MailError as exc:
                    # one broken settings file must not leave the worktrees after it unwired
                    not_wired.append((cwd, str(exc)))
                    out.write(f"settings  {path}  NOT WIRED\n")
                    continue
                out.write(f"settings  {path}  {state}\n")
        finally:
            record.save()  # what was written so far must be undoable, even after a failure
        if scope == "local" and not only_own:
            path, state = add_exclude(clone, scope_rec)
            out.write(f"exclude  {EXCLUDE_LINE} in {path}  {state}\n")
            lines, problem = install_post_checkout(clone, helper, force, scope_rec)
            for line in lines:
                out.write(line + "\n")
            if problem:
                out.write(f"note: {problem}\n")
        record.save()
    # the stub was run at the full install; a new worktree only needs its file read back
    results = verify(root, stub, wired, run_stub=not only_own)
    failed = any(problems for _label, problems in results)
    if only_own:
        for path, _repo, cwd in wired:
            if all(cwd != c for c, _why in not_wired):
                report.write(f"git korus-mail: wired {path} to the mail drain\n")
        if not failed and not not_wired:
            return 0
        out = report
    write_table(results, out)
    if not only_own:
        from git_korus_mail.commands import completion
        for shell, why, line in completion.setup_lines():
            out.write(f"completion  {shell}: {why}; set it up once with:\n    {line}\n")
    for cwd, why in not_wired:
        sys.stderr.write(f"git korus-mail: not wired: {cwd}: {why}\n")
    return 1 if failed or not_wired else 0


# -- verification -------------------------------------------------------------------------
def verify(root, stub, wired, run_stub=True):
    """[(label, [problems])]: every file read back, every entry checked, every caller's stub
    present and executable, and the stub run once per file with a synthetic SessionStart."""
    results = []
    called = False
    for path, repo, cwd in wired:
        problems = []
        try:
            raw, data = read_settings(path)
        except MailError as exc:
            results.append((path, [str(exc)]))
            continue
        if data is None:
            results.append((path, ["missing"]))
            continue
        problems += claude.check_settings(data, stub, repo)
        for event, path_called in claude.callers(data):
            if path_called == stub:
                called = True
            if not (os.path.isfile(path_called) and os.access(path_called, os.X_OK)):
                problems.append(f"{event} calls {path_called}, which is not an executable stub "
                                f"(a removed clone? `git korus-mail uninstall` there, or delete the entry)")
        if run_stub and not problems:
            problem = run_stub_once(stub, repo, cwd)
            if problem:
                problems.append(problem)
        results.append((path, problems))
    stub_problems = []
    if not (os.path.isfile(stub) and os.access(stub, os.X_OK)):
        stub_problems.append("missing or not executable: run `git korus-mail install`")
    if wired and not called:
        stub_problems.append("no settings file calls it")
    results.insert(0, (stub, stub_problems))
    return results


def run_stub_once(stub, repo, cwd):
    """Run our SessionStart command as Claude Code would (/bin/sh -c, payload on stdin);
    None when the answer is hook JSON that carries no fault."""
    payload = {"session_id": f"korus-verify-{os.urandom(6).hex()}", "transcript_path": "", "cwd": cwd,
               "hook_event_name": "SessionStart", "source": "startup"}
    env = {k: v for k, v in os.environ.items()
           if k not in ("CLAUDE_PID", "CLAUDE_CODE_SESSION_ID", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")}
    env["KORUS_MAIL_VERIFY"] = "1"
    shell = "/bin/sh"  # what Claude Code runs hook commands with (dash on Debian), not bash
    try:
        proc = subprocess.run([shell, "-c", claude.hook_command(stub, "SessionStart", repo)], cwd=cwd,
                              input=json.dumps(payload).encode(), capture_output=True, env=env,
                              timeout=VERIFY_TIMEOUT)
    except subprocess.TimeoutExpired:
        return f"the stub did not answer within {VERIFY_TIMEOUT} s"
    except OSError as exc:
        return f"cannot run the stub: {exc.strerror}"
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"the stub exited {proc.returncode}{': ' + err[-1] if err else ''}"
    answer = proc.stdout.decode("utf-8", "replace")
    problem = claude_protocol.check_answer("SessionStart", answer)
    if problem is None and not answer.strip():
        problem = "the stub printed nothing at SessionStart (the drain always announces itself there)"
    return problem


def write_table(results, out):
    out.write("verify\n")
    for label, problems in results:
        if not problems:
            out.write(f"  ok       {label}\n")
        for p in problems:
            out.write(f"  problem  {label}: {p}\n")


# -- uninstall ---------------------------------------------------------------------------
def unwire_file(path, stub, rec):
    """Take our entries out of one settings file, restoring it as it was where we can."""
    raw, data = read_settings(path)
    if data is None:
        return "absent"
    new, removed = claude.remove_settings(data, stub)
    if not removed and rec is None:
        return None
    rec = rec or {}
    if rec.get("created") and new == {}:
        os.unlink(path)
        if rec.get("created_dir"):
            try:
                os.rmdir(os.path.dirname(path))
            except OSError:
                pass  # something else lives there now: keep it
        return "deleted"
    original = rec.get("original")
    if original is not None:
        try:
            same = (json.loads(original) if original.strip() else {}) == new
        except ValueError:
            same = False
        if same:
            # untouched since install apart from our entries: put back the exact bytes
            if original.encode("utf-8") != raw:
                _replace_or_fail(path, original.encode("utf-8"), raw)
            return "restored"
    if not removed:
        return None
    _replace_or_fail(path, dump_like(new, raw), raw)
    return "updated"


def _replace_or_fail(path, data, raw):
    if not _write_atomic(path, data, _mode_of(path, 0o644), expect=raw):
        raise MailError(f"{path} changed while uninstall ran; run uninstall again")


def remove_exclude(clone, rec):
    path = (rec or {}).get("path") or os.path.join(clone.common_dir, "info", "exclude")
    raw = _read_bytes(path)
    if raw is None or rec is None:
        return None
    appended = rec.get("appended", "").encode()
    if appended and raw.endswith(appended):
        new = raw[:-len(appended)]
    else:
        lines = raw.decode("utf-8", "replace").splitlines(keepends=True)
        for i in range(len(lines) - 1, -1, -1):
            if lines[i].strip() == EXCLUDE_LINE:
                del lines[i]
                break
        new = "".join(lines).encode()
    if not new and rec.get("created"):
        os.unlink(path)
    elif new != raw:
        _write_atomic(path, new, _mode_of(path, 0o644))
    return path


def remove_post_checkout(clone, rec):
    """Remove our hook and move the legacy one back. Returns a line to print, or None."""
    if rec and rec.get("path"):
        hook = rec["path"]
    else:
        hook = os.path.join(git_hooks_dir(clone)[0], POST_CHECKOUT)
    legacy = hook + LEGACY_SUFFIX
    if not os.path.lexists(hook):
        return None
    if not is_ours_post_checkout(hook):
        return f"post-checkout hook  {hook}  not ours any more: left alone"
    os.unlink(hook)
    if os.path.lexists(legacy):
        os.rename(legacy, hook)
        return f"post-checkout hook  {hook}  restored your previous hook"
    if rec and rec.get("created_dir"):
        try:
            os.rmdir(os.path.dirname(hook))
        except OSError:
            pass
    return f"post-checkout hook  {hook}  removed"


def queue_counts(root):
    """{what: count} of what the mail root holds, for uninstall's report and --purge's listing."""
    counts = {"boxes": 0, "queued": 0, "seen": 0, "expired": 0, "quarantined": 0, "sessions": 0}
    for name in root.box_names():
        try:
            box = root.box(name)
        except MailError:
            continue
        if box is None:
            continue
        counts["boxes"] += 1
        counts["queued"] += box.count("inbox")
        counts["seen"] += box.count("seen")
        counts["expired"] += box.count("expired")
        counts["quarantined"] += len(box.quarantined_names())
        counts["sessions"] += box.count("sessions")
    counts["tmp files"] = len(root.tmp_entries())
    return counts


def _confirm_purge(root, yes, out):
    counts = queue_counts(root)
    out.write(f"{root.path} holds: " + ", ".join(f"{v} {k}" for k, v in counts.items()) + "\n")
    if yes:
        return True
    out.write(f"delete {root.path} and everything in it? [y/N] ")
    out.flush()
    try:
        answer = input()
    except EOFError:
        answer = ""
    return answer.strip().lower() in ("y", "yes")


def run_uninstall(clone, out, scope="local", purge=False, yes=False):
    """Unwire `scope` (one of SCOPES); with `purge`, delete the mail root too (`yes`: asked already)."""
    root = clone.mail_root(create=False)
    if purge and not yes and not (sys.stdin is not None and sys.stdin.isatty()):
        raise MailError("--purge deletes the queued mail; stdin is not a terminal, so pass --yes to confirm")
    if root is None:
        out.write("nothing installed here (no mail root)\n")
        return 0
    hooks_dir = _hooks_dir(root)
    record = Record.load(hooks_dir)
    other = "user" if scope == "local" else "local"
    if purge and record.scope(other) is not None:
        raise MailError(f"--purge would delete the stub the {other} scope still calls; "
                        f"run `git korus-mail uninstall --scope {other}` first")
    if purge and not _confirm_purge(root, yes, out):
        out.write("not purged; nothing changed\n")
        return 1
    stub = stub_path(root)
    with _locked(hooks_dir):
        record = Record.load(hooks_dir)
        scope_rec = record.scope(scope) or {"files": {}}
        files = dict(scope_rec.get("files") or {})
        if scope == "local":
            candidates = list(files) + [p for p, _wt in local_targets(clone)[0] if p not in files]
        else:
            candidates = list(files) + [p for p in [user_settings_path()] if p not in files]
        for path in candidates:
            try:
                state = unwire_file(path, stub, files.get(path))
            except MailError as exc:
                out.write(f"settings  {path}  not changed: {exc}\n")
                continue
            if state and state != "absent":
                out.write(f"settings  {path}  {state}\n")
        if scope == "local":
            if remove_exclude(clone, scope_rec.get("exclude")):
                out.write(f"exclude  {EXCLUDE_LINE}  removed\n")
            line = remove_post_checkout(clone, scope_rec.get("post_checkout"))
            if line:
                out.write(line + "\n")
        record.drop_scope(scope)
        record.save()
        if not record.data["scopes"] and os.path.lexists(stub):
            os.unlink(stub)
            out.write(f"stub  {stub}  removed\n")
    if not record.data["scopes"]:
        # nothing of ours is left to serialise: the lock file and hooks/ go too
        try:
            os.unlink(os.path.join(hooks_dir, LOCK_NAME))
            os.rmdir(hooks_dir)
        except OSError:
            pass
    if purge:
        path = root.path
        root.close()
        shutil.rmtree(path)
        out.write(f"purged {path}\n")
        return 0
    counts = queue_counts(root)
    out.write(f"kept the queue: {counts['queued']} unread message(s) in {counts['boxes']} box(es) at {root.path}"
              f" (`git korus-mail uninstall --purge` deletes it)\n")
    return 0
