"""Settings package: ``base`` holds everything, the others adjust it."""
