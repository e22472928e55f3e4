"""What podtax's two Kubernetes clients (the runner's control-plane client and the scheduler) take off the official
`kubernetes` client's CPU per request, ~0.2 ms of it: the credential refresh it runs before every request
(:func:`refresh_at_most_every`) and pydantic's validation of our plain-dict bodies (:func:`unvalidated`); and how
both follow a watch stream (:func:`follow_watch`, :func:`watch_event`).

Duck-typed on the client's Configuration and API methods: podtax itself does not depend on `kubernetes` (both
services do).
"""

from __future__ import annotations

import functools
import json
import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from podtax.config import ConfigError

REFRESH_S = 1.0  # how often a request may run the client's credential refresh (refresh_api_key_hook)


def load_config(cfg: Any, kubeconfig: Path | str | None, setting: str) -> None:
    """Fill `cfg` (a kubernetes.client.Configuration) from the file `kubeconfig`, else the pod's service account
    (in a cluster), else the file(s) KUBECONFIG names, else ~/.kube/config. A file the client cannot use (no such
    context, not YAML, a list, no cluster) raises ConfigError in one line naming `setting` (the variable or option
    that names the file), where the client looked and why; the client itself raised a ConfigException, a YAML or a
    TypeError traceback."""
    import yaml
    from kubernetes import config

    in_cluster = kubeconfig is None and bool(os.environ.get("KUBERNETES_SERVICE_HOST"))
    env = "" if kubeconfig else os.environ.get("KUBECONFIG", "")  # the client's default: read here, not at import
    try:
        if in_cluster:
            config.load_incluster_config(client_configuration=cfg)
        else:
            config.load_kube_config(config_file=str(kubeconfig or env or "~/.kube/config"), client_configuration=cfg)
    except (config.ConfigException, yaml.YAMLError, OSError, TypeError, AttributeError, KeyError, ValueError) as exc:
        files = ", ".join(p for p in env.split(os.pathsep) if p)  # KUBECONFIG may list several
        where = ("the pod's service account" if in_cluster else str(kubeconfig) if kubeconfig
                 else f"{files} (KUBECONFIG)" if files else "~/.kube/config (the default)")
        why = " ".join(f"{type(exc).__name__}: {exc}".split())
        fix = "fix or unset KUBECONFIG, " if files and not in_cluster else ""
        raise ConfigError(f"{setting}: cannot load Kubernetes access from {where} ({why}); {fix}point {setting} at "
                          "a working kubeconfig, or run in a cluster with a service account") from None


def status_message(body: str | bytes | None) -> str:
    """The `message` of a Kubernetes Status body (an API error's answer), stripped; '' when the body is none, not
    JSON or has no message."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    try:
        return str(json.loads(text or "{}").get("message") or "").strip()
    except (ValueError, AttributeError):
        return ""


def retry_after_s(exc: BaseException | None) -> float | None:
    """The seconds an API answer asks to wait before trying again: its Retry-After header, else its Status's
    details.retryAfterSeconds (the API server writes both); None when it names none or not in seconds."""
    raw = (getattr(exc, "headers", None) or {}).get("Retry-After")
    if raw is None:
        body = getattr(exc, "body", None)
        try:
            raw = ((json.loads(body or "{}") or {}).get("details") or {}).get("retryAfterSeconds")
        except (ValueError, AttributeError, TypeError):
            raw = None
    try:
        seconds = float(raw) if raw is not None else None
    except (TypeError, ValueError):  # an HTTP date: the API server sends seconds
        return None
    return seconds if seconds is not None and seconds == seconds else None


def refresh_at_most_every(cfg: Any) -> None:
    """Make the credential refresh of `cfg` (a kubernetes.client.Configuration) run at most once every
    REFRESH_S, not before every request; a configuration without one (a static token) is left as it is."""
    if cfg.refresh_api_key_hook is not None:
        cfg.refresh_api_key_hook = at_most_every(REFRESH_S, cfg.refresh_api_key_hook)


def at_most_every(seconds: float, hook: Callable[[Any], None]) -> Callable[[Any], None]:
    """`hook` run at most once every `seconds`. The client's credential refresh ran on every request: it sets
    the kubeconfig's token, host and proxy on the configuration again (the host's setter reads the proxy
    environment, ~0.09 ms of CPU), for a token it renews only 5 minutes before its expiry (an in-cluster token
    file: read again once a minute). The refresh sets the hook again, its own: it is put back."""
    last = [float("-inf")]

    def run(cfg: Any) -> None:
        now = time.monotonic()
        if now - last[0] >= seconds:
            last[0] = now
            hook(cfg)
            cfg.refresh_api_key_hook = run

    return run


def unvalidated(method: Any) -> Callable[..., Any]:
    """A bound API method of the client without pydantic's validate_call, which wraps each of them: our bodies
    are plain dicts of the API's JSON, which it turned into the client's models, every field checked, for the
    client to serialise straight back to the same dict (~0.13 ms of CPU a request). The API server validates.
    A client before 34 has no such wrapper, nor has anything else: `method` itself. Built per request: a cache of them
    per bound method saved ~0.1 us a request (0.22 against 0.10 us), beside the ~130 us the validation cost."""
    raw = getattr(method, "raw_function", None)
    self = getattr(method, "__self__", None)
    return method if raw is None or self is None else functools.partial(raw, self)


class WatchGone(Exception):
    """A watch's ERROR event 410 Gone: its resourceVersion is older than the API server keeps; list again. Its
    text: the Status's message."""


def watch_event(line: str | bytes, rv: str) -> tuple[str, dict[str, Any], str] | None:
    """One line of a watch stream (``_preload_content=False``, a JSON event a line): (type, object, the
    resourceVersion to resume from: the object's, else `rv`); None for an empty line. An ERROR event raises:
    WatchGone for 410, else RuntimeError('watch error: <its message>'); a line that is no JSON event (not JSON, or
    it, its object or the object's metadata no JSON object; a null object or metadata is {}) raises
    ValueError('watch stream: not a JSON event: <the line's start>'), where json's error or an AttributeError named
    neither the stream nor the line."""
    if not line:
        return None
    try:
        event = json.loads(line)
    except ValueError:  # JSONDecodeError, UnicodeDecodeError
        event = None
    obj = event.get("object") if isinstance(event, dict) else []
    obj = {} if obj is None else obj  # a null object: {}; a false one ([], 0, "") is no object
    meta = obj.get("metadata") if isinstance(obj, dict) else []
    meta = {} if meta is None else meta
    if not isinstance(obj, dict) or not isinstance(meta, dict):
        raise ValueError(f"watch stream: not a JSON event: {line[:80]!r}")
    etype = event.get("type")
    if etype == "ERROR":
        if obj.get("code") == 410:
            raise WatchGone(obj.get("message", "410 Gone"))
        raise RuntimeError(f"watch error: {obj.get('message', obj)}")
    return str(etype), obj, str(meta.get("resourceVersion") or rv)


def follow_watch(lines: Iterable[str | bytes], rv: str, stop: threading.Event,
                 on_event: Callable[[str, dict[str, Any]], None], on_line: Callable[[], None] = lambda: None) -> str:
    """Hand each event of a watch stream's `lines` but bookmarks to `on_event(type, object)` until the stream ends
    or `stop` is set (looked at each line, after `on_line()`); returns the resourceVersion to resume from. An ERROR
    event raises as watch_event does."""
    for line in lines:
        on_line()
        if stop.is_set():
            return rv
        if (event := watch_event(line, rv)) is None:
            continue
        etype, obj, rv = event
        if etype != "BOOKMARK":
            on_event(etype, obj)
    return rv
