"""`doctor`'s look at the relay (docs/RELAY.md, "doctor"): only for a clone with a remote.

The link from this clone's own files (relay running, last contact, the outbox's age), then one
bounded connection to the server for the stream's durability (replicas, leader, fsync). doctor is
a person's command: it may use the network; no hook imports this module."""

from git_korus_mail.relay import local

TYPE_CHECKING = False  # mypy reads the block below
if TYPE_CHECKING:
    from git_korus_mail.commands.doctor_store import Findings
    from git_korus_mail.core.clone import Clone


def check(clone: "Clone", findings: "Findings") -> None:
    common = clone.common_dir
    if not local.configured(common):
        return
    from git_korus_mail.relay import durability
    where = local.relay_dir(common)
    for item in durability.link_report(common):
        findings.add("relay", item["ok"], where, item["what"], item["fix"])
    conf = local.load_config(common)
    if conf is None:
        findings.add("relay", False, where, "config.json is unreadable", "git korus-mail remote remove, then add")
        return
    try:
        import nats  # noqa: F401 - only to say plainly that the extra is missing
    except ImportError:
        findings.add("relay", False, where, "nats-py is not installed: the relay cannot run",
                     "pip install 'git-korus-mail[remote]'")
        return
    for item in durability.server_report(conf):
        findings.add("stream", item["ok"], conf["url"], item["what"], item["fix"])
