"""`GET /metrics`: the gateway in Prometheus text format.

Owns: one `CollectorRegistry` per app (never the global one, so many apps can live in one
process), a counter of HTTP requests by method, route template and status, and a collector
that reads each run's state when scraped: status, step, policy versions, the last step's
reward mean, episode and sample counters, the batches that trained nothing by reason
(no steps: `batches_dropped`), the number of active clients, and the
token-drift repairs (and drifts left unrepaired) of episode-bound chat calls per served
model. The run counters come from the database, so `render` runs in a worker thread.

Serving, per served model (a base model or `<run>/<policy>`; never per request or key):
`Telemetry.observe` (the completion services' `ServingObserver`) feeds the request latency
and time-to-first-token histograms and the generated-token counter, once per answered
request however many choices it had; `EngineLoadCollector` reads each engine's optional
`trainer.types.EngineLoad` gauges (waiting requests, decode-batch occupancy) when scraped.
Knows nothing about torch.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.openai.timing import ServedRequest
from gateway.recording.drift import DriftTracker
from gateway.registry import ModelRegistry
from gateway.runs.manager import RunManager
from gateway.runs.store import RunStore
from gateway.swarm_api.clients import ClientRegistry

PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
RUN_STATUSES = ("starting", "running", "paused", "stopped", "finished", "failed")
# Seconds, for a CPU box: a short cached reply in tens of ms, a long generation in minutes.
SERVING_BUCKETS_S = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120)


class GatewayCollector(Collector):
    def __init__(
        self,
        runs: RunManager,
        store: RunStore,
        clients: ClientRegistry,
        drift: DriftTracker | None = None,
    ):
        self._runs = runs
        self._store = store
        self._clients = clients
        self._drift = drift

    def collect(self) -> Iterator[Metric]:
        rows = {row.id: row for row in self._store.rows()}
        step = GaugeMetricFamily("swarmrl_run_step", "Training steps taken.", labels=["run"])
        status = GaugeMetricFamily(
            "swarmrl_run_status", "1 for the run's current status.", labels=["run", "status"]
        )
        version = GaugeMetricFamily(
            "swarmrl_policy_version", "Weights version served.", labels=["run", "policy"]
        )
        reward = GaugeMetricFamily(
            "swarmrl_run_reward_mean", "Mean reward of the last step.", labels=["run", "policy"]
        )
        episodes = CounterMetricFamily(
            "swarmrl_run_episodes", "Episodes by outcome.", labels=["run", "outcome"]
        )
        buffered = GaugeMetricFamily(
            "swarmrl_run_samples_buffered", "Samples waiting to train.", labels=["run"]
        )
        samples = CounterMetricFamily(
            "swarmrl_run_samples", "Samples consumed by training.", labels=["run", "outcome"]
        )
        dropped_batches = CounterMetricFamily(
            "swarmrl_run_batches_dropped",
            "Batches no policy trained a sample from (no step), by reason.",
            labels=["run", "reason"],
        )
        for run in self._runs.runs():
            step.add_metric([run.name], run.step)
            for reason, count in run.batches_dropped.items():
                dropped_batches.add_metric([run.name, reason], count)
            for name in RUN_STATUSES:
                status.add_metric([run.name, name], 1.0 if run.status == name else 0.0)
            for policy, value in run.policy_versions().items():
                version.add_metric([run.name, policy], value)
            for (policy, name), value in run.last_metrics.items():
                if policy is not None and name == "reward/mean":
                    reward.add_metric([run.name, policy], value)
            row = rows.get(run.name)
            if row is None:
                continue
            episodes.add_metric([run.name, "finished"], row.episodes_finished)
            episodes.add_metric([run.name, "aborted"], row.episodes_aborted)
            buffered.add_metric([run.name], row.samples_buffered)
            samples.add_metric([run.name, "trained"], row.samples_trained)
            samples.add_metric([run.name, "dropped"], row.samples_dropped)
        clients = GaugeMetricFamily("swarmrl_clients_active", "Registered, unexpired clients.")
        clients.add_metric([], self._clients.active_count)
        yield from (step, status, version, reward, episodes, buffered, samples, clients)
        yield dropped_batches
        if self._drift is not None:
            yield from self._drift_metrics(self._drift.totals())

    def _drift_metrics(self, totals: dict[tuple[str, str], int]) -> Iterator[Metric]:
        repairs = CounterMetricFamily(
            "swarmrl_drift_repairs",
            "Episode chat calls whose prompt reuses generated token ids that re-tokenizing "
            "would have changed.",
            labels=["model"],
        )
        unrepaired = CounterMetricFamily(
            "swarmrl_drift_unrepaired",
            "Episode chat calls that continue an earlier call whose turn was rewritten, so "
            "its generated ids could not be reused.",
            labels=["model"],
        )
        for (model, status), count in sorted(totals.items()):
            if status == "repaired":
                repairs.add_metric([model], count)
            elif status == "unrepaired":
                unrepaired.add_metric([model], count)
        yield from (repairs, unrepaired)


class EngineLoadCollector(Collector):
    """Each served model's engine load, read when scraped: what `trainer.types.EngineLoad`
    gauges the engine has (an engine without them, or answering None, is left out)."""

    def __init__(self, models: ModelRegistry):
        self._models = models

    def collect(self) -> Iterator[Metric]:
        waiting = GaugeMetricFamily(
            "swarmrl_engine_requests_waiting",
            "Requests submitted to the engine and not yet in its decode batch.",
            labels=["model"],
        )
        active = GaugeMetricFamily(
            "swarmrl_engine_sequences_active",
            "Sequences in the engine's current decode batch.",
            labels=["model"],
        )
        max_batch = GaugeMetricFamily(
            "swarmrl_engine_max_batch", "Most sequences one decode batch holds.", labels=["model"]
        )
        occupancy = GaugeMetricFamily(
            "swarmrl_engine_batch_occupancy",
            "Sequences in the current decode batch / the most it holds (0 to 1).",
            labels=["model"],
        )
        for name in self._models.names():  # a copy: runs add and remove policies meanwhile
            served = self._models.find(name)
            if served is None:
                continue
            engine = served.engine
            queued = getattr(engine, "requests_waiting", None)
            live = getattr(engine, "sequences_active", None)
            most = getattr(engine, "max_batch", None)
            if queued is not None:
                waiting.add_metric([name], queued)
            if live is not None:
                active.add_metric([name], live)
            if most:
                max_batch.add_metric([name], most)
                if live is not None:
                    occupancy.add_metric([name], live / most)
        yield from (waiting, active, max_batch, occupancy)


class Telemetry:
    def __init__(
        self,
        runs: RunManager,
        store: RunStore,
        clients: ClientRegistry,
        drift: DriftTracker | None = None,
        models: ModelRegistry | None = None,
    ):
        self.registry = CollectorRegistry(auto_describe=False)
        self.requests = Counter(
            "swarmrl_http_requests",
            "HTTP requests answered, by method, route template and status.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "swarmrl_request_latency_seconds",
            "Chat and text completion requests answered in full: seconds from arrival to the "
            "whole answer (a stream's [DONE]), n choices counted once.",
            ["model"],
            buckets=SERVING_BUCKETS_S,
            registry=self.registry,
        )
        self.time_to_first_token = Histogram(
            "swarmrl_time_to_first_token_seconds",
            "Seconds from a request's arrival to the first token any of its choices got from "
            "the engine (requests that generated no token are left out).",
            ["model"],
            buckets=SERVING_BUCKETS_S,
            registry=self.registry,
        )
        self.generated_tokens = Counter(
            "swarmrl_generated_tokens",
            "Completion tokens of the requests answered in full (rate() is tokens/s).",
            ["model"],
            registry=self.registry,
        )
        self.registry.register(GatewayCollector(runs, store, clients, drift))
        if models is not None:
            self.registry.register(EngineLoadCollector(models))

    def observe(self, request: ServedRequest) -> None:
        """One answered chat or text completion request (`ServingObserver`)."""
        self.latency.labels(request.model).observe(request.latency_s)
        if request.time_to_first_token_s is not None:
            self.time_to_first_token.labels(request.model).observe(request.time_to_first_token_s)
        self.generated_tokens.labels(request.model).inc(request.completion_tokens)

    def render(self) -> bytes:
        return generate_latest(self.registry)


class CountRequests:
    """ASGI middleware: count each HTTP response by route template (not raw path, which
    would make one series per episode id)."""

    def __init__(self, app: ASGIApp, telemetry: Telemetry):
        self.app = app
        self.telemetry = telemetry

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500

        async def send_recording_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_recording_status)
        finally:
            template = route_template(scope)
            self.telemetry.requests.labels(scope["method"], template, str(status)).inc()


def route_template(scope: Scope) -> str:
    """The matched route as a template (`/swarm/episodes/{episode_id}/finish`): the path
    with each path parameter's value put back as its name; "unmatched" for unknown routes."""
    if "endpoint" not in scope:
        return "unmatched"
    path = scope["path"]
    params = scope.get("path_params") or {}
    for name, value in sorted(params.items(), key=lambda item: -len(str(item[1]))):
        path = path.replace(f"/{value}", f"/{{{name}}}", 1)
    return path
