"""Fragment identifiers of the page: one per section and one per slice row, so that an alert
at the top can link to its slice below."""

from __future__ import annotations

import hashlib
import re

UNSAFE_ID_CHARACTERS = re.compile(r"[^A-Za-z0-9_-]+")
# A short digest keeps two keys apart that sanitise to the same text ("v/1" and "v_1").
DIGEST_CHARACTERS = 8


def version_anchor(model_version: str | None) -> str:
    """``model-<version>`` (``model-all`` without a version column)."""
    return f"model-{_part(model_version)}"


def slice_anchor(model_version: str | None, slice_name: str, slice_value: str) -> str:
    """``slice-<version>-<slice>-<digest>``: the id of a slice row in its version's table."""
    key = "\x1f".join([model_version or "", slice_name, slice_value])
    digest = hashlib.sha1(key.encode("utf-8")).hexdigest()[:DIGEST_CHARACTERS]
    return f"slice-{_part(model_version)}-{_part(slice_value)}-{digest}"


def _part(text: str | None) -> str:
    if text is None:
        return "all"
    return UNSAFE_ID_CHARACTERS.sub("_", text).strip("_") or "x"
