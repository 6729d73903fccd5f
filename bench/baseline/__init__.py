"""Baselines the benchmark compares against: the same projection written without cdc-constructs."""
