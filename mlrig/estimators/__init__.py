"""Estimators: pure functions of typed inputs (memory, performance, cost, power)."""
