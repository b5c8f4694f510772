import sys

from lakefs_gc.cli import main

sys.exit(main())
