"""The record schema: Kafka's metadata record catalog, the generated record classes, the codec, JSON."""
