"""Claude Code (docs/CLIENTS.md). The package holds the two words its modules share: the client's
name, and where a session runs from Claude Code's entrypoint. protocol.py (the hook's facts) and
registry.py (the session registry) both say them; here, below both, neither imports the other for
them (tests/test_layers.py: no circle inside a package), and the hot path, which loads this
package with protocol.py anyway, opens no module more for them."""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

NAME = "claude"  # the client's name in presence records, the registry's entries and --client


def surface_of(entrypoint: "Optional[str]") -> "Optional[str]":
    """Where a session runs, from Claude Code's entrypoint (CLAUDE_CODE_ENTRYPOINT in a hook's
    environment, `entrypoint` in its registry): `terminal` (the interactive UI, "cli"), `sdk`
    (`-p`, stream-json and the SDKs, "sdk-*"), `editor` (an IDE extension), or the raw value."""
    if not entrypoint:
        return None
    if entrypoint == "cli":
        return "terminal"
    if entrypoint.startswith("sdk"):
        return "sdk"
    if "vscode" in entrypoint or "jetbrains" in entrypoint or "ide" in entrypoint:
        return "editor"
    return entrypoint[:40]
