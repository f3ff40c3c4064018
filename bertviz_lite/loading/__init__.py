"""Loading and saving: pretrained weights, checkpoints as safetensors, the run folder's files."""
