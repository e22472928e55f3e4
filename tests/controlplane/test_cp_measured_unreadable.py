"""A `<spool>/measured/` folder the runner cannot list or search never stops the runner nor loses a failed run's
report: the prune says so in the log and prunes nothing, the timeline goes to the log, the failure and its
DELETE_REFUSED result are stored (review r1 on the retention, session 53). Before, the start-up prune's PermissionError
stopped the runner (nothing could be submitted), and the one before a failed run's write ended that run's task: its
failure and result were never published.

The real runner runs as its own process (`python -m podtax_runner`), so that as root it can be started without
CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (setpriv, util-linux) and meets the EACCES any other user meets (checked
first with ls under the same setpriv; a machine that cannot drop them skips, saying why); real
nats-server, kubesim (RBAC's 403 on delete fails the run), parser and analyzer."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane.conftest import cluster
from tests.controlplane.test_cp_measured_retention import campaign, plant, submit
from tests.integration.harness import services, wait_for

# root without them (and with no inheritable or ambient capability that exec could give back): the folder's mode
# holds for it as for any other user
NO_DAC = ["--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-all", "--ambient-caps=-all"]


def without_dac() -> list[str]:
    """The prefix that runs a command here without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH: none when not root
    (chmod applies), else setpriv; skips the test, saying why, when this machine cannot drop them (no setpriv, or
    no CAP_SETPCAP to drop them from the bounding set): that is the test's limit, not the runner's."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("cannot drop CAP_DAC_OVERRIDE here: as root this test needs setpriv (Debian/Ubuntu: util-linux)")
    tried = subprocess.run([setpriv, *NO_DAC, "--", "true"], capture_output=True, text=True, timeout=30)
    if tried.returncode != 0:
        pytest.skip(f"cannot drop CAP_DAC_OVERRIDE here (needs CAP_SETPCAP): setpriv said {tried.stderr.strip()!r}")
    return [setpriv, *NO_DAC, "--"]


def assert_unreadable(prefix: list[str], folder: Path) -> None:
    """`ls <folder>/.` fails under `prefix` as under the runner: folder/. needs search permission, listing it read
    permission. If it can be listed the capabilities were not dropped (setpriv without CAP_SETPCAP leaves the
    bounding set as it was and still exits 0): the test says so and is skipped."""
    seen = subprocess.run([*prefix, "ls", f"{folder}/."], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "LC_ALL": "C"})
    if seen.returncode == 0:
        pytest.skip(f"cannot drop CAP_DAC_OVERRIDE here (needs CAP_SETPCAP): under {' '.join(prefix)} ls still "
                    f"lists {folder}")
    assert "Permission denied" in seen.stderr, seen.stderr


@pytest.mark.parametrize(("mode", "said"), [
    (0o300, "could not list"),  # cannot list: the start-up prune raised, the runner stopped
    # cannot search: the check before the write raised; the start-up prune said a line per file ('could not look at')
    (0o600, "could not prune the measured timelines"),
])
async def test_a_measured_folder_the_runner_cannot_read_leaves_it_up_and_the_failure_stored(
        nats_url: str, tmp_path: Path, kubesim_factory: Any, monkeypatch: pytest.MonkeyPatch, mode: int,
        said: str) -> None:
    sim = kubesim_factory({**cluster(), "faults": {"forbid": ["delete persistentvolumeclaims"]}}, kubelet="none")
    measured = tmp_path / "spool" / "measured"
    measured.mkdir(parents=True)
    old = plant(measured, "old-0", 40)  # past the 30 days: it would be pruned from a folder the runner can read
    for i in range(1, 5):
        plant(measured, f"old-{i}", 40)
    measured.chmod(mode)
    prefix = without_dac()
    assert_unreadable(prefix, measured)
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}, "PODTAX_NATS_URL": nats_url,
           "PODTAX_HEALTH_PORT": "0", "PODTAX_LOG_FORMAT": "text", "PODTAX_RUNNER_KUBECONFIG": str(sim.kubeconfig),
           "PODTAX_RUNNER_SPOOL_DIR": str(tmp_path / "spool")}
    log = tmp_path / "runner.log"
    proc: subprocess.Popen[bytes] | None = None
    try:
        async with services(nats_url, tmp_path) as s:
            await s.analyzer()
            await s.parser()
            with log.open("wb") as out:
                runner = [*prefix, sys.executable, "-m", "podtax_runner"]
                proc = subprocess.Popen(runner, env=env, stdout=out, stderr=subprocess.STDOUT)
            await wait_for(lambda: "resumed 0 campaigns" in log.read_text() or proc.poll() is not None, 60,
                           "the runner to start")
            await submit(tmp_path, campaign("cp-unread", 4))
            query = "SELECT status, failure_reason, flags FROM runs WHERE campaign = 'cp-unread'"
            # failed, then its create and bind figures stored as a result flagged DELETE_REFUSED (it supersedes)
            await wait_for(lambda: s.query(query) and s.query(query)[0][0] == "ok" or proc.poll() is not None, 90,
                           "the run's failure and its DELETE_REFUSED result stored")
            text = log.read_text()
            assert proc.poll() is None, text[-3000:]
            [(status, reason, flags)] = s.query(query)
            assert (status, reason) == ("ok", None) and any(f.startswith("DELETE_REFUSED: ") for f in flags), flags
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, log.read_text()[-3000:]
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        measured.chmod(0o700)  # for pytest's clean-up of tmp_path
    text = log.read_text()
    assert said in text and "measured timeline of run cp-unread-" in text, text[-3000:]
    assert "Traceback" not in text, text[-3000:]
    assert "could not look at" not in text, text[-3000:]  # one line for the folder, not one a file
    if mode == 0o600:
        assert text.count(f"could not search {measured} (") == 1, text[-3000:]  # the start-up prune
    assert old.exists()
