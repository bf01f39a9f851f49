"""Layer 3: metrics as pure functions of the statistics table."""
