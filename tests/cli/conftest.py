"""The cli tier's tests read the outcome of their registered commands (``cli_chain``), which run
in the background: started when the session begins, or in an xdist worker when the module's
first test asks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from tests.support.cli_process import CliChains, chain_key, selected_chains


@pytest.fixture
def cli_run(
    request: pytest.FixtureRequest,
    cli_chains: CliChains | None,
    spark: SparkSession,
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, Any]:
    """This test's working directory and what its commands returned, once they ended."""
    assert cli_chains is not None, "the session started no cli chain"
    # Already started when the session began, unless in an xdist worker.
    module_keys = selected_chains(request.session.items, request.module)
    cli_chains.start(spark, tmp_path_factory, module_keys)
    return cli_chains.result(chain_key(request.module.__name__, request.node.originalname))
