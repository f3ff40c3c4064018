"""Training: arguments, data, optimisation, the loop and its command line."""
