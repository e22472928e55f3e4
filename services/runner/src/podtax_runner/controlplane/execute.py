"""Run one control-plane run (volume-churn on kubernetes or nomad, pod-startup) and return its
timeline. Synchronous: the runner calls it in a thread; `stop` ends it early (everything it
created is deleted before it returns)."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable

from kubernetes import client, config
from kubernetes.client.rest import ApiException
from podtax import events, templates
from podtax.config import RunnerSettings
from podtax.parsers.timeline_aborted import MARK
from podtax.templates import PodStartup, VolumeChurn

from podtax_runner.controlplane import cleanup, kubeapi, kvolumes, nomad, nvolumes, podstartup
from podtax_runner.controlplane.apierrors import last_error, refusal, timed_out
from podtax_runner.controlplane.common import Aborted, Context
from podtax_runner.controlplane.kubeapi import Kube
from podtax_runner.controlplane.timeline import Timeline

log = logging.getLogger("podtax.runner.controlplane")


def kube_client(settings: RunnerSettings, pool: int = 64) -> client.ApiClient:
    """The Kubernetes client of control-plane runs: PODTAX_RUNNER_KUBECONFIG, else in-cluster config."""
    cfg = client.Configuration()
    try:
        if settings.runner_kubeconfig:
            config.load_kube_config(config_file=str(settings.runner_kubeconfig), client_configuration=cfg)
        else:
            config.load_incluster_config(client_configuration=cfg)
    except (config.ConfigException, OSError) as exc:
        raise Aborted("no-kubernetes", f"no Kubernetes access ({exc}): set PODTAX_RUNNER_KUBECONFIG "
                      f"or run the runner in the cluster") from None
    cfg.connection_pool_maxsize = pool
    return kubeapi.api_client(cfg)


def kube_simulated(api: client.ApiClient) -> bool:
    """True against podtax kubesim (its version says so)."""
    try:
        params = api.param_serialize(method="GET", resource_path="/version", auth_settings=["BearerToken"])
        resp = api.call_api(*params, _request_timeout=(5, 10))
        return "kubesim" in json.loads(resp.read() or b"{}").get("gitVersion", "")
    except Exception:  # noqa: BLE001 - unknown: report as a real cluster
        return False


def nomad_simulated(n: nomad.Nomad) -> bool:
    try:
        return bool((n.http.get("/v1/agent/self").json().get("config") or {}).get("Simulated"))
    except Exception:  # noqa: BLE001 - unknown: report as a real cluster
        return False


def execute(run: events.RunSpec, settings: RunnerSettings, stop: threading.Event | None = None,
            kube_api: client.ApiClient | None = None, nomad_cfg: nomad.NomadConfig | None = None,
            resume: bool = False) -> Timeline:
    """Run `run` against its backend (`run.env`); raises Aborted (after cleaning up) when it cannot finish.
    `resume`: the run was in flight when a runner stopped: first remove what that attempt left."""
    template = templates.get(run.test)
    if not template.control_plane or run.env not in template.environments:
        raise Aborted("not-control-plane", f"{run.test} in {run.env} is not a control-plane run")
    try:
        params = template.validate(run.params)
    except templates.TemplateError as exc:
        raise Aborted("invalid-params", exc.detail) from None
    stop = stop or threading.Event()
    deadline = time.monotonic() + run.timeout_s
    observe = getattr(params, "observe", "watch")
    if run.env == "nomad":
        assert isinstance(params, VolumeChurn)
        n = nomad.Nomad(nomad_cfg or nomad.NomadConfig.from_settings(settings), pool_size=params.concurrency + 4)
        try:
            tl = Timeline(run.test, "nomad", params.model_dump(), observe, nomad_simulated(n))
            ctx = Context(run, params.namespace or n.cfg.namespace, deadline, stop, tl.simulated)
            if resume:
                nomad.cleanup(n, run.campaign, ctx.label, ctx.namespace)
            n.timeline = tl
            nvolumes.run(n, ctx, params, tl, server_count(n.scrape, tl))
        except Aborted as exc:
            raise keep(exc, tl) from None
        finally:
            n.close()
        return tl
    api = kube_api or kube_client(settings, pool=getattr(params, "concurrency", 10) + 8)
    tl = Timeline(run.test, "kubernetes", params.model_dump(), observe, kube_simulated(api))
    kube = Kube(api, tl)
    kube.deadline = deadline  # no call of the run is sent again past it (its cleanup's Kube has none)
    ctx = Context(run, params.namespace or settings.runner_namespace, deadline, stop, tl.simulated, kube.down)
    if resume:
        cleanup.kubernetes(Kube(api), ctx.namespace, ctx.selector)
    measured = server_count(kube.scrape, tl)
    try:
        if isinstance(params, PodStartup):
            podstartup.run(kube, ctx, params, tl, measured)
        else:
            kvolumes.run(kube, ctx, params, tl, measured)
    except Aborted as exc:
        raise keep(exc, tl) from None
    except ApiException as exc:  # a refusal of the run's own call (its object's fail that object only)
        aborted = refusal(exc, api.configuration.host, ctx.namespace,
                          any("request_sent" in r.t for r in tl.objects.values()))
        cleanup.tell(aborted, getattr(exc, cleanup.LEFT, ""))  # what the run's cleanup left, and how to remove it
        raise keep(aborted, tl) from None
    except Exception as exc:
        if not timed_out(exc):  # an object's call that timed out gave that object up; this one was the run's own
            raise
        cause = last_error(exc)
        aborted = Aborted("kubernetes-no-answer", f"the Kubernetes API at {api.configuration.host} did not answer in "
                          f"time ({type(cause).__name__}: {cause}): is it overloaded, or stopped?")
        cleanup.tell(aborted, getattr(exc, cleanup.LEFT, ""))
        raise keep(aborted, tl) from None
    return tl


MEASURED = "podtax_measured"  # the attribute of a run's Aborted holding the timeline it measured before (keep)


def keep(exc: Aborted, tl: Timeline) -> Aborted:
    """`exc`, carrying `tl` (attribute MEASURED; measured_of) when the run had timed something past its first request
    (an object accepted, bound, ...), its header marked `aborted` with the failure's reason and detail. Before, a run
    ended by a refusal after it had measured (an account that may create but not delete: RBAC's 403 on the first
    delete, `kubernetes-forbidden`) failed with its reason and detail only, every create and bind time it had taken
    lost. The run still fails as before; the runner keeps this timeline (dispatch.keep_measured). A stopped run
    (`stopped`: its campaign cancelled, SIGTERM or Ctrl-C) keeps nothing: it was not a failure of what it measured.
    A run ended by refused deletes (RBAC's or Nomad's 403 on a delete, more than max(10, 10 %) deletes refused:
    Aborted.call `delete`) is marked so (`deletes_refused`): the parser makes a result flagged DELETE_REFUSED of it
    when every object was created and bound (parsers/timeline_aborted.py), and refuses it otherwise."""
    if exc.reason != "stopped" and any(set(r.t) - {"request_sent"} for r in list(tl.objects.values())):
        tl.aborted = {"reason": exc.reason, "detail": exc.detail}
        if exc.call == "delete":
            tl.aborted[MARK] = True
        setattr(exc, MEASURED, tl)
    return exc


def measured_of(exc: BaseException) -> Timeline | None:
    """The timeline a failed run measured before it ended (keep), else None."""
    tl = getattr(exc, MEASURED, None)
    return tl if isinstance(tl, Timeline) else None


def server_count(scrape: Callable[[], dict[str, float] | None], tl: Timeline) -> Callable[[], None]:
    """Scrape the server's request counter now, and again once the run's set-up is done (tl.setup_done: its
    checks are not per object, as in requests_per_object); the callable returned scrapes it again into
    `tl.apiserver`. A run calls it once its work is done, before its own cleanup, whose requests the harness does
    not count either (an audit: a run waiting 30 s for a claim left behind LISTed every 0.2 s, and
    server_requests_per_object read 24.3 against requests_per_object 2.3). If the scrape after the set-up fails,
    the first one stands (the figure then counts the set-up's few requests too, rather than being lost)."""
    before = {"counts": scrape()}

    def set_up() -> None:
        if (counts := scrape()) is not None:
            before["counts"] = counts

    tl.setup_done = set_up

    def measured() -> None:
        after = scrape() if before["counts"] is not None else None
        tl.apiserver = {"before": before["counts"], "after": after} if after is not None else None

    return measured
