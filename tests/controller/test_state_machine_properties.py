"""Property: random histories of broker failures, concurrent ISR writers and state-machine calls
keep the Zk state machines consistent with the store and with Kafka's election rules."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.context import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    PartitionAndReplica,
    PartitionState,
    ReplicaState,
    TopicPartition,
)
from ctrlbatch.controller import (
    ControlledShutdownPartitionLeaderElectionStrategy,
    OfflinePartitionLeaderElectionStrategy,
    PreferredReplicaPartitionLeaderElectionStrategy,
)

P, R = PartitionState, ReplicaState
BROKERS = (1, 2, 3, 4)
PARTITIONS = [TopicPartition("t", p) for p in range(4)]
STRATEGIES = [OfflinePartitionLeaderElectionStrategy(False), PreferredReplicaPartitionLeaderElectionStrategy(),
              ControlledShutdownPartitionLeaderElectionStrategy()]

ops = st.lists(
    st.one_of(
        st.tuples(st.just("kill"), st.sampled_from(BROKERS)),
        st.tuples(st.just("revive"), st.sampled_from(BROKERS)),
        st.tuples(st.just("shutdown"), st.sampled_from(BROKERS)),
        st.tuples(st.just("psm"), st.sampled_from([P.OnlinePartition, P.OfflinePartition]), st.integers(0, 2)),
        st.tuples(st.just("rsm_offline"), st.sampled_from(BROKERS)),
        st.tuples(st.just("rsm_online"), st.sampled_from(BROKERS)),
        st.tuples(st.just("isr_writer"), st.sampled_from(range(4)), st.sampled_from(BROKERS)),
        st.tuples(st.just("bad_version"),),
    ),
    max_size=25,
)


# ck is a stateless namespace of helpers (each example builds its own Harness)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops)
def test_random_histories_stay_consistent(ck: Any, history: list[tuple[Any, ...]]) -> None:
    h = ck.Harness()
    h.live(*BROKERS)
    replicas_of = {tp: [BROKERS[(tp.partition + i) % 4] for i in range(3)] for tp in PARTITIONS}
    for tp in PARTITIONS:
        h.assign(tp, replicas_of[tp])
    all_replicas = [PartitionAndReplica(tp, r) for tp in PARTITIONS for r in replicas_of[tp]]
    h.psm.handle_state_changes(PARTITIONS, P.NewPartition)
    h.rsm.handle_state_changes(all_replicas, R.NewReplica)
    h.psm.handle_state_changes(PARTITIONS, P.OnlinePartition, STRATEGIES[0])
    h.rsm.handle_state_changes(all_replicas, R.OnlineReplica)
    brokers = {b: ck.broker(b) for b in BROKERS}
    for op in history:
        kind = op[0]
        if kind == "kill":
            h.ctx.remove_live_brokers({op[1]})
            h.ctx.shutting_down_broker_ids.discard(op[1])
        elif kind == "revive" and op[1] not in h.ctx.live_or_shutting_down_broker_ids:
            h.ctx.add_live_brokers({brokers[op[1]]: 0})
        elif kind == "shutdown" and op[1] in h.ctx.live_or_shutting_down_broker_ids:
            h.ctx.shutting_down_broker_ids.add(op[1])
        elif kind == "psm":
            strategy = STRATEGIES[op[2]]
            results = h.psm.handle_state_changes(PARTITIONS, op[1], strategy)
            for tp, result in results.items():
                if isinstance(result, LeaderAndIsr):
                    stored = h.store.partition_state(tp)
                    # the returned value is exactly what the store holds, partition epoch = znode version
                    assert stored == LeaderIsrAndControllerEpoch(result, 50)
                    assert h.ctx.partition_leadership_info(tp) == stored
                    assert h.ctx.partition_state(tp) is P.OnlinePartition
                    # the leader is an ISR member that can serve under the strategy
                    assert result.leader in result.isr
                    assert h.ctx.is_replica_online(
                        result.leader, tp, isinstance(strategy, ControlledShutdownPartitionLeaderElectionStrategy))
                    assert result.leader not in h.ctx.shutting_down_broker_ids or not isinstance(
                        strategy, ControlledShutdownPartitionLeaderElectionStrategy)
        elif kind in ("rsm_offline", "rsm_online"):
            target = R.OfflineReplica if kind == "rsm_offline" else R.OnlineReplica
            h.rsm.handle_state_changes([r for r in all_replicas if r.replica == op[1]], target)
        elif kind == "isr_writer":  # the leader rewrites the ISR: our next conditional write must retry
            tp = PARTITIONS[op[1]]
            current = h.store.partition_state(tp)
            assert current is not None
            lai = current.leader_and_isr
            isr = tuple(r for r in replicas_of[tp] if r == op[2] or r in lai.isr)
            h.store.set_partition_state(tp, LeaderIsrAndControllerEpoch(
                LeaderAndIsr(lai.leader, isr, lai.leader_epoch, 0, lai.leader_recovery_state), current.controller_epoch))
        elif kind == "bad_version":
            from ctrlbatch.controller import Code

            h.store.inject("update_leader_and_isr", code=Code.BADVERSION)
        # invariants after every step
        for batch in (h.psm_batch, h.rsm_batch):
            assert not batch.leader_and_isr_request_map and not batch.stop_replica_request_map
            assert not batch.update_metadata_request_broker_set  # every call sent its batch
        states = h.ctx.partition_states
        assert h.ctx.offline_partition_count == sum(1 for s in states.values() if s is P.OfflinePartition)
        for tp in PARTITIONS:
            stored = h.store.partition_state(tp)
            cached = h.ctx.partition_leadership_info(tp)
            assert stored is not None and cached is not None
            # the cache never runs ahead of the store
            assert cached.leader_and_isr.partition_epoch <= stored.leader_and_isr.partition_epoch
            assert len(stored.leader_and_isr.isr) >= 1  # the last ISR member is never removed
