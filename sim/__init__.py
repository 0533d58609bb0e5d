"""ctrlbatch.sim: simulated ZooKeeper-mode brokers and a KRaft controller endpoint, on loopback."""
