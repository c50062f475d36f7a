"""obs: ingest RL post-training logs into a parquet lake."""
