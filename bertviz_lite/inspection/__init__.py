"""Inspection: one traced pass per input, the arithmetic on it, and one data function per view."""
