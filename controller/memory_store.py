"""InMemoryKafkaZkClient: the KafkaZkClient protocol over an in-memory ZooKeeper tree.

Rules:
- A ``ZooKeeperTree`` holds znodes (data, version, cversion, czxid/mzxid from one zxid counter,
  the owning session for ephemerals) and sessions. Clients made with ``new_client()`` share it,
  each with its own session, handlers and armed watches, as brokers share one ZooKeeper.
- ZooKeeper's rules: a create needs its parent (NONODE) and a free name (NODEEXISTS), ephemerals
  have no children (NOCHILDRENFOREPHEMERALS); a conditional set/delete at another version is
  BADVERSION (-1 matches any); a delete with children is NOTEMPTY. Expiring a session deletes its
  ephemeral nodes, firing watches; a client whose own session expires tells its state-change
  handlers before and after it opens a new session (ZooKeeperClient's re-initialisation).
- Watches are one-shot and armed by reads while a handler is registered for the path, as in
  ZooKeeperClient (kafka/zookeeper/ZooKeeperClient.scala): get_data/exists arm node watches
  (creation, deletion, data change), get_children with a watch arms child watches. A fired watch
  calls the handler synchronously (Kafka's handlers only enqueue events).
- Fencing (KZC:1969-1978, 2324-2350): writes with an expected controller epoch zk version >= 0
  first check /controller_epoch's version; a mismatch raises ControllerMovedException (nothing is
  written), a missing node KeeperException(NONODE). KafkaZkClient's methods follow KZC's code
  paths (each cited); znode JSON is znodes.py's.
- Failure injection for tests: ``inject(method, raise_=..., code=..., partitions=/topics=,
  times=n, before=fn)``: the next ``times`` calls of ``method`` (None: every call) raise, or
  answer ``code`` for the matching items (all items when no filter) without performing them,
  after running ``before`` (e.g. a concurrent writer's change). Raising follows the real
  client: ``update_leader_and_isr`` and ``get_log_configs`` turn an inner failure into per-item
  failures (KZC:368-373, 405-410), other methods propagate it; an injected CONNECTIONLOSS is
  retried transparently (KZC:2111-2139) and counted in ``connection_losses``.
- ``calls`` records the last ``max_recorded_calls`` KafkaZkClient calls (1000 by default, None:
  all) as (method name, arguments), so tests can assert what was read and written, while a long
  simulation keeps bounded memory; ``call_count(name)`` counts every call.
- Admin helpers (not in KafkaZkClient) do what brokers and admin tools write: register_broker,
  create_topic, add_partitions, delete_topic, reassign_partitions, elect_preferred_replicas,
  notify_isr_change, notify_log_dir_event, set_topic_config, set_partition_state,
  elect_other_controller.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from ctrlbatch.context import (
    Broker,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicPartition,
)

from . import znodes as zn
from .errors import (
    Code,
    ControllerMovedException,
    IllegalStateError,
    KeeperException,
    ZooKeeperClientException,
)
from .store import (
    MATCH_ANY_VERSION,
    CreateResponse,
    GetDataResponse,
    KafkaZkClient,
    LogConfig,
    SetDataResponse,
    Stat,
    StateChangeHandler,
    TopicIdReplicaAssignment,
    UpdateLeaderAndIsrResult,
    ZNodeChangeHandler,
    ZNodeChildChangeHandler,
)

__all__ = ["Injection", "InMemoryKafkaZkClient", "ZooKeeperTree"]

_log = logging.getLogger("kafka.zk.KafkaZkClient")

_RANDOM_ID: Any = object()


class _ZNode:
    __slots__ = ("data", "czxid", "mzxid", "version", "cversion", "owner", "children")

    def __init__(self, data: bytes | None, zxid: int, owner: int) -> None:
        self.data = data
        self.czxid = zxid
        self.mzxid = zxid
        self.version = 0
        self.cversion = 0
        self.owner = owner
        self.children: dict[str, None] = {}

    def stat(self) -> Stat:
        return Stat(self.czxid, self.mzxid, self.version, self.cversion, self.owner, len(self.children))


def _parent(path: str) -> str:
    parent = path.rsplit("/", 1)[0]
    return parent or "/"


def _name(path: str) -> str:
    return path.rsplit("/", 1)[1]


class ZooKeeperTree:
    """The shared ZooKeeper state: znodes, the zxid counter, sessions and connected clients."""

    def __init__(self) -> None:
        self.nodes: dict[str, _ZNode] = {"/": _ZNode(None, 0, 0)}
        self.zxid = 0
        self._next_session = 1
        self.sessions: set[int] = set()
        self.clients: list[InMemoryKafkaZkClient] = []
        self.sequence: dict[str, int] = {}

    def new_session(self) -> int:
        sid = self._next_session
        self._next_session += 1
        self.sessions.add(sid)
        return sid

    def _tick(self) -> int:
        self.zxid += 1
        return self.zxid

    # ------------------------------------------------------------ primitive ops

    def exists(self, path: str) -> bool:
        return path in self.nodes

    def create(self, path: str, data: bytes | None, owner: int = 0, sequential: bool = False) -> tuple[Code, str | None]:
        parent_path, _, name = path.rpartition("/")
        parent_path = parent_path or "/"
        parent = self.nodes.get(parent_path)
        if parent is None:
            return Code.NONODE, None
        if parent.owner:
            return Code.NOCHILDRENFOREPHEMERALS, None
        if sequential:
            seq = self.sequence.get(parent_path, 0)
            self.sequence[parent_path] = seq + 1
            path = f"{path}{seq:010d}"
            name = _name(path)
        if path in self.nodes:
            return Code.NODEEXISTS, None
        if owner and owner not in self.sessions:
            return Code.SESSIONEXPIRED, None
        zxid = self._tick()
        self.nodes[path] = _ZNode(data, zxid, owner)
        parent.children[name] = None
        parent.cversion += 1
        self._notify("created", path)
        self._notify("child", parent_path)
        return Code.OK, path

    def set_data(self, path: str, data: bytes | None, version: int) -> tuple[Code, Stat | None]:
        node = self.nodes.get(path)
        if node is None:
            return Code.NONODE, None
        if version != MATCH_ANY_VERSION and version != node.version:
            return Code.BADVERSION, None
        node.data = data
        node.version += 1
        node.mzxid = self._tick()
        self._notify("data", path)
        return Code.OK, node.stat()

    def delete(self, path: str, version: int = MATCH_ANY_VERSION) -> Code:
        node = self.nodes.get(path)
        if node is None:
            return Code.NONODE
        if version != MATCH_ANY_VERSION and version != node.version:
            return Code.BADVERSION
        if node.children:
            return Code.NOTEMPTY
        del self.nodes[path]
        parent_path = _parent(path)
        parent = self.nodes[parent_path]
        parent.children.pop(_name(path), None)
        parent.cversion += 1
        self._tick()
        self._notify("deleted", path)
        self._notify("child", parent_path)
        return Code.OK

    def create_recursive(self, path: str, data: bytes | None) -> None:
        """Create ``path`` and any missing parents (KZC.createRecursive); NODEEXISTS raises."""
        parts = path.strip("/").split("/")
        for i in range(1, len(parts)):
            parent = "/" + "/".join(parts[:i])
            if parent not in self.nodes:
                self.create(parent, None)
        code, _ = self.create(path, data)
        if code is not Code.OK:
            raise KeeperException.create(code, path)

    def expire_session(self, session_id: int) -> None:
        """Expire a session: its ephemeral nodes go (watches fire); its client re-initialises."""
        if session_id not in self.sessions:
            return
        self.sessions.discard(session_id)
        for path in [p for p, n in self.nodes.items() if n.owner == session_id]:
            self.delete(path)
        for client in list(self.clients):
            if client.session_id == session_id and not client.closed:
                client._reinitialize()

    def _notify(self, kind: str, path: str) -> None:
        """Tell the clients with an armed watch (none, on bulk writes: no call at all)."""
        armed = [c for c in self.clients if c._data_watches or c._exist_watches or c._child_watches]
        for client in armed:
            client._fire(kind, path)


@attrs.define
class Injection:
    """One injected failure: see ``InMemoryKafkaZkClient.inject``."""

    method: str
    raise_: BaseException | None = None
    code: Code | None = None
    keys: frozenset[object] | None = None
    times: int | None = 1
    before: Callable[[], None] | None = None

    def matches(self, key: object) -> bool:
        return self.keys is None or key in self.keys


class InMemoryKafkaZkClient:
    """A KafkaZkClient over a ZooKeeperTree (a new one by default), with admin helpers."""

    def __init__(
        self,
        tree: ZooKeeperTree | None = None,
        *,
        time_ms: Callable[[], int] | None = None,
        max_recorded_calls: int | None = 1000,
    ) -> None:
        self.tree = ZooKeeperTree() if tree is None else tree
        self.session_id = self.tree.new_session()
        self.closed = False
        self.time_ms = time_ms or (lambda: 0)
        self._node_handlers: dict[str, ZNodeChangeHandler] = {}
        self._child_handlers: dict[str, ZNodeChildChangeHandler] = {}
        self._state_handlers: dict[str, StateChangeHandler] = {}
        self._data_watches: set[str] = set()
        self._exist_watches: set[str] = set()
        self._child_watches: set[str] = set()
        self._injections: list[Injection] = []
        self.calls: deque[tuple[str, tuple[Any, ...]]] = deque(maxlen=max_recorded_calls)
        self.call_counts: Counter[str] = Counter()
        self.connection_losses = 0
        self._broker_sessions: dict[int, int] = {}
        self.tree.clients.append(self)
        for path in (zn.BROKER_IDS_PATH, zn.TOPICS_PATH, "/brokers/seqid", "/config/changes", zn.TOPIC_CONFIGS_PATH,
                     zn.DELETE_TOPICS_PATH, zn.ISR_CHANGE_NOTIFICATION_PATH, zn.LOG_DIR_EVENT_NOTIFICATION_PATH):
            if not self.tree.exists(path):
                self.tree.create_recursive(path, None)

    def new_client(self) -> InMemoryKafkaZkClient:
        """Another client (another broker's) on the same tree, with its own session."""
        return InMemoryKafkaZkClient(self.tree, time_ms=self.time_ms, max_recorded_calls=self.calls.maxlen)

    # =============================================================== injection

    def inject(
        self,
        method: str,
        *,
        raise_: BaseException | None = None,
        code: Code | int | None = None,
        partitions: Iterable[TopicPartition] | None = None,
        topics: Iterable[str] | None = None,
        times: int | None = 1,
        before: Callable[[], None] | None = None,
    ) -> Injection:
        """Make the next ``times`` calls of ``method`` (None: all) fail: raise ``raise_``, or
        answer ``code`` for the items in ``partitions``/``topics`` (all items if neither)."""
        if not callable(getattr(self, method, None)) or method.startswith("_"):
            raise ValueError(f"inject: method must name a KafkaZkClient method, not {method!r:.80}")
        if raise_ is None and code is None and before is None:
            raise ValueError("inject: give raise_, code or before")
        if times is not None and (type(times) is not int or times < 1):
            raise ValueError(f"inject: times must be a positive int or None, not {times!r:.80}")
        keys: set[object] | None = None
        if partitions is not None or topics is not None:
            keys = set(partitions or ()) | set(topics or ())
        injection = Injection(method, raise_, None if code is None else Code(code),
                              None if keys is None else frozenset(keys), times, before)
        self._injections.append(injection)
        return injection

    def clear_injections(self) -> None:
        self._injections.clear()

    def _take(self, method: str) -> Injection | None:
        """The injection for this call of ``method``, consumed; runs its ``before``."""
        for injection in self._injections:
            if injection.method == method:
                if injection.times is not None:
                    injection.times -= 1
                    if injection.times == 0:
                        self._injections.remove(injection)
                if injection.before is not None:
                    injection.before()
                return injection
        return None

    def _call(self, method: str, *args: Any) -> Injection | None:
        """Record the call, check the client is usable, apply an injected raise."""
        self.calls.append((method, args))
        self.call_counts[method] += 1
        if self.closed:
            raise ZooKeeperClientException("Client is closed")
        injection = self._take(method)
        if injection is not None and injection.raise_ is not None:
            raise injection.raise_
        return injection

    def _code_for(self, injection: Injection | None, key: object) -> Code | None:
        if injection is None or injection.code is None or not injection.matches(key):
            return None
        if injection.code is Code.CONNECTIONLOSS:  # re-sent after reconnecting
            self.connection_losses += 1
            return None
        return injection.code

    def call_count(self, method: str) -> int:
        """How many times ``method`` was called (all calls, not only the recorded window)."""
        return self.call_counts[method]

    # ================================================================ fencing

    def _check_epoch(self, expected: int) -> None:
        """KZC:2324-2350: the /controller_epoch CheckOp of a fenced write."""
        if expected == MATCH_ANY_VERSION:
            return
        if expected < 0:
            raise ValueError(
                f"Expected controller epoch zkVersion {expected} should be non-negative or equal to {MATCH_ANY_VERSION}"
            )
        node = self.tree.nodes.get(zn.CONTROLLER_EPOCH_PATH)
        if node is None:
            raise KeeperException.create(Code.NONODE, zn.CONTROLLER_EPOCH_PATH)
        if node.version != expected:
            raise ControllerMovedException(f"Controller epoch zkVersion check fails. Expected zkVersion = {expected}")

    # ================================================================ watches

    def _fire(self, kind: str, path: str) -> None:
        if kind == "child":
            if path in self._child_watches:
                self._child_watches.discard(path)
                handler = self._child_handlers.get(path)
                if handler is not None:
                    handler.handle_child_change()
            return
        node_handler = self._node_handlers.get(path)
        if kind == "created":
            if path in self._exist_watches:
                self._exist_watches.discard(path)
                if node_handler is not None:
                    node_handler.handle_creation()
        elif kind == "deleted":
            self._child_watches.discard(path)
            if path in self._data_watches:
                self._data_watches.discard(path)
                if node_handler is not None:
                    node_handler.handle_deletion()
        elif kind == "data" and path in self._data_watches:
            self._data_watches.discard(path)
            if node_handler is not None:
                node_handler.handle_data_change()

    def _read(self, path: str, ctx: Any = None) -> GetDataResponse:
        """A GetDataRequest: arms the data watch if a node handler is registered."""
        node = self.tree.nodes.get(path)
        if node is None:
            return GetDataResponse(Code.NONODE, path, ctx, None, None)
        if path in self._node_handlers:
            self._data_watches.add(path)
        return GetDataResponse(Code.OK, path, ctx, node.data, node.stat())

    def _exists(self, path: str) -> bool:
        """An ExistsRequest: arms a creation or data watch if a node handler is registered."""
        exists = self.tree.exists(path)
        if path in self._node_handlers:
            (self._data_watches if exists else self._exist_watches).add(path)
        return exists

    def _children(self, path: str, register_watch: bool = True) -> list[str] | None:
        node = self.tree.nodes.get(path)
        if node is None:
            return None
        if register_watch and path in self._child_handlers:
            self._child_watches.add(path)
        return list(node.children)

    def register_znode_change_handler_and_check_existence(self, handler: ZNodeChangeHandler) -> bool:
        """KZC:1621-1633."""
        self._call("register_znode_change_handler_and_check_existence", handler)
        self._node_handlers[handler.path] = handler
        return self._exists(handler.path)

    def register_znode_change_handler(self, handler: ZNodeChangeHandler) -> None:
        self._call("register_znode_change_handler", handler)
        self._node_handlers[handler.path] = handler

    def unregister_znode_change_handler(self, path: str) -> None:
        self._call("unregister_znode_change_handler", path)
        self._node_handlers.pop(path, None)

    def register_znode_child_change_handler(self, handler: ZNodeChildChangeHandler) -> None:
        self._call("register_znode_child_change_handler", handler)
        self._child_handlers[handler.path] = handler

    def unregister_znode_child_change_handler(self, path: str) -> None:
        self._call("unregister_znode_child_change_handler", path)
        self._child_handlers.pop(path, None)

    def register_state_change_handler(self, handler: StateChangeHandler) -> None:
        self._call("register_state_change_handler", handler)
        self._state_handlers[handler.name] = handler

    def unregister_state_change_handler(self, name: str) -> None:
        self._call("unregister_state_change_handler", name)
        self._state_handlers.pop(name, None)

    def _reinitialize(self) -> None:
        """ZooKeeperClient.reinitialize after expiry: handlers before, a new session, handlers after."""
        for handler in list(self._state_handlers.values()):
            handler.before_initializing_session()
        self._data_watches.clear()
        self._exist_watches.clear()
        self._child_watches.clear()
        self.session_id = self.tree.new_session()
        for handler in list(self._state_handlers.values()):
            handler.after_initializing_session()

    def close(self) -> None:
        """Close the client: its session ends (ephemerals deleted), later calls raise."""
        self.closed = True
        self.tree.clients.remove(self)
        self.tree.expire_session(self.session_id)

    # ======================================================= controller election

    def register_controller_and_increment_controller_epoch(self, controller_id: int) -> tuple[int, int]:
        """KZC:123-172: one multi creates the ephemeral /controller and bumps /controller_epoch."""
        self._call("register_controller_and_increment_controller_epoch", controller_id)
        tree = self.tree
        epoch_node = tree.nodes.get(zn.CONTROLLER_EPOCH_PATH)
        if epoch_node is None:
            tree.create(zn.CONTROLLER_EPOCH_PATH, b"0")
            epoch_node = tree.nodes[zn.CONTROLLER_EPOCH_PATH]
        cur_epoch, cur_version = int(epoch_node.data or b"0"), epoch_node.version
        new_epoch = cur_epoch + 1
        if tree.exists(zn.CONTROLLER_PATH):
            code = Code.NODEEXISTS
        elif epoch_node.version != cur_version:
            code = Code.BADVERSION
        else:
            code = Code.OK
        if code is Code.OK:
            data = zn.encode_json({"version": 1, "brokerid": controller_id, "timestamp": str(self.time_ms())})
            tree.create(zn.CONTROLLER_PATH, data, owner=self.session_id)
            _, stat = tree.set_data(zn.CONTROLLER_EPOCH_PATH, str(new_epoch).encode(), cur_version)
            assert stat is not None
            return new_epoch, stat.version
        current = self._controller_id_of(tree.nodes.get(zn.CONTROLLER_PATH))
        if current is None:
            raise ControllerMovedException(
                f"The ephemeral node at {zn.CONTROLLER_PATH} went away while checking whether the controller "
                "election succeeds. Aborting controller startup procedure"
            )
        if current == controller_id:
            node = tree.nodes.get(zn.CONTROLLER_EPOCH_PATH)
            if node is None:
                raise IllegalStateError(
                    f"{zn.CONTROLLER_EPOCH_PATH} existed before but goes away while trying to read it"
                )
            if int(node.data or b"0") == new_epoch:
                return new_epoch, node.version
        raise ControllerMovedException("Controller moved to another broker. Aborting controller startup procedure")

    @staticmethod
    def _controller_id_of(node: _ZNode | None) -> int | None:
        if node is None:
            return None
        js = zn.decode_json(node.data)
        return None if not isinstance(js, dict) or "brokerid" not in js else int(js["brokerid"])

    def get_controller_id(self) -> int | None:
        """KZC:1270-1278."""
        self._call("get_controller_id")
        response = self._read(zn.CONTROLLER_PATH)
        if response.result_code is Code.NONODE:
            return None
        js = zn.decode_json(response.data)
        return None if not isinstance(js, dict) else int(js["brokerid"])

    def get_controller_epoch(self) -> tuple[int, Stat] | None:
        """KZC:1304-1315."""
        self._call("get_controller_epoch")
        response = self._read(zn.CONTROLLER_EPOCH_PATH)
        if response.result_code is Code.NONODE or response.stat is None:
            return None
        return int(response.data or b"0"), response.stat

    def delete_controller(self, expected_controller_epoch_zk_version: int) -> None:
        """KZC:1295-1298 (fenced; the result is not checked)."""
        self._call("delete_controller", expected_controller_epoch_zk_version)
        self._check_epoch(expected_controller_epoch_zk_version)
        self.tree.delete(zn.CONTROLLER_PATH)

    # ======================================================= partition states

    def get_topic_partition_states_raw(self, partitions: Sequence[TopicPartition]) -> list[GetDataResponse]:
        """KZC:286-291: one GetDataResponse per partition, ctx = the partition."""
        injection = self._call("get_topic_partition_states_raw", partitions)
        out = []
        for tp in partitions:
            path = zn.partition_state_path(tp)
            code = self._code_for(injection, tp)
            out.append(self._read(path, tp) if code is None else GetDataResponse(code, path, tp, None, None))
        return out

    def get_topic_partition_states(
        self, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
        """KZC:1123-1133: NONODE partitions omitted; other codes raise."""
        out = {}
        for response in self.get_topic_partition_states_raw(partitions):
            if response.result_code is Code.OK:
                decoded = zn.decode_partition_state(response.data, response.stat)
                if decoded is not None:
                    out[response.ctx] = decoded
            elif response.result_code is not Code.NONODE:
                response.maybe_throw()
        return out

    def set_topic_partition_states_raw(
        self,
        leader_isr_and_controller_epochs: Mapping[TopicPartition, LeaderIsrAndControllerEpoch],
        expected_controller_epoch_zk_version: int,
    ) -> list[SetDataResponse]:
        """KZC:299-306: SetData at version = the partition epoch, fenced."""
        injection = self._call("set_topic_partition_states_raw", leader_isr_and_controller_epochs, expected_controller_epoch_zk_version)
        return self._set_states(leader_isr_and_controller_epochs, expected_controller_epoch_zk_version, injection)

    def _set_states(
        self,
        values: Mapping[TopicPartition, LeaderIsrAndControllerEpoch],
        expected: int,
        injection: Injection | None,
    ) -> list[SetDataResponse]:
        self._check_epoch(expected)
        out = []
        tree = self.tree
        for tp, info in values.items():
            path = zn.partition_state_path(tp)
            code = self._code_for(injection, tp)
            if code is not None:
                out.append(SetDataResponse(code, path, tp, None))
                continue
            code, stat = tree.set_data(path, zn.encode_partition_state(info), info.leader_and_isr.partition_epoch)
            out.append(SetDataResponse(code, path, tp, stat))
        return out

    def create_topic_partition_states_raw(
        self,
        leader_isr_and_controller_epochs: Mapping[TopicPartition, LeaderIsrAndControllerEpoch],
        expected_controller_epoch_zk_version: int,
    ) -> list[CreateResponse]:
        """KZC:314-323: create .../partitions and .../<p> (results ignored), then each state, fenced."""
        injection = self._call(
            "create_topic_partition_states_raw", leader_isr_and_controller_epochs, expected_controller_epoch_zk_version
        )
        self._check_epoch(expected_controller_epoch_zk_version)
        tree = self.tree
        for topic in dict.fromkeys(tp.topic for tp in leader_isr_and_controller_epochs):
            tree.create(zn.partitions_path(topic), None)
        for tp in leader_isr_and_controller_epochs:
            tree.create(zn.partition_path(tp), None)
        out = []
        for tp, info in leader_isr_and_controller_epochs.items():
            path = zn.partition_state_path(tp)
            code = self._code_for(injection, tp)
            if code is None:
                code, _ = tree.create(path, zn.encode_partition_state(info))
            out.append(CreateResponse(code, path, tp, path if code is Code.OK else None))
        return out

    def update_leader_and_isr(
        self,
        leader_and_isrs: Mapping[TopicPartition, LeaderAndIsr],
        controller_epoch: int,
        expected_controller_epoch_zk_version: int,
    ) -> UpdateLeaderAndIsrResult:
        """KZC:354-387: OK -> the value with partition epoch = the new version; BADVERSION -> retry."""
        values = {tp: LeaderIsrAndControllerEpoch(lai, controller_epoch) for tp, lai in leader_and_isrs.items()}
        try:
            injection = self._call("update_leader_and_isr", leader_and_isrs, controller_epoch, expected_controller_epoch_zk_version)
            responses = self._set_states(values, expected_controller_epoch_zk_version, injection)
        except ControllerMovedException:
            raise
        except Exception as e:
            return UpdateLeaderAndIsrResult(dict.fromkeys(leader_and_isrs, e), [])
        finished: dict[TopicPartition, LeaderAndIsr | Exception] = {}
        retry: list[TopicPartition] = []
        for response in responses:
            tp = response.ctx
            if response.result_code is Code.OK:
                assert response.stat is not None
                finished[tp] = leader_and_isrs[tp].with_partition_epoch(response.stat.version)
            elif response.result_code is Code.BADVERSION:
                retry.append(tp)
            else:
                finished[tp] = KeeperException.create(response.result_code, response.path)
        return UpdateLeaderAndIsrResult(finished, retry)

    def get_log_configs(
        self, topics: Iterable[str], config: Mapping[str, object]
    ) -> tuple[dict[str, LogConfig], dict[str, Exception]]:
        """KZC:397-424: the broker's config overridden by /config/topics/<t>; NONODE -> defaults."""
        topics = list(topics)
        configs: dict[str, LogConfig] = {}
        failed: dict[str, Exception] = {}
        try:
            injection = self._call("get_log_configs", topics, config)
        except Exception as e:
            return configs, dict.fromkeys(topics, e)
        for topic in topics:
            code = self._code_for(injection, topic)
            if code is not None:
                failed[topic] = KeeperException.create(code, zn.topic_config_path(topic))
                continue
            response = self._read(zn.topic_config_path(topic), topic)
            overrides: Mapping[str, object] = {}
            if response.result_code is Code.OK:
                js = zn.decode_json(response.data)
                overrides = js.get("config", {}) if isinstance(js, dict) else {}
            try:
                configs[topic] = LogConfig.from_props(config, overrides)
            except ValueError as e:
                failed[topic] = e
        return configs, failed

    # ================================================================ brokers

    def get_sorted_broker_list(self) -> list[int]:
        """KZC:623 (child watch on /brokers/ids)."""
        self._call("get_sorted_broker_list")
        return sorted(int(c) for c in self._children(zn.BROKER_IDS_PATH) or ())

    def get_all_broker_and_epochs_in_cluster(self) -> dict[Broker, int]:
        """KZC:590-603: Broker -> czxid of its registration (the broker epoch)."""
        injection = self._call("get_all_broker_and_epochs_in_cluster")
        out = {}
        for broker_id in sorted(int(c) for c in self._children(zn.BROKER_IDS_PATH) or ()):
            response = self._read(zn.broker_id_path(broker_id), broker_id)
            code = self._code_for(injection, broker_id) or response.result_code
            if code is Code.OK and response.stat is not None:
                out[zn.decode_broker(broker_id, response.data)] = response.stat.czxid
            elif code is not Code.NONODE:
                raise KeeperException.create(code, response.path)
        return out

    def get_broker(self, broker_id: int) -> Broker | None:
        """KZC:609-618."""
        self._call("get_broker", broker_id)
        response = self._read(zn.broker_id_path(broker_id))
        if response.result_code is Code.NONODE:
            return None
        return zn.decode_broker(broker_id, response.data)

    # ================================================================ topics

    def get_all_topics_in_cluster(self, register_watch: bool = False) -> set[str]:
        """KZC:630-638."""
        self._call("get_all_topics_in_cluster", register_watch)
        return set(self._children(zn.TOPICS_PATH, register_watch) or ())

    def get_replica_assignment_and_topic_id_for_topics(self, topics: Iterable[str]) -> list[TopicIdReplicaAssignment]:
        """KZC:808-824: topics whose znode is missing are left out."""
        injection = self._call("get_replica_assignment_and_topic_id_for_topics", topics)
        out = []
        for topic in sorted(topics):
            response = self._read(zn.topic_path(topic), topic)
            code = self._code_for(injection, topic) or response.result_code
            if code is Code.OK:
                topic_id, assignment = zn.decode_topic(topic, response.data)
                out.append(TopicIdReplicaAssignment(topic, topic_id, assignment))
            elif code is not Code.NONODE:
                raise KeeperException.create(code, response.path)
        return out

    def get_full_replica_assignment_for_topics(self, topics: Iterable[str]) -> dict[TopicPartition, ReplicaAssignment]:
        """KZC:826-842."""
        out: dict[TopicPartition, ReplicaAssignment] = {}
        for assignment in self.get_replica_assignment_and_topic_id_for_topics(topics):
            out.update(assignment.assignment)
        return out

    def set_topic_ids(
        self, topic_id_replica_assignments: Iterable[TopicIdReplicaAssignment], expected_controller_epoch_zk_version: int
    ) -> list[TopicIdReplicaAssignment]:
        """KZC:654-669: a random id for each topic (one that has an id already is refused)."""
        self._call("set_topic_ids", topic_id_replica_assignments, expected_controller_epoch_zk_version)
        updated = []
        for a in topic_id_replica_assignments:
            if a.topic_id is not None:
                raise ValueError(f"TopicIdReplicaAssignment for {a.topic} already contains a topic ID.")
            updated.append(TopicIdReplicaAssignment(a.topic, uuid.uuid4(), a.assignment))
        for a in updated:
            self.set_topic_assignment(a.topic, a.topic_id, a.assignment, expected_controller_epoch_zk_version)
        return updated

    def set_topic_assignment_raw(
        self,
        topic: str,
        topic_id: uuid.UUID | None,
        assignment: Mapping[TopicPartition, ReplicaAssignment],
        expected_controller_epoch_zk_version: int,
    ) -> SetDataResponse:
        """KZC:679-685: SetData at any version, fenced."""
        injection = self._call("set_topic_assignment_raw", topic, topic_id, assignment, expected_controller_epoch_zk_version)
        path = zn.topic_path(topic)
        self._check_epoch(expected_controller_epoch_zk_version)
        code = self._code_for(injection, topic)
        if code is not None:
            return SetDataResponse(code, path, None)
        code, stat = self.tree.set_data(path, zn.encode_topic(topic_id, assignment), MATCH_ANY_VERSION)
        return SetDataResponse(code, path, None, stat)

    def set_topic_assignment(
        self,
        topic: str,
        topic_id: uuid.UUID | None,
        assignment: Mapping[TopicPartition, ReplicaAssignment],
        expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION,
    ) -> None:
        """KZC:695-701: the raw set, raising on error."""
        self.set_topic_assignment_raw(topic, topic_id, assignment, expected_controller_epoch_zk_version).maybe_throw()

    # ========================================================= topic deletion

    def get_topic_deletions(self) -> list[str]:
        """KZC:1021-1028 (child watch)."""
        self._call("get_topic_deletions")
        return self._children(zn.DELETE_TOPICS_PATH) or []

    def delete_topic_deletions(self, topics: Sequence[str], expected_controller_epoch_zk_version: int) -> None:
        """KZC:1035-1038 (fenced; results not checked)."""
        self._call("delete_topic_deletions", topics, expected_controller_epoch_zk_version)
        self._check_epoch(expected_controller_epoch_zk_version)
        for topic in topics:
            self.tree.delete(zn.delete_topic_path(topic))

    def _delete_recursive(self, path: str, expected: int) -> bool:
        """KZC:1876-1888."""
        children = self._children(path)
        if children is None:
            return False
        for child in children:
            self._delete_recursive(f"{path}/{child}", expected)
        self._check_epoch(expected)
        code = self.tree.delete(path)
        if code is not Code.OK and code is not Code.NONODE:
            raise KeeperException.create(code, path)
        return True

    def delete_topic_znode(self, topic: str, expected_controller_epoch_zk_version: int) -> None:
        """KZC:1321-1323: the topic znode and everything under it."""
        self._call("delete_topic_znode", topic, expected_controller_epoch_zk_version)
        self._delete_recursive(zn.topic_path(topic), expected_controller_epoch_zk_version)

    def delete_topic_configs(self, topics: Sequence[str], expected_controller_epoch_zk_version: int) -> None:
        """KZC:1330-1334."""
        self._call("delete_topic_configs", topics, expected_controller_epoch_zk_version)
        self._check_epoch(expected_controller_epoch_zk_version)
        for topic in topics:
            self.tree.delete(zn.topic_config_path(topic))

    # ============================================================ reassignment

    def get_partition_reassignment(self) -> dict[TopicPartition, list[int]]:
        """KZC:1044-1058: invalid JSON is logged and treated as no reassignment."""
        self._call("get_partition_reassignment")
        response = self._read(zn.REASSIGN_PARTITIONS_PATH)
        if response.result_code is Code.NONODE:
            return {}
        js = zn.decode_json(response.data)
        try:
            return {
                TopicPartition(str(e["topic"]), int(e["partition"])): [int(r) for r in e["replicas"]]
                for e in js["partitions"]
            }
        except (KeyError, TypeError, ValueError) as e:
            _log.warning("Ignoring partition reassignment due to invalid json: %s", e)
            return {}

    def set_or_create_partition_reassignment(
        self, reassignment: Mapping[TopicPartition, Sequence[int]], expected_controller_epoch_zk_version: int
    ) -> None:
        """KZC:1070-1091: set (any version), or create on NONODE; fenced; errors raise."""
        self._call("set_or_create_partition_reassignment", reassignment, expected_controller_epoch_zk_version)
        self._check_epoch(expected_controller_epoch_zk_version)
        data = _reassignment_json(reassignment)
        code, _ = self.tree.set_data(zn.REASSIGN_PARTITIONS_PATH, data, MATCH_ANY_VERSION)
        if code is Code.NONODE:
            code, _ = self.tree.create(zn.REASSIGN_PARTITIONS_PATH, data)
        if code is not Code.OK:
            raise KeeperException.create(code, zn.REASSIGN_PARTITIONS_PATH)

    def delete_partition_reassignment(self, expected_controller_epoch_zk_version: int) -> None:
        """KZC:1106-1108."""
        self._call("delete_partition_reassignment", expected_controller_epoch_zk_version)
        self._delete_recursive(zn.REASSIGN_PARTITIONS_PATH, expected_controller_epoch_zk_version)

    def reassign_partitions_in_progress(self) -> bool:
        """KZC:1114-1116."""
        self._call("reassign_partitions_in_progress")
        return self._exists(zn.REASSIGN_PARTITIONS_PATH)

    # ============================================== preferred election, notifications

    def get_preferred_replica_election(self) -> set[TopicPartition]:
        """KZC:1247-1255."""
        self._call("get_preferred_replica_election")
        response = self._read(zn.PREFERRED_REPLICA_ELECTION_PATH)
        if response.result_code is Code.NONODE:
            return set()
        return set(zn.decode_partitions(response.data))

    def delete_preferred_replica_election(self, expected_controller_epoch_zk_version: int) -> None:
        """KZC:1261-1264 (fenced; the result is not checked)."""
        self._call("delete_preferred_replica_election", expected_controller_epoch_zk_version)
        self._check_epoch(expected_controller_epoch_zk_version)
        self.tree.delete(zn.PREFERRED_REPLICA_ELECTION_PATH)

    def get_all_isr_change_notifications(self) -> list[str]:
        """KZC:1181-1188: sequence numbers (child watch)."""
        self._call("get_all_isr_change_notifications")
        prefix = len(zn.ISR_CHANGE_PREFIX)
        return [c[prefix:] for c in self._children(zn.ISR_CHANGE_NOTIFICATION_PATH) or ()]

    def get_partitions_from_isr_change_notifications(self, sequence_numbers: Sequence[str]) -> list[TopicPartition]:
        """KZC:1195-1207."""
        self._call("get_partitions_from_isr_change_notifications", sequence_numbers)
        out: list[TopicPartition] = []
        for seq in sequence_numbers:
            response = self._read(f"{zn.ISR_CHANGE_NOTIFICATION_PATH}/{zn.ISR_CHANGE_PREFIX}{seq}")
            if response.result_code is Code.OK:
                out.extend(zn.decode_partitions(response.data))
        return out

    def delete_isr_change_notifications(
        self, sequence_numbers: Sequence[str] | None, expected_controller_epoch_zk_version: int
    ) -> None:
        """KZC:1213-1232: the given notifications, or all (None)."""
        self._call("delete_isr_change_notifications", sequence_numbers, expected_controller_epoch_zk_version)
        if sequence_numbers is None:
            prefix = len(zn.ISR_CHANGE_PREFIX)
            sequence_numbers = [c[prefix:] for c in self._children(zn.ISR_CHANGE_NOTIFICATION_PATH) or ()]
        self._check_epoch(expected_controller_epoch_zk_version)
        for seq in sequence_numbers:
            self.tree.delete(f"{zn.ISR_CHANGE_NOTIFICATION_PATH}/{zn.ISR_CHANGE_PREFIX}{seq}")

    def get_all_log_dir_event_notifications(self) -> list[str]:
        """KZC:719-726 (child watch)."""
        self._call("get_all_log_dir_event_notifications")
        prefix = len(zn.LOG_DIR_EVENT_PREFIX)
        return [c[prefix:] for c in self._children(zn.LOG_DIR_EVENT_NOTIFICATION_PATH) or ()]

    def get_broker_ids_from_log_dir_events(self, sequence_numbers: Sequence[str]) -> list[int]:
        """KZC:733-745."""
        self._call("get_broker_ids_from_log_dir_events", sequence_numbers)
        out = []
        for seq in sequence_numbers:
            response = self._read(f"{zn.LOG_DIR_EVENT_NOTIFICATION_PATH}/{zn.LOG_DIR_EVENT_PREFIX}{seq}")
            js = zn.decode_json(response.data) if response.result_code is Code.OK else None
            if isinstance(js, dict) and "broker" in js:
                out.append(int(js["broker"]))
        return out

    def delete_log_dir_event_notifications(
        self, sequence_numbers: Sequence[str] | None, expected_controller_epoch_zk_version: int
    ) -> None:
        """KZC:751-775: the given notifications, or all (None)."""
        self._call("delete_log_dir_event_notifications", sequence_numbers, expected_controller_epoch_zk_version)
        if sequence_numbers is None:
            prefix = len(zn.LOG_DIR_EVENT_PREFIX)
            sequence_numbers = [c[prefix:] for c in self._children(zn.LOG_DIR_EVENT_NOTIFICATION_PATH) or ()]
        self._check_epoch(expected_controller_epoch_zk_version)
        for seq in sequence_numbers:
            self.tree.delete(f"{zn.LOG_DIR_EVENT_NOTIFICATION_PATH}/{zn.LOG_DIR_EVENT_PREFIX}{seq}")

    def path_exists(self, path: str) -> bool:
        """KZC:1890-1894."""
        self._call("path_exists", path)
        return self._exists(path)

    # ============================================================ admin helpers

    def register_broker(self, broker: Broker, *, session_id: int | None = None) -> int:
        """A broker registers: ephemeral /brokers/ids/<id> under its own session (a new one by
        default). Returns the broker epoch (the znode's czxid). NODEEXISTS raises."""
        if session_id is None:
            session_id = self.tree.new_session()
        code, _ = self.tree.create(zn.broker_id_path(broker.id), zn.encode_broker(broker, self.time_ms()), owner=session_id)
        if code is not Code.OK:
            raise KeeperException.create(code, zn.broker_id_path(broker.id))
        self._broker_sessions[broker.id] = session_id
        return self.tree.nodes[zn.broker_id_path(broker.id)].czxid

    def broker_session(self, broker_id: int) -> int | None:
        return self._broker_sessions.get(broker_id)

    def update_broker(self, broker: Broker) -> None:
        """A broker rewrites its registration (endpoints, rack): a data change, same epoch."""
        code, _ = self.tree.set_data(zn.broker_id_path(broker.id), zn.encode_broker(broker, self.time_ms()), MATCH_ANY_VERSION)
        if code is not Code.OK:
            raise KeeperException.create(code, zn.broker_id_path(broker.id))

    def expire_session(self, session_id: int) -> None:
        """Expire a session (its ephemerals go; its client, if any, re-initialises)."""
        self.tree.expire_session(session_id)

    def expire_broker(self, broker_id: int) -> None:
        """Expire the session a broker registered under: the broker is gone."""
        sid = self._broker_sessions.pop(broker_id, None)
        if sid is not None:
            self.tree.expire_session(sid)

    def create_topic(
        self,
        topic: str,
        assignment: Mapping[int, Sequence[int]] | Sequence[Sequence[int]],
        *,
        topic_id: uuid.UUID | None = _RANDOM_ID,
    ) -> uuid.UUID | None:
        """Write /brokers/topics/<topic> (partition -> replicas; a list means partitions 0..n-1)
        with ``topic_id`` (a random one by default, None for none). Returns the id."""
        if topic_id is _RANDOM_ID:
            topic_id = uuid.uuid4()
        self.tree.create_recursive(zn.topic_path(topic), zn.encode_topic(topic_id, _assignment(topic, assignment)))
        return topic_id

    def add_partitions(self, topic: str, assignment: Mapping[int, Sequence[int]]) -> None:
        """Add partitions to a topic's znode (a data change), keeping its id and partitions."""
        node = self.tree.nodes.get(zn.topic_path(topic))
        if node is None:
            raise KeeperException.create(Code.NONODE, zn.topic_path(topic))
        topic_id, current = zn.decode_topic(topic, node.data)
        current.update(_assignment(topic, assignment))
        self.tree.set_data(zn.topic_path(topic), zn.encode_topic(topic_id, current), MATCH_ANY_VERSION)

    def delete_topic(self, topic: str) -> None:
        """Request a deletion: /admin/delete_topics/<topic> (AdminZkClient.deleteTopic)."""
        self.tree.create_recursive(zn.delete_topic_path(topic), None)

    def reassign_partitions(self, reassignment: Mapping[TopicPartition, Sequence[int]]) -> None:
        """Write /admin/reassign_partitions (the deprecated znode route)."""
        self.tree.create_recursive(zn.REASSIGN_PARTITIONS_PATH, _reassignment_json(reassignment))

    def elect_preferred_replicas(self, partitions: Iterable[TopicPartition]) -> None:
        """Write /admin/preferred_replica_election (KZC:1239-1241)."""
        self.tree.create_recursive(zn.PREFERRED_REPLICA_ELECTION_PATH, zn.encode_partitions(partitions))

    def notify_isr_change(self, partitions: Iterable[TopicPartition]) -> str:
        """A broker's ISR change notification (KZC:1429-1437); returns its sequence number."""
        _, path = self.tree.create(
            f"{zn.ISR_CHANGE_NOTIFICATION_PATH}/{zn.ISR_CHANGE_PREFIX}", zn.encode_partitions(partitions), sequential=True
        )
        assert path is not None
        return path.rsplit(zn.ISR_CHANGE_PREFIX, 1)[1]

    def notify_log_dir_event(self, broker_id: int) -> str:
        """A broker's log-dir failure notification (KZC:1422-1427); returns its sequence number."""
        _, path = self.tree.create(
            f"{zn.LOG_DIR_EVENT_NOTIFICATION_PATH}/{zn.LOG_DIR_EVENT_PREFIX}",
            zn.encode_json({"version": 1, "broker": broker_id, "event": 1}), sequential=True,
        )
        assert path is not None
        return path.rsplit(zn.LOG_DIR_EVENT_PREFIX, 1)[1]

    def set_topic_config(self, topic: str, config: Mapping[str, str]) -> None:
        """Write /config/topics/<topic> = {"version":1,"config":{...}}."""
        path = zn.topic_config_path(topic)
        data = zn.encode_json({"version": 1, "config": dict(config)})
        if self.tree.exists(path):
            self.tree.set_data(path, data, MATCH_ANY_VERSION)
        else:
            self.tree.create_recursive(path, data)

    def set_partition_state(self, tp: TopicPartition, value: LeaderIsrAndControllerEpoch) -> int:
        """Write a partition's state znode unconditionally (a leader's ISR change, another
        controller), creating it if missing. Returns the new znode version."""
        path = zn.partition_state_path(tp)
        data = zn.encode_partition_state(value)
        if self.tree.exists(path):
            _, stat = self.tree.set_data(path, data, MATCH_ANY_VERSION)
            assert stat is not None
            return stat.version
        self.tree.create_recursive(path, data)
        return 0

    def partition_state(self, tp: TopicPartition) -> LeaderIsrAndControllerEpoch | None:
        """The decoded state znode (partition epoch = its version), no watch, not recorded."""
        node = self.tree.nodes.get(zn.partition_state_path(tp))
        return None if node is None else zn.decode_partition_state(node.data, node.stat())

    def elect_other_controller(self, broker_id: int) -> int:
        """Another broker wins the controller election: /controller_epoch + 1 (so our fenced
        writes fail) and /controller owned by a new session. Returns the new epoch."""
        tree = self.tree
        node = tree.nodes.get(zn.CONTROLLER_EPOCH_PATH)
        epoch = 0 if node is None else int(node.data or b"0")
        if node is None:
            tree.create(zn.CONTROLLER_EPOCH_PATH, b"1")
        else:
            tree.set_data(zn.CONTROLLER_EPOCH_PATH, str(epoch + 1).encode(), MATCH_ANY_VERSION)
        tree.delete(zn.CONTROLLER_PATH)
        tree.create(zn.CONTROLLER_PATH, zn.encode_json({"version": 1, "brokerid": broker_id, "timestamp": "0"}),
                    owner=tree.new_session())
        return epoch + 1

    def get_data(self, path: str) -> tuple[bytes | None, Stat | None]:
        """A znode's data and Stat (None, None when missing); no watch, not recorded."""
        node = self.tree.nodes.get(path)
        return (None, None) if node is None else (node.data, node.stat())

    def children(self, path: str) -> list[str]:
        node = self.tree.nodes.get(path)
        return [] if node is None else list(node.children)


def _assignment(
    topic: str, assignment: Mapping[int, Sequence[int]] | Sequence[Sequence[int]]
) -> dict[TopicPartition, ReplicaAssignment]:
    items = assignment.items() if isinstance(assignment, Mapping) else enumerate(assignment)
    return {TopicPartition(topic, int(p)): ReplicaAssignment([int(r) for r in replicas]) for p, replicas in items}


def _reassignment_json(reassignment: Mapping[TopicPartition, Sequence[int]]) -> bytes:
    return zn.encode_json({
        "version": 1,
        "partitions": [
            {"topic": tp.topic, "partition": tp.partition, "replicas": list(replicas)}
            for tp, replicas in reassignment.items()
        ],
    })


def _implements_the_protocol(client: InMemoryKafkaZkClient) -> KafkaZkClient:
    """mypy checks here that InMemoryKafkaZkClient has every KafkaZkClient method's signature."""
    return client
