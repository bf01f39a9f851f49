"""Check catalog identifiers before they reach the catalog or a SQL statement."""

from __future__ import annotations

import re

from spark_calib.errors import ConfigError

# Unquoted Spark/Hive identifiers only: no backticks, dots or blanks to smuggle in other SQL.
IDENTIFIER_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# catalog.database.table at most.
MAX_NAME_PARTS = 3


def checked_identifier(name: str, key: str) -> str:
    """Return ``name`` if it is a plain identifier, else raise ``ConfigError`` naming ``key``."""
    if not IDENTIFIER_PATTERN.fullmatch(name):
        raise ConfigError(
            f"config key {key!r}: {name!r} is not a plain identifier "
            f"(letters, digits and _, not starting with a digit)"
        )
    return name


def checked_table_name(name: str, key: str) -> str:
    """Return ``name`` if it is ``table``, ``db.table`` or ``catalog.db.table`` of identifiers."""
    parts = name.split(".")
    if len(parts) > MAX_NAME_PARTS or not all(IDENTIFIER_PATTERN.fullmatch(p) for p in parts):
        raise ConfigError(
            f"config key {key!r}: {name!r} is not a table name of the form [catalog.]db.table "
            f"with plain identifiers"
        )
    return name
