"""The clone's common dir, worktree root and box key, held to git's own answers.

Three implementations must agree on every layout: git itself, pygit2 (the
commands' authority) and the pure-Python walk the hook hot path uses.
"""

import os
import subprocess

import pytest

from helpers import git, git_out
from git_korus_mail.core import discover, gitrepo, keys


def git_answer(path):
    common = git_out("rev-parse", "--path-format=absolute", "--git-common-dir", cwd=path)
    top = git("rev-parse", "--show-toplevel", cwd=path, check=False)
    return os.path.realpath(common), (os.path.realpath(top.stdout.strip()) if top.returncode == 0 else None)


def assert_agree(path):
    common, top = git_answer(path)
    fast = discover.fast_locate(str(path))
    slow = gitrepo.locate(str(path))
    assert fast is not None and slow is not None
    assert (fast.common_dir, fast.worktree) == (common, top), f"fast walk disagrees with git at {path}"
    assert (slow.common_dir, slow.worktree) == (common, top), f"pygit2 disagrees with git at {path}"
    # the key of any path inside a worktree is the key of its root
    if top is not None:
        assert keys.key_for(str(path)) == keys.key_for(top)


@pytest.fixture
def layouts(tmp_path):
    """Every layout the issue names, built with git itself."""
    L = {}
    main = tmp_path / "main"
    git("init", "-q", str(main), cwd=tmp_path)
    (main / "sub" / "deeper").mkdir(parents=True)
    (main / "sub" / "deeper" / "f").write_text("x")
    git("add", ".", cwd=main)
    git("commit", "-q", "-m", "init", cwd=main)
    L["main"] = main
    L["main-subdir"] = main / "sub" / "deeper"
    git("worktree", "add", "-q", str(tmp_path / "linked"), "-b", "linked", cwd=main)
    L["linked"] = tmp_path / "linked"
    L["linked-subdir"] = tmp_path / "linked" / "sub"

    bare = tmp_path / "bare.git"
    git("clone", "-q", "--bare", str(main), str(bare), cwd=tmp_path)
    L["bare"] = bare
    git("worktree", "add", "-q", str(tmp_path / "bare-wt"), "-b", "bw", cwd=bare)
    L["bare-linked"] = tmp_path / "bare-wt"
    L["bare-linked-subdir"] = tmp_path / "bare-wt" / "sub"

    sep = tmp_path / "sep-wt"
    git("init", "-q", "--separate-git-dir", str(tmp_path / "sep-gitdir"), str(sep), cwd=tmp_path)
    (sep / "d").mkdir()
    L["separate-git-dir"] = sep
    L["separate-git-dir-subdir"] = sep / "d"

    git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(main), "mod", cwd=main)
    git("commit", "-q", "-m", "add submodule", cwd=main)
    L["submodule"] = main / "mod"
    L["submodule-subdir"] = main / "mod" / "sub"
    git("worktree", "add", "-q", str(tmp_path / "mod-wt"), "-b", "modwt", cwd=main / "mod")
    L["submodule-linked"] = tmp_path / "mod-wt"
    return L


LAYOUTS = ["main", "main-subdir", "linked", "linked-subdir", "bare", "bare-linked", "bare-linked-subdir",
           "separate-git-dir", "separate-git-dir-subdir", "submodule", "submodule-subdir", "submodule-linked"]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_common_dir_and_toplevel_match_git(layouts, layout):
    assert_agree(layouts[layout])


def test_inside_dot_git_has_no_worktree(layouts):
    inside = layouts["main"] / ".git" / "refs"
    common, top = git_answer(inside)
    assert top is None
    fast = discover.fast_locate(str(inside))
    assert fast.worktree is None and fast.common_dir == common
    assert gitrepo.locate(str(inside)).worktree is None


def test_outside_any_repository(tmp_path):
    folder = tmp_path / "holder"
    folder.mkdir()
    assert discover.fast_locate(str(folder)) is None
    assert gitrepo.locate(str(folder)) is None
    # a folder of clones keys on its own normalized path
    assert keys.key_for(str(folder)).path == os.path.realpath(folder)


def test_git_dir_env_is_honoured(layouts, monkeypatch):
    # git exports GIT_DIR for `git --git-dir=... korus-mail`; the fast walk must step aside
    monkeypatch.setenv("GIT_DIR", str(layouts["main"] / ".git"))
    with pytest.raises(discover.NotModelled):
        discover.fast_locate(str(layouts["linked"]))
    loc = keys.locate(str(layouts["main"]), from_env=True)
    assert loc.common_dir == os.path.realpath(layouts["main"] / ".git")


def test_worktree_list_matches_git_porcelain(layouts):
    common, _ = git_answer(layouts["main"])
    ours = gitrepo.list_worktrees(common)
    porcelain = git_out("worktree", "list", "--porcelain", cwd=layouts["main"])
    paths = [os.path.realpath(line.split(" ", 1)[1]) for line in porcelain.splitlines()
             if line.startswith("worktree ")]
    assert [w.path for w in ours] == paths
    assert ours[0].is_main and ours[0].branch in ("main", "master")
    assert ours[1].branch == "linked" and not ours[1].prunable


def test_prunable_worktree_is_flagged(layouts):
    import shutil
    shutil.rmtree(layouts["linked"])
    common, _ = git_answer(layouts["main"])
    linked = [w for w in gitrepo.list_worktrees(common) if w.name == "linked"][0]
    assert linked.prunable
    assert "prunable" in git_out("worktree", "list", "--porcelain", cwd=layouts["main"])


# -- the key function ------------------------------------------------------------
def test_one_key_from_root_subdir_relative_trailing_slash_and_symlink(clone, tmp_path, monkeypatch):
    web = clone.web
    (web / "pkg" / "mod").mkdir(parents=True)
    link = tmp_path / "link-to-web"
    link.symlink_to(web)
    root_key = keys.key_for(str(web))
    monkeypatch.chdir(clone.main)
    variants = [str(web) + "/", str(web / "pkg" / "mod"), "../web", "../web/", "../web/pkg/..", str(link),
                str(link / "pkg")]
    for v in variants:
        assert keys.key_for(v) == root_key, v
    assert root_key.path == os.path.realpath(web)


def test_different_worktrees_different_keys(clone):
    docs = clone.add_worktree("docs")
    names = {keys.key_for(str(p)).name for p in (clone.main, clone.web, docs)}
    assert len(names) == 3


def test_branch_switch_keeps_key(clone):
    before = keys.key_for(str(clone.web))
    git("checkout", "-q", "-b", "elsewhere", cwd=clone.web)
    assert keys.key_for(str(clone.web)) == before


def test_key_shape(clone):
    k = keys.key_for(str(clone.web))
    slug, digest = k.name.rsplit("-", 1)
    assert slug == "web" and len(digest) == keys.HASH_HEX and int(digest, 16) >= 0
    weird = keys.key_of_root("/tmp/Ünïcode Name!! with a very long tail that goes on and on")
    assert all(c.isascii() and (c.isalnum() or c == "-") for c in weird.slug)
    assert len(weird.slug) <= keys.SLUG_MAX and weird.slug == weird.slug.lower()


def test_no_prefix_match(clone, tmp_path):
    # mail to the main checkout must never land in a box of a path that merely starts with it
    nested = clone.main / "inner"
    nested.mkdir()
    other = tmp_path / "api-other"
    other.mkdir()
    assert keys.key_for(str(nested)) == keys.key_for(str(clone.main))
    assert keys.key_for(str(other)) != keys.key_for(str(clone.main))


def test_case_folding_probe(tmp_path):
    d = tmp_path / "CaseProbe"
    d.mkdir()
    # this filesystem is case-sensitive (the probe must say so, not guess from the OS)
    sensitive = not (tmp_path / "caseprobe").exists()
    assert keys.is_case_insensitive(str(d)) == (not sensitive)
    if sensitive:
        assert keys.normalize(str(d)) == str(d)


def test_repository_owned_by_another_user_is_a_clear_error(clone):
    if os.geteuid() != 0:
        pytest.skip("needs root to chown a repository to another user")
    subprocess.run(["chown", "-R", "65534:65534", str(clone.main)], check=True)
    from helpers import run_cli
    proc = run_cli("list", cwd=clone.main)
    assert proc.returncode == 1
    assert proc.stderr.startswith("git korus-mail: ") and "another user" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


# -- the on-disk key format, pinned with values computed outside the product ----------
# Each digest is the first 24 hex digits of `printf %s '<path>' | sha256sum`, run by hand
# in a shell; the slugs were worked out by hand from the rule in docs/CONTRACT.md. A change
# to the digest, its length, the normalization or the slug rule strands every queued message
# (its box is looked up under a new name), so it must turn this test red.
PINNED_KEYS = [
    ("/srv/work/api", "api-0b860e31e543c8e780736591"),
    ("/srv/work/api/", "api-0b860e31e543c8e780736591"),   # no trailing separator
    ("/home/dev/My Project/web", "web-8ad0f4cdd7ffe44cf21ac1ef"),
    ("/tmp/Ünïcode-Wt", "ncode-wt-5784b832cb6a8051e7051658"),  # non-ASCII dropped from the slug only
    ("/r", "r-6588117f7b5162325520a436"),
]


@pytest.mark.parametrize("path,name", PINNED_KEYS)
def test_box_key_format_is_pinned(path, name):
    assert keys.key_of_root(path).name == name


def _sha256sum(text):
    """The digest as coreutils computes it, not as the product does."""
    proc = subprocess.run(["sha256sum"], input=text.encode("utf-8"), capture_output=True, check=True)
    return proc.stdout.decode().split()[0][:24]


def test_box_directory_on_disk_is_named_by_the_pinned_format(clone):
    from helpers import run_cli
    run_cli("send", "--to", "../web", "hello", cwd=clone.main, check=True)
    web = os.path.realpath(clone.web)
    boxes = sorted(p.name for p in (clone.mail_root / "box").iterdir())
    assert f"web-{_sha256sum(web)}" in boxes, boxes
    assert (clone.mail_root / "box" / f"web-{_sha256sum(web)}" / "path").read_text().strip() == web


def _porcelain_worktrees(path):
    out = git_out("worktree", "list", "--porcelain", cwd=path)
    return [line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("worktree ")]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_key_from_git_worktree_list_equals_key_from_fast_walk(layouts, layout):
    path = str(layouts[layout])
    fast = discover.fast_locate(path)  # the hook's own walk (raises NotModelled where it would not be used)
    fast_key = keys.key_for(path, location=fast)
    # the `git worktree list` entry that holds this path: the deepest one (a submodule sits inside main)
    real = os.path.realpath(path)
    holders = [w for w in _porcelain_worktrees(path)
               if real == os.path.realpath(w) or real.startswith(os.path.realpath(w).rstrip("/") + "/")]
    if fast.worktree is None:
        # a bare repository: no worktree holds it, and it keys on its own path
        assert fast_key.path == keys.normalize(real)
        return
    assert fast_key.name == f"{keys.slug(fast_key.path)}-{_sha256sum(fast_key.path)}"
    # what send, list and install address: the product's own worktree list, run from here
    from git_korus_mail.core.clone import Clone
    assert fast_key in [k for _wt, k in Clone(cwd=path).worktree_keys()], layout
    listed = [os.path.realpath(w) for w in _porcelain_worktrees(path)]
    if layout.startswith(("separate-git-dir", "submodule")) and not holders:
        # this git lists such a main worktree as its git dir (for --separate-git-dir nothing in the
        # git dir records the worktree at all); the product's list above must still be right
        assert listed[0] == fast.common_dir, listed
        return
    holder = max(holders, key=lambda w: len(os.path.realpath(w)))
    git_key = keys.key_of_root(os.path.realpath(holder))
    assert git_key == fast_key, (layout, holder, fast_key)
