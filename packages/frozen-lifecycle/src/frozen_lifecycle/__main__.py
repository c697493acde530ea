import sys

from frozen_lifecycle.cli import main

sys.exit(main())
