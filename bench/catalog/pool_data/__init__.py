"""Data files of the distractor pool (bench.catalog.pool): real API descriptions shipped with their licences."""
