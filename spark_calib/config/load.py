"""Turn a mapping, a YAML path or a ``Config`` into a validated ``Config``, with one-line errors."""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Hashable, Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from spark_calib.config.model import Config
from spark_calib.constants import CELL_GRID_VERSION, STATS_LABEL_VERSION
from spark_calib.errors import ConfigError

ConfigSource = Config | Mapping[str, Any] | str | Path

MONITORING_SECTIONS = ("drift", "alerts", "rollup", "min_slice_rows")
# input keys that say where the rows are, not which rows or how they are evaluated.
LOCATION_KEYS = ("table", "path", "format", "options")


def load_config(source: ConfigSource, overrides: Iterable[str] = ()) -> Config:
    """Validate ``source`` into a frozen ``Config``.

    ``overrides`` are ``key.path=value`` strings (the CLI's ``--set``); the value is parsed as YAML,
    so ``binning.n_bins=10`` gives an int and ``slices=[[country]]`` a list.

    Raises ``ConfigError`` with one line naming the key, for example
    ``unknown config key 'binning.nbins'; did you mean 'binning.n_bins'?``.
    """
    overrides = list(overrides)
    if isinstance(source, Config) and not overrides:
        return source
    raw = _raw_mapping(source)
    for override in overrides:
        _apply_override(raw, override)
    try:
        return Config.model_validate(raw)
    except ValidationError as error:
        raise ConfigError(describe_validation_error(error, Config)) from None


def config_hash(config: Config) -> str:
    """A stable 16-hex-digit hash of how the config evaluates rows (key order and defaults
    normalised) and of the statistics' fine-cell grid and label versions, which say whether two
    runs' statistics can be summed.

    Left out: the monitoring sections (``MONITORING_SECTIONS``), which only read what a run
    computed, so statistics written before an alert rule was added still roll up; and where
    rows are read from and written to (``output``, and ``input`` but for its ``window``), so
    moving a log or a table does not orphan its history."""
    excluded: dict[str, Any] = {section: True for section in MONITORING_SECTIONS}
    excluded["output"] = True
    excluded["input"] = set(LOCATION_KEYS)
    evaluation = config.model_dump(mode="json", exclude=excluded)
    evaluation["cell_grid_version"] = CELL_GRID_VERSION
    evaluation["stats_label_version"] = STATS_LABEL_VERSION
    canonical = json.dumps(evaluation, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def _raw_mapping(source: ConfigSource) -> dict[str, Any]:
    if isinstance(source, Config):
        return source.model_dump(mode="json", exclude_unset=True)
    if isinstance(source, str | Path):
        path = Path(source)
        if not path.is_file():
            raise ConfigError(f"config file {str(path)!r} does not exist")
        try:
            loaded = yaml.load(path.read_text(), Loader=_UniqueKeyLoader)
        except yaml.YAMLError as error:
            mark = getattr(error, "problem_mark", None)
            where = f" at line {mark.line + 1}" if mark is not None else ""
            if isinstance(error, _DuplicateKeyError):
                raise ConfigError(
                    f"config file {str(path)!r} repeats key {error.key!r}{where} "
                    f"(YAML would silently keep the last one)"
                ) from None
            raise ConfigError(f"config file {str(path)!r} is not valid YAML{where}") from None
        if loaded is None:
            raise ConfigError(f"config file {str(path)!r} is empty")
        if not isinstance(loaded, Mapping):
            raise ConfigError(
                f"config file {str(path)!r} must hold a mapping, found {type(loaded).__name__}"
            )
        return _plain(loaded)
    if isinstance(source, Mapping):
        return _plain(source)
    raise ConfigError(
        f"config must be a mapping, a YAML path or a Config, found {type(source).__name__}"
    )


class _DuplicateKeyError(yaml.constructor.ConstructorError):
    """A mapping key written twice in one YAML mapping."""

    def __init__(self, key: object, mark: yaml.Mark) -> None:
        super().__init__(problem=f"duplicate key {key!r}", problem_mark=mark)
        self.key = key


class _UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that rejects a key repeated in one mapping (PyYAML keeps the last)."""


def _construct_unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> Any:
    seen: set[object] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        if isinstance(key, Hashable):
            if key in seen:
                raise _DuplicateKeyError(key, key_node.start_mark)
            seen.add(key)
    return loader.construct_mapping(node, deep=True)


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping
)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _apply_override(raw: dict[str, Any], override: str) -> None:
    key_path, sep, text = override.partition("=")
    if not sep or not key_path.strip():
        raise ConfigError(f"--set needs key.path=value, got {override!r}")
    try:
        value = yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.YAMLError:
        raise ConfigError(f"--set {key_path}: value {text!r} is not valid YAML") from None
    keys = key_path.strip().split(".")
    node = raw
    for key in keys[:-1]:
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            raise ConfigError(f"--set {key_path}: {key!r} is not a section")
        node = child
    node[keys[-1]] = value


def describe_validation_error(error: ValidationError, model: type[BaseModel]) -> str:
    """One line for the first problem pydantic found, naming the dotted key. An unknown key
    comes first: a misspelt required key (``Task:``) is also reported missing, and the typo
    with its suggestion is the useful half."""
    errors = error.errors()
    first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    # A union member's validator adds a part like "function-after[_check(), Model]": not a key.
    location = [str(part) for part in first["loc"] if not str(part).startswith("function-")]
    key = ".".join(location)
    kind = first["type"]
    if kind == "extra_forbidden":
        suggestion = _nearest_key(model, location)
        hint = f"; did you mean {suggestion!r}?" if suggestion else ""
        return f"unknown config key {key!r}{hint}"
    if kind == "missing":
        return f"missing required config key {key!r}"
    # Config sequences are tuples in Python but lists in YAML: say "list" to the YAML user.
    message = first["msg"].removeprefix("Value error, ").replace("a valid tuple", "a list")
    if not location:
        return f"invalid config: {message}"
    found = first.get("input")
    shown = "" if isinstance(found, dict) else f" (found {found!r})"
    return f"config key {key!r}: {message}{shown}"


def _nearest_key(model: type[BaseModel], location: list[str]) -> str | None:
    """The closest valid key at the same level as ``location[-1]``, as a dotted path."""
    current: Any = model
    for part in location[:-1]:
        field = current.model_fields.get(part) if _is_model(current) else None
        if field is None:
            break
        current = _model_in(field.annotation)
    if not _is_model(current):
        return None
    matches = difflib.get_close_matches(location[-1], list(current.model_fields), n=1, cutoff=0.5)
    return ".".join([*location[:-1], matches[0]]) if matches else None


def _is_model(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, BaseModel)


def _model_in(annotation: Any) -> Any:
    if _is_model(annotation):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        if _is_model(arg):
            return arg
    return None
