"""One lookup for files that ship with the code: a wheel's place (inside the package), then a source tree's."""

import shutil
import subprocess
import sys

from helpers import REPO_ROOT

from git_korus_mail.commands import completion
from git_korus_mail.shipped import shipped_file


def test_source_tree_files_are_found_beside_the_package():
    assert shipped_file("hooks", "hook.sh") == str(REPO_ROOT / "hooks" / "hook.sh")
    assert completion.script_path("zsh") == str(REPO_ROOT / "completions" / "_git-korus-mail")
    assert shipped_file("hooks", "no-such-file") is None


def test_a_wheel_layout_finds_the_copy_inside_the_package(tmp_path):
    pkg = tmp_path / "git_korus_mail"
    (pkg / "hooks").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "git_korus_mail" / "shipped.py", pkg / "shipped.py")
    (pkg / "__init__.py").write_text("")
    (pkg / "hooks" / "claude-hook.sh").write_text("inside\n")
    (tmp_path / "hooks").mkdir()
    (tmp_path / "hooks" / "claude-hook.sh").write_text("beside\n")  # the package's own copy wins
    code = "from git_korus_mail.shipped import shipped_file; print(open(shipped_file('hooks', 'claude-hook.sh')).read())"
    out = subprocess.run([sys.executable, "-S", "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "inside"
