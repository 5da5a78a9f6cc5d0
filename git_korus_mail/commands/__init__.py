"""One module per command: each takes its own typed arguments (cli builds them from docopt).

Kept empty of imports: `commands.drain` is the hook hot path.
"""
