"""CLI command groups. Each module defines `register(app)`; mlrig.cli wires them in.

Interfaces only render: they call estimators/planner/advisor and print (rich tables or --json).
"""
