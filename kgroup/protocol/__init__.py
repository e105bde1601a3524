"""kgroup's own wire codecs (Kafka's ConsumerProtocol bytes); see ``consumer_protocol``."""
