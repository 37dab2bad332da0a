"""Layer 6, `python -m core`: the commands over every layer below."""
