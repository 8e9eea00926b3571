"""USER-STORIES.md run as one command each (s35): what the answers must say."""

from __future__ import annotations

from mlrig.commands.fit import fit_rows


def test_fit_title_says_the_context_every_row_was_fitted_at() -> None:
    # "I have one RTX 3090. What is the biggest model I can run at 8k context?": the title said neither
    _, title = fit_rows(None, "RTX 3090", context=8192)
    assert "at 8,192-token context" in title
    _, plain = fit_rows("llama-3.1-8b", "RTX 3090")
    assert " at " not in plain.split("RTX 3090")[-1]
