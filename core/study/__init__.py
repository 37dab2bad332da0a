"""Layer 4, the study: metrics, the declared studies, their runs and the results store they write."""
