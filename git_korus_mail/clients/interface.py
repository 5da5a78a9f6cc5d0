"""What a client module must offer, for the type checker: a client's hook-protocol module
(clients/<name>/protocol.py) and its install-wiring module (clients/<name>/wiring.py), each a
Protocol that the module itself satisfies (clients/__init__.py returns the modules as these
types, so mypy checks every client against them). A third client is done when its two modules
type-check here.

Read by mypy only: every import of this module sits under `if TYPE_CHECKING:` (the hook hot
path imports clients/; tests/test_vocab.py checks it). Members that only some clients have
(Codex's trust, Claude Code's wake-up tier, a client's preflight) are not members here: the
commands ask for them with getattr and a default, and say so where they do.
"""

from typing import IO, Any, Callable, Dict, List, Mapping, Optional, Protocol, Sequence, Tuple, Type, Union

from git_korus_mail.store.launch import Launch, NoLaunch

AnyLaunch = Union[Launch, NoLaunch]
Environ = Mapping[str, str]


class Payload(Protocol):
    """The fields of a hook payload the drain uses, whichever client sent it."""
    event: str
    session: str
    cwd: str
    raw: Dict[str, Any]  # the payload as parsed JSON: a client reads its own extra fields from it
    data: bytes


class Shown(Protocol):
    """core/shown.Shown as a client's answer uses it: one line for the person."""
    def line(self) -> str: ...


class HookProtocol(Protocol):
    """clients/<name>/protocol.py: the client's hook events and how it hears and answers them."""
    NAME: str
    EVENTS: Tuple[str, ...]
    SHOW_EVENTS: Tuple[str, ...]
    CONSUME_EVENT: str
    END_EVENT: str
    OPENING_EVENT: str
    TURN_EVENTS: Tuple[str, ...]
    LOCAL_SETTINGS_NAME: str
    BadPayload: Type[Exception]

    def read_payload(self, data: bytes) -> Payload: ...
    # The keyword arguments of core drain.Drain after session and cwd (phase, label, launch...).
    def drain_facts(self, payload: Any, environ: Environ) -> Dict[str, Any]: ...
    def session_of(self, environ: Environ) -> Optional[str]: ...
    def sender_launch(self, environ: Environ, chain: Sequence[int]) -> Optional[Tuple[int, AnyLaunch]]: ...
    def account_of(self, environ: Environ) -> Optional[str]: ...
    def answer(self, event: str, context: Optional[str], notice: Optional[str],
               shown: "Optional[Shown]" = None) -> Optional[str]: ...
    def context_output(self, event: str, text: str, notice: Optional[str] = None) -> str: ...
    def user_notice_output(self, text: str) -> str: ...
    def fault_output(self, event: str, text: str) -> str: ...
    def check_answer(self, event: str, stdout: str) -> Optional[str]: ...


# A settings file to wire: (its path, the repo anchor its stub call names, the cwd it is checked from).
Wired = List[Tuple[str, Optional[str], Optional[str]]]


class Installer(Protocol):
    """clients/<name>/wiring.py: what install, uninstall and doctor ask of every client."""
    NAME: str
    EXCLUDE_LINE: str
    EXCLUDE_COVERING: Tuple[str, ...]
    EXCLUDE_KEY: str
    VERIFIED_AS: str
    NEEDS_POST_CHECKOUT: bool

    def stub_path(self, root: Any) -> str: ...
    def write_stub(self, root: Any, helper: str, force: bool = False,
                   repo: Optional[str] = None) -> Tuple[str, str]: ...
    def render_stub(self, helper: str, repo: Optional[str] = None) -> str: ...
    def read_settings(self, path: str) -> Any: ...
    # The keywords differ by client (Codex: trust_projects; Claude Code: urgent), and install
    # passes each only to the client that declares it: so these are callables, not methods.
    settings_targets: Callable[..., Tuple[Wired, List[Any]]]
    wire_file: Callable[..., str]
    after_wiring: Callable[..., None]
    check: Callable[..., Any]

    def unwire_file(self, path: str, stub: str) -> str: ...
    def unwire_candidates(self, clone: Any, scope: str, recorded: Any) -> List[str]: ...
    def after_unwiring(self, scope_rec: Dict[str, Any], out: IO[str]) -> None: ...
    def wired_files(self, *args: Any) -> Any: ...
