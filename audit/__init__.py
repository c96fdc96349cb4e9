"""The audit pipeline: trace collections checked and their deliveries ledgered on Spark."""
