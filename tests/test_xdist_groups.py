"""The README's test command relies on pytest-xdist's ``--dist loadgroup`` keeping a group on one worker.

Ray, Chromium and Phoenix start once per worker that runs their group: if grouping stops working (it did
with pytest 9.2, which xdist 3.8 does not support), each of the four workers starts its own, and nothing
else would say so.
"""

from __future__ import annotations

import re

import pytest

pytest_plugins = ["pytester"]


def test_loadgroup_runs_a_group_on_one_worker(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_grouped="""
        import pytest
        pytestmark = pytest.mark.xdist_group("g")
        def test_a(): pass
        def test_b(): pass
        def test_c(): pass
        def test_d(): pass
        """
    )
    result = pytester.runpytest_subprocess("-n", "2", "--dist", "loadgroup", "-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
    workers = re.findall(r"\[(gw\d+)\] .*PASSED test_grouped.py::test_\w@g", result.stdout.str())
    assert len(workers) == 4 and len(set(workers)) == 1, result.stdout.str()
