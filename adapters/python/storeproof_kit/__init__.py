"""storeproof_kit: everything of storeproof's adapter protocol
(docs/PROTOCOL.md) that is not the store, so that an adapter author writes
only the store.

    import sys
    import storeproof_kit as kit

    class MyStore(kit.Store):
        name = "my-store"
        contracts = ["lease"]

        def connect(self, hello: kit.Hello) -> None:
            ...  # connect to hello.redis_url; kit.check_server(run_one_command, hello.opted_out)

        def lease_take(self, tree: str, holder: str, ttl_ms: int) -> kit.Reply:
            ...
            return kit.granted(epoch, expires_at_ms)

    if __name__ == "__main__":
        sys.exit(kit.serve(MyStore()))

What it gives (each module's docstring says what it guarantees):

- :mod:`.adapter`: the JSON lines loop (:func:`serve`), :class:`Store`,
  ``hello`` and ``reconnect`` handling, :func:`log` to stderr;
- :mod:`.requests`: the argument rules of §4.1 (:func:`parse_request`),
  ``hello``'s arguments (:class:`Hello`), the operations table;
- :mod:`.replies`: one builder per outcome of §4 (:func:`granted`, …);
- :mod:`.errors`: the error kinds of §6 as :class:`StoreError`;
- :mod:`.server`: the server checks of §7 as one call (:func:`check_server`)
  and the error kinds of failed Redis commands, for any client;
- :mod:`.kept_executions`: kept executions in SQLite under ``$STOREPROOF_WORKDIR``
  (what :class:`Store` does for ``lease.keep_execution`` unless overridden);
- :mod:`.lua`: a store's Lua scripts, loaded at ``hello``, one ``EVALSHA``
  per operation, ``NOSCRIPT`` loaded and retried once (:class:`LuaScripts`);
- :mod:`.redis_py`: redis-py set up as §5 and §6 need it (imported on its
  own: ``import storeproof_kit.redis_py``).

Pure Python, standard library only (but :mod:`.redis_py`, which needs redis-py).
"""

from .adapter import Adapter, Store, drive, hello_answer, log, serve
from .errors import (
    BAD_REQUEST,
    CONFIG_REFUSED,
    DEPLOYMENT,
    DURABILITY,
    KINDS,
    STORE_FULL,
    UNAVAILABLE,
    UNSUPPORTED,
    StoreError,
    bad_request,
    store_full,
    type_name,
    unavailable,
    unsupported,
)
from .kept_executions import KeptExecutions, workdir
from .lua import LuaScripts
from .replies import (
    ANSWERS,
    MalformedReply,
    Reply,
    acquired,
    allowed,
    already_finished,
    applied,
    begun,
    busy,
    child,
    claimed,
    completed,
    duplicate,
    empty,
    executions,
    exists,
    fenced,
    finished,
    full,
    granted,
    kept,
    lease,
    limited,
    lost,
    no_child,
    no_lease,
    not_begun,
    not_claimer,
    not_held,
    paused,
    rate_state,
    released,
    renewed,
    saved,
    unknown,
)
from .requests import (
    I64_MAX,
    I64_MIN,
    MAX_DURATION_MS,
    MAX_LIMIT,
    OPS,
    OPT_OUT_WRITES_MAY_BE_LOST,
    Hello,
    RedisUrl,
    Request,
    contract_of,
    parse_args,
    parse_hello,
    parse_redis_url,
    parse_request,
    redact,
)
from .server import (
    REQUIRED_DURABILITY,
    CommandFailed,
    ServerFacts,
    assess,
    check_server,
    command_failure,
    operation_failure,
    read_facts,
    split_error,
)

__version__ = "1.0.0"
