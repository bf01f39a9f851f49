"""Configuration: the typed model and its loader."""

from spark_calib.config.load import ConfigSource, config_hash, load_config
from spark_calib.config.model import Binning, Columns, Config, InputConfig, OutputConfig, Window

__all__ = [
    "Binning",
    "Columns",
    "Config",
    "ConfigSource",
    "InputConfig",
    "OutputConfig",
    "Window",
    "config_hash",
    "load_config",
]
