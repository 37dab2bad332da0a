"""Layer 6, analysis: the results reader, its tables, the router, the paper's figures and the report."""
