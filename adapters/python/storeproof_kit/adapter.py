"""The adapter process: the JSON lines loop of docs/PROTOCOL.md §1–§3 around
a :class:`Store` an author writes.

The loop guarantees, whatever the store does:

- one answer line per request line, in order, with the request's ``id``,
  flushed at once; nothing else on stdout (``print`` and anything written
  to ``sys.stdout`` go to stderr while the loop runs); blank lines are
  skipped; exit status 0 at end of input (or a closed stdout);
- every request checked before the store's code runs: a line that is not
  a JSON object, an ``op`` that is not a string, no ``args``, an unknown op,
  an op of a contract the store does not offer (``unsupported``), arguments
  that break a rule of §4.1, a request before ``hello``, a second ``hello``;
- ``hello`` checked (:func:`~storeproof_kit.requests.parse_hello`) and
  answered from the store's ``name``, ``version``, ``contracts``,
  ``capabilities`` and ``state``; ``reconnect`` (§3.1) routed to
  :meth:`Store.reconnect` only after ``hello`` and only without arguments;
- a later ``hello`` (§3.3) refused unless the store declares ``cases``, and
  then preceded by :meth:`Store.close`, which ends the earlier case;
- every reply one the operation may answer, built by the reply builders
  (anything else is answered ``unavailable``);
- ``lease.keep_execution`` and ``lease.kept_executions`` kept by the kit in
  a durable side file (:class:`~storeproof_kit.kept_executions.KeptExecutions`,
  one namespace per prefix), never in Redis, unless the store overrides them;
- a :class:`~storeproof_kit.errors.StoreError` raised by the store answered
  as that error; any other exception answered ``unavailable`` ("adapter
  failure: …") with its traceback on stderr, and the instance goes on.
"""

from __future__ import annotations

import io
import json
import sys
import traceback
from typing import IO, Any, Optional, Sequence, Union

from .errors import BAD_REQUEST, StoreError, bad_request, type_name, unavailable, unsupported
from .kept_executions import KeptExecutions
from .replies import Reply, executions, kept
from .requests import CONTRACTS, Hello, Request, contract_of, parse_hello, parse_request

#: The capabilities a hello answer may declare (§3.1, §3.2, §3.3).
CAPABILITIES = ("reconnect", "stateless", "cases")
#: The places a store may say it keeps its state (§3).
STATES = ("redis", "durable")

_who = {"name": "storeproof-adapter", "instance": "?"}


def log(message: str) -> None:
    """One line to stderr, ``[name instance] message`` (storeproof keeps the
    last few KiB of each instance's stderr and shows them on failure).
    Never raises."""
    try:
        sys.stderr.write("[%s %s] %s\n" % (_who["name"], _who["instance"], message))
        sys.stderr.flush()
    except Exception:
        pass


class Store:
    """What an author writes: the store behind the protocol.

    Set the class attributes (or instance attributes before ``hello`` is
    answered), implement :meth:`connect`, and either one method per
    operation, named as the op with ``_`` for ``.`` (``lease_take(self,
    tree, holder, ttl_ms)``; the rate-limit ones also get ``clock_ms`` as a
    keyword), or :meth:`operation` for all of them. Each returns a reply
    built with the kit's builders (``storeproof_kit.granted(…)``, …) or
    raises a :class:`~storeproof_kit.errors.StoreError`. Every argument
    given has passed the rules of §4.1.
    """

    #: The store's name in the report (non-empty).
    name: str = ""
    #: Its version.
    version: str = "1.0"
    #: The contracts offered: some of ``lease``, ``queue``, ``rate``,
    #: ``fenced``. An op of another contract is answered ``unsupported``
    #: without reaching the store.
    contracts: Sequence[str] = ()
    #: The hello answer's ``capabilities`` (``reconnect``, ``stateless``), or
    #: None to leave the key out.
    capabilities: Optional[Sequence[str]] = None
    #: The hello answer's ``state`` (``redis``, ``durable``), or None to leave
    #: it out (the same as ``redis``).
    state: Optional[str] = None
    # The kit's own: the kept-executions file of this case and its namespace.
    _kit_kept: Optional[KeptExecutions] = None
    _kit_prefix: str = ""

    def connect(self, hello: Hello) -> None:
        """``hello``: connect to ``hello.redis_url``, check the server
        (:func:`~storeproof_kit.server.check_server` for a Redis store), load
        scripts, open side files. Raise a ``StoreError`` to refuse
        (``durability``, ``deployment``, ``config_refused``, ``unavailable``).
        Called again if an earlier ``hello`` raised, or for a new case
        (``cases``, after :meth:`close`)."""
        raise NotImplementedError("a Store must implement connect(hello)")

    def close(self) -> None:
        """Ends a case before a later ``hello`` (§3.3), for a store whose
        ``capabilities`` list ``cases``: close every connection, side file
        and cache, and forget everything of the case, so that the next
        :meth:`connect` finds the process as if just started. Override it
        when ``capabilities`` lists ``cases``."""

    def reconnect(self) -> None:
        """``reconnect`` (§3.1), only called after a successful ``hello``: close
        every old connection, open a new one, load the scripts, forget
        anything that could change a later answer; send only connection
        set-up commands. Override it when ``capabilities`` lists
        ``reconnect``."""
        raise bad_request("reconnect: this adapter does not offer reconnect")

    def lease_keep_execution(self, tree: str, execution: str) -> Reply:
        """``lease.keep_execution`` (§4.2) as the contract wants it, never in
        Redis: the kit's durable side file (:class:`KeptExecutions`), shared
        by every instance of the run. Override both kept-execution methods to
        keep them elsewhere."""
        self._kept_executions().keep(tree, execution)
        return kept()

    def lease_kept_executions(self, tree: str) -> Reply:
        """``lease.kept_executions`` (§4.2) from the kit's side file."""
        return executions(self._kept_executions().list(tree))

    def _kept_executions(self) -> KeptExecutions:
        if self._kit_kept is None:
            self._kit_kept = KeptExecutions(self._kit_prefix)
        return self._kit_kept

    def operation(self, request: Request) -> Reply:
        """One operation of an offered contract, its arguments valid. By
        default calls the method named after the op (``lease.take`` →
        ``lease_take(**args)``, plus ``clock_ms=`` for ``rate.*``);
        ``unsupported`` when there is none."""
        method = getattr(self, request.op.replace(".", "_"), None)
        if method is None:
            raise unsupported("%s: this store does not offer it" % request.op)
        if request.op.startswith("rate."):
            return method(**request.args, clock_ms=request.clock_ms)
        return method(**request.args)


class Adapter:
    """The protocol state of one instance around a :class:`Store`:
    :meth:`answer_line` turns one request line into its answer object."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.hello: Optional[Hello] = None
        _who["name"] = store.name or type(store).__name__

    @property
    def connected(self) -> bool:
        """Whether ``hello`` succeeded."""
        return self.hello is not None

    def answer_line(self, raw: bytes) -> dict[str, Any]:
        """The answer object to one request line (never raises)."""
        rid = None
        try:
            try:
                req = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as e:
                raise bad_request("the request is not a JSON line: %s" % e) from None
            if not isinstance(req, dict):
                raise bad_request("a request must be a JSON object")
            rid = req.get("id")
            return {"id": rid, "ok": self.handle(req)}
        except StoreError as e:
            if e.kind != BAD_REQUEST:
                log("%s: %s" % (e.kind, e.message))
            return {"id": rid, "error": e.wire()}
        except Exception as e:  # a bug in the store must not kill the instance
            log("unexpected failure: %s\n%s" % (e, traceback.format_exc()))
            return {"id": rid, "error": {"kind": "unavailable", "message": "adapter failure: %s" % e}}

    def handle(self, req: dict[str, Any]) -> Any:
        """The ``ok`` value of one request object, or a raised error."""
        op = req.get("op")
        args = req.get("args")
        if not isinstance(op, str):
            raise bad_request("a request needs an `op` string")
        if "args" not in req:
            raise bad_request("%s: missing field `args`" % op)
        if op == "hello":
            return self._hello(args)
        if op == "reconnect":
            return self._reconnect(args)
        contract = contract_of(op)
        offered = list(self.store.contracts)
        if contract is not None and contract not in offered:
            raise unsupported(
                "%s: this store offers only %s, not %s" % (op, ", ".join(offered) or "nothing", contract)
            )
        request = parse_request(op, args, req.get("clock_ms"))
        if not self.connected:
            raise bad_request("%s: send hello first" % op)
        reply = self.store.operation(request)
        if not isinstance(reply, Reply):
            raise TypeError(
                "%s: the store returned %r, not a reply built with the kit's builders" % (op, reply)
            )
        if not reply.answers(op):
            raise unavailable(
                "%s: the store answered %s, which this operation never answers" % (op, reply.outcome)
            )
        return reply.wire()

    def _hello(self, args: Any) -> dict[str, Any]:
        cases = "cases" in (self.store.capabilities or ())
        if self.connected and not cases:
            raise bad_request("hello: this instance is already connected")
        hello = parse_hello(args)
        if self.connected:
            # A new case (§3.3): the earlier one is closed and forgotten first.
            self.hello = None
            self.store.close()
        if self.store._kit_kept is not None:
            self.store._kit_kept.close()
            self.store._kit_kept = None
        self.store._kit_prefix = hello.prefix
        _who["instance"] = hello.instance
        try:
            self.store.connect(hello)
        except BaseException:
            # A refused server (§7) leaves a process that offers cases in
            # step for the next case (§3.3): what this hello opened is
            # closed now.
            if cases:
                try:
                    self.store.close()
                except Exception:  # noqa: BLE001 - the hello's own error is the answer
                    pass
            raise
        answer = hello_answer(self.store)
        self.hello = hello
        return answer

    def _reconnect(self, args: Any) -> dict[str, Any]:
        if not self.connected:
            raise bad_request("reconnect: send hello first")
        if args != {}:
            raise bad_request("reconnect: takes no arguments, got %s" % type_name(args))
        self.store.reconnect()
        return {"reconnected": {}}


def hello_answer(store: Store) -> dict[str, Any]:
    """The hello answer of ``store``, checked: a non-empty ``name``, a string
    ``version``, one or more known ``contracts`` (each once), known
    ``capabilities`` (``reconnect`` only with :meth:`Store.reconnect`
    overridden), a known ``state``. A ``ValueError`` names what is wrong."""
    name, version = store.name, store.version
    if not isinstance(name, str) or not name:
        raise ValueError("the store's name must be a non-empty string, got %r" % (name,))
    if not isinstance(version, str):
        raise ValueError("the store's version must be a string, got %r" % (version,))
    contracts = list(store.contracts)
    if not contracts or any(c not in CONTRACTS for c in contracts) or len(set(contracts)) != len(contracts):
        raise ValueError(
            "the store's contracts must be one or more of %s, each once, got %r" % (", ".join(CONTRACTS), contracts)
        )
    answer: dict[str, Any] = {"name": name, "version": version, "contracts": contracts}
    if store.capabilities is not None:
        capabilities = list(store.capabilities)
        unknown = [c for c in capabilities if c not in CAPABILITIES]
        if unknown:
            raise ValueError("unknown capabilities %r (known: %s)" % (unknown, ", ".join(CAPABILITIES)))
        if "reconnect" in capabilities and type(store).reconnect is Store.reconnect:
            raise ValueError("the store declares reconnect but does not implement Store.reconnect")
        if "cases" in capabilities and type(store).close is Store.close:
            raise ValueError("the store declares cases but does not implement Store.close")
        answer["capabilities"] = capabilities
    if store.state is not None:
        if store.state not in STATES:
            raise ValueError("the store's state must be one of %s, got %r" % (", ".join(STATES), store.state))
        answer["state"] = store.state
    return answer


def serve(store: Store, stdin: Optional[IO[bytes]] = None, stdout: Optional[IO[bytes]] = None) -> int:
    """Runs the protocol on stdin/stdout (or the binary streams given) until
    end of input, and returns the exit status: 0. Use as
    ``sys.exit(storeproof_kit.serve(MyStore()))``."""
    adapter = Adapter(store)
    inp = stdin if stdin is not None else sys.stdin.buffer
    out = stdout if stdout is not None else sys.stdout.buffer
    saved = sys.stdout
    if stdout is None:
        # Only answers go to stdout: a stray print goes to stderr.
        sys.stdout = sys.stderr
    try:
        while True:
            raw = inp.readline()
            if not raw:
                return 0  # EOF: storeproof is done with this instance.
            if not raw.strip():
                continue
            line = json.dumps(adapter.answer_line(raw), separators=(",", ":"), ensure_ascii=True)
            try:
                out.write(line.encode("ascii") + b"\n")
                out.flush()
            except (BrokenPipeError, ValueError):  # stdout closed: nobody reads
                return 0
    except KeyboardInterrupt:
        return 0
    finally:
        sys.stdout = saved


def drive(store: Store, lines: Sequence[Union[str, bytes]]) -> list[dict[str, Any]]:
    """The answers ``store`` gives to ``lines`` (request lines, ``str`` or raw
    ``bytes``, without their newline), in process: for a store's own tests."""
    out = io.BytesIO()
    raw = b"".join((line if isinstance(line, bytes) else line.encode("utf-8")) + b"\n" for line in lines)
    serve(store, io.BytesIO(raw), out)
    return [json.loads(line) for line in out.getvalue().decode("ascii").splitlines()]
