import sys

from reportexport.gate import main

sys.exit(main())
