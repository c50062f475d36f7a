"""Readers of tracker histories (W&B, TensorBoard, TRL, MLflow, JSONL)."""
