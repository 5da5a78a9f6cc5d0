"""The client-free core: addressing, the message format, rendering, the drain phases, reports.

Kept empty of imports: the hook hot path imports this package.
"""
