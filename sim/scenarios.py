"""The scenarios of ``ctrlbatch simulate``, and the fault schedules they can run under.

Rules:
- A scenario (``Scenario``: its steps, a one-line description, whether it needs the zk
  controller, the controller settings it needs besides Kafka's defaults) drives a started
  SimCluster. It first creates the topics (``spec.partitions`` partitions in total, spread evenly
  over ``spec.topics`` topics, replication factor ``spec.replication_factor``, replica lists
  placed round-robin from partition p's broker p mod brokers) and waits for quiet, then does its
  steps, each followed by a wait for quiet. ``step(name)`` reports progress; a step that cannot
  finish raises TimeoutError or ScenarioError naming what it waited for.
- The steps are an operator's or a broker's (the store, the admin API, a crash), never the
  controller's own decisions. Every scenario runs on both controllers (zk_driver.py,
  kraft_driver.py); ``zk_only`` remains for a scenario only Kafka's ZooKeeper-mode controller has.
- Fault specs (``parse_faults``), comma-separated: ``close:B@N`` closes broker B's connection on its
  N-th request (unanswered); ``hangup:B@N`` answers it, then closes; ``error:B=CODE@N`` answers its N-th request with error CODE; ``delay:B=SECONDS``
  delays every reply; ``refuse:B=SECONDS`` refuses connections for that long when the scenario
  starts. A bad spec raises ValueError naming it.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Any

import attrs

from ctrlbatch.context import TopicPartition

from .broker_server import BrokerFaults
from .cluster import SimCluster
from .kraft_driver import KraftDriver

__all__ = ["SCENARIOS", "FaultPlan", "Scenario", "ScenarioError", "ScenarioSpec", "assignments", "parse_faults"]

PARTITIONS_PER_TOPIC = 50


class ScenarioError(Exception):
    """A scenario's step did not have the outcome it exists for."""


def _default_topics(partitions: int) -> int:
    return max(1, -(-partitions // PARTITIONS_PER_TOPIC))


@attrs.frozen
class ScenarioSpec:
    brokers: int
    partitions: int
    step_timeout: float = 60.0
    topics: int | None = None
    """None: one topic per PARTITIONS_PER_TOPIC partitions (rounded up)."""
    replication_factor: int | None = None
    """None: min(3, brokers)."""

    def __attrs_post_init__(self) -> None:
        for name in ("brokers", "partitions"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.topics is not None and not 1 <= self.topics <= self.partitions:
            raise ValueError(f"topics must be between 1 and partitions ({self.partitions}), got {self.topics}")
        if self.replication_factor is not None and not 1 <= self.replication_factor <= self.brokers:
            raise ValueError(f"replication factor must be between 1 and brokers ({self.brokers}), got "
                             f"{self.replication_factor}")

    @property
    def topic_count(self) -> int:
        return self.topics if self.topics is not None else _default_topics(self.partitions)

    @property
    def rf(self) -> int:
        return self.replication_factor if self.replication_factor is not None else min(3, self.brokers)


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
    """Topic -> replica lists (see the module rules); O(partitions)."""
    n, topics, rf, brokers = spec.partitions, spec.topic_count, spec.rf, spec.brokers
    base, extra = divmod(n, topics)
    width = max(4, len(str(topics - 1)))
    out: dict[str, list[list[int]]] = {}
    p = 0
    for t in range(topics):
        parts = out[f"topic-{t:0{width}d}"] = []
        for _ in range(base + (t < extra)):
            parts.append([(p + k) % brokers for k in range(rf)])
            p += 1
    return out


Step = Callable[[str], None]


async def _quiet(cluster: SimCluster, spec: ScenarioSpec, what: str) -> None:
    if not await cluster.quiesce(spec.step_timeout):
        raise TimeoutError(f"the cluster did not quiet down within {spec.step_timeout} s after {what}")


async def _setup(cluster: SimCluster, spec: ScenarioSpec, step: Step) -> None:
    cluster.driver.create_topics(assignments(spec))
    await cluster.wait_for(lambda: len(cluster.driver.ctx.partitions_leadership_info) >= spec.partitions,
                           spec.step_timeout, f"the controller to create {spec.partitions} partitions")
    await _quiet(cluster, spec, "creating the topics")
    step("topics created")


async def _answer(call: Callable[[Callable[[Any], None]], None], timeout: float, what: str) -> Any:
    """Call an admin API of the controller and wait for its callback."""
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    call(lambda result: None if future.done() else future.set_result(result))
    try:
        return await asyncio.wait_for(future, timeout)
    except TimeoutError:
        raise TimeoutError(f"no answer to {what} within {timeout} s") from None


async def _catch_up(cluster: SimCluster, spec: ScenarioSpec, what: str) -> None:
    """Leaders add their caught-up followers to the ISR (ZkDriver.catch_up, KraftDriver.catch_up:
    AlterPartition), until none is left."""
    for _ in range(10):
        if cluster.driver.catch_up(cluster.brokers) == 0:
            return
        await _quiet(cluster, spec, what)
    raise ScenarioError(f"followers still joining the ISR after 10 rounds ({what})")


def _first_topic(cluster: SimCluster) -> str:
    return min(cluster.driver.ctx.all_topics)


def _leader(cluster: SimCluster, tp: TopicPartition) -> int:
    info = cluster.driver.ctx.partition_leadership_info(tp)
    return -1 if info is None else info.leader_and_isr.leader


async def _bounce(cluster: SimCluster, spec: ScenarioSpec, step: Step, broker: int) -> None:
    """Crash a broker, wait until the controller fenced it, restart it and wait until it is back."""
    await cluster.crash(broker)
    await cluster.wait_for(lambda: broker not in cluster.live_broker_ids(), spec.step_timeout, f"broker {broker} to be fenced")
    await _quiet(cluster, spec, f"broker {broker}'s crash")
    step(f"broker {broker} crashed and fenced")
    await cluster.restart(broker)
    await cluster.wait_for(lambda: broker in cluster.live_broker_ids(), spec.step_timeout, f"broker {broker} to come back")
    await _quiet(cluster, spec, f"broker {broker}'s restart")
    await _catch_up(cluster, spec, f"broker {broker}'s restart")
    step(f"broker {broker} back")


def _preferred_on(cluster: SimCluster, broker: int) -> list[TopicPartition]:
    ctx = cluster.driver.ctx
    return sorted(tp for tp in ctx.partitions_leadership_info if tuple(ctx.partition_replica_assignment(tp)[:1]) == (broker,))


async def failover(cluster: SimCluster, spec: ScenarioSpec, step: Step) -> None:
    await _setup(cluster, spec, step)
    epoch = cluster.driver.epoch
    cluster.driver.failover()
    await cluster.wait_for(lambda: cluster.driver.epoch > epoch, spec.step_timeout, "the new controller's election")
    await _quiet(cluster, spec, "the failover")
    step(f"failover (controller epoch {epoch} -> {cluster.driver.epoch})")


async def controlled_shutdown(cluster: SimCluster, spec: ScenarioSpec, step: Step) -> None:
    await _setup(cluster, spec, step)
    await cluster.controlled_shutdown(0, spec.step_timeout)
    await cluster.wait_for(lambda: 0 not in cluster.live_broker_ids(), spec.step_timeout, "broker 0 to leave")
    await _quiet(cluster, spec, "the controlled shutdown")
    step("broker 0 shut down")


async def broker_crash(cluster: SimCluster, spec: ScenarioSpec, step: Step) -> None:
    await _setup(cluster, spec, step)
    await _bounce(cluster, spec, step, 0)


async def topic_deletion(cluster: SimCluster, spec: ScenarioSpec, step: Step) -> None:
    await _setup(cluster, spec, step)
    first = _first_topic(cluster)
    cluster.driver.delete_topics([first])
    await cluster.wait_for(lambda: first not in cluster.driver.ctx.all_topics, spec.step_timeout, f"{first}'s deletion")
    await _quiet(cluster, spec, "the deletion")
    step(f"{first} deleted")


async def reassignment(cluster: SimCluster, spec: ScenarioSpec, step: Step) -> None:
    await _setup(cluster, spec, step)
    ctx = cluster.driver.ctx
    first = _first_topic(cluster)
    targets = {tp: [(r + 1) % spec.brokers for r in ctx.partition_replica_assignment(tp)]
               for tp in sorted(ctx.partitions_for_topic(first))}
    result = await _answer(lambda cb: cluster.driver.reassign(targets, cb), spec.step_timeout, "the reassignment")
    if not isinstance(result, dict) or any(getattr(e, "is_failure", False) for e in result.values()):
        raise ScenarioError(f"the reassignment was refused: {result!r:.300}")
    await _quiet(cluster, spec, "the reassignment's first phase")
    await _catch_up(cluster, spec, "the reassignment")
    await _quiet(cluster, spec, "the reassignment")
    moved = [tp for tp, target in targets.items() if list(ctx.partition_replica_assignment(tp)) != target]
    if moved or ctx.partitions_being_reassigned:
        raise ScenarioError(f"{len(moved)} partitions of {first} did not reach their target replicas")
    step(f"{first} reassigned")


async def preferred_election(cluster: SimCluster, spec: ScenarioSpec, step: Step) -> None:
    """Broker 0 bounces (its leaderships move away) and comes back; ElectLeaders(PREFERRED) for
    the partitions it is the preferred replica of moves them back."""
    driver = cluster.driver
    await _setup(cluster, spec, step)
    await _bounce(cluster, spec, step, 0)
    wanted = _preferred_on(cluster, 0)
    result = await _answer(lambda cb: driver.elect_leaders(wanted, False, cb), spec.step_timeout, "the preferred election")
    await _quiet(cluster, spec, "the preferred election")
    astray = [tp for tp in wanted if _leader(cluster, tp) != 0]
    if astray:
        raise ScenarioError(f"{len(astray)} of {len(wanted)} partitions are not led by their preferred replica 0 after "
                            f"the election (first: {astray[0]}: {result.get(astray[0])!r})")
    step(f"{len(wanted)} preferred leaders elected")


async def auto_rebalance(cluster: SimCluster, spec: ScenarioSpec, step: Step) -> None:
    """Broker 0 bounces; the controller's automatic imbalance check (every
    leader.imbalance.check.interval.seconds, 1 s here) moves its preferred partitions back (kraft:
    QuorumController's periodic maybeBalancePartitionLeaders, started here with that interval)."""
    if isinstance(cluster.driver, KraftDriver):
        cluster.driver.imbalance_interval = 1
        cluster.driver.start()
    await _setup(cluster, spec, step)
    await _bounce(cluster, spec, step, 0)
    wanted = _preferred_on(cluster, 0)
    await cluster.wait_for(lambda: all(_leader(cluster, tp) == 0 for tp in wanted), spec.step_timeout,
                           "the automatic rebalance to lead broker 0's preferred partitions back to it")
    await _quiet(cluster, spec, "the automatic rebalance")
    step(f"auto rebalance: {len(wanted)} partitions back on broker 0")


async def partition_expansion(cluster: SimCluster, spec: ScenarioSpec, step: Step) -> None:
    """The first topic's partition count doubles (its znode gains the new partitions)."""
    driver = cluster.driver
    await _setup(cluster, spec, step)
    first = _first_topic(cluster)
    ctx = cluster.driver.ctx
    n = len(ctx.partitions_for_topic(first))
    driver.add_partitions(first, {p: [(p + k) % spec.brokers for k in range(spec.rf)] for p in range(n, 2 * n)})
    await cluster.wait_for(lambda: all(_leader(cluster, TopicPartition(first, p)) >= 0 for p in range(2 * n)),
                           spec.step_timeout, f"{first}'s new partitions to get leaders")
    await _quiet(cluster, spec, "the partition expansion")
    step(f"{first}: {n} -> {2 * n} partitions")


UNCLEAN_TOPIC = "unclean-topic"


async def unclean_election(cluster: SimCluster, spec: ScenarioSpec, step: Step) -> None:
    """A partition on brokers [1, 0]: 0 crashes (the ISR shrinks to [1]), then 1 crashes (offline,
    ISR [1]); 0 comes back, out of the ISR, so no clean leader exists; enabling
    unclean.leader.election.enable on the topic elects 0 (kraft: at the next unclean check, every
    1 s here)."""
    driver = cluster.driver
    if isinstance(driver, KraftDriver):
        driver.unclean_interval = 1.0  # unclean.leader.election.check.interval.ms, 5 min by default
    if spec.brokers < 2:
        raise ScenarioError("unclean-election needs at least 2 brokers")
    await _setup(cluster, spec, step)
    tp = TopicPartition(UNCLEAN_TOPIC, 0)
    driver.create_topics({UNCLEAN_TOPIC: [[1, 0]]})
    await cluster.wait_for(lambda: _leader(cluster, tp) == 1, spec.step_timeout, f"{tp}'s leader 1")
    await _quiet(cluster, spec, f"creating {UNCLEAN_TOPIC}")
    for broker in (0, 1):
        await cluster.crash(broker)
        await cluster.wait_for(lambda b=broker: b not in cluster.live_broker_ids(), spec.step_timeout,  # type: ignore[misc]
                               f"broker {broker} to be fenced")
        await _quiet(cluster, spec, f"broker {broker}'s crash")
    step(f"brokers 0 and 1 crashed: {tp} offline")
    await cluster.restart(0)
    await cluster.wait_for(lambda: 0 in cluster.live_broker_ids(), spec.step_timeout, "broker 0 to come back")
    await _quiet(cluster, spec, "broker 0's restart")
    if _leader(cluster, tp) != -1:
        raise ScenarioError(f"{tp} got leader {_leader(cluster, tp)} without unclean election")
    driver.enable_unclean_election(UNCLEAN_TOPIC)
    await cluster.wait_for(lambda: _leader(cluster, tp) == 0, spec.step_timeout, f"the unclean election of {tp}")
    await _quiet(cluster, spec, "the unclean election")
    step(f"{tp}: broker 0 elected uncleanly")


@attrs.frozen
class Scenario:
    run: Callable[[SimCluster, ScenarioSpec, Step], Awaitable[None]]
    description: str
    zk_only: bool = False
    zk_options: dict[str, Any] = attrs.field(factory=dict)
    """Controller settings this scenario needs besides Kafka's defaults (ZkOptions fields)."""


SCENARIOS: dict[str, Scenario] = {
    "failover": Scenario(failover, "the controller fails over (zk: a new KafkaController elected from the store, "
                                   "epoch + 1; kraft: a new term resends everything)"),
    "controlled-shutdown": Scenario(controlled_shutdown, "broker 0 shuts down cleanly (zk: ControlledShutdown, retried "
                                                         "while it leads partitions; kraft: through its heartbeats)"),
    "broker-crash": Scenario(broker_crash, "broker 0 dies, is fenced at session expiry, and restarts as a new incarnation"),
    "topic-deletion": Scenario(topic_deletion, "the first topic is deleted"),
    "reassignment": Scenario(reassignment, "every partition of the first topic moves one broker on (zk: KIP-455, "
                                           "complete once the new replicas joined the ISR)"),
    "preferred-election": Scenario(preferred_election, "broker 0 bounces, then ElectLeaders(PREFERRED) moves its "
                                                       "preferred partitions back"),
    "auto-rebalance": Scenario(auto_rebalance, "broker 0 bounces, then the automatic imbalance check (every 1 s here) "
                                               "moves its preferred partitions back",
                               zk_options={"leader_imbalance_check_interval_seconds": 1}),
    "partition-expansion": Scenario(partition_expansion, "the first topic's partition count doubles"),
    "unclean-election": Scenario(unclean_election, "a partition's whole ISR dies; its other replica returns and is "
                                                   "elected once the topic enables unclean election (kraft: at the "
                                                   "next unclean check, every 1 s here)"),
}
