"""ctrlbatch.transport: the batch engine on the network (an asyncio controller channel)."""

from .async_channel import AsyncControllerChannel
from .channel_state import ACTIONS, Action, BrokerChannelState, Ending, QueueItem, TryResult
from .manager import ControllerChannelManager
from .metrics import BrokerMetrics, ChannelMetrics
from .options import ChannelOptions

__all__ = [
    "ACTIONS",
    "Action",
    "AsyncControllerChannel",
    "BrokerChannelState",
    "BrokerMetrics",
    "ChannelMetrics",
    "ChannelOptions",
    "ControllerChannelManager",
    "Ending",
    "QueueItem",
    "TryResult",
]
