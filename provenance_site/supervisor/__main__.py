import sys

from provenance_site.supervisor.run import main

sys.exit(main())
