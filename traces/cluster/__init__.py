"""Several real servers recorded together: primaries, replicas, proxied replication links, faults."""
