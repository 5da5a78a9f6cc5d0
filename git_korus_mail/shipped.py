"""Files that ship with the code (the hook template, the completion scripts): where they are.

The one answer to "wheel or source tree?": a wheel carries them inside the package
(pyproject's force-include), a source checkout beside it. Modules in subpackages ask
here rather than counting directories up from their own `__file__`.
"""

import os

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def shipped_file(*parts: str) -> "str | None":
    """The path of a shipped file, e.g. shipped_file("hooks", "hook.sh"); None when absent."""
    for base in (PACKAGE_DIR, os.path.dirname(PACKAGE_DIR)):  # the wheel's place first, then the source tree's
        path = os.path.join(base, *parts)
        if os.path.isfile(path):
            return path
    return None
