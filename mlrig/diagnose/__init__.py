"""`mlrig diagnose`: sample a running job and classify what holds it back (DOMAIN.md §5)."""

from mlrig.diagnose.classify import classify, summarise
from mlrig.diagnose.models import DiagnoseReport, Finding, Sample, Summary
from mlrig.diagnose.run import diagnose, sample_loop

__all__ = ["DiagnoseReport", "Finding", "Sample", "Summary", "classify", "diagnose", "sample_loop",
           "summarise"]
