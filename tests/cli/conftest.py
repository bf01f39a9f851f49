"""The cli tier's tests read the outcome of their registered commands (``cli_chain``), which the
session started in the background."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.cli_process import CliChains, chain_key


@pytest.fixture
def cli_run(request: pytest.FixtureRequest, cli_chains: CliChains | None) -> tuple[Path, Any]:
    """This test's working directory and what its commands returned, once they ended."""
    assert cli_chains is not None, "the session started no cli chain"
    return cli_chains.result(chain_key(request.module.__name__, request.node.originalname))
