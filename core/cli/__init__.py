"""Layer 7, `python -m core`: the commands over every layer below."""
