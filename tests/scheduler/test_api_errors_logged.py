"""The scheduler's log when the API refuses it (audit hE, scheduler): with a kubeconfig whose token the API
server rejects, the informers logged "pods informer: HTTP 401 Unauthorized; retrying" forever, and a refused
bind dumped the client's four-line exception with its response headers; neither said what to fix. Now one
line: the status, the API's own message and what to check (the kubeconfig's credentials; for 403 the RBAC
in deploy/k8s/scheduler.yaml). The scheduler against the Kubernetes emulator and a real nats-server."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest
from podtax_scheduler.informer import Informer
from podtax_scheduler.kube import Kube, api_client, api_problem


def test_a_refused_token_says_to_check_the_credentials(sim_factory: Any, tmp_path: Any, caplog: Any) -> None:
    sim = sim_factory({"nodes": [{"name": "a", "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}]})
    bad = tmp_path / "kubeconfig.yaml"
    bad.write_text(re.sub(r'token: "[^"]+"', 'token: "not-the-token"', sim.kubeconfig.read_text()))
    caplog.set_level(logging.WARNING, logger="podtax")
    informer = Informer(Kube(api_client(bad), "test"), "nodes", lambda items: None, lambda kind, obj: None)
    informer.start()
    try:
        found = sim.wait_for(lambda: [r.getMessage() for r in caplog.records if "informer" in r.getMessage()])
    finally:
        informer.stop()
    assert not informer.synced.is_set()
    assert found[0].startswith("nodes informer: HTTP 401 Unauthorized (the API server refused the scheduler's "
                               "credentials: check PODTAX_SCHEDULER_KUBECONFIG, or the pod's service account "
                               "token); retrying until it answers"), found


def test_a_forbidden_call_names_the_permission_and_the_rbac() -> None:
    from kubernetes.client.rest import ApiException

    class Response:
        status, reason, headers = 403, "Forbidden", {"Audit-Id": "x"}
        data = (b'{"kind":"Status","message":"pods \\"p\\" is forbidden: User \\"system:serviceaccount:podtax:'
                b'scheduler\\" cannot create resource \\"pods/binding\\""}')

    text = api_problem(ApiException(http_resp=Response()))
    assert text == ('HTTP 403 Forbidden: pods "p" is forbidden: User "system:serviceaccount:podtax:scheduler" cannot '
                    'create resource "pods/binding" (the scheduler\'s service account lacks that permission: apply '
                    "the ClusterRole in deploy/k8s/scheduler.yaml)")
    assert "\n" not in text and "Audit-Id" not in text


def forbid(sim: Any, monkeypatch: Any, plural: str) -> str:
    """FAULT INJECTION: the emulator answers every create of `plural` 403 Forbidden with the API server's
    message (kubesim has no RBAC); returns that message."""
    from podtax_kubesim.util import ApiError

    message = (f'{plural} is forbidden: User "system:serviceaccount:podtax:scheduler" cannot create resource '
               f'"{plural}" in the namespace "default"')
    real = sim.emulator.api.create

    def create(res: Any, ns: str, body: Any) -> Any:
        if res.plural == plural:
            raise ApiError(403, "Forbidden", message)
        return real(res, ns, body)

    monkeypatch.setattr(sim.emulator.api, "create", create)
    return message


def _recorder(kube: Kube) -> Any:
    from podtax_scheduler.recorder import EventRecorder, PodEvent

    recorder = EventRecorder(lambda ev: kube.event(ev.namespace, ev.pod, ev.uid, ev.reason, ev.message),
                             lambda namespace, name, count: None)
    recorder.start()
    recorder.record(PodEvent("default", "p", "uid-1", "Scheduled", "Successfully assigned default/p to a"))
    return recorder


def _elector(kube: Kube) -> Any:
    from podtax_scheduler.leader import LeaderElector, LeaseConfig

    elector = LeaderElector(kube.api, "replica-1", LeaseConfig(namespace="default", lease_duration_s=3.0,
                                                               renew_deadline_s=2.0, retry_period_s=1.0))
    elector.start()
    return elector


@pytest.mark.parametrize(("plural", "start", "logger", "says"), [
    ("events", _recorder, "podtax.scheduler.events", "event Scheduled for default/p: "),
    ("leases", _elector, "podtax.scheduler.leader", "lease default/benchmark-scheduler: "),
])
def test_a_forbidden_event_or_lease_logs_one_line_naming_the_rbac(plural: str, start: Any, logger: str, says: str,
                                                                  sim_factory: Any, caplog: Any,
                                                                  monkeypatch: Any) -> None:
    sim = sim_factory({"nodes": [{"name": "a", "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}]})
    message = forbid(sim, monkeypatch, plural)
    caplog.set_level(logging.WARNING, logger=logger)
    worker = start(Kube(api_client(sim.kubeconfig), "test"))
    try:
        found = sim.wait_for(lambda: [r.getMessage() for r in caplog.records if r.name == logger])
    finally:
        worker.stop()
    assert found[0] == (f"{says}HTTP 403 Forbidden: {message} (the scheduler's service account lacks that "
                        "permission: apply the ClusterRole in deploy/k8s/scheduler.yaml)"
                        + ("; retrying" if plural == "leases" else "")), found[0]


def test_namespaces_forbidden_at_start_names_the_missing_rbac_rule(sim_factory: Any) -> None:
    """Review 7: with a ClusterRole from before namespaces were watched (no list/watch on them), start-up ended with
    "the namespaces informer did not sync within 60s; check PODTAX_SCHEDULER_KUBECONFIG and the API server", as if the
    kubeconfig were wrong. Now one line naming the RBAC rule it lacks, the one deploy/k8s/scheduler.yaml grants. The
    emulator refuses the list as RBAC does (kubesim's fault forbid, 403 Forbidden with the API server's message)."""
    from podtax.config import SchedulerSettings
    from podtax_scheduler.leader import AlwaysLeader
    from podtax_scheduler.profile import load_profile
    from podtax_scheduler.scheduler import Scheduler
    from podtax_scheduler.scorestore import ScoreStore

    from tests.scheduler.test_rbac_calls import granted

    sim = sim_factory({"nodes": [{"name": "a", "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}],
                       "faults": {"forbid": ["list namespaces"]}})
    settings = SchedulerSettings(scheduler_kubeconfig=sim.kubeconfig)
    scheduler = Scheduler(settings, Kube(api_client(sim.kubeconfig), "test"), Kube(api_client(sim.kubeconfig), "test"),
                          load_profile(None), ScoreStore("local", "kubernetes"), AlwaysLeader())
    try:
        with pytest.raises(TimeoutError) as raised:
            scheduler.start(sync_timeout_s=5)  # the forbidden list answers at once; the informer retries meanwhile
    finally:
        scheduler.stop()
    said = str(raised.value)
    assert said == (
        'the namespaces informer did not sync within 5s: the API server forbids the scheduler to list namespaces '
        '(HTTP 403 Forbidden: namespaces is forbidden: User "podtax-kubesim" cannot list resource "namespaces" in API '
        'group "" at the cluster scope (podtax kubesim fault forbid)); its ClusterRole needs list and watch on '
        'namespaces at the cluster scope (apiGroups [""], resources ["namespaces"], verbs ["list", "watch"], bound to '
        "its service account by a ClusterRoleBinding), as deploy/k8s/scheduler.yaml grants: apply it"), said
    assert "\n" not in said and "PODTAX_SCHEDULER_KUBECONFIG" not in said
    assert {("", "namespaces", "list"), ("", "namespaces", "watch")} <= granted()  # the rule named is the manifest's
