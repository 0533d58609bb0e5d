"""BrokerLifecycle: a simulated broker registers and heartbeats by itself (Kafka's BrokerLifecycleManager).

Rules (kafka-broker-registration.md §6):
- One communication in flight: register until it succeeds, then heartbeat. The registration
  epoch goes into the broker's state (``kraft_broker_epoch``), which the broker compares with
  the epoch of requests from a KRaft controller.
- Any error code, time-out, disconnect or undecodable response: retry after an exponential back-off (100 ms, x2, capped
  at the session time-out, jitter 2 %). A heartbeat error retries the heartbeat; it never
  re-registers (3.9).
- Heartbeat every ``heartbeat_interval`` seconds after a success; every 10 ms while STARTING
  and RECOVERY (until unfenced). WantFence while STARTING; WantShutDown while a
  controlled shutdown is pending; ``shutdown_now`` is set when the controller says so.
- A new BrokerLifecycle is a new incarnation (a random incarnation id unless one is given).
- The task never dies of a failure: anything unexpected in one exchange (a bug, a request that
  cannot be encoded) is logged in one line (rate-limited), the connection is dropped and the
  exchange retried after the back-off, like a disconnect.
"""

from __future__ import annotations

import asyncio
import collections
import enum
import logging
import random
import uuid
from collections.abc import Callable

from ctrlbatch.context import MetadataVersion
from ctrlbatch.requests import (
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    DecodeError,
    Feature,
    Listener,
)

from .broker_state import BrokerState
from .client import FrameClient
from .safe_log import RateLimiter, describe

__all__ = ["BrokerLifecycle", "LifecycleState"]

_log = logging.getLogger("ctrlbatch.sim.lifecycle")
_limiter = RateLimiter(burst=5, interval_s=10.0)
REGISTRATION_VERSION = 4
HEARTBEAT_VERSION = 1


class LifecycleState(enum.Enum):
    STARTING = "STARTING"
    RECOVERY = "RECOVERY"
    RUNNING = "RUNNING"
    PENDING_CONTROLLED_SHUTDOWN = "PENDING_CONTROLLED_SHUTDOWN"
    SHUTTING_DOWN = "SHUTTING_DOWN"


class BrokerLifecycle:
    """Registers ``state``'s broker with the controller endpoint at host:port and keeps it alive."""

    def __init__(
        self,
        state: Callable[[], BrokerState],
        listener: tuple[str, int],
        controller: tuple[str, int],
        cluster_id: str,
        *,
        incarnation_id: uuid.UUID | None = None,
        migrating_zk_broker: bool = True,
        metadata_version: MetadataVersion = MetadataVersion.IBP_3_9_IV0,
        listener_name: str = "PLAINTEXT",
        rack: str | None = None,
        heartbeat_interval: float = 2.0,
        session_timeout: float = 9.0,
        metadata_offset: Callable[[], int] | None = None,
    ) -> None:
        self.state_of = state
        self.listener = listener
        self.controller = controller
        self.cluster_id = cluster_id
        self.incarnation_id = incarnation_id if incarnation_id is not None else uuid.uuid4()
        self.migrating_zk_broker = migrating_zk_broker
        self.metadata_version = metadata_version
        self.listener_name = listener_name
        self.rack = rack
        self.heartbeat_interval = heartbeat_interval
        self.session_timeout = session_timeout
        self.metadata_offset = metadata_offset
        self.lifecycle = LifecycleState.STARTING
        self.epoch: int | None = None
        self.want_shut_down = False
        self.registered = asyncio.Event()
        self.running = asyncio.Event()
        self.shutdown_now = asyncio.Event()
        self.errors: collections.deque[int] = collections.deque(maxlen=1000)
        """The latest error codes answered (bounded: a broker may retry for days)."""
        self.failures = 0
        """Unexpected failures of an exchange, logged and retried."""
        self._task: asyncio.Task[None] | None = None
        self._client: FrameClient | None = None
        self._failures = 0
        self._stopping = False

    def __repr__(self) -> str:
        return f"BrokerLifecycle(broker {self.state_of().broker_id}, {self.lifecycle.value}, epoch {self.epoch})"

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"broker-lifecycle-{self.state_of().broker_id}")

    async def stop(self) -> None:
        # The flag too: Python 3.11's wait_for can swallow a cancel that races a response.
        self._stopping = True
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        await self._disconnect()

    def begin_controlled_shutdown(self) -> None:
        self.want_shut_down = True
        self.lifecycle = LifecycleState.PENDING_CONTROLLED_SHUTDOWN

    def _registration(self) -> BrokerRegistrationRequest:
        b = self.state_of()
        level = self.metadata_version.feature_level
        lo = level if self.migrating_zk_broker else 1  # a migrating ZooKeeper broker advertises [IBP, IBP]
        return BrokerRegistrationRequest(
            broker_id=b.broker_id, cluster_id=self.cluster_id, incarnation_id=self.incarnation_id,
            listeners=[Listener(name=self.listener_name, host=self.listener[0], port=self.listener[1], security_protocol=0)],
            features=[Feature(name="metadata.version", min_supported_version=lo, max_supported_version=level)],
            rack=self.rack, is_migrating_zk_broker=self.migrating_zk_broker,
            log_dirs=[uuid.UUID(int=(b.broker_id + 1) << 64 | 1000)],
        )

    def _heartbeat(self) -> BrokerHeartbeatRequest:
        assert self.epoch is not None
        offset = self.metadata_offset() if self.metadata_offset is not None else self.epoch
        return BrokerHeartbeatRequest(
            broker_id=self.state_of().broker_id, broker_epoch=self.epoch, current_metadata_offset=offset,
            want_fence=self.lifecycle == LifecycleState.STARTING,
            want_shut_down=self.want_shut_down,
        )

    async def _disconnect(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    async def _exchange(self, build: Callable[[], BrokerRegistrationRequest | BrokerHeartbeatRequest],
                        version: int) -> object | None:
        try:
            body = build()
            if self._client is None:
                self._client = await FrameClient.connect(*self.controller, client_id=f"broker-{self.state_of().broker_id}")
            _header, response = await self._client.request(body, version, timeout=self.session_timeout)
            return response
        except DecodeError as e:  # a controller that answers garbage: retried like a disconnect
            _log.warning("%r: undecodable response (%s); retrying", self, e)
            await self._disconnect()
            return None
        except (TimeoutError, OSError, ConnectionError) as e:
            _log.info("%r: %s; retrying", self, e)
            await self._disconnect()
            return None
        except Exception as e:  # noqa: BLE001 - the lifecycle must go on (see the module rules)
            self.failures += 1
            admitted, suppressed = _limiter.admit("exchange failed")
            if admitted:
                _log.error("%r: the exchange failed: %s; retrying%s", self, describe(e),
                           f" [{suppressed} similar suppressed]" if suppressed else "")
            await self._disconnect()
            return None

    async def _backoff(self) -> None:
        self._failures += 1
        delay = min(0.1 * 2 ** (self._failures - 1), self.session_timeout)
        await asyncio.sleep(delay * random.uniform(0.98, 1.02))

    async def _run(self) -> None:
        while self.epoch is None and not self._stopping:
            response = await self._exchange(self._registration, REGISTRATION_VERSION)
            if isinstance(response, BrokerRegistrationResponse) and response.error_code == 0:
                self.epoch = response.broker_epoch
                self.state_of().kraft_broker_epoch = response.broker_epoch
                self._failures = 0
                self.registered.set()
            else:
                if isinstance(response, BrokerRegistrationResponse):
                    self.errors.append(response.error_code)
                await self._backoff()
        while not self._stopping:
            response = await self._exchange(self._heartbeat, HEARTBEAT_VERSION)
            if not isinstance(response, BrokerHeartbeatResponse) or response.error_code != 0:
                if isinstance(response, BrokerHeartbeatResponse):
                    self.errors.append(response.error_code)
                await self._backoff()
                continue
            self._failures = 0
            self._on_heartbeat(response)
            if self.shutdown_now.is_set():
                return
            starting = self.lifecycle in (LifecycleState.STARTING, LifecycleState.RECOVERY)
            await asyncio.sleep(0.01 if starting else self.heartbeat_interval)

    def _on_heartbeat(self, r: BrokerHeartbeatResponse) -> None:
        """BLM:528-570."""
        if self.lifecycle == LifecycleState.STARTING and r.is_caught_up:
            self.lifecycle = LifecycleState.RECOVERY
        if self.lifecycle == LifecycleState.RECOVERY and not r.is_fenced:
            self.lifecycle = LifecycleState.RUNNING
            self.running.set()
        if self.lifecycle == LifecycleState.PENDING_CONTROLLED_SHUTDOWN and r.should_shut_down:
            self.lifecycle = LifecycleState.SHUTTING_DOWN
            self.shutdown_now.set()
