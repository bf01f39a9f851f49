"""The test tiers, one folder each, and one SparkSession for the whole suite.

Every test lives in one tier folder, which gives it its marker:

- ``unit/``: no Spark (config, arguments, windows, figures, the import graph);
- ``engine/``: ``evaluate`` and the monitoring library on hand-computed cases, properties, one scan;
- ``oracle/``: the engine against the NumPy and scikit-learn references (tests/support/);
- ``jobs/``: the job, report, rollup and demo logs run in-process on the suite's session,
  and the input zoo;
- ``cli/``: the ``spark-calib`` command in subprocesses, one JVM each (also ``slow``);
- ``integration/``: standalone cluster, Spark Connect and crash tests that start their own
  servers (also ``slow``).

The tiers run in that order, fastest first, in one process. ``make test`` runs every tier in
two pytest-xdist workers that take whole modules (``--dist loadscope``; xdist hands out the
modules with the most tests first). ``make test-fast`` runs unit, engine, oracle and the input
zoo without the tests marked ``slow``, in two pytest-xdist workers; ``-m 'not slow'`` skips the
subprocess, server and benchmark tests, the statistical simulations (coverage over
hundreds of replicates), the checks on the real CIFAR-10-LT logits and the two heaviest single
tests (docs/development.md names them). The session is local[2] with 1 shuffle partition,
interpreted expressions, the serial garbage collector, UI off and UTC (the fixture says why);
the frames a module cached are released when it ends. The subprocess commands of the selected
cli/ tests run in the background (tests/support/cli_process.py): in one process they start when
the session begins, so they run while the in-process tiers do; in a worker, when their module's
first test asks. When cli/ or integration/ tests are selected, one process writes the class
archive that their JVMs (and later sessions of the suite) start from, in the background
(tests/support/class_archive.py).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark_calib_cli.report.rendered import DRAW_PROCESSES_ENV
from tests.support import class_archive
from tests.support.cli_process import QUICK_JIT, CliChains, job_env, selected_chains

TESTS = Path(__file__).resolve().parent
# Tier folder → markers its tests get.
TIER_MARKERS: dict[str, tuple[str, ...]] = {
    "unit": ("unit",),
    "engine": ("engine",),
    "oracle": ("oracle",),
    "jobs": ("jobs",),
    "cli": ("cli", "slow"),
    "integration": ("integration", "slow"),
}
# Figures are drawn in the test's own process (tests/unit/test_drawing_processes.py starts the
# drawing processes itself): the two xdist workers already keep both cores busy, and every
# `spark-calib` subprocess would start its own drawing processes.
os.environ.setdefault(DRAW_PROCESSES_ENV, "1")
# The session, once a test asked for it: modules release their cached frames only then.
SPARK_SESSION = pytest.StashKey[SparkSession]()


def tier_of(item: pytest.Item) -> str | None:
    """The tier folder of a test, None outside tests/."""
    try:
        return item.path.resolve().relative_to(TESTS).parts[0]
    except ValueError:
        return None  # a path given on the command line elsewhere


def in_xdist_worker(config: pytest.Config) -> bool:
    """True in a pytest-xdist worker, which runs the tests its scheduler hands it."""
    return hasattr(config, "workerinput")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test with the markers of its tier folder (tests/<tier>/...) and run the tiers
    in the order of TIER_MARKERS (a stable sort: modules stay whole, in their order)."""
    order = {tier: index for index, tier in enumerate(TIER_MARKERS)}
    for item in items:
        tier = tier_of(item)
        if tier is None:
            continue
        if tier not in TIER_MARKERS:
            raise pytest.UsageError(
                f"{item.nodeid}: tests live in a tier folder, one of "
                f"{', '.join(f'tests/{name}/' for name in TIER_MARKERS)}"
            )
        for marker in TIER_MARKERS[tier]:
            item.add_marker(marker)
    items.sort(key=lambda item: order.get(tier_of(item) or "", len(order)))


@pytest.fixture(scope="session")
def spark(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SparkSession]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    warehouse = tmp_path_factory.mktemp("warehouse")
    session = (
        SparkSession.builder.master("local[2]")
        .appName("spark_calib-tests")
        # Test frames are small: one partition per stage schedules half the tasks, and the
        # serial collector keeps GC threads off the 2 cores that two xdist workers share.
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.default.parallelism", "1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config(
            "spark.driver.extraJavaOptions",
            f"-Duser.timezone=UTC -XX:+UseSerialGC {class_archive.java_options()}".strip(),
        )
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.sql.sources.partitionOverwriteMode", "dynamic")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.sql.codegen.wholeStage", "false")
        # As the job's session does: no Python call-site capture per Column function.
        .config("spark.python.sql.dataFrameDebugging.enabled", "false")
        # Test frames have tens to thousands of rows, so compiling each new plan's expressions
        # costs more than interpreting them (13% of the fast loop); the jobs' own sessions
        # (cli/, integration/, the demo) keep Spark's codegen. Arrow moves the pandas frames
        # of the oracle tests in and out of Spark.
        .config("spark.sql.codegen.factoryMode", "NO_CODEGEN")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    request.session.stash[SPARK_SESSION] = session
    yield session
    del request.session.stash[SPARK_SESSION]
    session.stop()


@pytest.fixture(scope="module", autouse=True)
def release_cached_frames(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each module, drop whatever it cached (evaluate's statistics, module fixtures'
    frames) from the suite's session, if one was started: unit tests never start Spark."""
    yield
    session = request.session.stash.get(SPARK_SESSION, None)
    if session is not None:
        session.catalog.clearCache()


@pytest.fixture(scope="session", autouse=True)
def class_archive_training(request: pytest.FixtureRequest) -> Iterator[None]:
    """When cli/ or integration/ tests are selected, write the class archive of their JVMs
    (tests/support/class_archive.py) in the background, unless it exists; the JVMs that start
    before it is written run without it. With xdist, one worker writes it."""
    tiers = {tier_of(item) for item in request.session.items}
    if not tiers & {"cli", "integration"}:
        yield
        return
    training = threading.Thread(
        target=class_archive.train, args=(job_env(), QUICK_JIT), name="class-archive"
    )
    training.start()
    yield
    training.join()


@pytest.fixture(scope="session", autouse=True)
def cli_chains(request: pytest.FixtureRequest) -> Iterator[CliChains | None]:
    """The subprocess commands of the selected cli/ tests (None, and no Spark started, when no
    cli/ test is selected). In one process they all start when the session begins. An xdist
    worker runs only the modules it is handed, so there each cli/ module starts its own chains
    when its first test asks for them (``cli_run``, tests/cli/conftest.py)."""
    keys = selected_chains(request.session.items)
    if not keys:
        yield None
        return
    chains = CliChains()
    if not in_xdist_worker(request.config):
        chains.start(
            request.getfixturevalue("spark"), request.getfixturevalue("tmp_path_factory"), keys
        )
    yield chains
    chains.close()
