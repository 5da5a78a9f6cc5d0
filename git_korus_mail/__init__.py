"""git korus-mail: durable mail between AI coding-agent sessions in one git clone.

This module stays import-free on purpose: the hook hot path imports the package
on every agent turn, so nothing here may pull in pygit2, docopt or portalocker.
"""

__version__ = "0.1.0"
