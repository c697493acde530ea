import sys

from frozen_lifecycle.gate import main

sys.exit(main())
