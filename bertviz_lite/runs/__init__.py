"""Runs in the app: launch, watch and stop training processes; the checkpoint store; uploads."""
