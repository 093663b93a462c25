"""The botocore hook that makes each function's AWS calls as its template role.

`install()` adds the hook to botocore's built-in handlers (so every client made afterwards has
it, as the AWS limits guard does) and `use(principals)` tells it who may do what:
`jobhooks_tools.local.template.provision` calls it with the template's roles resolved against
the resources it just created.

Who is calling: the principal `acting_as()` set (a contextvar: the event-source poller sets it
around its receive and delete calls, which Lambda makes with the function's role), else the
innermost frame on the stack that belongs to a principal's code (a function's CodeUri, the
shovel's package), so a handler called directly, by the poller, the API server or a test, is
covered without being wrapped. A worker thread a handler starts through a ThreadPoolExecutor
carries its submitter's principal (`install()` makes `submit` copy it). A call with no principal
is the operator's or the test's own (creating tables, reading results): not evaluated.

A call the principal's policy does not allow is not sent: it is logged as an error naming the
function, the action and the resource (`IngestFunction may not dynamodb:GetItem on arn:...`,
which `jobhooks dev` shows as `aws  refused`), recorded for `take_refusals()` (the test suite fails
a test that made one), and raised as an `AccessDenied` ClientError with the code the service
answers. Every allowed call records the grants it exercised (`exercised_grants()`).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import contextvars
import inspect
import json
import logging
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import botocore.handlers

from jobhooks_tools.local.iam.policy import GLOBAL_CONDITION_KEYS, Grant, Request, evaluate
from jobhooks_tools.local.iam.principals import Principal
from jobhooks_tools.local.iam.refusals import AccessDenied, Refusal
from jobhooks_tools.local.iam.requests import CallSite, UnmappedRequestError, authorizations

# Named in the `jobhooks` logger tree, where the local stack routes the package's records.
logger = logging.getLogger("jobhooks.local.iam.guard")

# Judged with the parameters as the caller passed them; enforced once botocore knows where the
# request goes (only calls to the local stack's endpoint are the local stack's).
_JUDGE_EVENT: Final = "before-parameter-build"
_ENFORCE_EVENT: Final = "before-call"
_UNIQUE_ID: Final = "jobhooks-local-iam"
_CONTEXT_KEY: Final = "jobhooks_local_iam"

_lock = threading.Lock()
_installed = False
_principals: dict[str, Principal] = {}
# Code directory -> principal name, longest first (a function's folder inside another's).
_code: list[tuple[str, str]] = []
_by_filename: dict[str, str | None] = {}
_call_site: CallSite | None = None
_endpoints: tuple[str, ...] = ()
_refusals: list[Refusal] = []
_exercised: set[Grant] = set()
# Every grant of every principal used in this process (the least-privilege report's universe).
_grants: dict[Grant, None] = {}
_names: dict[str, dict[str, str]] = {"secrets": {}, "aliases": {}}
_acting: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "jobhooks_local_iam_principal", default=None
)
_original_submit: Any = None
# A child process (the local stack's shovel) writes what it exercised and refused here, for the
# parent to merge (`merge_journal`): its refusals then fail the test, its grants count.
_journal: Path | None = None
_journaled: set[Grant] = set()


def install() -> bool:
    """Evaluate the calls of every client made from now on; False when already installed."""
    global _installed, _original_submit
    with _lock:
        if _installed:
            return False
        for event, handler in _HANDLERS:
            botocore.handlers.BUILTIN_HANDLERS.append((event, handler))
        session = _boto3_default_session()
        if session is not None:
            for event, handler in _HANDLERS:
                session.events.register(event, handler, unique_id=_UNIQUE_ID + event)
        _original_submit = concurrent.futures.ThreadPoolExecutor.submit
        concurrent.futures.ThreadPoolExecutor.submit = _submit_as_caller  # type: ignore[method-assign,assignment]
        _installed = True
        return True


def uninstall() -> None:
    global _installed
    with _lock:
        if not _installed:
            return
        for spec in _HANDLERS:
            while spec in botocore.handlers.BUILTIN_HANDLERS:
                botocore.handlers.BUILTIN_HANDLERS.remove(spec)
        session = _boto3_default_session()
        if session is not None:
            for event, _handler in _HANDLERS:
                session.events.unregister(event, unique_id=_UNIQUE_ID + event)
        concurrent.futures.ThreadPoolExecutor.submit = _original_submit  # type: ignore[method-assign]
        _installed = False


def is_installed() -> bool:
    with _lock:
        return _installed


def use(
    principals: Iterable[Principal],
    *,
    endpoint_url: str | None = None,
    other_endpoint_urls: Iterable[str] = (),
    secret_arns: Mapping[str, str] | None = None,
    key_aliases: Mapping[str, str] | None = None,
) -> None:
    """Evaluate calls against these principals from now on (the latest provisioned stack).

    `endpoint_url`: the local stack's AWS endpoint; only calls sent there, or to one of
    `other_endpoint_urls` (the processes that serve some services of the stack on their own),
    are enforced (a test that stubs a client for real AWS is not talking to the local stack).
    `secret_arns` (secret name -> ARN) and `key_aliases` (KMS alias -> key id) are the local
    names a call may use where IAM authorizes the full ARN."""
    global _call_site, _endpoints
    listed = list(principals)
    with _lock:
        _endpoints = (
            tuple(url.rstrip("/") for url in (endpoint_url, *other_endpoint_urls) if url)
            if endpoint_url
            else ()
        )
        _names["secrets"] = dict(secret_arns or {})
        _names["aliases"] = dict(key_aliases or {})
        _principals.clear()
        _principals.update({p.name: p for p in listed})
        _code.clear()
        _code.extend(
            sorted(
                ((directory, p.name) for p in listed for directory in p.code),
                key=lambda pair: -len(pair[0]),
            )
        )
        _by_filename.clear()
        for principal in listed:
            for grant in principal.policy.grants():
                _grants.setdefault(grant)
        _call_site = None


def principal(name: str) -> Principal:
    with _lock:
        return _principals[name]


def principal_names() -> list[str]:
    with _lock:
        return list(_principals)


@contextlib.contextmanager
def acting_as(name: str | None) -> Iterator[None]:
    """Calls made inside (and in executor tasks submitted inside) are `name`'s."""
    token = _acting.set(name)
    try:
        yield
    finally:
        _acting.reset(token)


def principal_of_code(code: Any) -> str | None:
    """The principal whose code `code` (a function, e.g. a handler) is, if any.

    Found from the file the function was compiled from, under its decorators (Powertools'
    wrappers keep it as `__wrapped__`), so a handler loaded from `functions/<name>/app.py` by
    file location, whose module is not in `sys.modules`, is its function's as much as an
    imported one; the module's file is the fallback for a callable object."""
    try:
        unwrapped = inspect.unwrap(code)
    except ValueError:  # a cycle of __wrapped__: judge the outer callable
        unwrapped = code
    for candidate in (unwrapped, getattr(unwrapped, "__func__", None)):
        compiled = getattr(candidate, "__code__", None)
        if compiled is not None:
            return _principal_of_file(compiled.co_filename)
    module = sys.modules.get(getattr(unwrapped, "__module__", "") or "")
    filename = getattr(module, "__file__", None)
    return _principal_of_file(filename) if filename else None


def current_principal() -> str | None:
    """Who is calling now: `acting_as`, else the innermost principal's frame on the stack."""
    acting = _acting.get()
    if acting is not None:
        return acting
    if not _code:
        return None
    frame = sys._getframe(1)
    while frame is not None:
        found = _principal_of_file(frame.f_code.co_filename)
        if found is not None:
            return found
        frame = frame.f_back  # type: ignore[assignment]
    return None


def take_refusals() -> list[Refusal]:
    """The calls refused since the last call, oldest first (and forget them)."""
    with _lock:
        taken = list(_refusals)
        _refusals.clear()
        return taken


def exercised_grants() -> set[Grant]:
    with _lock:
        return set(_exercised)


def known_grants() -> list[Grant]:
    """Every grant of every principal this process has used."""
    with _lock:
        return list(_grants)


def check(
    name: str, service: str, prefix: str, operation: str, params: dict[str, Any]
) -> list[Refusal]:
    """Evaluate one call as principal `name`; the refusals (none: allowed). Records nothing."""
    return _judge(name, service, prefix, operation, params)[0]


def _judge(
    name: str, service: str, prefix: str, operation: str, params: dict[str, Any]
) -> tuple[list[Refusal], set[Grant]]:
    with _lock:
        who = _principals.get(name)
        site = _site_of(who) if who is not None else None
    if who is None or site is None:
        unknown = Refusal(name, f"{prefix}:{operation}", "*", f"{name} is not a known principal")
        return [unknown], set()
    try:
        requests = authorizations(service, prefix, operation, params, site)
    except UnmappedRequestError as error:
        return [Refusal(name, f"{prefix}:{operation}", "?", f"{error} (fails closed)")], set()
    except (KeyError, TypeError, ValueError) as error:
        reason = f"the evaluator cannot read the call's parameters ({error!r}): fails closed"
        return [Refusal(name, f"{prefix}:{operation}", "?", reason)], set()
    refused: list[Refusal] = []
    exercised: set[Grant] = set()
    for request in requests:
        decision = evaluate(who.policy, _with_global_keys(request, who))
        if decision.allowed:
            exercised.update(decision.exercised)
        else:
            refused.append(Refusal(name, request.action, request.resource, decision.reason))
    return refused, exercised


def _before_parameter_build(
    params: dict[str, Any], model: Any, context: Any = None, **_: Any
) -> None:
    name = current_principal()
    if name is None or context is None:
        return
    service_model = model.service_model
    service = str(service_model.service_name)
    prefix = str(getattr(service_model, "signing_name", None) or service)
    context[_CONTEXT_KEY] = (service, *_judge(name, service, prefix, str(model.name), params))


def _before_call(model: Any, params: Any = None, context: Any = None, **_: Any) -> None:
    judged = context.pop(_CONTEXT_KEY, None) if context is not None else None
    if judged is None:
        return
    service, refusals, exercised = judged
    url = str((params or {}).get("url", ""))
    with _lock:
        endpoints = _endpoints
    if endpoints and not any(url.startswith(e + "/") or url == e for e in endpoints):
        return
    with _lock:
        _exercised.update(exercised)
        _refusals.extend(refusals)
        if _journal is not None:
            _write_journal(exercised - _journaled, refusals)
            _journaled.update(exercised)
    if not refusals:
        return
    for refusal in refusals:
        logger.error(
            "%s",
            refusal,
            extra={
                "iam_principal": refusal.principal,
                "iam_action": refusal.action,
                "iam_resource": refusal.resource,
            },
        )
    raise AccessDenied(service, str(model.name), refusals)


def journal_to(path: Path | None) -> None:
    """Also append every newly exercised grant and every refusal to `path` (JSON lines)."""
    global _journal
    with _lock:
        _journal = path
        _journaled.clear()


def merge_journal(path: Path) -> None:
    """Take in what a child process journaled to `path` (and empty it)."""
    if not path.is_file():
        return
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("", encoding="utf-8")
    with _lock:
        for line in lines:
            try:
                entry = json.loads(line)
            except ValueError:  # a line cut short by a SIGKILL
                continue
            if entry.get("exercised"):
                _exercised.add(Grant(*entry["exercised"]))
            if entry.get("refused"):
                _refusals.append(Refusal(*entry["refused"]))


def _write_journal(exercised: set[Grant], refusals: list[Refusal]) -> None:
    assert _journal is not None
    entries = [{"exercised": [g.principal, g.sid, g.action, g.resource]} for g in exercised]
    entries += [{"refused": [r.principal, r.action, r.resource, r.reason]} for r in refusals]
    if entries:
        with _journal.open("a", encoding="utf-8") as file:
            file.write("".join(json.dumps(entry) + "\n" for entry in entries))


_HANDLERS: Final = ((_JUDGE_EVENT, _before_parameter_build), (_ENFORCE_EVENT, _before_call))


def _with_global_keys(request: Request, who: Principal) -> Request:
    context = dict(request.context)
    context.setdefault("aws:principalarn", (who.arn,))
    context.setdefault("aws:principalaccount", (who.account,))
    context.setdefault("aws:requestedregion", (who.region,))
    # botocore talks HTTPS to AWS; the local emulator's plain http stands in for it.
    context.setdefault("aws:securetransport", ("true",))
    assert all(k in GLOBAL_CONDITION_KEYS for k in context if k.startswith("aws:"))
    return Request(request.action, request.resource, context)


def _site_of(who: Principal) -> CallSite:
    global _call_site
    if _call_site is None or (_call_site.region, _call_site.account) != (who.region, who.account):
        _call_site = CallSite(
            region=who.region,
            account=who.account,
            secret_arns=_names["secrets"],
            key_aliases=_names["aliases"],
        )
    return _call_site


def _principal_of_file(filename: str) -> str | None:
    try:
        return _by_filename[filename]
    except KeyError:
        pass
    found = next((name for directory, name in _code if filename.startswith(directory + "/")), None)
    _by_filename[filename] = found
    return found


def _submit_as_caller(
    self: concurrent.futures.ThreadPoolExecutor,
    fn: Callable[..., Any],
    /,
    *args: Any,
    **kwargs: Any,
) -> concurrent.futures.Future[Any]:
    # A handler's worker threads call AWS as the handler does (on Lambda they share its role).
    caller = current_principal()
    if caller is None:
        return _original_submit(self, fn, *args, **kwargs)  # type: ignore[no-any-return]

    def run_as_caller() -> Any:
        with acting_as(caller):
            return fn(*args, **kwargs)

    return _original_submit(self, run_as_caller)  # type: ignore[no-any-return]


def _boto3_default_session() -> Any:
    try:
        import boto3
    except ImportError:  # botocore alone: every session is new, and covered
        return None
    return boto3.DEFAULT_SESSION
