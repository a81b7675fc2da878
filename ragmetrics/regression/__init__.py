"""Regression testing: eval cases, suites, snapshots, comparison, gates and rendering.

The ``eval_case`` marker and discovery, case results, YAML/JSON suites, snapshots, comparison, the
case gate and rendering (tables, diffs, JUnit XML).
"""
