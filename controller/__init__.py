"""ctrlbatch.controller: Kafka 3.9's ZooKeeper-mode controller logic, sans-I/O.

The partition and replica state machines, the leader election strategies, the topic deletion
manager and KafkaController's event handlers, over a store protocol (the subset of KafkaZkClient
they use) and the existing ControllerBrokerRequestBatch. Reference:
../shared/reference/kafka-zk-controller.md (Kafka 3.9, cited to file and line).
"""
