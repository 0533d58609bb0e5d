"""The scenarios of ``ctrlbatch simulate``, and the fault schedules they can run under.

Rules:
- A scenario is an async function of (cluster, spec, step) that drives a started SimCluster; it
  first creates the topics (``spec.partitions`` partitions, 50 per topic, replication factor
  min(3, brokers), replicas placed round-robin) and waits for quiet, then does its step(s), each
  followed by a wait for quiet. ``step(name)`` reports progress.
- Scenarios: failover (a new controller epoch resends everything), controlled-shutdown (broker 0
  asks through its heartbeats), broker-crash (broker 0 dies, is fenced at session expiry, comes
  back as a new incarnation), topic-deletion (the first topic), reassignment (every partition of
  the first topic moves one broker on).
- Fault specs (``parse_faults``), comma-separated: ``close:B@N`` closes broker B's connection on its
  N-th request (unanswered); ``hangup:B@N`` answers it, then closes; ``error:B=CODE@N`` answers its N-th request with error CODE; ``delay:B=SECONDS``
  delays every reply; ``refuse:B=SECONDS`` refuses connections for that long when the scenario
  starts. A bad spec raises ValueError naming it.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

import attrs

from ctrlbatch.context import TopicPartition

from .broker_server import BrokerFaults
from .cluster import SimCluster

__all__ = ["SCENARIOS", "FaultPlan", "ScenarioSpec", "parse_faults"]

PARTITIONS_PER_TOPIC = 50


@attrs.frozen
class ScenarioSpec:
    brokers: int
    partitions: int
    step_timeout: float = 60.0


@attrs.define
class FaultPlan:
    per_broker: dict[int, BrokerFaults] = attrs.field(factory=dict)
    refuse: dict[int, float] = attrs.field(factory=dict)

    def faults(self, broker: int) -> BrokerFaults:
        return self.per_broker.setdefault(broker, BrokerFaults())


_SPECS: list[tuple[re.Pattern[str], Callable[[FaultPlan, re.Match[str]], None]]] = [
    (re.compile(r"close:(\d+)@(\d+)"), lambda p, m: p.faults(int(m[1])).close_at.add(int(m[2]))),
    (re.compile(r"hangup:(\d+)@(\d+)"), lambda p, m: p.faults(int(m[1])).hang_up_at.add(int(m[2]))),
    (re.compile(r"error:(\d+)=(-?\d+)@(\d+)"), lambda p, m: p.faults(int(m[1])).error_at.__setitem__(int(m[3]), int(m[2]))),
    (re.compile(r"delay:(\d+)=(\d+(?:\.\d+)?)"), lambda p, m: setattr(p.faults(int(m[1])), "delay", float(m[2]))),
    (re.compile(r"refuse:(\d+)=(\d+(?:\.\d+)?)"), lambda p, m: p.refuse.__setitem__(int(m[1]), float(m[2]))),
]


def parse_faults(text: str, brokers: int) -> FaultPlan:
    """A FaultPlan from comma-separated specs (see the module rules)."""
    plan = FaultPlan()
    for spec in filter(None, (s.strip() for s in text.split(","))):
        for pattern, apply in _SPECS:
            m = pattern.fullmatch(spec)
            if m is not None:
                if int(m[1]) >= brokers:
                    raise ValueError(f"fault {spec!r}: broker {m[1]} does not exist (brokers are 0..{brokers - 1})")
                apply(plan, m)
                break
        else:
            raise ValueError(f"fault {spec!r} is not close:B@N, hangup:B@N, error:B=CODE@N, delay:B=SECONDS or "
                             "refuse:B=SECONDS")
    return plan


def assignments(spec: ScenarioSpec) -> dict[str, list[list[int]]]:
    rf = min(3, spec.brokers)
    out: dict[str, list[list[int]]] = {}
    for p in range(spec.partitions):
        topic = f"topic-{p // PARTITIONS_PER_TOPIC:04d}"
        out.setdefault(topic, []).append([(p + k) % spec.brokers for k in range(rf)])
    return out


Step = Callable[[str], None]


async def _quiet(cluster: SimCluster, spec: ScenarioSpec, what: str) -> None:
    if not await cluster.quiesce(spec.step_timeout):
        raise TimeoutError(f"the cluster did not quiet down within {spec.step_timeout} s after {what}")


async def _setup(cluster: SimCluster, spec: ScenarioSpec, step: Step) -> None:
    cluster.controller.create_topics(assignments(spec))
    await _quiet(cluster, spec, "creating the topics")
    step("topics created")


async def failover(cluster: SimCluster, spec: ScenarioSpec, step: Step) -> None:
    await _setup(cluster, spec, step)
    cluster.controller.failover()
    await _quiet(cluster, spec, "the failover")
    step("failover")


async def controlled_shutdown(cluster: SimCluster, spec: ScenarioSpec, step: Step) -> None:
    await _setup(cluster, spec, step)
    await cluster.controlled_shutdown(0, spec.step_timeout)
    await _quiet(cluster, spec, "the controlled shutdown")
    step("broker 0 shut down")


async def broker_crash(cluster: SimCluster, spec: ScenarioSpec, step: Step) -> None:
    await _setup(cluster, spec, step)
    await cluster.crash(0)
    await cluster.wait_for(lambda: 0 not in cluster.live_broker_ids(), spec.step_timeout, "broker 0 to be fenced")
    await _quiet(cluster, spec, "the crash")
    step("broker 0 crashed and fenced")
    await cluster.restart(0)
    await cluster.wait_for(lambda: 0 in cluster.live_broker_ids(), spec.step_timeout, "broker 0 to come back")
    await _quiet(cluster, spec, "the restart")
    step("broker 0 back")


async def topic_deletion(cluster: SimCluster, spec: ScenarioSpec, step: Step) -> None:
    await _setup(cluster, spec, step)
    first = min(cluster.controller.ctx.all_topics)
    cluster.controller.delete_topics([first])
    await _quiet(cluster, spec, "the deletion")
    step(f"{first} deleted")


async def reassignment(cluster: SimCluster, spec: ScenarioSpec, step: Step) -> None:
    await _setup(cluster, spec, step)
    first = min(cluster.controller.ctx.all_topics)
    for tp in sorted(cluster.controller.ctx.partitions_for_topic(first)):
        old = cluster.controller.ctx.partition_replica_assignment(tp)
        cluster.controller.reassign(TopicPartition(tp.topic, tp.partition), [(r + 1) % spec.brokers for r in old])
    await _quiet(cluster, spec, "the reassignment")
    step(f"{first} reassigned")


SCENARIOS: dict[str, Callable[[SimCluster, ScenarioSpec, Step], Awaitable[None]]] = {
    "failover": failover,
    "controlled-shutdown": controlled_shutdown,
    "broker-crash": broker_crash,
    "topic-deletion": topic_deletion,
    "reassignment": reassignment,
}
