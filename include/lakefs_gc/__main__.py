from __future__ import annotations

import sys

from lakefs_gc.cli import main

sys.exit(main())
