"""The multi-machine relay (docs/RELAY.md): carries mail between clones of one repository on
several machines over NATS JetStream.

Only `link`, `decisions` and `server` import nats, and only the relay process and `remote add` / `remove` import those:
a hook, and every command of a clone with no remote, never do (tests/test_relay_cost.py).
The relay uses the store's public interface to put incoming mail in an inbox and to read a
message's fate; it never decides a consume (the local receipt does, docs/STORE.md).
"""
