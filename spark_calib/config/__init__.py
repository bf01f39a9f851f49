"""Configuration: the typed model and its loader."""

from spark_calib.config.load import ConfigSource, config_hash, load_config
from spark_calib.config.model import Binning, Columns, Config, InputConfig, OutputConfig, Window
from spark_calib.config.monitoring import AlertRule, DateRange, DriftConfig, RollupConfig

__all__ = [
    "AlertRule",
    "Binning",
    "Columns",
    "Config",
    "ConfigSource",
    "DateRange",
    "DriftConfig",
    "InputConfig",
    "OutputConfig",
    "RollupConfig",
    "Window",
    "config_hash",
    "load_config",
]
