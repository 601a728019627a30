import sys

from foliodb.cli import main

sys.exit(main())
