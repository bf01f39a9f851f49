"""Recalibration: fit temperature, Platt and isotonic maps per model version and slice from the
fine cells of the statistics (``table``), and apply them to rows with Column expressions
(``apply``)."""
