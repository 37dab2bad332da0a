"""Layer 5, the study: the declared studies, their runners and rows, and one query through every architecture."""
