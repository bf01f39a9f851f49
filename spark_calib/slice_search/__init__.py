"""The slice search: noise-aware ranking of the crossed segments where calibration breaks."""

from spark_calib.slice_search.search import SliceSearchResult, search_slices

__all__ = ["SliceSearchResult", "search_slices"]
