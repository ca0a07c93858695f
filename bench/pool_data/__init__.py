"""Data files of the distractor pool (bench.pool): real API descriptions shipped with their licences."""
