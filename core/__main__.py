"""Entry point for `python -m core`."""
from __future__ import annotations

import sys

from core.cli.main import main

sys.exit(main())
