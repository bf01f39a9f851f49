"""The job layer: argument parsing, session building, reading, writing and the console summary.

Only this package and ``jobs/`` create a SparkSession or do I/O; the library turns DataFrames
into DataFrames. ``run_evaluate`` and ``run_report`` take an existing session, so tests and
notebooks can call the job without a subprocess.
"""
