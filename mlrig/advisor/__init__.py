"""The advisor: what to buy or rent (recommend), what it costs over time (cost), whether a build works (build)."""
