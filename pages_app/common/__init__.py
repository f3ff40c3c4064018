"""Helpers shared by the pages: the sidebar, figure and table display, the training views."""
