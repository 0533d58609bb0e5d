"""ctrlbatch.transport: the batch engine on the network (an asyncio controller channel)."""
