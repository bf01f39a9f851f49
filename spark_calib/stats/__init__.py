"""Layer 2: the one statistics aggregation and the public statistics table."""
