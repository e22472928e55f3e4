"""Wiring: settings, NATS (score watch, PlacementMade), Kubernetes clients, leader election, metrics."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from datetime import datetime
from typing import Any

from nats.js.errors import NotFoundError
from nats.js.kv import KeyValue
from podtax import natsauth, subjects
from podtax.bus import Bus, BusError, NatsLost
from podtax.busstreams import OWNER_POLL_S, Stopped
from podtax.config import SchedulerSettings
from podtax.events import PlacementMadeV1
from podtax.service import cannot_listen, serve_health, service_streams

from podtax_scheduler.kube import Kube, api_client
from podtax_scheduler.leader import AlwaysLeader, LeaderElector, LeaseConfig
from podtax_scheduler.metrics import Metrics
from podtax_scheduler.profile import load_profile
from podtax_scheduler.scheduler import SOURCE, Elector, Scheduler
from podtax_scheduler.scorestore import ScoreStore

log = logging.getLogger("podtax.scheduler.service")
BUCKET_STREAM = f"KV_{subjects.SCORES_BUCKET}"
BUCKET_CHECK_S = 2.0  # how often the scores bucket is checked to be the one watched (NatsSide._bucket_kept)


# All settings live in podtax.config (one reference for every service).
SchedulerConfig = SchedulerSettings


async def _follow_scores(watcher: object, store: ScoreStore, initial: asyncio.Event) -> None:
    async for entry in watcher:  # type: ignore[attr-defined]
        if entry is None:  # end of the initial values
            initial.set()
            continue
        if entry.operation in ("DEL", "PURGE"):
            store.delete(entry.key)
        elif entry.value is not None:
            store.put(entry.key, entry.value)
        if not initial.is_set() and entry.delta == 0:
            initial.set()


class NatsSide:
    """What the scheduler needs from NATS, each part as soon as it is there, while pods are placed meanwhile: the
    streams (the runner's: PlacementMade is published once they exist) and the scores bucket (the analyzer's: until
    it exists, pods are placed by resources alone and each benchmark pod's BenchmarkUnmeasured Event names the missing
    bucket and who makes it). Only a NATS user of a podtax role waits for them (natsauth.CREATORS); others make them."""

    def __init__(self, settings: SchedulerConfig, bus: Bus, store: ScoreStore, stop: asyncio.Event) -> None:
        self.settings, self.bus, self.store, self.stop = settings, bus, store, stop
        self.publishing = asyncio.Event()  # the streams exist
        self.settled = asyncio.Event()  # the first scores are loaded, or the bucket is known to be missing
        self.failed: BaseException | None = None  # a stream podtax cannot use (busstreams: foreign, no room)
        self.watcher: object | None = None
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self._tasks = [asyncio.create_task(self._fatal(self._streams())),
                       asyncio.create_task(self._fatal(self._scores()))]

    async def _fatal(self, work: Coroutine[Any, Any, None]) -> None:
        """Run `work`; what it raises (a stream podtax cannot use, NATS without JetStream) stops the scheduler and
        is raised by serve(), as when it came before the scheduler started."""
        try:
            await work
        except Stopped:
            pass
        except Exception as exc:  # noqa: BLE001 - re-raised by serve()
            self.failed = exc
            self.stop.set()

    async def _streams(self) -> None:
        if await service_streams("scheduler", self.settings, self.bus, self.stop):  # the runner's (CREATORS)
            self.publishing.set()

    async def _bucket(self) -> KeyValue | None:
        """The scores bucket, waiting for its owner's when this NATS user may not make it; None once stopped."""
        missing = False
        while not self.stop.is_set():
            reconnects = self.bus.nc.stats["reconnects"]
            try:
                kv = await self.bus.kv(subjects.SCORES_BUCKET)
            except TimeoutError:  # nats-py's request timeout: NATS gone meanwhile (or back, restarted) is waited out
                if self.bus.nc.is_connected and self.bus.nc.stats["reconnects"] == reconnects:
                    raise
                await asyncio.sleep(OWNER_POLL_S)
                continue
            except BusError as exc:  # this user may not make it: the analyzer does
                if not missing:
                    missing, self.store.unavailable = True, str(exc)
                    log.warning("%s; until then pods are placed by resources alone (a benchmark pod's Event "
                                "BenchmarkUnmeasured says so)", exc)
                    self.settled.set()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.stop.wait(), OWNER_POLL_S)
                continue
            if missing:
                log.warning("KV bucket %s is there now: pods are placed by their benchmark scores as they arrive",
                            subjects.SCORES_BUCKET)
            self.store.unavailable = None
            return kv
        return None

    async def _scores(self) -> None:
        kv = await self._bucket()
        if kv is None:
            return
        self.watcher = await kv.watch(self.store.key_filter)
        tasks = [asyncio.ensure_future(_follow_scores(self.watcher, self.store, self.settled)),
                 asyncio.ensure_future(self._bucket_kept())]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()

    async def _bucket_kept(self) -> None:
        """Raise BusError once the scores bucket watched is gone, or is another one of its name (its creation time): a
        NATS that lost its JetStream storage. The watch followed it no more, silently (nats-py's ordered consumer,
        made again, starts past the new bucket's first scores): pods were placed by the scores of before, for ever."""
        created: datetime | None = None
        while True:
            try:
                now = (await self.bus.js.stream_info(BUCKET_STREAM)).created
            except NotFoundError:
                now = None
            except Exception:  # noqa: BLE001 - NATS away or slow: checked again
                now = created
            if created is None:  # the bucket just watched (made by _bucket)
                created = now
            elif now != created:
                what = "gone" if now is None else "made again"
                raise NatsLost(f"NATS lost KV bucket {subjects.SCORES_BUCKET} ({what}): the NATS server restarted "
                               "with an empty store, or PODTAX_NATS_URL names another one; stopping, so that started "
                               "again the scheduler follows the bucket there")
            await asyncio.sleep(BUCKET_CHECK_S)

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.watcher is not None:
            await self.watcher.stop()  # type: ignore[attr-defined]


def _not_retrying(record: logging.LogRecord) -> bool:
    return not record.getMessage().startswith("Retrying (")


def quiet_retries() -> None:
    """Drop urllib3's 'Retrying (Retry(total=2 ...' warnings, three a call that cannot reach the API server, each
    naming the connection object: the informers and the lease say the outage once, with the address
    (kube.unreached). Its other warnings stay ('Connection pool is full': the pool is smaller than the binds)."""
    pool_log = logging.getLogger("urllib3.connectionpool")
    if _not_retrying not in pool_log.filters:
        pool_log.addFilter(_not_retrying)


async def serve(settings: SchedulerConfig, stop: asyncio.Event,
                on_ready: Callable[[Scheduler], None] | None = None) -> None:
    """Run until `stop` is set."""
    quiet_retries()
    profile = load_profile(settings.scheduler_profile)
    # the kubeconfig is read before NATS is asked: one that is not a kubeconfig (binary, empty, tab-indented) was
    # reported after a dead NATS, as "cannot reach NATS" exit 1, not as the file to fix (sweep hU)
    api = api_client(settings.scheduler_kubeconfig, pool=settings.scheduler_binders + 4)
    watch_api = api_client(settings.scheduler_kubeconfig, pool=4)
    bus = await Bus.connect(settings.nats_url, f"{SOURCE}/{settings.scheduler_identity}",
                            auth=natsauth.connect_options(settings))
    scheduler: Scheduler | None = None
    metrics = Metrics()
    health: asyncio.base_events.Server | None = None
    store = ScoreStore(settings.cluster, settings.scheduler_score_env)
    nats_side = NatsSide(settings, bus, store, stop)
    try:
        nats_side.start()
        waits = {asyncio.create_task(nats_side.settled.wait()), asyncio.create_task(stop.wait())}
        done, pending = await asyncio.wait(waits, timeout=10, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
        if not done:
            log.warning("initial scores not loaded within 10 s; continuing, they arrive as they come")
        if nats_side.failed is not None:
            raise nats_side.failed
        if stop.is_set():
            return
        loop = asyncio.get_running_loop()

        def publish(event: PlacementMadeV1) -> None:
            if not nats_side.publishing.is_set():  # no stream yet (its owner's warning says so): not sent
                return
            fut: Future[None] = asyncio.run_coroutine_threadsafe(bus.publish(event), loop)
            fut.add_done_callback(lambda f: f.exception() and log.warning("PlacementMade: %s", f.exception()))

        kube = Kube(api, settings.scheduler_identity)
        elector: Elector = AlwaysLeader()
        if settings.scheduler_leader_elect:
            elector = LeaderElector(api, settings.scheduler_identity, LeaseConfig(
                settings.scheduler_lease_name, settings.scheduler_lease_namespace,
                settings.scheduler_lease_duration_s, settings.scheduler_renew_deadline_s,
                settings.scheduler_retry_period_s))
        scheduler = Scheduler(settings, kube, Kube(watch_api, settings.scheduler_identity), profile, store,
                              elector, metrics, publish, binders=settings.scheduler_binders)
        if settings.scheduler_metrics_port or settings.scheduler_metrics_port == 0:
            try:
                port = metrics.serve(settings.scheduler_metrics_port, settings.health_host)
            except OSError as exc:
                raise cannot_listen(exc, settings.health_host, settings.scheduler_metrics_port,
                                    "PODTAX_SCHEDULER_METRICS_PORT") from None
            log.info("metrics on :%d/metrics", port)
        # the informers' first lists wait for the API server (Scheduler.start, up to its sync timeout of 60 s): a
        # SIGTERM meanwhile went unseen until then (hF, session 56); now it stops the start
        starting = asyncio.ensure_future(asyncio.to_thread(scheduler.start))
        stopping = asyncio.ensure_future(stop.wait())
        await asyncio.wait({starting, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if stop.is_set():  # also one that came as the sync timeout ended: a stop, exit 0, not that failure (rF)
            log.info("stopping while the informers wait for the API server")
            await asyncio.to_thread(scheduler.stop)
            scheduler = None
            with contextlib.suppress(TimeoutError):
                await starting
            return
        await starting  # its TimeoutError, if the API server never answered
        if settings.health_port:  # /healthz, /readyz (NATS connected) and /metrics, as every podtax service
            health = await serve_health(settings.health_port, bus, settings.health_host)
        log.info("scheduler %s started: schedulerName=%s cluster=%s scores=%s", settings.scheduler_identity,
                 settings.scheduler_name, settings.cluster, settings.scheduler_score_env)
        if on_ready is not None:
            on_ready(scheduler)
        await stop.wait()
        log.info("stopping")
        await asyncio.to_thread(scheduler.stop)
        scheduler = None
        if nats_side.failed is not None:
            raise nats_side.failed
    finally:
        await nats_side.close()
        if scheduler is not None:
            await asyncio.to_thread(scheduler.stop)
        if health is not None:
            health.close()
        metrics.close()
        await bus.close()


class Background:
    """A scheduler running in a thread of this process (tests, benchmarks)."""

    def __init__(self, settings: SchedulerConfig) -> None:
        self.settings = settings
        self.scheduler: Scheduler | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="scheduler-service", daemon=True)

    def _run(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()

            def ready(s: Scheduler) -> None:
                self.scheduler = s
                self._ready.set()

            await serve(self.settings, self._stop, ready)

        try:
            asyncio.run(main())
        except BaseException as exc:  # noqa: BLE001 - reported by start()
            self._error = exc
        finally:
            self._ready.set()

    def start(self, timeout: float = 30) -> Background:
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError("scheduler did not start")
        if self._error is not None:
            raise self._error
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=30)
