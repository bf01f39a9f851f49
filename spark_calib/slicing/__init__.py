"""Slices: how slice values are encoded (``values``) and how the one aggregation covers the
configured slice sets (``plan``)."""
