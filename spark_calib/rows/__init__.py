"""Layer 1: per-row Spark Column expressions (validity, confidence, correctness, bins)."""
