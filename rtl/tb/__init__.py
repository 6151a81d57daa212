"""Synthesizable test gear: traffic generator, traffic checker and fabric link.

These blocks make long fabric runs independent of per-cycle Python (issue 14, items 4
and 5) and are meant for boards too: one clock, synchronous reset, no simulation-only
constructs.
"""
