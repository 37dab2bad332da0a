"""Layer 4, evaluation: per-query metrics, run means declared once, statistics over runs, scoring for `core eval`."""
