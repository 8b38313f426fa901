import sys

from labkit.course.cli import main

sys.exit(main())
