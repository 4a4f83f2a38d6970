"""State that several replicas share: the Redis connection, caches, rate limits, service metrics."""
