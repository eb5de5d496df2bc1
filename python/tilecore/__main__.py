"""``python -m tilecore``: the command line (see tilecore.cli)."""
import sys

from .cli import main

sys.exit(main())
