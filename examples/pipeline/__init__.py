"""The reference log-processing pipeline on Spark (see README.md beside this file)."""
