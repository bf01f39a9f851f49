"""Helpers shared by the test tiers, imported as ``tests.support.<module>`` (the repository root
is on sys.path through pytest's ``pythonpath``):

- ``frames``: collect long metric outputs into plain dicts (engine tests);
- ``jobs``, ``jobs_optional_tables``: job inputs, configs and the output tables' schemas;
- ``reference``, ``reference_sklearn``: the NumPy and scikit-learn oracles, never the engine;
- ``cli_process``: run the ``spark-calib`` command in a subprocess (tests/cli/).
"""
